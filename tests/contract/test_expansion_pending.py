"""FactRepository's expansion queue: the ``expand_pending`` flag round-trips, and ``expansion_pending`` lists
flagged entries of every scope in insertion order with a cursor."""

from __future__ import annotations

from dataclasses import replace

from reverie.storage.base import Store
from reverie.types import Change, Scope

from .support import AGENT, T0, at, eid, entry


def test_the_flag_round_trips_through_add_and_write_without_a_version(store: Store) -> None:
    e = entry(1, "to expand", expand_pending=True)
    store.facts.add(e, at=T0)
    assert store.facts.get(e.id, AGENT) == e
    store.facts.write(replace(e, expand_pending=False), change=Change.HOUSEKEEPING, at=at(hours=1))
    got = store.facts.get(e.id, AGENT)
    assert got is not None and not got.expand_pending
    assert [v.change for v in store.versions.history(e.id, AGENT)] == [Change.CREATED]  # bookkeeping: no version row


def test_expansion_pending_lists_flagged_entries_of_every_scope_in_insertion_order(store: Store) -> None:
    store.facts.add(entry(9, "first, other agent", scope=Scope("agent-b"), expand_pending=True), at=T0)
    store.facts.add(entry(2, "not flagged"), at=T0)
    store.facts.add(entry(5, "archived, flagged", archived_at=T0, expand_pending=True), at=T0)
    store.facts.add(entry(1, "user-scoped", scope=Scope(user_id="u1"), expand_pending=True), at=T0)
    listed = store.facts.expansion_pending(10)
    assert [fact_id for _, fact_id in listed] == [eid(9), eid(5), eid(1)]
    positions = [position for position, _ in listed]
    assert positions == sorted(positions)


def test_expansion_pending_pages_with_a_cursor_and_forgets_cleared_entries(store: Store) -> None:
    with store.transaction():
        for n in range(1, 8):
            store.facts.add(entry(n, f"fact {n}", expand_pending=True), at=T0)
    first = store.facts.expansion_pending(3)
    assert [fact_id for _, fact_id in first] == [eid(1), eid(2), eid(3)]
    rest = store.facts.expansion_pending(10, after=first[-1][0])
    assert [fact_id for _, fact_id in rest] == [eid(n) for n in range(4, 8)]
    done = store.facts.get(eid(4), AGENT)
    assert done is not None
    store.facts.write(replace(done, expand_pending=False), change=Change.HOUSEKEEPING, at=T0)
    assert eid(4) not in [fact_id for _, fact_id in store.facts.expansion_pending(10)]
    assert store.facts.expansion_pending(10, after=rest[-1][0]) == []
