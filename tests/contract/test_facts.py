"""FactRepository writes and point reads: add, write, get, iter_all, and exact round-trips."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reverie.errors import Conflict, NotFound
from reverie.storage.base import Store
from reverie.types import Change, Scope, Tier

from .support import AGENT, T0, UNICODE_TEXTS, at, eid, entry, ids

FULL_SCOPE = Scope(agent_id="agent-x", user_id="user-1", session_id="session-9")


def rich_entry(n: int = 1):
    """An entry with every optional field set to a non-default value."""
    return entry(
        n,
        "The user prefers metric units",
        category="user-preferences/units",
        tags=("units", "metric"),
        scope=FULL_SCOPE,
        tier=Tier.PROCEDURAL,
        created_at=at(days=-10),
        seen=at(days=-2),
        updated_at=at(days=-3),
        reinforcement_count=4,
        importance=0.25,
        retention=0.75,
        confidence=0.9,
        pinned=True,
        expires_at=at(days=30),
        superseded_by=eid(99),
        metadata={"source": "user", "mergedFrom": ["a", "b"], "nested": {"n": 1, "ok": True, "none": None}},
    )


# -- add -------------------------------------------------------------------------------------------------
def test_add_then_get_returns_every_field_unchanged(store: Store) -> None:
    e = rich_entry()
    store.facts.add(e, at=T0)
    assert store.facts.get(e.id, FULL_SCOPE) == e


def test_add_round_trips_an_archived_entry(store: Store) -> None:
    e = entry(1, archived_at=at(hours=-1), tier=Tier.EPISODIC)
    store.facts.add(e, at=T0)
    got = store.facts.get(e.id, AGENT)
    assert got == e
    assert got is not None and got.archived


def test_add_records_version_1_created(store: Store) -> None:
    e = rich_entry()
    store.facts.add(e, at=at(minutes=5))
    (v1,) = store.versions.history(e.id, FULL_SCOPE)
    assert (v1.entry_id, v1.version, v1.change, v1.recorded_at) == (e.id, 1, Change.CREATED, at(minutes=5))
    assert (v1.content, v1.category, v1.tags, v1.importance) == (e.content, e.category, e.tags, e.importance)
    assert v1.metadata == e.metadata
    assert v1.archived is False


def test_add_with_a_duplicate_id_raises_conflict_and_keeps_the_original(store: Store) -> None:
    original = entry(1, "the original text")
    store.facts.add(original, at=T0)
    with pytest.raises(Conflict):
        store.facts.add(replace(original, content="an impostor"), at=at(minutes=1))
    assert store.facts.get(original.id, AGENT) == original
    assert [v.content for v in store.versions.history(original.id, AGENT)] == ["the original text"]


def test_add_with_an_id_taken_in_another_scope_raises_conflict(store: Store) -> None:
    store.facts.add(entry(1, "agent a's fact", scope=Scope("agent-a")), at=T0)
    with pytest.raises(Conflict):
        store.facts.add(entry(1, "agent b's fact", scope=Scope("agent-b")), at=T0)
    assert store.facts.get(eid(1), Scope("agent-b")) is None
    got = store.facts.get(eid(1), Scope("agent-a"))
    assert got is not None and got.content == "agent a's fact"


# -- get -------------------------------------------------------------------------------------------------
def test_get_of_an_unknown_id_is_none(store: Store) -> None:
    store.facts.add(entry(1), at=T0)
    assert store.facts.get(eid(2), AGENT) is None


def test_get_ignores_expiry(store: Store) -> None:
    e = entry(1, expires_at=at(days=-1))
    store.facts.add(e, at=T0)
    assert store.facts.get(e.id, AGENT) == e


# -- write -----------------------------------------------------------------------------------------------
def test_write_replaces_every_field(store: Store) -> None:
    before = entry(1, "old text", category="old/cat", tags=("old",))
    store.facts.add(before, at=T0)
    after = replace(
        rich_entry(),
        id=before.id,
        scope=before.scope,
        content="new text",
        category="new/cat",
        tags=("new", "tags"),
        archived_at=at(hours=1),
    )
    store.facts.write(after, change=Change.EDITED, at=at(hours=1))
    assert store.facts.get(before.id, AGENT) == after


def test_write_can_clear_optional_fields(store: Store) -> None:
    e = rich_entry()
    store.facts.add(e, at=T0)
    cleared = replace(e, updated_at=None, expires_at=None, superseded_by=None, metadata={}, tags=(), pinned=False)
    store.facts.write(cleared, change=Change.EDITED, at=at(hours=1))
    assert store.facts.get(e.id, FULL_SCOPE) == cleared


@pytest.mark.parametrize("change", [c for c in Change if c.versioned])
def test_a_versioned_change_records_a_version_even_without_a_text_change(store: Store, change: Change) -> None:
    e = entry(1, "same text", importance=0.5)
    store.facts.add(e, at=T0)
    changed = replace(e, importance=0.6, archived_at=at(hours=1) if change is Change.ARCHIVED else None)
    store.facts.write(changed, change=change, at=at(hours=1))
    history = store.versions.history(e.id, AGENT)
    assert [(v.version, v.change) for v in history] == [(1, Change.CREATED), (2, change)]
    assert history[1].recorded_at == at(hours=1)
    assert history[1].importance == 0.6
    assert history[1].content == "same text"
    assert history[1].archived is (change is Change.ARCHIVED)


@pytest.mark.parametrize("change", [Change.REINFORCED, Change.HOUSEKEEPING])
def test_bookkeeping_without_a_text_change_records_no_version(store: Store, change: Change) -> None:
    e = entry(1, "same text")
    store.facts.add(e, at=T0)
    bumped = replace(e, reinforcement_count=2, last_seen_at=at(days=1), retention=0.5, metadata={"k": "v"})
    store.facts.write(bumped, change=change, at=at(days=1))
    assert store.facts.get(e.id, AGENT) == bumped
    assert [v.change for v in store.versions.history(e.id, AGENT)] == [Change.CREATED]


@pytest.mark.parametrize("change", [Change.REINFORCED, Change.HOUSEKEEPING])
@pytest.mark.parametrize(
    "text_change",
    [{"content": "rewritten text"}, {"category": "other"}, {"tags": ("added",)}],
    ids=["content", "category", "tags"],
)
def test_bookkeeping_that_changes_text_records_a_version(store: Store, change: Change, text_change: dict) -> None:
    e = entry(1, "original text", category="general", tags=())
    store.facts.add(e, at=T0)
    changed = replace(e, **text_change)
    store.facts.write(changed, change=change, at=at(days=1))
    history = store.versions.history(e.id, AGENT)
    assert [(v.version, v.change) for v in history] == [(1, Change.CREATED), (2, change)]
    assert (history[1].content, history[1].category, history[1].tags) == (
        changed.content,
        changed.category,
        changed.tags,
    )


def test_write_of_an_unknown_id_raises_not_found(store: Store) -> None:
    store.facts.add(entry(1), at=T0)
    with pytest.raises(NotFound):
        store.facts.write(entry(2), change=Change.EDITED, at=T0)
    assert store.facts.get(eid(2), AGENT) is None
    assert store.versions.history(eid(2), AGENT) == []


@pytest.mark.parametrize(
    "other",
    [Scope("agent-b"), Scope(user_id="user-1"), Scope(session_id="s-1"), Scope("agent-b", "user-1", "s-1")],
    ids=["other-agent", "added-user", "added-session", "all-different"],
)
def test_write_in_a_different_scope_raises_not_found_and_changes_nothing(store: Store, other: Scope) -> None:
    e = entry(1, "agent-wide fact")
    store.facts.add(e, at=T0)
    with pytest.raises(NotFound):
        store.facts.write(replace(e, scope=other, content="hijacked"), change=Change.EDITED, at=at(hours=1))
    assert store.facts.get(e.id, AGENT) == e
    assert len(store.versions.history(e.id, AGENT)) == 1


def test_write_from_a_narrower_scope_cannot_touch_an_entry_of_another_user(store: Store) -> None:
    mine = entry(1, "user one's fact", scope=Scope(user_id="user-1"))
    store.facts.add(mine, at=T0)
    with pytest.raises(NotFound):
        store.facts.write(replace(mine, scope=Scope(user_id="user-2")), change=Change.EDITED, at=T0)
    assert store.facts.get(mine.id, Scope(user_id="user-1")) == mine


# -- iter_all ----------------------------------------------------------------------------------------------
def test_iter_all_is_ordered_by_id_and_includes_archived_and_every_scope(store: Store) -> None:
    entries = [
        entry(5, "five", scope=Scope("agent-b")),
        entry(2, "two", archived_at=at(hours=-1)),
        entry(9, "nine", scope=Scope(user_id="u1", session_id="s1")),
        entry(1, "one", expires_at=at(days=-1)),
    ]
    for e in entries:
        store.facts.add(e, at=T0)
    assert list(store.facts.iter_all()) == sorted(entries, key=lambda e: e.id)


def test_iter_all_filters_by_agent(store: Store) -> None:
    store.facts.add(entry(1, scope=Scope("agent-a")), at=T0)
    store.facts.add(entry(2, scope=Scope("agent-b")), at=T0)
    store.facts.add(entry(3, scope=Scope("agent-a", user_id="u"), archived_at=T0), at=T0)
    assert ids(store.facts.iter_all("agent-a")) == [eid(1), eid(3)]
    assert ids(store.facts.iter_all("agent-b")) == [eid(2)]
    assert list(store.facts.iter_all("nobody")) == []


def test_iter_all_walks_a_large_store_in_id_order_without_gaps(store: Store) -> None:
    numbers = list(range(1, 1202))
    with store.transaction():
        for n in reversed(numbers):
            store.facts.add(entry(n, f"fact number {n}"), at=T0)
    assert ids(store.facts.iter_all()) == [eid(n) for n in numbers]


# -- Unicode -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", UNICODE_TEXTS)
def test_unicode_round_trips_exactly_through_add_and_get(store: Store, text: str) -> None:
    e = entry(1, text, tags=(text.strip()[:20], "🏷️"), metadata={"note": text, "emoji": "🎉"})
    store.facts.add(e, at=T0)
    got = store.facts.get(e.id, AGENT)
    assert got == e
    assert got is not None and got.content.encode("utf-8") == text.encode("utf-8")


def test_unicode_scope_ids_round_trip(store: Store) -> None:
    scope = Scope(agent_id="agent-🤖", user_id="usuário-ñ", session_id="セッション")
    e = entry(1, "scoped with unicode ids", scope=scope)
    store.facts.add(e, at=T0)
    assert store.facts.get(e.id, scope) == e
    assert store.facts.get(e.id, Scope("agent-🤖")) is None


def test_fold_pending_lists_only_flagged_ids(store: Store) -> None:
    waiting = replace(entry(1), fold_pending=True)
    done = entry(2)
    store.facts.add(waiting, at=T0)
    store.facts.add(done, at=T0)
    assert store.facts.fold_pending([waiting.id, done.id, eid(99)]) == {waiting.id}
