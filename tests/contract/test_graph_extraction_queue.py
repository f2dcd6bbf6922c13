"""FactRepository's knowledge-graph extraction queue: an entry is queued once (a second queueing keeps its
place), listed in queue order across agents with a cursor, taken out once (the claim), joins the caller's
transaction, and leaves with its entry when the purge removes it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reverie.storage.base import PurgeRule, Store
from reverie.types import Scope

from .support import T0, at, eid, entry


def pending(store: Store) -> list[str]:
    return [fact_id for _, fact_id in store.facts.graph_extraction_pending(100)]


def test_a_queued_entry_is_listed_once_in_queue_order_across_agents(store: Store) -> None:
    store.facts.add(entry(1, "first"), at=T0)
    store.facts.add(entry(2, "second, other agent", scope=Scope("agent-b")), at=T0)
    store.facts.queue_graph_extraction(eid(2), "agent-b", at=T0)
    store.facts.queue_graph_extraction(eid(1), "default", at=at(minutes=1))
    store.facts.queue_graph_extraction(eid(2), "agent-b", at=at(minutes=2))  # already queued: keeps its place
    assert pending(store) == [eid(2), eid(1)]


def test_the_queue_pages_with_a_cursor(store: Store) -> None:
    for n in range(1, 6):
        store.facts.queue_graph_extraction(eid(n), "default", at=T0)
    first = store.facts.graph_extraction_pending(2)
    assert [i for _, i in first] == [eid(1), eid(2)]
    rest = store.facts.graph_extraction_pending(10, after=first[-1][0])
    assert [i for _, i in rest] == [eid(3), eid(4), eid(5)]
    assert store.facts.graph_extraction_pending(10, after=rest[-1][0]) == []
    assert store.facts.graph_extraction_pending(0) == []


def test_done_takes_an_entry_out_once_and_a_later_queueing_adds_it_again(store: Store) -> None:
    store.facts.queue_graph_extraction(eid(1), "default", at=T0)
    store.facts.queue_graph_extraction(eid(2), "default", at=T0)
    assert store.facts.graph_extraction_done(eid(1)) is True
    assert store.facts.graph_extraction_done(eid(1)) is False  # taken already
    assert store.facts.graph_extraction_done(eid(9)) is False  # never queued
    assert pending(store) == [eid(2)]
    store.facts.queue_graph_extraction(eid(1), "default", at=at(hours=1))  # saved again: queued at the end
    assert pending(store) == [eid(2), eid(1)]


def test_the_queue_joins_the_callers_transaction(store: Store) -> None:
    store.facts.queue_graph_extraction(eid(1), "default", at=T0)
    with pytest.raises(RuntimeError), store.transaction():
        store.facts.queue_graph_extraction(eid(2), "default", at=T0)
        assert store.facts.graph_extraction_done(eid(1))
        raise RuntimeError("roll back")
    assert pending(store) == [eid(1)]


def test_the_purge_takes_a_purged_entry_out_of_the_queue(store: Store) -> None:
    store.facts.add(entry(1, "archived long ago", archived_at=T0), at=T0)
    store.facts.add(entry(2, "live"), at=T0)
    for n in (1, 2):
        store.facts.queue_graph_extraction(eid(n), "default", at=T0)
    later = T0 + timedelta(days=200)
    purged, _ = store.facts.purge(
        PurgeRule(archived_before=later, protect_importance=0.9, protect_reinforcement=5, purged_at=later)
    )
    assert purged == [eid(1)]
    assert pending(store) == [eid(2)]
