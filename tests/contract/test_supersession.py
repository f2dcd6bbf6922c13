"""The storage contract for a superseded entry (a later entry contradicts it): ``superseded_by`` set without
``archived_at``. Every read of current entries leaves it out, ``include_archived`` and ``get`` bring it back,
and the searchable-state log tells in-memory indexes when it leaves and when it returns."""

from __future__ import annotations

from dataclasses import replace

from reverie.storage.base import Store
from reverie.types import Change

from .support import AGENT, T0, at, eid, entry, hit_ids, ids, match, view


def _superseded(store: Store) -> None:
    store.facts.add(entry(1, "Priya is allergic to peanuts"), at=T0)
    store.facts.add(entry(2, "Priya is not allergic to peanuts", seen=at(hours=1)), at=at(hours=1))
    older = store.facts.get(eid(1), AGENT)
    assert older is not None
    store.facts.write(replace(older, superseded_by=eid(2)), change=Change.CONTRADICTED, at=at(hours=1))


def test_current_reads_leave_a_superseded_entry_out(store: Store) -> None:
    _superseded(store)
    now = view(now=at(hours=2))
    assert hit_ids(store.facts.search(match("Priya peanuts"), now, 10)) == [eid(2)]
    assert ids(store.facts.recent(now, 10)) == [eid(2)]
    assert ids(store.facts.get_many([eid(1), eid(2)], now)) == [eid(2)]
    assert ids(store.facts.search_substring("allergic", now, 10, frozenset())) == [eid(2)]
    assert [c.count for c in store.facts.taxonomy(now)] == [1]


def test_it_stays_readable_by_id_and_with_include_archived(store: Store) -> None:
    _superseded(store)
    every = view(now=at(hours=2), include_archived=True)
    assert set(hit_ids(store.facts.search(match("Priya peanuts"), every, 10))) == {eid(1), eid(2)}
    assert set(ids(store.facts.get_many([eid(1), eid(2)], every))) == {eid(1), eid(2)}
    kept = store.facts.get(eid(1), AGENT)
    assert kept is not None and kept.superseded_by == eid(2) and not kept.archived and not kept.current
    assert [v.change for v in store.versions.history(eid(1), AGENT)] == [Change.CREATED, Change.CONTRADICTED]


def test_the_text_log_tells_indexes_when_it_leaves_and_returns(store: Store) -> None:
    store.facts.add(entry(1, "Priya is allergic to peanuts"), at=T0)
    mark = store.facts.text_snapshot(AGENT.agent_id).watermark
    older = store.facts.get(eid(1), AGENT)
    assert older is not None
    store.facts.write(replace(older, superseded_by=eid(2)), change=Change.CONTRADICTED, at=at(hours=1))
    step = store.facts.text_changes(AGENT.agent_id, mark)
    assert [(fact_id, row is not None and row.archived) for fact_id, row in step.rows] == [(eid(1), True)]
    snapshot = dict(store.facts.text_snapshot(AGENT.agent_id).rows)
    assert snapshot[eid(1)] is not None and snapshot[eid(1)].archived  # not current: no live index row
    store.facts.write(replace(older, superseded_by=None), change=Change.RESTORED, at=at(hours=2))
    back = store.facts.text_changes(AGENT.agent_id, step.watermark)
    assert [(fact_id, row is not None and row.archived) for fact_id, row in back.rows] == [(eid(1), False)]
