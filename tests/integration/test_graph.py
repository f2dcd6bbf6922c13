"""The knowledge graph end to end on both backends: identity and merges, reinforcement, contradictions
invalidated (never deleted), paths and subgraphs, isolation between agents, validation, and the three faces
(the CLI, the HTTP API, the agent tools)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.errors import NotFound, ValidationError
from reverie.graph.service import DUPLICATE_OF, KnowledgeGraph
from reverie.tools import ToolContext, ToolRegistry

from ._api import Keys, client, make_keys, memory, serving

A, B = "agent-a", "agent-b"
BACKENDS = ["sqlite", "postgresql"]


def _open(backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, **overrides: Any) -> Any:
    options: dict[str, Any] = {"clock": clock, "embedding": {"provider": "none"}, **overrides}
    if backend == "sqlite":
        return reverie.open(tmp_path / "home", **options)
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))  # a URL keeps the default home: settings, logs
    return reverie.open(request.getfixturevalue("pg_url"), **options)


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    rv = _open(request.param, request, tmp_path, clock)
    try:
        yield rv
    finally:
        rv.close()


@pytest.fixture
def kg(engine: reverie.Reverie) -> KnowledgeGraph:
    return engine.graph


def _rows(rv: reverie.Reverie) -> tuple[Any, ...]:
    """Every row of the graph's tables (merged entities and invalid relations included)."""
    return tuple(sorted(map(repr, rv.store.export_rows(table))) for table in ("kg_entities", "kg_relations"))


# -- identity ------------------------------------------------------------------------------------------------
def test_spellings_of_a_name_are_one_entity_updated_in_place(kg: KnowledgeGraph, clock: FakeClock) -> None:
    first = kg.add_entity(A, "person", "Ana", {"role": "developer", "team": "core"}, ["e1"])
    assert first.outcome == "created" and first.entity.name == "Ana" and first.entity.key == "ana"
    clock.advance(hours=1)
    again = kg.add_entity(A, "Person", "  ana ", {"role": "lead"}, ["e2", "e1"])
    assert again.outcome == "updated" and again.entity.entity_id == first.entity.entity_id
    assert again.entity.name == "Ana"  # the display name as first given
    assert again.entity.properties == {"role": "lead", "team": "core"}
    assert again.entity.sources == ("e1", "e2")
    assert again.entity.last_seen_at == clock.now() and again.entity.created_at == clock.now() - timedelta(hours=1)
    assert [e.entity_id for e in kg.list_entities(A)] == [first.entity.entity_id]
    assert kg.resolve(A, "person:ANA").entity_id == kg.resolve(A, "ana").entity_id == first.entity.entity_id


def test_a_typed_entity_absorbs_the_untyped_thing_of_its_name(kg: KnowledgeGraph) -> None:
    rel = kg.add_relation(A, "ana", "knows", "bob", sources=["e1"]).triple
    thing = rel.source
    assert thing.type == "thing"
    person = kg.add_entity(A, "person", "Ana", {"role": "cto"})
    assert person.outcome == "created" and person.absorbed == (thing.entity_id,)
    assert person.entity.sources == ("e1",)
    (moved,) = kg.relations(A, entity_ref="person:ana")
    assert moved.relation.relation_id == rel.relation.relation_id and moved.source.entity_id == person.entity.entity_id
    assert kg.get_entity(A, thing.entity_id).entity_id == person.entity.entity_id  # reads follow merged_into
    assert kg.resolve(A, "ana").entity_id == person.entity.entity_id
    assert kg.resolve(A, "thing:ana").entity_id == person.entity.entity_id


def test_a_bare_name_is_the_one_entity_of_that_name_else_ambiguous(kg: KnowledgeGraph) -> None:
    acme = kg.add_entity(A, "company", "Acme").entity
    assert kg.resolve(A, "acme").entity_id == acme.entity_id
    kg.add_entity(A, "place", "Acme")
    with pytest.raises(ValidationError, match="company:Acme, place:Acme") as exc:
        kg.resolve(A, "ACME")
    assert exc.value.field == "ref"
    with pytest.raises(ValidationError):
        kg.add_relation(A, "ana", "works_at", "acme")
    with pytest.raises(NotFound):
        kg.resolve(A, "person:nobody")


# -- relations -----------------------------------------------------------------------------------------------
def test_an_identical_relation_is_reinforced_not_duplicated(kg: KnowledgeGraph) -> None:
    first = kg.add_relation(A, "person:Ana", "Works At", "company:Acme", {"since": 2020}, ["e1"])
    again = kg.add_relation(A, "person:ana", "works_at", "company:ACME ", {"title": "cto"}, ["e2"])
    assert (first.outcome, again.outcome) == ("created", "reinforced")
    assert again.triple.relation.relation_id == first.triple.relation.relation_id
    (only,) = kg.relations(A, include_invalid=True)
    assert only.relation.sources == ("e1", "e2") and only.relation.properties == {"since": 2020, "title": "cto"}
    assert only.relation.relation == "works_at" and only.text == "person:Ana -works_at-> company:Acme"
    entity = kg.resolve(A, "person:ana")
    assert entity.sources == ("e1", "e2")  # an endpoint learns the relation's provenance too


def test_a_contradicted_exclusive_relation_is_invalidated_not_deleted(kg: KnowledgeGraph, clock: FakeClock) -> None:
    acme = kg.add_relation(A, "person:Ana", "works_at", "company:Acme").triple.relation
    clock.advance(days=30)
    moved = kg.add_relation(A, "person:Ana", "works_at", "company:Globex")
    assert [r.relation_id for r in moved.invalidated] == [acme.relation_id]
    assert [t.target.name for t in kg.relations(A, from_ref="person:ana", relation="works_at")] == ["Globex"]
    history = kg.relations(A, from_ref="person:ana", relation="works_at", include_invalid=True)
    assert [(t.target.name, t.relation.invalid_at) for t in history] == [("Acme", clock.now()), ("Globex", None)]
    # A non-exclusive relation keeps every target.
    kg.add_relation(A, "person:Ana", "knows", "person:Bob")
    kg.add_relation(A, "person:Ana", "knows", "person:Cy")
    assert len(kg.relations(A, relation="knows")) == 2
    # Back to Acme: a new relation (the old one stays history), Globex invalidated.
    back = kg.add_relation(A, "person:Ana", "works_at", "company:Acme")
    assert back.outcome == "created" and back.triple.relation.relation_id != acme.relation_id
    assert len(kg.relations(A, relation="works_at", include_invalid=True)) == 3


def test_an_explicit_valid_from_dates_the_contradiction(kg: KnowledgeGraph, clock: FakeClock) -> None:
    start = clock.now() - timedelta(days=400)
    old = kg.add_relation(A, "person:Ana", "lives_in", "place:Porto", valid_from=start).triple.relation
    assert old.valid_from == start
    moved_on = clock.now() - timedelta(days=10)
    kg.add_relation(A, "person:Ana", "lives_in", "place:Lisbon", valid_from=moved_on)
    (porto,) = kg.relations(A, to_ref="place:porto", include_invalid=True)
    assert porto.relation.invalid_at == moved_on


def test_invalidate_relation_keeps_it_as_history(kg: KnowledgeGraph, clock: FakeClock) -> None:
    rel = kg.add_relation(A, "person:Ana", "knows", "person:Bob").triple.relation
    gone = kg.invalidate_relation(A, rel.relation_id)
    assert gone.relation.invalid_at == clock.now()
    clock.advance(hours=1)
    assert kg.invalidate_relation(A, rel.relation_id).relation.invalid_at == gone.relation.invalid_at
    assert kg.relations(A) == [] and len(kg.relations(A, include_invalid=True)) == 1
    with pytest.raises(NotFound):
        kg.invalidate_relation(B, rel.relation_id)  # another agent's id is an unknown id


# -- merges --------------------------------------------------------------------------------------------------
def test_merge_moves_every_relation_and_loses_none(engine: reverie.Reverie, kg: KnowledgeGraph) -> None:
    kg.add_relation(A, "person:Ana Lima", "works_at", "company:Acme", sources=["e1"])
    kg.add_relation(A, "person:Ana Lima", "knows", "person:Bob")
    dup_knows = kg.add_relation(A, "person:A. Lima", "knows", "person:Bob", {"since": 2019}, ["e2"]).triple
    lives = kg.add_relation(A, "person:A. Lima", "lives_in", "place:Porto").triple
    cy = kg.add_relation(A, "person:Cy", "reports_to", "person:A. Lima").triple
    keep, dup = kg.resolve(A, "person:ana lima"), dup_knows.source
    before = {r.relation_id for r in engine.store.graph.relations(A, include_invalid=True)}

    report = kg.merge_entities(A, keep.entity_id, dup.entity_id)

    after = engine.store.graph.relations(A, include_invalid=True)
    assert {r.relation_id for r in after} == before  # nothing deleted
    assert set(report.moved) == {dup_knows.relation.relation_id, lives.relation.relation_id, cy.relation.relation_id}
    assert report.duplicates == (dup_knows.relation.relation_id,)
    assert all(dup.entity_id not in (r.source_id, r.target_id) for r in after)
    (knows,) = kg.relations(A, from_ref="person:ana lima", relation="knows")
    assert knows.relation.sources == ("e2",) and knows.relation.properties == {"since": 2019}
    copy = engine.store.graph.get_relation(A, dup_knows.relation.relation_id)
    assert copy is not None and copy.invalid_at is not None
    assert copy.properties[DUPLICATE_OF] == knows.relation.relation_id
    assert {t.text for t in kg.relations(A, entity_ref="person:ana lima")} == {
        "person:Ana Lima -works_at-> company:Acme",
        "person:Ana Lima -knows-> person:Bob",
        "person:Ana Lima -lives_in-> place:Porto",
        "person:Cy -reports_to-> person:Ana Lima",
    }
    assert report.merged.merged_into == keep.entity_id
    assert kg.resolve(A, "person:a. lima").entity_id == keep.entity_id
    assert "e1" in report.entity.sources and "e2" in report.entity.sources


def test_a_merge_settles_exclusive_relations_on_the_last_learned(kg: KnowledgeGraph, clock: FakeClock) -> None:
    kg.add_relation(A, "person:Ana", "works_at", "company:Acme")
    clock.advance(days=1)
    newer = kg.add_relation(A, "person:Ana L", "works_at", "company:Globex").triple
    report = kg.merge_entities(A, kg.resolve(A, "person:ana").entity_id, newer.source.entity_id)
    assert len(report.invalidated) == 1
    assert [t.target.name for t in kg.relations(A, relation="works_at")] == ["Globex"]


def test_merge_refusals_change_nothing(engine: reverie.Reverie, kg: KnowledgeGraph) -> None:
    ana = kg.add_entity(A, "person", "Ana").entity
    bob = kg.add_entity(A, "person", "Bob").entity
    kg.merge_entities(A, ana.entity_id, bob.entity_id)
    state = _rows(engine)
    with pytest.raises(ValidationError):
        kg.merge_entities(A, ana.entity_id, ana.entity_id)
    with pytest.raises(ValidationError, match="already merged"):
        kg.merge_entities(A, ana.entity_id, bob.entity_id)
    with pytest.raises(ValidationError, match="one"):
        kg.merge_entities(A, bob.entity_id, ana.entity_id)  # bob is ana now
    with pytest.raises(NotFound):
        kg.merge_entities(B, ana.entity_id, bob.entity_id)
    with pytest.raises(NotFound):
        kg.merge_entities(A, ana.entity_id, "000000000000")
    assert _rows(engine) == state


# -- walks ---------------------------------------------------------------------------------------------------
def _company(kg: KnowledgeGraph) -> None:
    kg.add_relation(A, "person:Alice", "knows", "person:Bob")
    kg.add_relation(A, "person:Bob", "works_at", "company:Acme")
    kg.add_relation(A, "person:Carol", "works_at", "company:Acme")
    kg.add_relation(A, "company:Acme", "located_in", "place:Lisbon")
    kg.add_relation(A, "person:Dan", "knows", "person:Eve")  # another island


def test_shortest_path_in_either_direction(kg: KnowledgeGraph) -> None:
    _company(kg)
    found = kg.path(A, "person:alice", "company:acme")
    assert found is not None
    assert [t.text for t in found.triples] == [
        "person:Alice -knows-> person:Bob",
        "person:Bob -works_at-> company:Acme",
    ]
    assert [e.name for e in found.entities] == ["Alice", "Bob", "Acme"]
    back = kg.path(A, "place:lisbon", "person:alice")
    assert back is not None and [e.name for e in back.entities] == ["Lisbon", "Acme", "Bob", "Alice"]
    assert kg.path(A, "person:alice", "place:lisbon", max_depth=2) is None
    assert kg.path(A, "person:alice", "person:eve") is None
    same = kg.path(A, "alice", "person:alice")
    assert same is not None and same.triples == ()
    with pytest.raises(NotFound):
        kg.path(A, "person:alice", "person:nobody")
    with pytest.raises(ValidationError) as exc:
        kg.path(A, "person:alice", "company:acme", max_depth=7)
    assert exc.value.field == "max_depth"


def test_paths_do_not_walk_invalidated_relations(kg: KnowledgeGraph) -> None:
    _company(kg)
    kg.add_relation(A, "person:Bob", "works_at", "company:Globex")  # Bob left Acme
    assert kg.path(A, "person:alice", "company:acme", max_depth=6) is None


def test_subgraph_to_a_depth_with_a_limit(kg: KnowledgeGraph) -> None:
    _company(kg)
    one = kg.subgraph(A, "person:bob", depth=1)
    assert {e.name for e in one.entities} == {"Bob", "Alice", "Acme"} and one.center.name == "Bob"
    assert len(one.triples) == 2 and not one.truncated
    two = kg.subgraph(A, "person:bob", depth=2)
    assert {e.name for e in two.entities} == {"Bob", "Alice", "Acme", "Carol", "Lisbon"}
    assert two.distances[kg.resolve(A, "place:lisbon").entity_id] == 2
    assert len(two.triples) == 4
    capped = kg.subgraph(A, "person:bob", depth=2, limit=2)
    assert capped.truncated and len(capped.entities) == 2
    assert all(
        {t.source.entity_id, t.target.entity_id} <= {e.entity_id for e in capped.entities} for t in capped.triples
    )


# -- isolation and validation --------------------------------------------------------------------------------
def test_another_agents_graph_is_invisible(kg: KnowledgeGraph) -> None:
    ana = kg.add_relation(A, "person:Ana", "works_at", "company:Acme").triple
    assert kg.list_entities(B) == [] and kg.search_entities(B, "ana") == [] and kg.relations(B) == []
    for call in (
        lambda: kg.resolve(B, "person:ana"),
        lambda: kg.get_entity(B, ana.source.entity_id),
        lambda: kg.relations(B, from_ref="person:ana"),
        lambda: kg.path(B, "person:ana", "company:acme"),
        lambda: kg.subgraph(B, "person:ana"),
    ):
        with pytest.raises(NotFound):
            call()
    # The same names in B are B's own entities.
    other = kg.add_relation(B, "person:Ana", "works_at", "company:Acme").triple
    assert other.source.entity_id != ana.source.entity_id


BAD_WRITES: list[tuple[str, dict[str, Any], str]] = [
    ("empty name", {"name": "  "}, "name"),
    ("long name", {"name": "x" * 201}, "name"),
    ("control character", {"name": "Ana\x00"}, "name"),
    ("bad type", {"type": "!!"}, "type"),
    ("type not a string", {"type": 3}, "type"),
    ("properties not an object", {"properties": ["a"]}, "properties"),
    ("NUL in properties", {"properties": {"a": "b\x00"}}, "properties"),
    ("NaN in properties", {"properties": {"a": float("nan")}}, "properties"),
    ("sources a string", {"sources": "e1"}, "sources"),
    ("blank source", {"sources": [" "]}, "sources"),
    ("agent", {"agent_id": ""}, "agent_id"),
]


@pytest.mark.parametrize(("case", "bad", "field"), BAD_WRITES, ids=[c[0] for c in BAD_WRITES])
def test_bad_input_is_refused_naming_the_field_and_writes_nothing(
    engine: reverie.Reverie, kg: KnowledgeGraph, case: str, bad: dict[str, Any], field: str
) -> None:
    kg.add_entity(A, "person", "Ana")
    state = _rows(engine)
    args: dict[str, Any] = {"agent_id": A, "type": "person", "name": "Bob", **bad}
    with pytest.raises(ValidationError) as exc:
        kg.add_entity(**args)
    assert exc.value.field == field, case
    assert _rows(engine) == state


def test_relation_refusals_write_nothing(engine: reverie.Reverie, kg: KnowledgeGraph) -> None:
    kg.add_entity(A, "person", "Ana")
    state = _rows(engine)
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"to_ref": "person:ANA "}, "to"),  # one entity at both ends: refused after resolving, rolled back
        ({"to_ref": "ana"}, "to"),
        ({"from_ref": ":bob"}, "from"),
        ({"relation": "--"}, "relation"),
        ({"valid_from": datetime(2024, 1, 1)}, "valid_from"),  # naive: ambiguous
        ({"properties": {"x": {"y": [1, float("inf")]}}}, "properties"),
    ]
    for bad, field in refusals:
        args: dict[str, Any] = {"from_ref": "person:ana", "relation": "knows", "to_ref": "person:new", **bad}
        with pytest.raises(ValidationError) as exc:
            kg.add_relation(A, **args)
        assert exc.value.field == field, bad
        assert _rows(engine) == state, bad
    for kwargs, field in (({"limit": 0}, "limit"), ({"include_invalid": "yes"}, "include_invalid")):
        with pytest.raises(ValidationError) as exc:
            kg.relations(A, **kwargs)
        assert exc.value.field == field


def test_exclusive_relations_are_configurable(tmp_path: Path, clock: FakeClock, request: pytest.FixtureRequest) -> None:
    with _open("sqlite", request, tmp_path, clock, graph={"exclusive_relations": ["plays_for"]}) as rv:
        rv.graph.add_relation(A, "person:Ana", "works_at", "company:Acme")
        rv.graph.add_relation(A, "person:Ana", "works_at", "company:Globex")
        assert len(rv.graph.relations(A, relation="works_at")) == 2
        rv.graph.add_relation(A, "person:Ana", "Plays For", "team:Reds")
        assert rv.graph.add_relation(A, "person:Ana", "plays_for", "team:Blues").invalidated
    with pytest.raises(reverie.ConfigError, match="exclusive_relations"):
        reverie.open(tmp_path / "bad", graph={"exclusive_relations": ["Works At"]})


# -- the CLI ---------------------------------------------------------------------------------------------------
def _cli(home: Path, env: dict[str, str], *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--home", str(home), *args], env=env)
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_cli_round_trip(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    home = tmp_path / "cli"
    env = {"REVERIE_EMBEDDING__PROVIDER": "none"}
    if backend == "postgresql":
        env["REVERIE_STORE__URL"] = request.getfixturevalue("pg_url")

    def cli_json(*args: str) -> Any:
        return json.loads(_cli(home, env, "kg", *args, "--json", "-a", A))

    john = cli_json("add-entity", "--type", "person", "--name", "John Doe", "--properties", '{"role": "developer"}')
    assert john["outcome"] == "created" and john["entity"]["properties"] == {"role": "developer"}
    assert cli_json("list-entities", "--type", "person")[0]["entity_id"] == john["entity"]["entity_id"]
    assert [e["name"] for e in cli_json("search-entities", "john")] == ["John Doe"]
    added = cli_json("add-relation", "--from", "person:john doe", "--relation", "works_at", "--to", "company:acme")
    assert added["outcome"] == "created" and added["triple"]["target"]["name"] == "acme"
    cli_json("add-relation", "--from", "person:alice", "--relation", "knows", "--to", "person:JOHN DOE")
    assert len(cli_json("list-relations", "--entity", "person:john doe")) == 2
    (query,) = cli_json("query", "--from", "person:john doe", "--relation", "works_at")
    assert query["relation"]["relation_id"] == added["triple"]["relation"]["relation_id"]
    path = cli_json("path", "--from", "person:alice", "--to", "company:acme")
    assert path["found"] and len(path["path"]["triples"]) == 2
    sub = cli_json("subgraph", "--entity", "person:alice", "--depth", "1")
    assert {e["name"] for e in sub["entities"]} == {"alice", "John Doe"}
    text = _cli(home, env, "kg", "path", "--from", "person:alice", "--to", "company:acme", "-a", A)
    assert "2 relation(s)" in text and "works_at" in text
    assert "no path" in _cli(
        home, env, "kg", "path", "--from", "company:acme", "--to", "person:alice", "--max-depth", "1", "-a", A
    )
    _cli(home, env, "kg", "path", "--from", "person:alice", "--to", "person:nobody", "-a", A, code=2)
    _cli(home, env, "kg", "add-entity", "--type", "person", "--name", "x", "--properties", "[1]", code=2)
    _cli(home, env, "kg", "query", "--from", "person:nobody", code=2)


# -- the HTTP API ----------------------------------------------------------------------------------------------
def test_api(engine: reverie.Reverie) -> None:
    keys: Keys = make_keys(engine)
    kg = memory("a", "/kg")
    with serving(engine) as origin, client(origin, keys.a) as a, client(origin, keys.b) as b:
        made = a.post(f"{kg}/entities", json={"type": "person", "name": "Ana", "properties": {"role": "cto"}})
        assert made.status_code == 201 and made.json()["outcome"] == "created"
        ana = made.json()["entity"]
        assert ana["ref"] == "person:Ana" and ana["key"] == "ana"
        rel = a.post(f"{kg}/relations", json={"from": "person:ana", "relation": "Works At", "to": "company:Acme"})
        assert rel.status_code == 201 and rel.json()["relation"]["text"] == "person:Ana -works_at-> company:Acme"
        moved = a.post(
            f"{kg}/relations",
            json={"from": "person:ana", "relation": "works_at", "to": "company:Globex", "valid_from": "2026-01-01"},
        ).json()
        assert moved["invalidated"] == [rel.json()["relation"]["relation_id"]]
        listed = a.get(f"{kg}/relations", params={"from": "person:ana", "include_invalid": "true"}).json()
        assert [r["target"]["ref"] for r in listed] == ["company:Acme", "company:Globex"]
        assert a.get(f"{kg}/entities/{ana['entity_id']}").json()["name"] == "Ana"
        assert [e["name"] for e in a.get(f"{kg}/entities/search", params={"q": "AN"}).json()] == ["Ana"]
        assert a.get(f"{kg}/resolve", params={"ref": "ana"}).json()["entity_id"] == ana["entity_id"]
        path = a.get(f"{kg}/path", params={"from": "person:ana", "to": "company:globex"}).json()
        assert path["found"] and len(path["relations"]) == 1
        none = a.get(f"{kg}/path", params={"from": "person:ana", "to": "company:acme"}).json()
        assert none == {"found": False, "entities": [], "relations": []}
        sub = a.get(f"{kg}/subgraph", params={"entity": "person:ana", "depth": 1}).json()
        assert {e["name"] for e in sub["entities"]} == {"Ana", "Globex"}
        gone = a.post(f"{kg}/relations/{moved['relation']['relation_id']}/invalidate")
        assert gone.status_code == 200 and gone.json()["invalid_at"] is not None
        # Unknown references and ids: 404; another agent's: 403 on its path, 404 by id on its own path.
        assert a.get(f"{kg}/resolve", params={"ref": "person:nobody"}).status_code == 404
        assert a.get(f"{kg}/relations", params={"to": "person:nobody"}).status_code == 404
        assert b.get(f"{kg}/entities").status_code == 403
        assert b.get(f"{memory('b', '/kg')}/entities/{ana['entity_id']}").status_code == 404
        assert b.get(f"{memory('b', '/kg')}/resolve", params={"ref": "person:ana"}).status_code == 404
        # Bad input: 422 naming the field, never a 5xx.
        for response, field in (
            (a.post(f"{kg}/entities", json={"type": "person", "name": " "}), "name"),
            (a.post(f"{kg}/entities", json={"type": "person", "name": "x", "properties": [1]}), "properties"),
            (a.post(f"{kg}/relations", json={"from": "a", "relation": "!!", "to": "b"}), "relation"),
            (
                a.post(f"{kg}/relations", json={"from": "a", "relation": "r", "to": "b", "valid_from": "soon"}),
                "valid_from",
            ),
            (a.post(f"{kg}/merge", json={"keep_id": ana["entity_id"], "duplicate_id": ana["entity_id"]}), "dup_id"),
            (a.get(f"{kg}/path", params={"from": "ana", "to": "ana", "max_depth": 0}), "max_depth"),
            (a.get(f"{kg}/relations", params={"from": "x\x01"}), "from"),
        ):
            assert response.status_code == 422, response.text
            assert response.json()["field"] == field
    with serving(engine) as origin, client(origin, keys.a_read) as reader:
        assert reader.post(f"{kg}/entities", json={"type": "person", "name": "Bo"}).status_code == 403
        assert reader.get(f"{kg}/entities").status_code == 200


# -- the agent tools -------------------------------------------------------------------------------------------
def test_tools(engine: reverie.Reverie) -> None:
    tools = ToolRegistry(engine)
    ctx, other = ToolContext(agent_id=A), ToolContext(agent_id=B)
    entity = tools.call("knowledge_add_entity", {"type": "person", "name": "Ana", "properties": {"role": "cto"}}, ctx)
    assert not entity.is_error and entity.data["outcome"] == "created" and "person:Ana" in entity.text
    relation = tools.call(
        "knowledge_add_relation", {"from": "person:ana", "relation": "works at", "to": "company:Acme"}, ctx
    )
    assert not relation.is_error and relation.data["relation"]["relation"] == "works_at"
    moved = tools.call("knowledge_add_relation", {"from": "person:ana", "relation": "works_at", "to": "Globex"}, ctx)
    assert moved.data["invalidated"] == [relation.data["relation"]["id"]] and "history" in moved.text
    query = tools.call("knowledge_query", {"from": "person:ana", "relation": "works_at"}, ctx)
    assert [r["to"] for r in query.data["relations"]] == ["thing:Globex"]
    either_end = tools.call("knowledge_query", {"entity": "globex"}, ctx)
    assert [r["from"] for r in either_end.data["relations"]] == ["person:Ana"]
    history = tools.call("knowledge_query", {"from": "person:ana", "include_invalid": True}, ctx)
    assert len(history.data["relations"]) == 2 and "no longer true" in history.text
    path = tools.call("knowledge_query", {"mode": "path", "from": "company:acme", "to": "globex"}, ctx)
    assert not path.is_error and path.data["found"] is False
    tools.call("knowledge_add_relation", {"from": "person:bob", "relation": "knows", "to": "person:ana"}, ctx)
    path = tools.call("knowledge_query", {"mode": "path", "from": "person:bob", "to": "globex"}, ctx)
    assert [e["name"] for e in path.data["entities"]] == ["bob", "Ana", "Globex"]
    sub = tools.call("knowledge_query", {"mode": "subgraph", "entity": "person:ana", "depth": 1}, ctx)
    assert {e["name"] for e in sub.data["entities"]} == {"Ana", "bob", "Globex"}
    found = tools.call("knowledge_query", {"mode": "entities", "text": "an"}, ctx)
    assert [e["ref"] for e in found.data["entities"]] == ["person:Ana"]
    listed = tools.call("knowledge_query", {"mode": "entities", "type": "person"}, ctx)
    assert {e["name"] for e in listed.data["entities"]} == {"Ana", "bob"}
    # Refusals: a result, never an exception; nothing of A reachable from B.
    unknown = tools.call("knowledge_query", {"from": "person:ana"}, other)
    assert unknown.is_error and unknown.data["error"]["kind"] == "not_found"
    missing = tools.call("knowledge_query", {"mode": "path", "from": "person:ana"}, ctx)
    assert missing.is_error and missing.data["error"]["field"] == "to"
    bad = tools.call("knowledge_add_relation", {"from": "a", "relation": "r", "to": "b", "valid_from": "x"}, ctx)
    assert bad.is_error and bad.data["error"]["field"] == "valid_from"


def test_the_entities_tool_walks_every_entity_by_cursor(engine: reverie.Reverie, kg: KnowledgeGraph) -> None:
    tools, ctx = ToolRegistry(engine), ToolContext(agent_id=A)
    made = {kg.add_entity(A, "person", f"Person {n}").entity.entity_id for n in range(7)}
    kg.add_entity(A, "company", "Acme")
    seen: list[str] = []
    cursor: str | None = None
    made_late = ""
    for _ in range(5):
        args: dict[str, Any] = {"mode": "entities", "type": "person", "limit": 3}
        page = tools.call("knowledge_query", args if cursor is None else {**args, "cursor": cursor}, ctx)
        assert not page.is_error, page.text
        seen += [e["id"] for e in page.data["entities"]]
        if len(seen) == 3:  # a write between pages: a new entity, never a repeated or lost old one
            made_late = kg.add_entity(A, "person", "Person late").entity.entity_id
        cursor = page.data["next_cursor"]
        if cursor is None:
            break
        assert f"cursor={cursor!r}" in page.text
    assert len(seen) == len(set(seen)) and made <= set(seen) <= made | {made_late}
    stale = tools.call("knowledge_query", {"mode": "entities", "type": "company", "cursor": "garbage"}, ctx)
    assert stale.is_error and stale.data["error"]["field"] == "cursor"
    texted = tools.call("knowledge_query", {"mode": "entities", "text": "Person", "cursor": "x"}, ctx)
    assert texted.is_error and texted.data["error"]["field"] == "cursor"


def test_timestamps_are_aware_utc(kg: KnowledgeGraph, clock: FakeClock) -> None:
    made = kg.add_entity(A, "person", "Ana").entity
    assert made.created_at == clock.now() and made.created_at is not None and made.created_at.tzinfo is not None
    stored = kg.get_entity(A, made.entity_id)
    assert stored.created_at == datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
