"""The knowledge graph's upkeep rules (issue 9, the dream's graph pass), as pure functions: which live entities
are duplicates to merge, and which stale entities may go to the archive together.

Invariants:
- Duplicates are exact: only entities with the same normalised key (``core.graph.entity_key``) are ever
  compared; near-duplicate names ("acme" and "acme corp") are never merged here.
- An untyped ``thing`` is merged into the one typed entity of its name; when typed entities of different
  types claim the name it is ambiguous and left alone. Typed entities of different types are merged only when
  the caller's ``type_groups`` puts both types in one group ("Apple" the company and "apple" the fruit stay
  two); the kept one is the one whose type comes first in its group, then the oldest, then the smallest id.
- Every plan is deterministic: it depends on the entities given, never on their order.
- A stale entity is archived only with everything it is connected to: the groups ``archivable`` returns are
  whole connected components (over the edges given) whose every member is stale, so no archive leaves a
  valid relation between a live entity and an archived one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from reverie.core.graph import THING, Edge, type_key


class Node(Protocol):
    """What the merge plan needs of an entity (``storage.base.Entity`` is one)."""

    @property
    def entity_id(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def created_at(self) -> datetime | None: ...


N = TypeVar("N", bound=Node)


@dataclass(frozen=True, slots=True)
class MergePlan(Generic[N]):
    """The merges to make, each ``(keep, duplicate)``, in a stable order (by key). ``ambiguous``: keys whose
    ``thing`` stays because typed entities of different types claim the name. ``homonyms``: keys held by
    typed entities of different types, kept apart."""

    merges: tuple[tuple[N, N], ...]
    ambiguous: tuple[str, ...] = ()
    homonyms: tuple[str, ...] = ()


def type_groups(groups: Iterable[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """Validated groups of types that name one kind of thing (``[["company", "organization"]]``): each type
    in lower snake case (as ``type_key`` leaves it), never ``thing``, in one group only, each group of two
    types or more. Raises ``ValueError`` naming the first problem."""
    seen: set[str] = set()
    out: list[tuple[str, ...]] = []
    for group in groups:
        members = tuple(group)
        if len(set(members)) < 2:
            raise ValueError(f"a type group needs two different types or more, got {list(members)!r}")
        for name in members:
            try:
                valid = isinstance(name, str) and type_key(name) == name
            except ValueError:
                valid = False
            if not valid:
                raise ValueError(f"{name!r} is not an entity type in lower snake case")
            if name == THING:
                raise ValueError(f"{THING!r} is the unknown type: it merges into any one typed entity already")
            if name in seen:
                raise ValueError(f"type {name!r} is in two groups")
            seen.add(name)
        out.append(tuple(dict.fromkeys(members)))
    return tuple(out)


def merge_plan(entities: Iterable[N], groups: Sequence[Sequence[str]] = ()) -> MergePlan[N]:
    """The duplicates among ``entities`` (live ones of one agent) and what each merges into; see the module.
    ``groups`` are ``type_groups`` (validated by the caller)."""
    rank = {name: (index, position) for index, group in enumerate(groups) for position, name in enumerate(group)}
    by_key: dict[str, list[N]] = {}
    for entity in entities:
        by_key.setdefault(entity.key, []).append(entity)
    merges: list[tuple[N, N]] = []
    ambiguous: list[str] = []
    homonyms: list[str] = []
    for key in sorted(by_key):
        members = by_key[key]
        if len(members) < 2:
            continue
        kinds: dict[str, list[N]] = {}
        for entity in members:
            if entity.type != THING:
                kind = f"group {rank[entity.type][0]}" if entity.type in rank else entity.type
                kinds.setdefault(kind, []).append(entity)
        survivors: list[N] = []
        for kind in sorted(kinds):
            ordered = sorted(kinds[kind], key=lambda e: (rank.get(e.type, (0, 0))[1], _age(e), e.entity_id))
            survivors.append(ordered[0])
            merges.extend((ordered[0], dup) for dup in ordered[1:])
        things = sorted((e for e in members if e.type == THING), key=lambda e: (_age(e), e.entity_id))
        if len(survivors) == 1:
            merges.extend((survivors[0], thing) for thing in things)
        elif len(survivors) > 1:
            homonyms.append(key)
            if things:
                ambiguous.append(key)
    return MergePlan(tuple(merges), tuple(ambiguous), tuple(homonyms))


def archivable(nodes: Iterable[str], edges: Iterable[Edge], stale: Collection[str]) -> list[tuple[str, ...]]:
    """The groups of ``nodes`` that may be archived together: each connected component (over the ``edges``
    whose two ends are both among ``nodes``; others are ignored) whose every member is in ``stale``. Each
    group is sorted, and the groups are in order of their first member."""
    parent = {node: node for node in nodes}

    def root(node: str) -> str:
        while parent[node] != node:
            parent[node] = parent[parent[node]]  # path halving
            node = parent[node]
        return node

    for edge in edges:
        if edge.source_id in parent and edge.target_id in parent:
            a, b = root(edge.source_id), root(edge.target_id)
            if a != b:
                parent[max(a, b)] = min(a, b)
    components: dict[str, list[str]] = {}
    for node in parent:
        components.setdefault(root(node), []).append(node)
    groups = [tuple(sorted(c)) for c in components.values() if all(node in stale for node in c)]
    return sorted(groups)


def _age(entity: Node) -> float:
    """Oldest first; an entity without a creation time after every dated one."""
    return float("inf") if entity.created_at is None else entity.created_at.timestamp()
