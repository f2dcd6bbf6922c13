"""The storage contract, part three (continued): the knowledge graph (seed 004, "Knowledge Graph"). Same rules
as ``storage.base``: scope (the agent) is in every query, time is passed in, a failed write changes nothing,
and nothing is hard-deleted outside a purge (merged or stale entities are marked, not removed).
``storage.base`` re-exports every name; ``Store`` exposes ``graph``.
"""

from __future__ import annotations

from typing import Protocol

from reverie.types.graph import Entity, Relation


class GraphRepository(Protocol):
    """The knowledge graph of each agent. Every read is scoped by ``agent_id``."""

    # -- entities
    def add_entity(self, entity: Entity) -> None:
        """Insert; ``Conflict`` when the id or the (agent, type, key) identity exists."""
        ...

    def write_entity(self, entity: Entity) -> None:
        """Replace the stored entity with the same id and agent; ``NotFound`` when there is none."""
        ...

    def get_entity(self, agent_id: str, entity_id: str) -> Entity | None:
        """The entity as stored (merged or archived ones too)."""
        ...

    def find_entity(self, agent_id: str, type: str, key: str) -> Entity | None:
        """The entity with that identity (merged or archived ones too)."""
        ...

    def entities_by_key(self, agent_id: str, key: str) -> list[Entity]:
        """Every entity of any type with that normalised name (live ones: not merged, not archived)."""
        ...

    def list_entities(
        self, agent_id: str, *, type: str | None = None, limit: int = 100, include_archived: bool = False
    ) -> list[Entity]:
        """Entities not merged (and not archived unless asked), most recently seen first."""
        ...

    def entities_page(self, agent_id: str, *, type: str | None, after: str | None, limit: int) -> list[Entity]:
        """Up to ``limit`` live entities (not merged, not archived; of one type), in id order (code points),
        ids after ``after`` only (None: from the start). Keyset, never an offset."""
        ...

    def search_entities(self, agent_id: str, text: str, *, limit: int = 20) -> list[Entity]:
        """Live entities whose key or name contains ``text`` (case-insensitive), exact key matches first, then
        most recently seen."""
        ...

    def entities_of_sources(self, agent_id: str, entry_ids: list[str]) -> list[Entity]:
        """Live entities mentioned by any of ``entry_ids`` (their ``sources``)."""
        ...

    # -- relations
    def add_relation(self, relation: Relation) -> None:
        """Insert; ``Conflict`` when the id exists."""
        ...

    def write_relation(self, relation: Relation) -> None:
        """Replace the stored relation with the same id and agent; ``NotFound`` when there is none."""
        ...

    def get_relation(self, agent_id: str, relation_id: str) -> Relation | None: ...

    def relations(
        self,
        agent_id: str,
        *,
        entity_id: str | None = None,
        source_id: str | None = None,
        relation: str | None = None,
        target_id: str | None = None,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> list[Relation]:
        """Relations matching every filter given (``entity_id``: either end), valid ones only unless
        ``include_invalid``, oldest first."""
        ...

    def relations_page(
        self,
        agent_id: str,
        *,
        entity_id: str | None = None,
        source_id: str | None = None,
        relation: str | None = None,
        target_id: str | None = None,
        include_invalid: bool = False,
        after: str | None,
        limit: int,
    ) -> list[Relation]:
        """Up to ``limit`` relations matching every filter given (as ``relations``), in id order (code points),
        ids after ``after`` only (None: from the start). Keyset, never an offset."""
        ...

    def neighbours(self, agent_id: str, entity_ids: list[str], *, include_invalid: bool = False) -> list[Relation]:
        """Every relation with either end in ``entity_ids`` (one hop of a path or subgraph walk)."""
        ...

    def fingerprint(self, agent_id: str) -> str:
        """A digest of the agent's live graph (entities and valid relations, with their ids and update times):
        the dream's change gate."""
        ...
