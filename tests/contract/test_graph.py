"""GraphRepository: entities (identity, replace, merged / archived filtering, listing, search, lookup by source
entry), relations (filters, validity, order, neighbours), agent isolation, and the fingerprint."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

import pytest

from reverie.errors import Conflict, NotFound, ValidationError
from reverie.storage.base import Store
from reverie.storage.graph_codec import fingerprint
from reverie.types import Entity, Relation

from .support import T0, UNICODE_TEXTS, at

AGENT = "default"


def ent(
    entity_id: str,
    name: str,
    *,
    type: str = "person",
    key: str | None = None,
    agent: str = AGENT,
    seen: datetime | None = T0,
    **fields: Any,
) -> Entity:
    fields.setdefault("created_at", T0)
    fields.setdefault("updated_at", T0)
    return Entity(
        agent_id=agent,
        entity_id=entity_id,
        type=type,
        name=name,
        key=name.casefold().strip() if key is None else key,
        last_seen_at=seen,
        **fields,
    )


def rel(
    relation_id: str,
    source: str,
    relation: str,
    target: str,
    *,
    agent: str = AGENT,
    created: datetime | None = T0,
    **fields: Any,
) -> Relation:
    return Relation(
        agent_id=agent,
        relation_id=relation_id,
        source_id=source,
        relation=relation,
        target_id=target,
        created_at=created,
        **fields,
    )


def eids(entities: list[Entity]) -> list[str]:
    return [e.entity_id for e in entities]


def rids(relations: list[Relation]) -> list[str]:
    return [r.relation_id for r in relations]


def small_graph(store: Store) -> None:
    """john -works_at-> acme, john -knows-> alice, alice -works_at-> acme (invalid), acme -located_in-> lisbon."""
    for e in (
        ent("john", "John Doe", seen=at(hours=1)),
        ent("alice", "Alice", seen=at(hours=2)),
        ent("acme", "Acme", type="company", seen=at(hours=3)),
        ent("lisbon", "Lisbon", type="place", seen=at(hours=4)),
    ):
        store.graph.add_entity(e)
    store.graph.add_relation(rel("r1", "john", "works_at", "acme", created=at(minutes=1)))
    store.graph.add_relation(rel("r2", "john", "knows", "alice", created=at(minutes=2)))
    store.graph.add_relation(rel("r3", "alice", "works_at", "acme", created=at(minutes=3), invalid_at=at(hours=5)))
    store.graph.add_relation(rel("r4", "acme", "located_in", "lisbon", created=at(minutes=4)))


# -- entities ----------------------------------------------------------------------------------------------
def test_an_entity_reads_back_every_field(store: Store) -> None:
    full = ent(
        "e1",
        UNICODE_TEXTS[0],
        key="café naïve",
        properties={"role": "developer", "nested": {"list": [1, 2.5, None, True], "ü": "ß"}, "n": 3},
        seen=at(hours=2),
        sources=("00000000000b", "00000000000a"),
        merged_into=None,
        archived_at=None,
    )
    store.graph.add_entity(full)
    assert store.graph.get_entity(AGENT, "e1") == full
    bare = Entity(AGENT, "e2", "thing", "x", "x")  # every optional field left empty
    store.graph.add_entity(bare)
    assert store.graph.get_entity(AGENT, "e2") == bare
    assert store.graph.get_entity(AGENT, "missing") is None


def test_an_existing_id_or_identity_is_a_conflict(store: Store) -> None:
    store.graph.add_entity(ent("e1", "Ana", key="ana"))
    with pytest.raises(Conflict):
        store.graph.add_entity(ent("e1", "Bob", key="bob"))
    with pytest.raises(Conflict):
        store.graph.add_entity(ent("e2", "ANA", key="ana"))
    store.graph.add_entity(ent("e3", "Ana", key="ana", type="place"))  # another type: another entity
    store.graph.add_entity(ent("e1", "Ana", key="ana", agent="other"))  # another agent: its own ids
    assert store.graph.get_entity(AGENT, "e2") is None
    got = store.graph.get_entity(AGENT, "e1")
    assert got is not None and got.name == "Ana"
    # A merged or archived entity still holds its identity.
    store.graph.write_entity(replace(ent("e3", "Ana", key="ana", type="place"), archived_at=at(days=1)))
    with pytest.raises(Conflict):
        store.graph.add_entity(ent("e4", "Ana", key="ana", type="place"))


def test_write_entity_replaces_the_stored_one(store: Store) -> None:
    store.graph.add_entity(ent("e1", "Ana", properties={"a": 1}, sources=("s1",)))
    changed = replace(
        ent("e1", "Ana Silva", properties={"b": [2]}, sources=("s1", "s2")),
        type="thing",
        updated_at=at(hours=1),
        last_seen_at=None,
        merged_into="e9",
        archived_at=at(hours=2),
    )
    store.graph.write_entity(changed)
    assert store.graph.get_entity(AGENT, "e1") == changed


def test_write_entity_of_a_missing_or_foreign_entity_is_not_found(store: Store) -> None:
    store.graph.add_entity(ent("e1", "Ana", agent="other"))
    with pytest.raises(NotFound):
        store.graph.write_entity(ent("e2", "Bob"))
    with pytest.raises(NotFound):
        store.graph.write_entity(ent("e1", "Mine now"))
    got = store.graph.get_entity("other", "e1")
    assert got is not None and got.name == "Ana"
    assert store.graph.get_entity(AGENT, "e1") is None


def test_write_entity_onto_a_taken_identity_is_a_conflict_and_changes_nothing(store: Store) -> None:
    store.graph.add_entity(ent("e1", "Ana"))
    bob = ent("e2", "Bob")
    store.graph.add_entity(bob)
    with pytest.raises(Conflict):
        store.graph.write_entity(replace(bob, name="Ana", key="ana"))
    assert store.graph.get_entity(AGENT, "e2") == bob


@pytest.mark.parametrize("field", ["properties", "sources"])
def test_an_entity_that_cannot_be_stored_is_refused_before_any_write(store: Store, field: str) -> None:
    bad: dict[str, Any] = {"properties": {"x": float("nan")}, "sources": ("nul\x00",)}
    with pytest.raises(ValidationError):
        store.graph.add_entity(replace(ent("e1", "Ana"), **{field: bad[field]}))
    assert store.graph.get_entity(AGENT, "e1") is None


def test_find_entity_by_identity_returns_merged_and_archived_ones_too(store: Store) -> None:
    store.graph.add_entity(ent("e1", "Ana"))
    store.graph.add_entity(ent("e2", "Ana", type="thing", merged_into="e1"))
    store.graph.add_entity(ent("e3", "Bob", archived_at=at(days=1)))
    live = store.graph.find_entity(AGENT, "person", "ana")
    assert live is not None and live.entity_id == "e1"
    merged = store.graph.find_entity(AGENT, "thing", "ana")
    assert merged is not None and merged.merged_into == "e1"
    archived = store.graph.find_entity(AGENT, "person", "bob")
    assert archived is not None and archived.archived_at == at(days=1)
    assert store.graph.find_entity(AGENT, "place", "ana") is None
    assert store.graph.find_entity(AGENT, "person", "Ana") is None  # the key is compared exactly
    assert store.graph.find_entity("other", "person", "ana") is None


def test_entities_by_key_are_the_live_ones_of_every_type(store: Store) -> None:
    store.graph.add_entity(ent("p", "Ana", type="person", seen=at(hours=1)))
    store.graph.add_entity(ent("t", "Ana", type="thing", seen=at(hours=3)))
    store.graph.add_entity(ent("c", "Ana", type="company", seen=at(hours=2)))
    store.graph.add_entity(ent("m", "Ana", type="place", merged_into="p"))
    store.graph.add_entity(ent("a", "Ana", type="pet", archived_at=at(days=1)))
    store.graph.add_entity(ent("o", "Ana", type="person", agent="other"))
    store.graph.add_entity(ent("b", "Anabel"))
    assert eids(store.graph.entities_by_key(AGENT, "ana")) == ["t", "c", "p"]
    assert store.graph.entities_by_key(AGENT, "ANA") == []


def test_list_entities_most_recently_seen_first_without_merged_or_archived(store: Store) -> None:
    store.graph.add_entity(ent("old", "Old", seen=at(hours=1)))
    store.graph.add_entity(ent("new", "New", seen=at(hours=5)))
    store.graph.add_entity(ent("tie1", "Tie one", seen=at(hours=3)))
    store.graph.add_entity(ent("tie2", "Tie two", seen=at(hours=3)))  # same instant: the newer first
    store.graph.add_entity(ent("never", "Never seen", seen=None))  # unknown: last
    store.graph.add_entity(ent("place", "Lisbon", type="place", seen=at(hours=4)))
    store.graph.add_entity(ent("merged", "Merged", seen=at(hours=9), merged_into="new"))
    store.graph.add_entity(ent("archived", "Archived", seen=at(hours=8), archived_at=at(hours=8)))
    store.graph.add_entity(ent("foreign", "Foreign", agent="other", seen=at(hours=9)))
    assert eids(store.graph.list_entities(AGENT)) == ["new", "place", "tie2", "tie1", "old", "never"]
    assert eids(store.graph.list_entities(AGENT, include_archived=True))[:2] == ["archived", "new"]
    assert "merged" not in eids(store.graph.list_entities(AGENT, include_archived=True))
    assert eids(store.graph.list_entities(AGENT, type="person", limit=3)) == ["new", "tie2", "tie1"]
    assert eids(store.graph.list_entities(AGENT, type="place")) == ["place"]
    assert store.graph.list_entities(AGENT, type="company") == []
    assert store.graph.list_entities(AGENT, limit=0) == []
    assert eids(store.graph.list_entities("other")) == ["foreign"]


def test_search_matches_key_or_name_case_insensitively_exact_key_first(store: Store) -> None:
    store.graph.add_entity(ent("silva", "Ana Silva", key="ana silva", seen=at(hours=5)))
    store.graph.add_entity(ent("ana", "Ana", key="ana", seen=at(hours=1)))
    store.graph.add_entity(ent("banana", "Banana", type="thing", key="banana", seen=at(hours=3)))
    store.graph.add_entity(ent("strasse", "Straße", type="place", key="strasse", seen=at(hours=2)))
    store.graph.add_entity(ent("merged", "Ana", type="thing", key="ana", merged_into="ana", seen=at(hours=9)))
    store.graph.add_entity(ent("archived", "Anaïs", key="anaïs", archived_at=at(hours=1), seen=at(hours=9)))
    store.graph.add_entity(ent("foreign", "Ana", key="ana", agent="other", seen=at(hours=9)))
    assert eids(store.graph.search_entities(AGENT, "ana")) == ["ana", "silva", "banana"]
    assert eids(store.graph.search_entities(AGENT, "ANA ")) == ["ana", "silva", "banana"]
    assert eids(store.graph.search_entities(AGENT, "SILVA")) == ["silva"]
    assert eids(store.graph.search_entities(AGENT, "a  s")) == ["silva"]  # spaces collapse as in keys
    assert eids(store.graph.search_entities(AGENT, "STRASSE")) == ["strasse"]
    assert eids(store.graph.search_entities(AGENT, "ß")) == ["strasse"]  # casefolded: "ss"
    assert eids(store.graph.search_entities(AGENT, "aße")) == ["strasse"]  # the name as given
    assert eids(store.graph.search_entities(AGENT, "ana", limit=1)) == ["ana"]
    assert eids(store.graph.search_entities(AGENT, "%")) == [] and eids(store.graph.search_entities(AGENT, "_")) == []
    assert eids(store.graph.search_entities("other", "ana")) == ["foreign"]


def test_entities_of_sources_finds_live_entities_by_entry_id(store: Store) -> None:
    store.graph.add_entity(ent("a", "A", sources=("m1", "m2"), seen=at(hours=1)))
    store.graph.add_entity(ent("b", "B", sources=("m2",), seen=at(hours=2)))
    store.graph.add_entity(ent("c", "C", sources=("m3",)))
    store.graph.add_entity(ent("m", "M", sources=("m1",), merged_into="a"))
    store.graph.add_entity(ent("x", "X", sources=("m1",), archived_at=at(days=1)))
    store.graph.add_entity(ent("f", "F", sources=("m1", "m2"), agent="other"))
    assert eids(store.graph.entities_of_sources(AGENT, ["m2"])) == ["b", "a"]
    assert eids(store.graph.entities_of_sources(AGENT, ["m1"])) == ["a"]
    assert sorted(eids(store.graph.entities_of_sources(AGENT, ["m1", "m3", "zz"]))) == ["a", "c"]
    assert store.graph.entities_of_sources(AGENT, []) == []
    assert store.graph.entities_of_sources(AGENT, ["m"]) == []  # whole ids, never a substring
    assert eids(store.graph.entities_of_sources("other", ["m2"])) == ["f"]


# -- relations ---------------------------------------------------------------------------------------------
def test_a_relation_reads_back_every_field(store: Store) -> None:
    full = rel(
        "r1",
        "john",
        "works_at",
        "acme",
        properties={"since": 2020, "role": "développeur", "tags": ["a", None]},
        valid_from=at(days=-400),
        invalid_at=at(days=1),
        sources=("m1", "m2"),
    )
    store.graph.add_relation(full)
    assert store.graph.get_relation(AGENT, "r1") == full
    bare = Relation(AGENT, "r2", "a", "knows", "b")
    store.graph.add_relation(bare)
    assert store.graph.get_relation(AGENT, "r2") == bare
    assert store.graph.get_relation(AGENT, "missing") is None
    assert store.graph.get_relation("other", "r1") is None


def test_an_existing_relation_id_is_a_conflict(store: Store) -> None:
    first = rel("r1", "a", "knows", "b")
    store.graph.add_relation(first)
    with pytest.raises(Conflict):
        store.graph.add_relation(rel("r1", "c", "likes", "d"))
    assert store.graph.get_relation(AGENT, "r1") == first
    store.graph.add_relation(rel("r1", "c", "likes", "d", agent="other"))  # another agent: its own ids
    store.graph.add_relation(rel("r2", "a", "knows", "b"))  # the same triple twice: the service's call


def test_write_relation_replaces_it_or_is_not_found(store: Store) -> None:
    store.graph.add_relation(rel("r1", "a", "knows", "b", sources=("m1",)))
    store.graph.add_relation(rel("r9", "a", "knows", "b", agent="other"))
    changed = rel("r1", "a2", "works_with", "b2", properties={"x": 1}, invalid_at=at(hours=1), sources=("m1", "m2"))
    store.graph.write_relation(changed)
    assert store.graph.get_relation(AGENT, "r1") == changed
    with pytest.raises(NotFound):
        store.graph.write_relation(rel("r2", "a", "knows", "b"))
    with pytest.raises(NotFound):
        store.graph.write_relation(rel("r9", "x", "y", "z"))
    got = store.graph.get_relation("other", "r9")
    assert got is not None and got.source_id == "a"
    with pytest.raises(ValidationError):
        store.graph.write_relation(replace(changed, properties={"x": float("inf")}))
    assert store.graph.get_relation(AGENT, "r1") == changed


def test_relations_match_every_filter_given_valid_ones_oldest_first(store: Store) -> None:
    small_graph(store)
    assert rids(store.graph.relations(AGENT)) == ["r1", "r2", "r4"]
    assert rids(store.graph.relations(AGENT, include_invalid=True)) == ["r1", "r2", "r3", "r4"]
    assert rids(store.graph.relations(AGENT, entity_id="acme")) == ["r1", "r4"]
    assert rids(store.graph.relations(AGENT, entity_id="acme", include_invalid=True)) == ["r1", "r3", "r4"]
    assert rids(store.graph.relations(AGENT, source_id="john")) == ["r1", "r2"]
    assert rids(store.graph.relations(AGENT, source_id="john", relation="works_at")) == ["r1"]
    assert rids(store.graph.relations(AGENT, relation="works_at", include_invalid=True)) == ["r1", "r3"]
    assert rids(store.graph.relations(AGENT, target_id="acme", include_invalid=True)) == ["r1", "r3"]
    assert rids(store.graph.relations(AGENT, entity_id="john", target_id="alice")) == ["r2"]
    assert store.graph.relations(AGENT, source_id="acme", target_id="john") == []
    assert rids(store.graph.relations(AGENT, include_invalid=True, limit=2)) == ["r1", "r2"]
    assert store.graph.relations("other") == []


def test_relations_order_by_creation_then_insertion(store: Store) -> None:
    store.graph.add_relation(rel("late", "a", "r", "b", created=at(hours=2)))
    store.graph.add_relation(rel("tie-b", "a", "r", "b", created=at(hours=1)))
    store.graph.add_relation(rel("tie-a", "a", "r", "b", created=at(hours=1)))  # same instant: insertion order
    store.graph.add_relation(rel("unknown", "a", "r", "b", created=None))  # unknown: first
    assert rids(store.graph.relations(AGENT)) == ["unknown", "tie-b", "tie-a", "late"]
    assert rids(store.graph.neighbours(AGENT, ["b"])) == ["unknown", "tie-b", "tie-a", "late"]


def test_neighbours_are_the_relations_touching_any_of_the_entities(store: Store) -> None:
    small_graph(store)
    store.graph.add_relation(rel("f1", "john", "knows", "alice", agent="other"))
    assert rids(store.graph.neighbours(AGENT, ["john"])) == ["r1", "r2"]
    assert rids(store.graph.neighbours(AGENT, ["alice"])) == ["r2"]
    assert rids(store.graph.neighbours(AGENT, ["alice"], include_invalid=True)) == ["r2", "r3"]
    assert rids(store.graph.neighbours(AGENT, ["john", "lisbon"])) == ["r1", "r2", "r4"]
    assert rids(store.graph.neighbours(AGENT, ["acme", "lisbon", "nobody"])) == ["r1", "r4"]
    assert store.graph.neighbours(AGENT, []) == []
    assert store.graph.neighbours(AGENT, ["nobody", "jo"]) == []
    assert rids(store.graph.neighbours("other", ["alice"])) == ["f1"]


# -- isolation ---------------------------------------------------------------------------------------------
def test_another_agents_graph_is_never_read_or_changed(store: Store) -> None:
    small_graph(store)
    before = {
        "entities": store.graph.list_entities(AGENT, include_archived=True),
        "relations": store.graph.relations(AGENT, include_invalid=True),
        "fingerprint": store.graph.fingerprint(AGENT),
    }
    # The same ids, keys and sources under another agent: separate, and reads of it never show ours.
    store.graph.add_entity(ent("john", "John Doe", agent="intruder", sources=("m1",)))
    store.graph.add_relation(rel("r1", "john", "works_at", "acme", agent="intruder"))
    assert store.graph.get_entity("intruder", "alice") is None
    assert store.graph.find_entity("intruder", "company", "acme") is None
    assert store.graph.entities_by_key("intruder", "alice") == []
    assert eids(store.graph.list_entities("intruder")) == ["john"]
    assert store.graph.search_entities("intruder", "acme") == []
    assert store.graph.get_relation("intruder", "r2") is None
    assert rids(store.graph.relations("intruder", include_invalid=True)) == ["r1"]
    assert rids(store.graph.neighbours("intruder", ["acme", "alice"], include_invalid=True)) == ["r1"]
    with pytest.raises(NotFound):
        store.graph.write_entity(ent("alice", "Stolen", agent="intruder"))
    with pytest.raises(NotFound):
        store.graph.write_relation(rel("r2", "alice", "hates", "john", agent="intruder"))
    assert store.graph.list_entities(AGENT, include_archived=True) == before["entities"]
    assert store.graph.relations(AGENT, include_invalid=True) == before["relations"]
    assert store.graph.fingerprint(AGENT) == before["fingerprint"]


# -- the fingerprint ---------------------------------------------------------------------------------------
def test_the_fingerprint_is_a_digest_of_the_live_graph_alone(store: Store) -> None:
    empty = store.graph.fingerprint(AGENT)
    assert empty == fingerprint([], []) and len(empty) == 64
    small_graph(store)
    live_entities = store.graph.list_entities(AGENT)
    valid = store.graph.relations(AGENT)
    # Computed from the decoded rows: the same graph has the same fingerprint on every backend.
    assert store.graph.fingerprint(AGENT) == fingerprint(live_entities, valid)
    # Reads, and a later stored order, change nothing.
    assert store.graph.fingerprint(AGENT) == fingerprint(list(reversed(live_entities)), list(reversed(valid)))


def test_the_fingerprint_changes_on_every_change_and_only_then(store: Store) -> None:
    small_graph(store)
    last = [store.graph.fingerprint(AGENT)]

    def changed() -> bool:
        """Whether the fingerprint moved since the previous call."""
        digest = store.graph.fingerprint(AGENT)
        moved = digest != last[-1]
        last.append(digest)
        return moved

    store.graph.search_entities(AGENT, "john")
    store.graph.neighbours(AGENT, ["john"])
    assert not changed()
    store.graph.add_entity(ent("x", "Xavier", type="person", agent="other"))  # another agent
    store.graph.add_relation(rel("rx", "x", "knows", "john", agent="other"))
    assert not changed()
    john = store.graph.get_entity(AGENT, "john")
    assert john is not None
    store.graph.write_entity(replace(john, last_seen_at=at(days=3)))  # a mention alone
    assert not changed()
    store.graph.write_entity(replace(john, properties={"role": "developer"}, updated_at=at(days=3)))
    assert changed()
    store.graph.add_entity(ent("bob", "Bob"))
    assert changed()
    bob = store.graph.get_entity(AGENT, "bob")
    assert bob is not None
    store.graph.write_entity(replace(bob, sources=("m9",)))
    assert changed()
    store.graph.add_relation(rel("r5", "bob", "knows", "john"))
    assert changed()
    r5 = store.graph.get_relation(AGENT, "r5")
    assert r5 is not None
    store.graph.write_relation(replace(r5, target_id="alice"))
    assert changed()
    store.graph.write_relation(replace(r5, target_id="alice", invalid_at=at(days=4)))  # invalidated
    assert changed()
    store.graph.add_relation(rel("r6", "bob", "knows", "john", invalid_at=at(days=4)))  # invalid from the start
    assert not changed()
    store.graph.write_entity(replace(bob, sources=("m9",), merged_into="john"))  # merged
    assert changed()
    store.graph.write_entity(replace(bob, sources=("m9",), merged_into="john", properties={"z": 1}))
    assert not changed()  # a merged entity is not part of the live graph
    alice = store.graph.get_entity(AGENT, "alice")
    assert alice is not None
    store.graph.write_entity(replace(alice, archived_at=at(days=5)))  # archived as stale
    assert changed()
    store.graph.write_entity(alice)  # restored: the graph as it was
    assert changed() and last[-1] == last[-3]
