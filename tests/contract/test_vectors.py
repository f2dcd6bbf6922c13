"""The vector and meta repositories of the storage contract."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from reverie.storage.base import PurgeRule, Store
from reverie.types import Change, Scope

from .support import AGENT, T0, at, eid, entry


def vec(*values: float) -> bytes:
    return np.array(values, dtype=np.float32).tobytes()


def test_put_many_writes_only_vectors_of_current_text(store: Store) -> None:
    store.facts.add(entry(1, "current text"), at=T0)
    written = store.vectors.put_many(
        [(eid(1), "current text", vec(1, 0)), (eid(1), "stale text", vec(0, 1)), (eid(9), "gone", vec(1, 1))],
        model="m",
        dim=2,
        at=T0,
    )
    assert written == 1
    assert store.vectors.counts() == {"m": 1}
    snap = store.vectors.snapshot(AGENT.agent_id, "m")
    assert snap.vectors == [(eid(1), vec(1, 0))]


def test_pending_lists_entries_without_a_vector_of_the_model_in_order_with_a_cursor(store: Store) -> None:
    for n in range(1, 5):
        store.facts.add(entry(n, f"text {n}"), at=T0)
    store.vectors.put_many([(eid(2), "text 2", vec(1, 0))], model="m", dim=2, at=T0)
    first = store.vectors.pending("m", 2)
    assert [fid for _, fid, _ in first] == [eid(1), eid(3)]
    assert [text for _, _, text in first] == ["text 1", "text 3"]
    rest = store.vectors.pending("m", 10, after=first[-1][0])
    assert [fid for _, fid, _ in rest] == [eid(4)]
    assert [fid for _, fid, _ in store.vectors.pending("other-model", 10)] == [eid(n) for n in range(1, 5)]


def test_changes_replays_writes_and_drops_after_a_watermark(store: Store) -> None:
    store.facts.add(entry(1, "one"), at=T0)
    store.facts.add(entry(2, "two"), at=T0)
    store.vectors.put_many([(eid(1), "one", vec(1, 0)), (eid(2), "two", vec(0, 1))], model="m", dim=2, at=T0)
    mark = store.vectors.snapshot(AGENT.agent_id, "m").watermark
    assert store.vectors.changes(AGENT.agent_id, "m", mark).vectors == []
    # An edit drops the vector (the text changed); a new vector replaces it later.
    store.facts.write(replace(entry(1, "one, rewritten"), updated_at=at(hours=1)), change=Change.EDITED, at=T0)
    dropped = store.vectors.changes(AGENT.agent_id, "m", mark)
    assert dropped.vectors == [(eid(1), None)] and dropped.watermark > mark
    store.vectors.put_many([(eid(1), "one, rewritten", vec(0.6, 0.8))], model="m", dim=2, at=T0)
    again = store.vectors.changes(AGENT.agent_id, "m", dropped.watermark)
    assert again.vectors == [(eid(1), vec(0.6, 0.8))]


def test_a_reinforcement_or_archive_keeps_the_vector(store: Store) -> None:
    store.facts.add(entry(1, "stable"), at=T0)
    store.vectors.put_many([(eid(1), "stable", vec(1, 0))], model="m", dim=2, at=T0)
    store.facts.write(replace(entry(1, "stable"), archived_at=at(days=1)), change=Change.ARCHIVED, at=T0)
    assert store.vectors.counts() == {"m": 1}


def test_purge_removes_the_vector_and_logs_the_drop(store: Store) -> None:
    store.facts.add(entry(1, "old", archived_at=T0), at=T0)
    store.vectors.put_many([(eid(1), "old", vec(1, 0))], model="m", dim=2, at=T0)
    mark = store.vectors.snapshot(AGENT.agent_id, "m").watermark
    store.facts.purge(PurgeRule(archived_before=at(days=1), protect_importance=0.8, protect_reinforcement=5))
    assert store.vectors.counts() == {}
    assert store.vectors.changes(AGENT.agent_id, "m", mark).vectors == [(eid(1), None)]


def test_vectors_are_per_agent(store: Store) -> None:
    store.facts.add(entry(1, "mine"), at=T0)
    store.facts.add(entry(2, "theirs", scope=Scope(agent_id="b")), at=T0)
    store.vectors.put_many([(eid(1), "mine", vec(1, 0)), (eid(2), "theirs", vec(0, 1))], model="m", dim=2, at=T0)
    assert [fid for fid, _ in store.vectors.snapshot(AGENT.agent_id, "m").vectors] == [eid(1)]
    assert [fid for fid, _ in store.vectors.snapshot("b", "m").vectors] == [eid(2)]
    assert store.vectors.changes("b", "m", 0).vectors == [(eid(2), vec(0, 1))]


def test_meta_get_and_set(store: Store) -> None:
    assert store.meta.get("embedding_model") is None
    store.meta.set("embedding_model", "m1")
    store.meta.set("embedding_model", "m2")
    assert store.meta.get("embedding_model") == "m2"
