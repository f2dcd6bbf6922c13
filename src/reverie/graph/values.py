"""The knowledge graph's results: what a write did, a relation with its entities, a path, a subgraph.

Values only (``graph.service`` computes them); ``ref_of`` names an entity the way references are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reverie.core import graph as rules
from reverie.types import Entity, Relation


@dataclass(frozen=True, slots=True)
class EntityWrite:
    """What ``add_entity`` did: ``outcome`` is ``created`` or ``updated``; ``absorbed`` lists the ids of
    ``thing`` entities the new typed one absorbed (merged into it)."""

    entity: Entity
    outcome: str
    absorbed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Triple:
    """A relation with both of its entities: ``source -relation-> target``."""

    relation: Relation
    source: Entity
    target: Entity

    @property
    def text(self) -> str:
        """``person:Ana -works_at-> company:Acme``."""
        return f"{ref_of(self.source)} -{self.relation.relation}-> {ref_of(self.target)}"


@dataclass(frozen=True, slots=True)
class RelationWrite:
    """What ``add_relation`` did: ``outcome`` is ``created`` or ``reinforced``; ``invalidated``: the
    relations the new one contradicted (an exclusive relation's previous targets), now invalid."""

    triple: Triple
    outcome: str
    invalidated: tuple[Relation, ...] = ()


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What ``merge_entities`` did: ``entity`` is the kept entity as it now is, ``merged`` the duplicate
    (``merged_into`` set); ``moved`` the ids of the relations re-pointed, ``duplicates`` those of them
    invalidated as copies of one the kept entity had, ``invalidated`` the exclusive relations the merge
    made contradictory (the older ones)."""

    entity: Entity
    merged: Entity
    moved: tuple[str, ...] = ()
    duplicates: tuple[str, ...] = ()
    invalidated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GraphPath:
    """A shortest path: the relations walked from ``start`` to ``goal``, each with its real direction."""

    start: Entity
    goal: Entity
    triples: tuple[Triple, ...]

    @property
    def entities(self) -> tuple[Entity, ...]:
        """The entities along the path, ``start`` first and ``goal`` last."""
        out = [self.start]
        for triple in self.triples:
            out.append(triple.target if triple.source.entity_id == out[-1].entity_id else triple.source)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class EntitySubgraph:
    """The entities within ``depth`` hops of ``center`` (nearest first, ``distances`` by id) and every valid
    relation among them. ``truncated``: the entity limit cut the walk short."""

    center: Entity
    depth: int
    entities: tuple[Entity, ...]
    triples: tuple[Triple, ...]
    distances: dict[str, int] = field(default_factory=dict)
    truncated: bool = False


def ref_of(entity: Entity) -> str:
    """The reference that names ``entity``: ``type:name``."""
    return rules.format_ref(entity.type, entity.name)
