"""Fixtures shared by the integration tests."""

from __future__ import annotations

import pytest

import reverie
from reverie import Scope


@pytest.fixture
def lisbon(rv: reverie.Reverie) -> str:
    """One visible entry, plus one in another user's scope and one archived, so "changes nothing" and
    "sees only its own" have something to see. Returns the visible entry's id."""
    saved = rv.memory.save("The user lives in Lisbon", category="user-preferences/location", tags=["travel"])
    rv.memory.save("User one's private note", scope=Scope(user_id="u1"))
    old = rv.memory.save("An archived fact", category="old")
    rv.memory.archive(old.id)
    return saved.id
