"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import reverie
from reverie import Scope
from reverie.testing.openai_server import ScriptedOpenAIServer


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    """A started loopback scripted OpenAI-compatible server (a module may define its own ``server``)."""
    with ScriptedOpenAIServer() as started:
        yield started


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An engine home that does not exist yet (a module may define its own ``home``)."""
    return tmp_path / "home"


@pytest.fixture
def lisbon(rv: reverie.Reverie) -> str:
    """One visible entry, plus one in another user's scope and one archived, so "changes nothing" and
    "sees only its own" have something to see. Returns the visible entry's id."""
    saved = rv.memory.save("The user lives in Lisbon", category="user-preferences/location", tags=["travel"])
    rv.memory.save("User one's private note", scope=Scope(user_id="u1"))
    old = rv.memory.save("An archived fact", category="old")
    rv.memory.archive(old.id)
    return saved.id
