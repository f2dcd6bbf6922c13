"""Doubles Reverie ships for its users' tests and its own: the fake clock (the hash embedder and the
scripted OpenAI-compatible server join it as their issues land)."""

from reverie.clock import FakeClock

__all__ = ["FakeClock"]
