"""The knowledge graph's pure rules (seed 004, "Knowledge Graph"): how names become identities, how a
reference string names an entity, and the two walks (shortest path, subgraph) over edges a caller supplies.

Invariants:
- ``entity_key`` is the identity of a name: "Ana", "ana", "Ana " and "ＡＮＡ" (full-width) are one key.
- ``relation_key`` and ``type_key`` are lower snake case of letters, digits and ``_`` only, so
  "Works At", "works-at" and "worksAt" are one relation.
- The walks treat edges as undirected for reachability (a path may cross an edge against its direction) and
  report every edge with its real direction; they never call ``expand`` twice for one node, and their answer
  depends only on the graph, never on the order ``expand`` returns edges in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

THING = "thing"  # the type of an entity named without one ("john" is "thing:john")
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class Edge(Protocol):
    """What the walks need of a relation: its id and its two ends (``storage.base.Relation`` is one)."""

    @property
    def relation_id(self) -> str: ...

    @property
    def source_id(self) -> str: ...

    @property
    def target_id(self) -> str: ...


E = TypeVar("E", bound=Edge)
Expand = Callable[[list[str]], Iterable[E]]


def entity_key(name: str) -> str:
    """The identity of an entity's name: NFKC-normalised, casefolded, runs of whitespace collapsed to one
    space, stripped. Raises ``ValueError`` for a name with nothing but whitespace."""
    key = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    if not key:
        raise ValueError("an entity name must not be empty")
    return key


def display_name(name: str) -> str:
    """A name as shown: the caller's spelling, stripped, with runs of whitespace collapsed."""
    return " ".join(name.split())


def relation_key(name: str) -> str:
    """A relation's name in lower snake case: camelCase split, NFKC, casefolded, every run of anything
    but letters and digits one ``_``, no ``_`` at either end ("Works At" -> "works_at", "reportsTo" ->
    "reports_to"). Raises ``ValueError`` when no letter or digit is left."""
    spaced = _CAMEL.sub("_", unicodedata.normalize("NFKC", name))
    key = _NOT_WORD.sub("_", spaced.casefold()).strip("_")
    if not key:
        raise ValueError(f"{name!r} has no letters or digits to name a relation by")
    return key


def type_key(name: str) -> str:
    """An entity type, normalised like a relation ("Person" -> "person", "Job Title" -> "job_title")."""
    try:
        return relation_key(name)
    except ValueError:
        raise ValueError(f"{name!r} has no letters or digits to name a type by") from None


def parse_ref(ref: str) -> tuple[str, str]:
    """``"person:John Doe"`` -> ``("person", "John Doe")``: the type (normalised by ``type_key``) and the
    name (stripped) on either side of the first colon. Without a colon the type is ``"thing"``, which
    resolution reads as "any type". Raises ``ValueError`` for an empty type or name."""
    head, colon, tail = ref.partition(":")
    if not colon:
        name = ref.strip()
        kind = THING
    else:
        if not head.strip():
            raise ValueError(f"{ref!r} has an empty type before ':' (write 'type:name', or just the name)")
        kind, name = type_key(head), tail.strip()
    if not name:
        raise ValueError(f"{ref!r} names no entity")
    return kind, name


def format_ref(type_: str, name: str) -> str:
    """The reference ``parse_ref`` reads back: ``type:name``."""
    return f"{type_}:{name}"


def _ordered(edges: Iterable[E]) -> list[E]:
    """Edges once each, in an order that depends only on the edges themselves."""
    unique = {edge.relation_id: edge for edge in edges}
    return sorted(unique.values(), key=lambda e: (e.source_id, e.target_id, e.relation_id))


def _step(frontier: Sequence[str], expand: Expand[E], seen: set[str]) -> tuple[list[E], dict[str, E]]:
    """One level of a breadth-first walk: the edges touching ``frontier``, and each node first reached
    (not in ``seen``) with the edge that reached it. Self-loops reach nothing."""
    edges = _ordered(expand(list(frontier)))
    members = set(frontier)
    reached: dict[str, E] = {}
    for edge in edges:
        for near, far in ((edge.source_id, edge.target_id), (edge.target_id, edge.source_id)):
            if near in members and far not in seen and far not in reached:
                reached[far] = edge
    return edges, reached


def shortest_path(start: str, goal: str, expand: Expand[E], max_depth: int) -> list[E] | None:
    """The edges of one shortest path from ``start`` to ``goal`` of at most ``max_depth`` edges, in walking
    order, or None when there is none. ``expand(ids)`` answers the edges with either end in ``ids``; it is
    called once per level, never twice for a node. ``start == goal`` is the empty path."""
    if max_depth < 0:
        raise ValueError("max_depth must not be negative")
    if start == goal:
        return []
    seen = {start}
    came_by: dict[str, E] = {}
    frontier = [start]
    for _ in range(max_depth):
        if not frontier:
            break
        _, reached = _step(frontier, expand, seen)
        came_by.update(reached)
        seen.update(reached)
        if goal in reached:
            return _walk_back(start, goal, came_by)
        frontier = sorted(reached)
    return None


def _walk_back(start: str, goal: str, came_by: dict[str, E]) -> list[E]:
    path: list[E] = []
    node = goal
    while node != start:
        edge = came_by[node]
        path.append(edge)
        node = edge.source_id if edge.target_id == node else edge.target_id
    path.reverse()
    return path


@dataclass(frozen=True, slots=True)
class Subgraph(Generic[E]):
    """The neighbourhood of ``nodes[0]``: the nodes within ``depth`` hops in the order the walk reached
    them (nearest first), each node's distance, and every edge between two of them (each once).
    ``truncated``: the node limit stopped the walk before it was done."""

    nodes: tuple[str, ...]
    distances: dict[str, int]
    edges: tuple[E, ...]
    truncated: bool


def subgraph(start: str, expand: Expand[E], depth: int, *, limit: int | None = None) -> Subgraph[E]:
    """Every node within ``depth`` hops of ``start`` (at most ``limit`` nodes, ``start`` included) and every
    edge among them (the induced subgraph: two nodes at the last level keep the edge between them). A
    level that would pass the limit keeps its first nodes in a stable order (by the edge that reached them).
    ``expand`` is called once per level and once more for the last level's nodes."""
    if depth < 0:
        raise ValueError("depth must not be negative")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    distances = {start: 0}
    order = [start]
    walked: list[E] = []
    frontier = [start]
    truncated = False
    for level in range(1, depth + 1):
        if not frontier:
            break
        edges, reached = _step(frontier, expand, set(distances))
        walked.extend(edges)
        room = len(reached) if limit is None else max(0, limit - len(order))
        chosen = list(reached)[:room]
        truncated = room < len(reached)
        for node in chosen:
            distances[node] = level
        order.extend(chosen)
        frontier = sorted(chosen)
        if truncated:
            break
    if frontier:  # the last level's own edges (to each other, or back to nearer nodes through a second edge)
        walked.extend(expand(list(frontier)))
    kept = tuple(e for e in _ordered(walked) if e.source_id in distances and e.target_id in distances)
    return Subgraph(nodes=tuple(order), distances=distances, edges=kept, truncated=truncated)
