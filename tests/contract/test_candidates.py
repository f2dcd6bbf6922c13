"""FactRepository's candidate reads (``candidates``, ``neighbour_candidates``, ``candidates_in_period``): what
recall ranks by, read without the rest of the row. Each lets through exactly the entries its whole-entry read
lets through (``get_many``, ``neighbours``, ``in_period``), under every part of the filter, with the same
times and metadata."""

from __future__ import annotations

from collections.abc import Sequence

from reverie.storage.base import FactCandidate, Store
from reverie.types import MemoryEntry, Scope

from .support import AGENT, T0, at, eid, entry, view

USER = Scope(agent_id=AGENT.agent_id, user_id="u1")
SESSION = Scope(agent_id=AGENT.agent_id, user_id="u1", session_id="s1")
OTHER_AGENT = Scope(agent_id="someone-else")


def _as_candidates(entries: Sequence[MemoryEntry]) -> list[FactCandidate]:
    return [FactCandidate(e.id, e.created_at, e.last_seen_at, e.metadata) for e in entries]


def _mixed(store: Store) -> list[MemoryEntry]:
    """One entry per way the filter can keep one out, and some it lets through; all in thread t1 and dated in
    January 2026 (saved, or by subject time)."""
    entries = [
        entry(1, "plain", created_at=at(days=3), seen=at(days=4)),
        entry(2, "rich metadata", metadata={"subjectTime": "2026-01-05", "source": "user", "nested": {"a": [1]}}),
        entry(3, "archived", archived_at=at(days=1)),
        entry(4, "superseded", superseded_by=eid(1)),
        entry(5, "expired", expires_at=at(days=1)),
        entry(6, "expires later", expires_at=at(days=30)),
        entry(7, "another user's", scope=Scope(agent_id=AGENT.agent_id, user_id="u2")),
        entry(8, "this user's", scope=USER),
        entry(9, "this session's", scope=SESSION),
        entry(10, "another agent's", scope=OTHER_AGENT),
        entry(11, "elsewhere", category="work/notes"),
        entry(12, "dated", created_at=at(days=-400), metadata={"subjectTime": "2026-01"}),
    ]
    for position, e in enumerate(entries, start=1):
        meta = {**e.metadata, "thread": "t1", "position": position}
        store.facts.add(MemoryEntry(**{**_fields(e), "metadata": meta}), at=T0)
    return entries


def _fields(e: MemoryEntry) -> dict[str, object]:
    return {name: getattr(e, name) for name in MemoryEntry.__dataclass_fields__}


FILTERS = [
    view(now=at(days=2)),
    view(USER, now=at(days=2)),
    view(SESSION, now=at(days=2)),
    view(OTHER_AGENT, now=at(days=2)),
    view(now=at(days=2), category_prefix="work"),
    view(now=at(days=2), include_archived=True),
    view(now=at(days=60)),  # entry 6 has expired too
]


def test_candidates_are_get_many_entries_as_rows(store: Store) -> None:
    _mixed(store)
    wanted = [eid(n) for n in range(1, 14)]  # 13 is unknown: skipped, as by get_many
    for flt in FILTERS:
        entries = sorted(store.facts.get_many(wanted, flt), key=lambda e: e.id)
        rows = sorted(store.facts.candidates(wanted, flt), key=lambda r: r.id)
        assert entries, f"{flt} lets something through"
        assert rows == _as_candidates(entries), flt


def test_candidates_keep_times_and_metadata_exactly(store: Store) -> None:
    _mixed(store)
    (row,) = store.facts.candidates([eid(2)], view())
    meta = {"subjectTime": "2026-01-05", "source": "user", "nested": {"a": [1]}, "thread": "t1", "position": 2}
    assert row.metadata == meta
    (row,) = store.facts.candidates([eid(1)], view())
    assert (row.created_at, row.last_seen_at) == (at(days=3), at(days=4))
    assert store.facts.candidates([], view()) == []


def test_neighbour_candidates_are_the_neighbours_as_rows(store: Store) -> None:
    _mixed(store)
    keys = [("t1", p) for p in range(0, 15)] + [("t2", 1)]
    for flt in FILTERS:
        entries = sorted(store.facts.neighbours(keys, flt), key=lambda e: e.id)
        assert sorted(store.facts.neighbour_candidates(keys, flt), key=lambda r: r.id) == _as_candidates(entries)
    assert store.facts.neighbour_candidates([], view()) == []


def test_candidates_in_period_are_in_period_as_rows_in_its_order(store: Store) -> None:
    _mixed(store)
    for flt in FILTERS:
        for limit in (0, 2, 50):
            entries = store.facts.in_period(flt, "2026-01-01", "2026-01-31", limit)
            found = store.facts.candidates_in_period(flt, "2026-01-01", "2026-01-31", limit)
            assert found == _as_candidates(entries), (flt, limit)
