"""Keyset pages of knowledge-graph relations on both backends: ``GraphRepository.relations_page`` in code-point
id order, and ``KnowledgeGraph.relations_page`` walking a filtered listing by cursor. A walk with relations
added between its pages sees every relation that matched for the whole walk exactly once; another agent's,
another entity's and invalidated relations never appear (unless asked); a cursor is refused by another listing."""

from __future__ import annotations

import pytest

from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.graph.service import KnowledgeGraph
from reverie.storage.base import Store
from reverie.types import Relation

from .support import T0

AGENT = "agent-a"


def relation(n: int, *, agent: str = AGENT, source: str = "a", invalid: bool = False) -> Relation:
    # Mixed-case ids test code-point order (upper case first); one creation time for all.
    return Relation(
        agent_id=agent,
        relation_id=f"{'Rr'[n % 2]}{n:05d}",
        source_id=source,
        relation="knows",
        target_id=f"t{n}",
        created_at=T0,
        invalid_at=T0 if invalid else None,
    )


def test_a_relation_walk_with_relations_added_between_pages_misses_and_repeats_nothing(store: Store) -> None:
    initial = [relation(n) for n in range(90)]
    for r in initial:
        store.graph.add_relation(r)
    store.graph.add_relation(relation(5000, agent="agent-b"))
    store.graph.add_relation(relation(5001, source="other"))
    store.graph.add_relation(relation(5003, invalid=True))
    seen: list[str] = []
    after = None
    extra = 1000
    while True:
        page = store.graph.relations_page(AGENT, entity_id="a", after=after, limit=20)
        ids = [r.relation_id for r in page]
        assert ids == sorted(ids)
        seen.extend(ids)
        if len(page) < 20:
            break
        after = ids[-1]
        extra += 1
        store.graph.add_relation(relation(extra))
    assert len(seen) == len(set(seen))
    assert {r.relation_id for r in initial} <= set(seen)
    assert not {"R05000", "r05001", "r05003"} & set(seen)
    every = store.graph.relations_page(AGENT, include_invalid=True, after=None, limit=1000)
    assert {"r05001", "r05003"} <= {r.relation_id for r in every}


def test_the_service_walks_relations_by_cursor(store: Store) -> None:
    graph = KnowledgeGraph(store, FakeClock(T0))
    made = {
        graph.add_relation(AGENT, "person:Ana", "knows", f"person:P{n}").triple.relation.relation_id for n in range(7)
    }
    graph.add_relation(AGENT, "person:Bo", "knows", "person:P1")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = graph.relations_page(AGENT, from_ref="person:Ana", cursor=cursor, limit=3)
        assert len(page.items) <= 3
        seen.extend(t.relation.relation_id for t in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == sorted(made)
    first = graph.relations_page(AGENT, from_ref="person:Ana", limit=3)
    assert first.next_cursor is not None
    with pytest.raises(ValidationError) as refused:
        graph.relations_page(AGENT, from_ref="person:Bo", cursor=first.next_cursor, limit=3)
    assert refused.value.field == "cursor"
    with pytest.raises(ValidationError):
        graph.relations_page(AGENT, cursor="not a cursor")
