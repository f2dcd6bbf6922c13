"""The knowledge graph's pure rules: identities of names, references, and the two walks."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.graph import (
    THING,
    display_name,
    entity_key,
    format_ref,
    parse_ref,
    relation_key,
    shortest_path,
    subgraph,
    type_key,
)


@dataclass(frozen=True)
class E:
    relation_id: str
    source_id: str
    target_id: str


class Graph:
    """Edges in memory, with a record of every expand call (the walks must not ask for a node twice)."""

    def __init__(self, edges: Iterable[tuple[str, str]], *, shuffle: int | None = None) -> None:
        self.edges = [E(f"r{i}", a, b) for i, (a, b) in enumerate(edges)]
        self.asked: list[str] = []
        self._rng = random.Random(shuffle) if shuffle is not None else None

    def expand(self, ids: list[str]) -> list[E]:
        self.asked.extend(ids)
        found = [e for e in self.edges if e.source_id in ids or e.target_id in ids]
        if self._rng is not None:
            self._rng.shuffle(found)
        return found


@pytest.mark.parametrize("name", ["Ana", "ana", "Ana ", "  ANA", "ａｎａ", "AnA\t"])
def test_spellings_of_one_name_are_one_key(name: str) -> None:
    assert entity_key(name) == "ana"


def test_entity_key_collapses_inner_whitespace_and_casefolds() -> None:
    assert entity_key("John   Doe") == entity_key("john\u00a0doe") == "john doe"
    assert entity_key("Straße") == entity_key("STRASSE") == "strasse"
    assert entity_key("Ana") != entity_key("Anna")


@pytest.mark.parametrize("name", ["", " ", "\t\n", "\u3000"])
def test_an_empty_name_has_no_key(name: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        entity_key(name)


def test_display_name_keeps_the_spelling() -> None:
    assert display_name("  John   Doe ") == "John Doe"


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Works At", "works_at"),
        ("works_at", "works_at"),
        ("works-at", "works_at"),
        ("  WORKS   AT!! ", "works_at"),
        ("worksAt", "works_at"),
        ("reportsTo", "reports_to"),
        ("CEO of", "ceo_of"),
        ("born in 1990", "born_in_1990"),
        ("__a__b__", "a_b"),
        ("vive_à", "vive_à"),
    ],
)
def test_relation_names_are_lower_snake_case(raw: str, key: str) -> None:
    assert relation_key(raw) == key


@pytest.mark.parametrize("raw", ["", "  ", "---", "__", "!?"])
def test_a_relation_needs_a_letter_or_digit(raw: str) -> None:
    with pytest.raises(ValueError):
        relation_key(raw)


@given(st.text(max_size=40))
def test_relation_keys_are_only_word_characters_and_stable(raw: str) -> None:
    try:
        key = relation_key(raw)
    except ValueError:
        return
    assert key and all(c.isalnum() or c == "_" for c in key)
    assert not key.startswith("_") and not key.endswith("_") and "__" not in key
    assert key == key.casefold()
    assert relation_key(key) == key


@given(st.text(max_size=40))
def test_entity_keys_are_idempotent_and_blind_to_surrounding_space(raw: str) -> None:
    try:
        key = entity_key(raw)
    except ValueError:
        return
    assert key == key.strip() and "  " not in key
    assert entity_key(key) == key == entity_key(f"  {raw}\t")


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("person:john doe", ("person", "john doe")),
        ("Person: John Doe ", ("person", "John Doe")),
        ("john", (THING, "john")),
        ("  john  ", (THING, "john")),
        ("company:acme:inc", ("company", "acme:inc")),
        ("Job Title:engineer", ("job_title", "engineer")),
        ("thing:12:30", (THING, "12:30")),
    ],
)
def test_parse_ref(ref: str, parsed: tuple[str, str]) -> None:
    assert parse_ref(ref) == parsed


@pytest.mark.parametrize("ref", ["", "  ", ":john", " :john", "person:", "person:  ", "!!:john"])
def test_parse_ref_refuses_empty_parts(ref: str) -> None:
    with pytest.raises(ValueError):
        parse_ref(ref)


def test_format_ref_round_trips() -> None:
    assert parse_ref(format_ref("person", "John Doe")) == ("person", "John Doe")
    assert type_key("Person") == "person"


# -- shortest path ---------------------------------------------------------------------------------------


def _ids(path: list[E] | None) -> list[str] | None:
    return None if path is None else [e.relation_id for e in path]


def test_path_to_itself_is_empty_and_an_unreachable_node_has_none() -> None:
    g = Graph([("a", "b"), ("c", "d")])
    assert shortest_path("a", "a", g.expand, 6) == []
    assert shortest_path("a", "d", g.expand, 6) is None
    assert g.asked.count("a") == 1 and g.asked.count("b") == 1  # each node expanded once


def test_path_follows_edges_against_their_direction_and_reports_them_as_stored() -> None:
    # alice -works_at-> acme <-works_at- bob: alice reaches bob through acme.
    g = Graph([("alice", "acme"), ("bob", "acme")])
    path = shortest_path("alice", "bob", g.expand, 6)
    assert path == [E("r0", "alice", "acme"), E("r1", "bob", "acme")]


def test_path_is_a_shortest_one_within_max_depth() -> None:
    g = Graph([("a", "b"), ("b", "c"), ("c", "d"), ("a", "x"), ("x", "d")])
    assert _ids(shortest_path("a", "d", g.expand, 6)) == ["r3", "r4"]
    assert shortest_path("a", "d", g.expand, 1) is None
    assert _ids(shortest_path("a", "d", g.expand, 2)) == ["r3", "r4"]
    assert shortest_path("a", "b", g.expand, 0) is None
    with pytest.raises(ValueError):
        shortest_path("a", "b", g.expand, -1)


def test_self_loops_and_parallel_edges_do_not_confuse_the_walk() -> None:
    g = Graph([("a", "a"), ("a", "b"), ("a", "b"), ("b", "b"), ("b", "c")])
    path = shortest_path("a", "c", g.expand, 6)
    assert path is not None and len(path) == 2
    assert path[0].source_id == "a" and path[-1].target_id == "c"


@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=30),
    st.integers(0, 9),
    st.integers(0, 9),
    st.integers(0, 2**16),
)
def test_path_is_shortest_connected_and_independent_of_edge_order(
    pairs: list[tuple[int, int]], start: int, goal: int, seed: int
) -> None:
    edges = [(f"n{a}", f"n{b}") for a, b in pairs]
    plain = Graph(edges)
    path = shortest_path(f"n{start}", f"n{goal}", plain.expand, 10)
    shuffled = shortest_path(f"n{start}", f"n{goal}", Graph(edges, shuffle=seed).expand, 10)
    assert _ids(path) == _ids(shuffled)
    distance = _bfs_distance(edges, f"n{start}", f"n{goal}")
    if distance is None:
        assert path is None
        return
    assert path is not None and len(path) == distance
    node = f"n{start}"
    for edge in path:  # consecutive edges share a node: a real walk from start to goal
        assert node in (edge.source_id, edge.target_id)
        node = edge.target_id if edge.source_id == node else edge.source_id
    assert node == f"n{goal}"
    assert len(plain.asked) == len(set(plain.asked))


def _bfs_distance(edges: list[tuple[str, str]], start: str, goal: str) -> int | None:
    dist = {start: 0}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for a, b in edges:
            for near, far in ((a, b), (b, a)):
                if near == node and far not in dist:
                    dist[far] = dist[node] + 1
                    queue.append(far)
    return dist.get(goal)


# -- subgraph ----------------------------------------------------------------------------------------------


def test_subgraph_to_a_depth() -> None:
    g = Graph([("bob", "acme"), ("alice", "acme"), ("alice", "lisbon"), ("lisbon", "portugal")])
    one = subgraph("bob", g.expand, 1)
    assert one.nodes == ("bob", "acme") and one.distances == {"bob": 0, "acme": 1}
    assert [e.relation_id for e in one.edges] == ["r0"] and not one.truncated
    two = subgraph("bob", Graph([("bob", "acme"), ("alice", "acme"), ("alice", "lisbon")]).expand, 2)
    assert set(two.nodes) == {"bob", "acme", "alice"} and two.distances["alice"] == 2
    assert {e.relation_id for e in two.edges} == {"r0", "r1"}  # alice-lisbon leads past the depth
    zero = subgraph("bob", g.expand, 0)
    assert zero.nodes == ("bob",) and zero.edges == ()


def test_subgraph_limit_truncates_in_a_stable_order() -> None:
    hub = [("hub", f"leaf{i}") for i in range(10)]
    first = subgraph("hub", Graph(hub).expand, 2, limit=4)
    again = subgraph("hub", Graph(hub, shuffle=7).expand, 2, limit=4)
    assert first.truncated and len(first.nodes) == 4 and first.nodes == again.nodes
    assert all(e.source_id in first.distances and e.target_id in first.distances for e in first.edges)
    assert len(first.edges) == 3
    with pytest.raises(ValueError):
        subgraph("hub", Graph(hub).expand, 1, limit=0)
    with pytest.raises(ValueError):
        subgraph("hub", Graph(hub).expand, -1)


def test_subgraph_includes_edges_between_nodes_of_one_level() -> None:
    g = Graph([("a", "b"), ("a", "c"), ("b", "c")])
    sub = subgraph("a", g.expand, 1)
    assert set(sub.nodes) == {"a", "b", "c"}
    assert {e.relation_id for e in sub.edges} == {"r0", "r1", "r2"}
    assert len(g.asked) == len(set(g.asked)) == 3  # a, then the last level (b, c) once each
