"""Doubles Reverie ships for its users' tests and its own: the fake clock and the scripted
OpenAI-compatible server (the hash embedder joins them as its issue lands)."""

from reverie.clock import FakeClock
from reverie.testing.openai_server import ScriptedOpenAIServer

__all__ = ["FakeClock", "ScriptedOpenAIServer"]
