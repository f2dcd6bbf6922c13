"""Doubles Reverie ships for its users' tests and its own: the fake clock, the scripted
OpenAI-compatible server, the loopback vector service (the hash embedder joins them as its issue lands)."""

from reverie.clock import FakeClock
from reverie.testing.openai_server import ChatReply, ScriptedOpenAIServer
from reverie.testing.vector_server import LoopbackVectorServer

__all__ = ["ChatReply", "FakeClock", "ScriptedOpenAIServer", "LoopbackVectorServer"]
