"""The dream's knowledge-graph pass (issue 9, part 5) through real dream cycles on both backends: duplicate
entities merged with every relation kept, typed homonyms left apart, stale entities archived only past the
window and only with everything they are connected to, the change gate with its forced run, an abort
between two merges, and the pass in the run report. No LLM: the pass needs none.

Duplicates the service itself would never leave (a ``thing`` beside the typed entity of its name: imported
data, a revived archive, two writers racing) are written straight through the storage contract."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.core.graph import entity_key
from reverie.dream.passes.base import DreamStopped, PassContext, PassReport
from reverie.dream.passes.graph import PASS_NAME, GraphConsolidationPass
from reverie.types import Entity, Relation, Scope

A, B = "agent-a", "agent-b"
ALL = 1_000_000
BACKENDS = ["sqlite", "postgresql"]


def _open(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, **dream: Any
) -> reverie.Reverie:
    options: dict[str, Any] = {
        "clock": clock,
        "embedding": {"provider": "none"},
        "llm": {"provider": "none"},
        "memory": {"expansion_enabled": False},
        "dream": dream,
    }
    if backend == "sqlite":
        return reverie.open(tmp_path / "home", **options)
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))  # a URL keeps the default home: settings, logs
    return reverie.open(request.getfixturevalue("pg_url"), **options)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Any]:
    """``opener(**dream)``: an engine on this test's backend with those ``[dream]`` settings (closed after)."""
    opened: list[reverie.Reverie] = []

    def open_(**dream: Any) -> reverie.Reverie:
        opened.append(_open(backend, request, tmp_path, clock, **dream))
        return opened[-1]

    try:
        yield open_
    finally:
        for rv in opened:
            rv.close()


@pytest.fixture
def rv(opener: Any) -> reverie.Reverie:
    engine: reverie.Reverie = opener()
    return engine


# -- helpers --------------------------------------------------------------------------------------------------
_ids = iter(f"e{n:011d}" for n in range(10**9))


def entity(
    rv: reverie.Reverie,
    type_: str,
    name: str,
    *,
    agent: str = A,
    at: datetime | None = None,
    sources: tuple[str, ...] = (),
) -> Entity:
    """An entity written through the storage contract (so duplicates the service would absorb can exist)."""
    when = at or rv.clock.now()
    made = Entity(
        agent_id=agent,
        entity_id=next(_ids),
        type=type_,
        name=name,
        key=entity_key(name),
        properties={"from": type_},
        created_at=when,
        updated_at=when,
        last_seen_at=when,
        sources=sources,
    )
    rv.store.graph.add_entity(made)
    return made


def relate(
    rv: reverie.Reverie,
    source: Entity,
    relation: str,
    target: Entity,
    *,
    at: datetime | None = None,
    invalid: bool = False,
) -> Relation:
    when = at or rv.clock.now()
    made = Relation(
        agent_id=source.agent_id,
        relation_id=next(_ids).replace("e", "r", 1),
        source_id=source.entity_id,
        relation=relation,
        target_id=target.entity_id,
        valid_from=when,
        invalid_at=when if invalid else None,
        created_at=when,
    )
    rv.store.graph.add_relation(made)
    return made


def relations(rv: reverie.Reverie, agent: str = A) -> dict[str, Relation]:
    """Every relation of the agent, invalid ones included, by id."""
    return {r.relation_id: r for r in rv.store.graph.relations(agent, include_invalid=True, limit=ALL)}


def stored(rv: reverie.Reverie, e: Entity) -> Entity:
    found = rv.store.graph.get_entity(e.agent_id, e.entity_id)
    assert found is not None
    return found


def live_ids(rv: reverie.Reverie, agent: str = A) -> set[str]:
    return {e.entity_id for e in rv.store.graph.list_entities(agent, limit=ALL)}


def dream(rv: reverie.Reverie, agent: str = A) -> PassReport:
    report = rv.dream.run(agent)
    assert report.phase == "completed", report
    return report.passes[PASS_NAME]


# -- duplicates --------------------------------------------------------------------------------------------
def test_a_thing_merges_into_the_typed_entity_of_its_name_and_every_relation_is_kept(rv: reverie.Reverie) -> None:
    person = entity(rv, "person", "Ana")
    thing = entity(rv, "thing", "ana")
    bob, acme, carol, lisbon = (entity(rv, t, n) for t, n in (("person", "Bob"), ("company", "Acme"),
                                                             ("person", "Carol"), ("city", "Lisbon")))  # fmt: skip
    kept_rels = [
        relate(rv, thing, "knows", bob),
        relate(rv, thing, "works_at", acme, invalid=True),  # history moves too
        relate(rv, carol, "mentors", thing),
        relate(rv, person, "lives_in", lisbon),
    ]
    twin = relate(rv, person, "knows", bob)  # the thing's "knows bob" becomes a copy of it
    before = relations(rv)
    report = dream(rv)
    assert report.status == "ran"
    assert report.counts["merged"] == 1 and report.counts["relations_moved"] == 3
    assert report.counts["entities"] == 6 and report.counts["kept"] == 5 and report.counts["archived"] == 0
    assert report.summary.startswith("graph consolidation — 6 entities, merged 1 (3 relations re-pointed)")
    after = relations(rv)
    assert set(after) == set(before)  # not one relation lost
    assert all(thing.entity_id not in (r.source_id, r.target_id) for r in after.values())
    assert stored(rv, thing).merged_into == person.entity_id
    assert rv.graph.resolve(A, "ana").entity_id == person.entity_id
    assert stored(rv, person).properties == {"from": "person"}  # the kept entity's values win
    copy = after[kept_rels[0].relation_id]
    assert copy.invalid_at is not None and copy.properties["duplicate_of"] == twin.relation_id
    assert after[kept_rels[2].relation_id].target_id == person.entity_id
    assert after[kept_rels[1].relation_id].invalid_at is not None


def test_merges_over_a_random_graph_keep_every_relation_and_its_ends(rv: reverie.Reverie) -> None:
    rng = random.Random(9)
    names = [f"n{i}" for i in range(30)]
    survivors: dict[str, str] = {}  # entity id -> the id it must end up as
    pool: list[Entity] = []
    for name in names:
        typed = entity(rv, rng.choice(["person", "place", "company"]), name) if rng.random() < 0.7 else None
        thing = entity(rv, "thing", name) if typed is None or rng.random() < 0.6 else None
        for made in (typed, thing):
            if made is not None:
                pool.append(made)
                survivors[made.entity_id] = (typed or made).entity_id
    for _ in range(90):
        source, target = rng.sample(pool, 2)
        relate(rv, source, rng.choice(["knows", "likes", "works_at", "near"]), target, invalid=rng.random() < 0.2)
    before = relations(rv)
    report = dream(rv)
    duplicates = sum(1 for e in pool if survivors[e.entity_id] != e.entity_id)
    assert duplicates > 5 and report.counts["merged"] == duplicates
    after = relations(rv)
    assert set(after) == set(before)
    for rid, old in before.items():
        new = after[rid]
        assert (new.source_id, new.relation, new.target_id) == (
            survivors[old.source_id],
            old.relation,
            survivors[old.target_id],
        )
    assert live_ids(rv) == set(survivors.values())


def test_typed_homonyms_stay_apart_unless_their_types_are_grouped(opener: Any) -> None:
    rv = opener(graph_merge_types=[["company", "organization"]])
    apple_co, apple_fruit = entity(rv, "company", "Apple"), entity(rv, "fruit", "apple")
    apple = entity(rv, "thing", "APPLE")
    org = entity(rv, "organization", "Acme")  # older, but "company" comes first in the group
    rv.clock.advance(hours=1)
    company = entity(rv, "company", "ACME")
    link = relate(rv, org, "based_in", entity(rv, "city", "Porto"))
    report = dream(rv)
    assert report.counts["merged"] == 1
    assert report.counts["homonyms"] == 1 and report.counts["ambiguous"] == 1  # apple: two types, and a thing
    assert {apple_co.entity_id, apple_fruit.entity_id, apple.entity_id} <= live_ids(rv)
    assert stored(rv, org).merged_into == company.entity_id
    assert relations(rv)[link.relation_id].source_id == company.entity_id
    assert stored(rv, company).created_at == org.created_at  # the merge keeps the earliest


def test_without_grouped_types_two_typed_entities_of_one_name_are_never_merged(rv: reverie.Reverie) -> None:
    entity(rv, "organization", "Acme")
    entity(rv, "company", "Acme")
    entity(rv, "person", "acme corp")  # a near-duplicate name: never merged deterministically
    entity(rv, "thing", "acme corp")
    report = dream(rv)
    assert report.counts["merged"] == 1  # only the thing "acme corp"
    assert report.counts["homonyms"] == 1 and report.counts["kept"] == 3


def test_one_agents_dream_leaves_another_agents_graph_alone(rv: reverie.Reverie) -> None:
    entity(rv, "person", "Ana", agent=B)
    thing = entity(rv, "thing", "ana", agent=B)
    entity(rv, "person", "Ana")
    entity(rv, "thing", "ana")
    assert dream(rv).counts["merged"] == 1
    assert stored(rv, thing).merged_into is None
    assert dream(rv, B).counts["merged"] == 1
    assert stored(rv, thing).merged_into is not None


# -- staleness -------------------------------------------------------------------------------------------------
def test_an_unseen_entity_is_archived_only_past_the_window_and_a_mention_revives_it(opener: Any) -> None:
    rv = opener(change_gate_enabled=False)
    atlantis = rv.graph.add_entity(A, "place", "Atlantis", sources=["unknown-entry"]).entity
    rv.clock.advance(days=180, seconds=-1)
    report = dream(rv)
    assert report.counts["stale"] == 0 and report.counts["archived"] == 0
    assert atlantis.entity_id in live_ids(rv)
    rv.clock.advance(seconds=2)
    report = dream(rv)
    assert report.counts["stale"] == 1 and report.counts["archived"] == 1 and report.counts["kept"] == 0
    assert live_ids(rv) == set()
    archived = stored(rv, atlantis)
    assert archived.archived_at == rv.clock.now() and archived.sources == ("unknown-entry",)
    assert rv.graph.resolve(A, "place:atlantis").entity_id == atlantis.entity_id  # still readable by name
    revived = rv.graph.add_entity(A, "place", "Atlantis").entity  # mentioned again: back, same entity
    assert revived.entity_id == atlantis.entity_id and revived.archived_at is None
    assert atlantis.entity_id in live_ids(rv)


def test_an_entity_related_to_a_live_one_or_with_a_live_source_is_kept(opener: Any) -> None:
    """The notes name no one, so extraction from saved entries (when on) adds nothing to this graph."""
    rv = opener(change_gate_enabled=False, forget_enabled=False)
    start = rv.clock.now()
    note = rv.memory.save("a note about the trip, kept for later", scope=Scope(agent_id=A))
    gone = rv.memory.save("an old remark, since archived", scope=Scope(agent_id=A))
    rv.memory.archive(gone.id, scope=Scope(agent_id=A))
    other = rv.memory.save("the other agent's own note", scope=Scope(agent_id=B))
    ana, atlantis = entity(rv, "person", "Ana"), entity(rv, "place", "Atlantis")
    relate(rv, ana, "visited", atlantis)
    sourced = entity(rv, "place", "Shangri-La", sources=(note.id,))
    dorado = entity(rv, "place", "El Dorado", sources=(gone.id, other.id))  # archived, and another agent's
    lemuria, mu = entity(rv, "continent", "Lemuria"), entity(rv, "continent", "Mu")
    relate(rv, lemuria, "near", mu)  # a group of two stale entities: archived together
    hub = entity(rv, "person", "Zed")
    relate(rv, lemuria, "studied_by", hub, invalid=True)  # an invalid relation keeps nothing
    avalon, camelot = entity(rv, "place", "Avalon"), entity(rv, "place", "Camelot")
    rv.clock.advance(days=200)
    relate(rv, avalon, "near", camelot, at=rv.clock.now())  # learned within the window: both kept
    rv.graph.add_entity(A, "person", "Ana")  # seen again: fresh
    rv.graph.add_entity(A, "person", "Zed")
    report = dream(rv)
    archived = {e.entity_id for e in rv.store.graph.list_entities(A, include_archived=True, limit=ALL)} - live_ids(rv)
    assert archived == {dorado.entity_id, lemuria.entity_id, mu.entity_id}
    assert report.counts["archived"] == 3
    assert report.counts["stale"] == 4 and report.counts["protected"] == 1  # Atlantis, held by Ana
    assert {ana.entity_id, atlantis.entity_id, sourced.entity_id, avalon.entity_id, camelot.entity_id} <= live_ids(rv)
    assert stored(rv, lemuria).archived_at == start + timedelta(days=200)
    assert len(relations(rv)) == 4  # archiving touches no relation


def test_a_group_touched_since_the_scan_is_left_for_the_next_run(rv: reverie.Reverie, clock: FakeClock) -> None:
    """The archive re-reads the group in its transaction: a member that changed under the pass is kept."""
    old = entity(rv, "place", "Atlantis")
    clock.advance(days=181)
    dream_pass = next(p for p in rv.dream.passes if isinstance(p, GraphConsolidationPass))
    touched = False

    def checkpoint() -> None:  # runs before each archived group: a mention lands between scan and write
        nonlocal touched
        if not touched:
            touched = True
            rv.graph.add_entity(A, "place", "Atlantis")

    report = dream_pass.run(_context(rv, checkpoint))
    assert report.counts["archived"] == 0 and report.counts["skipped"] == 1
    assert old.entity_id in live_ids(rv)


# -- the change gate ---------------------------------------------------------------------------------------
def test_the_change_gate_skips_an_unchanged_graph_and_the_forced_run_catches_staleness(opener: Any) -> None:
    rv = opener(graph_stale_days=3)
    ghost = entity(rv, "place", "Atlantis")
    entity(rv, "person", "Ana")
    thing = entity(rv, "thing", "ana")
    rv.clock.advance(days=1)
    first = dream(rv)
    assert first.status == "ran" and first.counts["merged"] == 1 and first.counts["archived"] == 0
    rv.clock.advance(hours=1)
    second = dream(rv)  # the merge changed the graph since the stamp: one more run finds it settled
    assert second.status == "ran" and second.counts["merged"] == 0
    rv.clock.advance(hours=1)
    third = dream(rv)
    assert third.status == "skipped" and third.reason.startswith("change gate: unchanged since")
    rv.clock.advance(days=3)  # Atlantis is stale now, but the graph did not change: the gate still holds
    assert dream(rv).status == "skipped"
    assert ghost.entity_id in live_ids(rv)
    bob = entity(rv, "person", "Bob")  # a change opens the gate at once
    changed = dream(rv)
    assert changed.status == "ran" and changed.reason == "the corpus changed"
    assert changed.counts["archived"] == 2 and live_ids(rv) == {bob.entity_id}  # Atlantis, and Ana seen at t0
    assert stored(rv, thing).merged_into is not None
    rv.clock.advance(hours=1)
    dream(rv)  # the archive changed the graph: settles
    rv.clock.advance(hours=1)
    assert dream(rv).status == "skipped"
    rv.clock.advance(days=4)  # Bob goes stale with nothing changing
    assert dream(rv).status == "skipped"
    rv.clock.advance(days=3)  # seven days since the last run: forced
    forced = dream(rv)
    assert forced.status == "ran" and "(forced)" in forced.reason
    assert forced.counts["archived"] == 1 and live_ids(rv) == set()


def test_an_agent_without_entities_runs_no_gate_and_the_pass_can_be_turned_off(opener: Any) -> None:
    rv = opener()
    report = dream(rv)
    assert report.status == "ran" and report.reason == "no entities" and report.counts["merged"] == 0
    assert rv.dream.ledger.last(A, PASS_NAME) is None
    off = opener(graph_enabled=False)
    assert PASS_NAME not in off.dream.run(A).passes


# -- abort and the run report ------------------------------------------------------------------------------
def _context(rv: reverie.Reverie, checkpoint: Any) -> PassContext:
    """The context a dream hands the pass, with the checkpoint given (the service's checks it between steps)."""
    return PassContext(
        agent_id=A,
        store=rv.store,
        clock=rv.clock,
        home=rv.settings.home,
        llm=None,
        vocabulary=rv.coverage_vocabulary(),
        ledger=rv.dream.ledger,
        embedding_model=None,
        checkpoint=checkpoint,
        wait_for_llm=lambda: None,
        report=PassReport(PASS_NAME),
    )


def test_an_abort_between_two_merges_leaves_each_whole_and_the_next_run_finishes(rv: reverie.Reverie) -> None:
    pairs = []
    for n in range(5):
        person, thing = entity(rv, "person", f"P{n}"), entity(rv, "thing", f"p{n}")
        relate(rv, thing, "knows", entity(rv, "person", f"Friend{n}"))
        pairs.append((person, thing))
    before = relations(rv)
    dream_pass = next(p for p in rv.dream.passes if isinstance(p, GraphConsolidationPass))
    calls = 0

    def checkpoint() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise DreamStopped("aborted")

    ctx = _context(rv, checkpoint)
    with pytest.raises(DreamStopped):
        dream_pass.run(ctx)
    assert ctx.report.counts["merged"] == 2
    merged = [thing for _, thing in pairs if stored(rv, thing).merged_into is not None]
    assert len(merged) == 2
    assert set(relations(rv)) == set(before)
    for rel in relations(rv).values():  # every merge done is whole: no relation points at a merged entity
        for end in (rel.source_id, rel.target_id):
            found = rv.store.graph.get_entity(A, end)
            assert found is not None and found.merged_into is None
    assert rv.dream.ledger.last(A, PASS_NAME) is None  # not stamped: the next cycle runs
    report = dream(rv)
    assert report.counts["merged"] == 3
    assert all(stored(rv, thing).merged_into == person.entity_id for person, thing in pairs)


def test_the_pass_is_in_the_run_report_and_the_history(rv: reverie.Reverie) -> None:
    entity(rv, "person", "Ana")
    entity(rv, "thing", "ana")
    report = rv.dream.run(A)
    assert report.phase == "completed"
    names = list(report.passes)  # after consolidation, before the skill passes; the auto-dream stays last
    assert names.index("consolidation") < names.index(PASS_NAME) < names.index("skill_gap")
    assert names[-1] == "agent_curation"
    assert report.passes["consolidation"].status == "skipped"  # no LLM; the graph pass needs none
    body = report.as_dict()["passes"][PASS_NAME]
    assert body["status"] == "ran" and body["llm_calls"] == 0 and body["counts"]["merged"] == 1
    assert body["summary"] == (
        "graph consolidation — 2 entities, merged 1 (0 relations re-pointed), archived 0 stale, kept 1"
    )
    (run,) = rv.dream.history(A)
    assert run.report[PASS_NAME]["counts"]["kept"] == 1
