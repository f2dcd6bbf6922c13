"""Knowledge-graph values: entities and relations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Entity:
    """A node of an agent's knowledge graph. Identity is ``(agent_id, type, key)`` where ``key`` is the
    normalised name (``core.graph.entity_key``: NFKC, casefolded, spaces collapsed), so "Ana", "ana" and "Ana "
    are one entity. ``merged_into`` set: this entity was merged into that one (kept, never deleted; reads follow
    it). ``archived_at`` set: pruned as stale (restorable)."""

    agent_id: str
    entity_id: str
    type: str  # "person", "place", … ; "thing" when unknown
    name: str  # the display name as first given
    key: str
    properties: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_seen_at: datetime | None = None  # last mentioned or touched (staleness)
    sources: tuple[str, ...] = ()  # ids of the memory entries that mention it
    merged_into: str | None = None
    archived_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Relation:
    """A directed edge ``source -relation-> target``. ``invalid_at`` set: contradicted or superseded at that
    time (kept, never deleted: history). ``sources``: ids of the memory entries it was learned from."""

    agent_id: str
    relation_id: str
    source_id: str  # entity ids
    relation: str  # normalised: lower snake case ("works_at")
    target_id: str
    properties: dict[str, Any] = field(default_factory=dict)
    valid_from: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime | None = None
    sources: tuple[str, ...] = ()
