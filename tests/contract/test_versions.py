"""VersionRepository: history and single versions, as every write left the entry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reverie.storage.base import Store
from reverie.types import Change, Scope

from .support import AGENT, T0, UNICODE_TEXTS, at, eid, entry


def build_history(store: Store):
    """Four writes: created, edited, importance, archived. Returns the entry as each left it."""
    v1 = entry(1, "first text", category="notes", tags=("a",), importance=0.5, metadata={"source": "user"})
    store.facts.add(v1, at=T0)
    v2 = replace(v1, content="second text", tags=("a", "b"), updated_at=at(hours=1))
    store.facts.write(v2, change=Change.EDITED, at=at(hours=1))
    # Bookkeeping without a text change leaves no row and must not disturb the numbering.
    store.facts.write(replace(v2, reinforcement_count=2), change=Change.REINFORCED, at=at(hours=2))
    v3 = replace(v2, reinforcement_count=2, importance=0.9)
    store.facts.write(v3, change=Change.IMPORTANCE, at=at(hours=3))
    v4 = replace(v3, category="notes/old", archived_at=at(hours=4), metadata={"source": "user", "why": "stale"})
    store.facts.write(v4, change=Change.ARCHIVED, at=at(hours=4))
    return [v1, v2, v3, v4]


def test_history_is_oldest_first_with_consecutive_numbers_and_snapshots(store: Store) -> None:
    states = build_history(store)
    history = store.versions.history(eid(1), AGENT)
    assert [v.version for v in history] == [1, 2, 3, 4]
    assert [v.change for v in history] == [Change.CREATED, Change.EDITED, Change.IMPORTANCE, Change.ARCHIVED]
    assert [v.recorded_at for v in history] == [T0, at(hours=1), at(hours=3), at(hours=4)]
    for version, state in zip(history, states, strict=True):
        assert version.entry_id == state.id
        assert (version.content, version.category, version.tags) == (state.content, state.category, state.tags)
        assert version.importance == state.importance
        assert version.metadata == state.metadata
        assert version.archived is state.archived


def test_get_returns_one_version_equal_to_its_history_row(store: Store) -> None:
    build_history(store)
    history = store.versions.history(eid(1), AGENT)
    for row in history:
        assert store.versions.get(eid(1), row.version, AGENT) == row


@pytest.mark.parametrize("number", [0, 5, -1, 1000])
def test_get_of_a_missing_version_is_none(store: Store, number: int) -> None:
    build_history(store)
    assert store.versions.get(eid(1), number, AGENT) is None


def test_unknown_entries_have_no_history(store: Store) -> None:
    build_history(store)
    assert store.versions.history(eid(2), AGENT) == []
    assert store.versions.get(eid(2), 1, AGENT) is None


def test_history_of_an_archived_entry_stays_readable(store: Store) -> None:
    build_history(store)
    assert store.facts.get(eid(1), AGENT) is not None
    assert store.versions.history(eid(1), AGENT)[-1].archived is True


def test_histories_of_two_entries_are_independent(store: Store) -> None:
    store.facts.add(entry(1, "one"), at=T0)
    store.facts.add(entry(2, "two"), at=T0)
    store.facts.write(entry(2, "two, edited"), change=Change.EDITED, at=at(hours=1))
    assert [v.content for v in store.versions.history(eid(1), AGENT)] == ["one"]
    assert [(v.version, v.content) for v in store.versions.history(eid(2), AGENT)] == [(1, "two"), (2, "two, edited")]


def test_versions_are_scoped_through_their_entry(store: Store) -> None:
    scope = Scope("agent-a", user_id="u1")
    store.facts.add(entry(1, "private", scope=scope), at=T0)
    assert len(store.versions.history(eid(1), scope)) == 1
    assert store.versions.get(eid(1), 1, scope) is not None
    for other in (Scope("agent-a"), Scope("agent-a", user_id="u2"), Scope("agent-b", user_id="u1")):
        assert store.versions.history(eid(1), other) == []
        assert store.versions.get(eid(1), 1, other) is None


@pytest.mark.parametrize("text", UNICODE_TEXTS)
def test_unicode_round_trips_exactly_through_version_rows(store: Store, text: str) -> None:
    e = entry(1, "plain", tags=("plain",))
    store.facts.add(e, at=T0)
    edited = replace(e, content=text, tags=("🏷️", text.strip()[:10]), metadata={"note": text})
    store.facts.write(edited, change=Change.EDITED, at=at(hours=1))
    v2 = store.versions.get(e.id, 2, AGENT)
    assert v2 is not None
    assert v2.content == text
    assert v2.content.encode("utf-8") == text.encode("utf-8")
    assert v2.tags == edited.tags
    assert v2.metadata == {"note": text}
    assert store.versions.get(e.id, 1, AGENT).content == "plain"  # type: ignore[union-attr]
