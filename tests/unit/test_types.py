"""types: scope visibility, which changes are versioned, and the derived properties of an entry."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from reverie import Change, MemoryEntry, SaveResult, Scope, Tier
from reverie.types import DEFAULT_AGENT, DEFAULT_CATEGORY

NOW = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def _entry(**changes: object) -> MemoryEntry:
    entry = MemoryEntry(
        id="e1",
        content="The user lives in Lisbon",
        category="user-preferences/location",
        tags=("location",),
        tier=Tier.SEMANTIC,
        scope=Scope(),
        created_at=NOW,
        last_seen_at=NOW,
    )
    return dataclasses.replace(entry, **changes)  # type: ignore[arg-type]


# --- Scope ---------------------------------------------------------------------------------------


def test_scope_defaults() -> None:
    scope = Scope()
    assert scope.agent_id == DEFAULT_AGENT == "default"
    assert scope.user_id is None
    assert scope.session_id is None


def test_scope_is_frozen_and_hashable() -> None:
    scope = Scope("a", "u", "s")
    with pytest.raises(dataclasses.FrozenInstanceError):
        scope.agent_id = "b"  # type: ignore[misc]
    assert Scope("a", "u", "s") == scope
    assert len({scope, Scope("a", "u", "s")}) == 1


@pytest.mark.parametrize(
    "entry_scope",
    [Scope("a"), Scope("a", "u"), Scope("a", None, "s"), Scope("a", "u", "s")],
)
def test_scope_sees_its_own_and_agent_wide_entries(entry_scope: Scope) -> None:
    assert Scope("a", "u", "s").sees(entry_scope)


@pytest.mark.parametrize(
    "entry_scope",
    [Scope("b"), Scope("b", "u", "s"), Scope("A", "u", "s"), Scope("a ", "u", "s")],
)
def test_scope_never_sees_another_agent(entry_scope: Scope) -> None:
    assert not Scope("a", "u", "s").sees(entry_scope)


def test_user_scoped_entry_hidden_from_other_users_and_userless_queries() -> None:
    entry = Scope("a", "alice")
    assert Scope("a", "alice").sees(entry)
    assert not Scope("a", "bob").sees(entry)
    assert not Scope("a").sees(entry)
    assert not Scope("a", None, "s").sees(entry)


def test_session_scoped_entry_hidden_from_other_sessions_and_sessionless_queries() -> None:
    entry = Scope("a", "alice", "s1")
    assert Scope("a", "alice", "s1").sees(entry)
    assert not Scope("a", "alice", "s2").sees(entry)
    assert not Scope("a", "alice").sees(entry)
    assert not Scope("a", "bob", "s1").sees(entry)


def test_session_entry_without_user_visible_to_any_user_in_that_session() -> None:
    entry = Scope("a", None, "s1")
    assert Scope("a", "alice", "s1").sees(entry)
    assert Scope("a", None, "s1").sees(entry)
    assert not Scope("a", "alice", "s2").sees(entry)


def test_agent_wide_entry_visible_to_every_query_of_that_agent() -> None:
    entry = Scope("a")
    for query in (Scope("a"), Scope("a", "u"), Scope("a", None, "s"), Scope("a", "u", "s")):
        assert query.sees(entry)


def test_sees_is_not_symmetric() -> None:
    narrow, wide = Scope("a", "u"), Scope("a")
    assert narrow.sees(wide)
    assert not wide.sees(narrow)


# --- Change --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [Change.CREATED, Change.EDITED, Change.REVERTED, Change.ARCHIVED, Change.RESTORED, Change.IMPORTANCE],
)
def test_text_and_state_changes_are_versioned(change: Change) -> None:
    assert change.versioned is True


@pytest.mark.parametrize("change", [Change.REINFORCED, Change.HOUSEKEEPING])
def test_bookkeeping_changes_are_not_versioned(change: Change) -> None:
    assert change.versioned is False


def test_change_values_are_their_lowercase_names() -> None:
    assert all(change.value == change.name.lower() for change in Change)
    assert Change("reinforced") is Change.REINFORCED


def test_tier_values() -> None:
    assert [t.value for t in Tier] == ["working", "episodic", "semantic", "procedural"]
    assert Tier("semantic") == "semantic"


# --- MemoryEntry ---------------------------------------------------------------------------------


def test_entry_defaults() -> None:
    entry = _entry()
    assert entry.updated_at is None
    assert entry.reinforcement_count == 1
    assert entry.pinned is False
    assert entry.metadata == {}
    assert DEFAULT_CATEGORY == "general"


def test_entry_metadata_default_not_shared() -> None:
    a, b = _entry(), _entry(id="e2")
    assert a.metadata is not b.metadata


def test_entry_archived_follows_archived_at() -> None:
    assert _entry().archived is False
    assert _entry(archived_at=NOW).archived is True


@pytest.mark.parametrize("source", ["user", "tool:web_browse", "inferred"])
def test_entry_source_reads_metadata(source: str) -> None:
    assert _entry(metadata={"source": source, "other": 1}).source == source


@pytest.mark.parametrize("metadata", [{}, {"source": None}, {"source": 3}, {"source": ["user"]}, {"src": "user"}])
def test_entry_source_none_when_missing_or_not_a_string(metadata: dict[str, object]) -> None:
    assert _entry(metadata=metadata).source is None


def test_entry_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        _entry().content = "changed"  # type: ignore[misc]


def test_save_result_id_is_the_entry_id() -> None:
    result = SaveResult(outcome="created", entry=_entry(id="abc123"))
    assert result.id == "abc123"
    assert result.notes == ()
