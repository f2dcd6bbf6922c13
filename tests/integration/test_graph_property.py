"""The issue's property, on both backends: over random graphs (entities named with case and spacing variants of
a few names, random relations between them) and random sequences of merges, interleaved, no relation is ever
lost. After every step, every relation stored before is still stored, and each of its ends still resolves
(following ``merged_into``) to the entity its old end resolves to now; no relation points at a merged entity;
and a refused merge changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reverie
from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.types import Relation

NAMES = ("Ana", "Bob", "Cy Lee", "Dee")
TYPES = ("person", "company", "thing")
RELATIONS = ("knows", "works_at", "likes", "lives_in")
EXAMPLES = {"sqlite": 50, "postgresql": 25}


@st.composite
def spelling(draw: st.DrawFn) -> str:
    """A name from the pool, spelt with random case and spacing ("  cY   lEE ")."""
    name = draw(st.sampled_from(NAMES))
    cased = "".join(c.upper() if draw(st.booleans()) else c.lower() for c in name)
    inner = cased.replace(" ", " " * draw(st.integers(1, 3)))
    return " " * draw(st.integers(0, 2)) + inner + " " * draw(st.integers(0, 2))


@st.composite
def reference(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(TYPES))
    name = draw(spelling())
    return name if kind == "thing" and draw(st.booleans()) else f"{kind}:{name}"


STEP = st.one_of(
    st.tuples(st.just("entity"), st.sampled_from(TYPES), spelling()),
    st.tuples(st.just("relation"), reference(), st.sampled_from(RELATIONS), reference()),
    st.tuples(st.just("relation"), reference(), st.sampled_from(RELATIONS), reference()),
    st.tuples(st.just("merge"), st.integers(0, 30), st.integers(0, 30)),
    st.tuples(st.just("merge"), st.integers(0, 30), st.integers(0, 30)),
)


@pytest.fixture(params=sorted(EXAMPLES))
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, reverie.Reverie]]:
    options: dict[str, Any] = {"clock": FakeClock(), "embedding": {"provider": "none"}}
    if request.param == "sqlite":
        rv = reverie.open(tmp_path / "home", **options)
    else:
        monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))
        rv = reverie.open(request.getfixturevalue("pg_url"), **options)
    try:
        yield request.param, rv
    finally:
        rv.close()


class Checker:
    """Reads the stored graph of one agent straight from the store."""

    def __init__(self, rv: reverie.Reverie, agent: str) -> None:
        self.graph = rv.store.graph
        self.store = rv.store
        self.agent = agent
        self.entity_ids: list[str] = []  # every entity ever created, merged ones too, in creation order
        self._finals: dict[str, str] = {}

    def relations(self) -> dict[str, Relation]:
        return {r.relation_id: r for r in self.graph.relations(self.agent, include_invalid=True, limit=100_000)}

    def final(self, entity_id: str) -> str:
        """Where ``entity_id`` ends up following ``merged_into`` (memoised until ``forget``)."""
        path: list[str] = []
        while entity_id not in self._finals:
            assert entity_id not in path, f"merged_into cycle at {entity_id}"
            path.append(entity_id)
            entity = self.graph.get_entity(self.agent, entity_id)
            assert entity is not None, f"entity {entity_id} vanished"
            if entity.merged_into is None:
                self._finals[entity_id] = entity_id
                break
            entity_id = entity.merged_into
        for step in path:
            self._finals[step] = self._finals[entity_id]
        return self._finals[entity_id]

    def forget(self) -> None:
        self._finals = {}

    def note_entities(self) -> None:
        ids = {e.entity_id for e in self.graph.list_entities(self.agent, limit=100_000, include_archived=True)}
        for rel in self.relations().values():
            ids.update((rel.source_id, rel.target_id))
        self.entity_ids.extend(sorted(ids - set(self.entity_ids)))

    def rows(self) -> tuple[list[str], ...]:
        return tuple(sorted(map(repr, self.store.export_rows(t))) for t in ("kg_entities", "kg_relations"))


def _apply(rv: reverie.Reverie, checker: Checker, step: tuple[Any, ...]) -> None:
    kind, *args = step
    agent = checker.agent
    if kind in ("entity", "relation"):
        before = checker.rows()
        try:
            if kind == "entity":
                rv.graph.add_entity(agent, args[0], args[1])
            else:
                rv.graph.add_relation(agent, args[0], args[1], args[2], sources=[f"e{len(checker.entity_ids)}"])
        except ValidationError:  # a bare name that became ambiguous, or both ends of a relation one entity
            assert checker.rows() == before, f"a refused {kind} changed the store"
    else:
        if not checker.entity_ids:
            return
        keep = checker.entity_ids[args[0] % len(checker.entity_ids)]
        dup = checker.entity_ids[args[1] % len(checker.entity_ids)]
        before = checker.rows()
        try:
            rv.graph.merge_entities(agent, keep, dup)
        except ValidationError:
            assert checker.rows() == before, "a refused merge changed the store"


@pytest.mark.slow
def test_merges_never_lose_a_relation(engine: tuple[str, reverie.Reverie]) -> None:
    backend, rv = engine

    @settings(
        max_examples=EXAMPLES[backend],
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(steps=st.lists(STEP, min_size=4, max_size=25))
    def run(steps: list[tuple[Any, ...]]) -> None:
        checker = Checker(rv, f"agent-{uuid.uuid4().hex[:10]}")  # a fresh graph for every example
        for step in steps:
            before = checker.relations()
            _apply(rv, checker, step)
            checker.forget()
            checker.note_entities()
            after = checker.relations()
            assert set(before) <= set(after), f"{step} lost relations {set(before) - set(after)}"
            for rid, old in before.items():
                new = after[rid]
                assert checker.final(new.source_id) == checker.final(old.source_id), (step, rid)
                assert checker.final(new.target_id) == checker.final(old.target_id), (step, rid)
            for rel in after.values():  # every relation was re-pointed: none hangs on a merged entity
                assert checker.final(rel.source_id) == rel.source_id and checker.final(rel.target_id) == rel.target_id
        # Identity held throughout: one live entity per (type, key).
        live = rv.store.graph.list_entities(checker.agent, limit=100_000)
        assert len({(e.type, e.key) for e in live}) == len(live)

    run()
