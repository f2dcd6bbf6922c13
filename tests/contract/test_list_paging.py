"""Keyset pages of the other lists on both backends: sessions (``SessionRepository.page``), dream runs
(``DreamRepository.runs_page``) and knowledge-graph entities (``GraphRepository.entities_page``). A walk with
rows added and removed between its pages sees every row that existed for the whole walk exactly once; ids sort
in code-point order, and another agent's rows never appear."""

from __future__ import annotations

import random
from dataclasses import replace

from reverie.storage.base import Store
from reverie.types import Change, DreamRun, Entity, Scope, SessionRecord

from .support import T0, at, entry

AGENT = "agent-a"


def session(n: int, agent_id: str = AGENT) -> SessionRecord:
    # Ten creation times for all: the id breaks the many ties. Mixed case and digits test code-point order.
    return SessionRecord(
        agent_id=agent_id,
        session_id=f"{'Sb'[n % 2]}-{n:04d}",
        created_at=at(minutes=n % 10),
        last_active_at=T0,
        started_at=T0,
    )


def test_a_session_walk_with_writes_between_pages_misses_and_repeats_nothing(store: Store) -> None:
    initial = [session(n) for n in range(300)]
    for s in initial:
        store.sessions.create(s)
    store.sessions.create(session(1, agent_id="agent-b"))
    rng = random.Random(3)
    deleted: set[str] = set()
    seen: list[str] = []
    after = None
    extra = 1000
    while True:
        page = store.sessions.page(AGENT, after, 40)
        seen.extend(s.session_id for s in page)
        if len(page) < 40:
            break
        last = page[-1]
        after = (last.created_at.isoformat(), last.session_id)
        for _ in range(3):  # new sessions dated among the walked ones, and deletions ahead and behind
            extra += 1
            store.sessions.create(session(extra))
        for victim in rng.sample(initial, 3):
            store.sessions.mark_deleted(AGENT, victim.session_id, at(days=1))
            deleted.add(victim.session_id)
    assert len(seen) == len(set(seen))
    assert {s.session_id for s in initial} - deleted <= set(seen)


def test_session_pages_are_newest_first_then_by_id_descending(store: Store) -> None:
    for n in range(12):
        store.sessions.create(session(n))
    first = store.sessions.page(AGENT, None, 5)
    keys = [(s.created_at, s.session_id) for s in first]
    assert keys == sorted(keys, reverse=True)
    rest = store.sessions.page(AGENT, (first[-1].created_at.isoformat(), first[-1].session_id), 100)
    assert len(first) + len(rest) == 12
    assert all((s.created_at, s.session_id) < keys[-1] for s in rest)
    store.sessions.mark_deleted(AGENT, first[0].session_id, at(days=1))
    assert first[0].session_id not in {s.session_id for s in store.sessions.page(AGENT, None, 100)}
    assert replace(first[1]) in store.sessions.page(AGENT, None, 100)


def dream_run(n: int, agent_id: str = AGENT) -> DreamRun:
    return DreamRun(
        run_id=f"{'Rq'[n % 2]}-{n:04d}",
        agent_id=agent_id,
        trigger="manual",
        started_at=at(hours=n % 7),
        phase="completed",
    )


def test_a_dream_run_walk_with_runs_recorded_between_pages_misses_and_repeats_nothing(store: Store) -> None:
    initial = [dream_run(n) for n in range(120)]
    for r in initial:
        store.dream.save_run(r)
    store.dream.save_run(dream_run(5000, agent_id="agent-b"))  # run ids are unique across agents
    seen: list[str] = []
    after = None
    extra = 1000
    while True:
        page = store.dream.runs_page(AGENT, after, 25)
        seen.extend(r.run_id for r in page)
        keys = [(r.started_at, r.run_id) for r in page]
        assert keys == sorted(keys, reverse=True)
        if len(page) < 25:
            break
        after = (page[-1].started_at.isoformat(), page[-1].run_id)
        extra += 1
        store.dream.save_run(dream_run(extra))  # dated among the walked runs
    assert len(seen) == len(set(seen))
    assert {r.run_id for r in initial} <= set(seen)
    every_agent = store.dream.runs_page(None, None, 1000)
    assert any(r.agent_id == "agent-b" for r in every_agent)


def entity(n: int, kind: str = "person") -> Entity:
    return Entity(
        agent_id=AGENT, entity_id=f"{'Ee'[n % 2]}{n:05d}", type=kind, name=f"name {n}", key=f"name {n}", created_at=T0
    )


def test_an_entity_walk_with_entities_added_between_pages_misses_and_repeats_nothing(store: Store) -> None:
    initial = [entity(n) for n in range(150)]
    for e in initial:
        store.graph.add_entity(e)
    store.graph.add_entity(entity(9999, kind="place"))
    seen: list[str] = []
    after = None
    extra = 1000
    while True:
        page = store.graph.entities_page(AGENT, type="person", after=after, limit=20)
        ids = [e.entity_id for e in page]
        assert ids == sorted(ids)  # code-point order: upper case before lower case
        seen.extend(ids)
        if len(page) < 20:
            break
        after = ids[-1]
        extra += 1
        store.graph.add_entity(entity(extra))
    assert len(seen) == len(set(seen))
    assert {e.entity_id for e in initial} <= set(seen)
    assert entity(9999).entity_id not in seen


def test_a_version_walk_with_edits_between_pages_sees_every_version_once(store: Store) -> None:
    first = entry(1, "version 1")
    store.facts.add(first, at=T0)
    for n in range(2, 31):
        store.facts.write(replace(first, content=f"version {n}"), change=Change.EDITED, at=at(minutes=n))
    seen: list[int] = []
    after = None
    n = 31
    while True:
        page = store.versions.page(first.id, Scope(), after, 7)
        seen.extend(v.version for v in page)
        if len(page) < 7:
            break
        after = page[-1].version
        store.facts.write(replace(first, content=f"version {n}"), change=Change.EDITED, at=at(minutes=n))
        n += 1
    assert seen == list(range(1, n))
    assert store.versions.page(first.id, Scope(agent_id="someone-else"), None, 100) == []
