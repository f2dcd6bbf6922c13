"""The knowledge graph per agent (seed 004, "Knowledge Graph"): entities (type, name, properties) and directed
relations between them, with provenance, validity in time, and identity resolution.

An entity is named by a reference ``type:name`` ("person:John Doe"); a bare ``name`` means "whatever this
agent calls that": the one live entity with that name whatever its type, else the untyped ``thing`` one.

Invariants:
- Identity is ``(agent, type, entity_key(name))``: "Ana", "ana" and "Ana " are one entity. Adding it again
  updates it (properties merged, sources unioned, last seen now); it never makes a second one.
- A new typed entity absorbs the live ``thing`` of the same name (a merge): "ana" learned before "person:Ana"
  is the same person.
- Nothing is lost. A merge re-points every relation of the duplicate to the entity kept (replacement before
  retirement, in one transaction) and marks the duplicate ``merged_into``; a relation that becomes a copy of
  one the kept entity already has is invalidated with ``properties.duplicate_of`` naming it, never deleted.
  Reads follow ``merged_into``, so an old reference still finds the merged entity.
- A contradicted relation is invalidated, not deleted: for an exclusive relation (``works_at``, …) a new
  target sets ``invalid_at`` on the previous one. An identical valid relation is reinforced (sources
  unioned), never duplicated.
- Every argument is validated before the store is touched, and every write is one transaction: a refused
  call changes nothing. Every read is scoped by the agent: another agent's entities are unknown (NotFound).
- Concurrent writers: a second creation of one entity identity meets the store's ``Conflict`` and is retried
  as an update. Relations have no such unique key: on PostgreSQL two processes adding the same new relation
  at the same instant may both create it (SQLite serialises writers, so there it cannot happen).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, TypeVar

from reverie.clock import Clock
from reverie.core import filters, validate
from reverie.core import graph as rules
from reverie.core.graph import THING
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.graph import inputs as checks
from reverie.graph.inputs import MAX_DEPTH, MAX_LIMIT
from reverie.graph.values import (
    EntitySubgraph,
    EntityWrite,
    GraphPath,
    MergeReport,
    RelationWrite,
    Triple,
    ref_of,
)
from reverie.storage.base import Store
from reverie.types import Entity, Page, Relation

log = logging.getLogger("reverie.graph")
T = TypeVar("T")

DEFAULT_EXCLUSIVE: Final = ("works_at", "lives_in", "located_in", "married_to", "reports_to", "born_in", "ceo_of")
DUPLICATE_OF: Final = "duplicate_of"  # set on a relation a merge made a copy of another (which it names)
_MAX_CHAIN = 100  # merged_into hops followed at most (a chain is short: each merge points at a live entity)
_ID_BYTES = 6  # 12 hex characters, like memory ids


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """The knobs of the knowledge graph; the engine fills them from ``[graph]``."""

    exclusive_relations: tuple[str, ...] = DEFAULT_EXCLUSIVE
    max_depth: int = 6  # the deepest path or subgraph a caller may ask for (and the path default)
    subgraph_limit: int = 100  # entities a subgraph holds at most unless the caller asks for fewer
    list_limit: int = 100  # entities or relations a listing returns by default

    def __post_init__(self) -> None:
        if not 1 <= self.max_depth <= MAX_DEPTH:
            raise ValueError(f"max_depth must be from 1 to {MAX_DEPTH}")
        if not 1 <= self.subgraph_limit <= MAX_LIMIT or not 1 <= self.list_limit <= MAX_LIMIT:
            raise ValueError(f"subgraph_limit and list_limit must be from 1 to {MAX_LIMIT}")
        for name in self.exclusive_relations:
            if rules.relation_key(name) != name:
                raise ValueError(f"exclusive relation {name!r} is not in lower snake case")


class KnowledgeGraph:
    """The knowledge graph of every agent in one store. Thread-safe as the store is."""

    def __init__(self, store: Store, clock: Clock, config: GraphConfig | None = None) -> None:
        self._store = store
        self._clock = clock
        self.config = config or GraphConfig()

    # -- writes ------------------------------------------------------------------------------------------
    def add_entity(
        self,
        agent_id: str,
        type: str,
        name: str,
        properties: Mapping[str, Any] | None = None,
        sources: Sequence[str] = (),
    ) -> EntityWrite:
        """Add an entity, or update the one with that identity (see the module). ``type`` ``thing`` means
        "unknown": it updates the one live entity of that name of any type when there is one."""
        agent = checks.agent(agent_id)
        kind = checks.entity_type(type)
        shown, key = checks.entity_name(name, "name")
        props, srcs = checks.properties(properties), checks.sources(sources)

        def work() -> EntityWrite:
            with self._store.transaction():
                return self._upsert(agent, kind, shown, key, props, srcs, self._clock.now(), "name")

        return _retrying(work)

    def add_relation(
        self,
        agent_id: str,
        from_ref: str,
        relation: str,
        to_ref: str,
        properties: Mapping[str, Any] | None = None,
        sources: Sequence[str] = (),
        valid_from: datetime | None = None,
    ) -> RelationWrite:
        """Relate two entities (created when missing): ``from_ref -relation-> to_ref``, valid from
        ``valid_from`` (default now). See the module for reinforcement and exclusive relations."""
        agent = checks.agent(agent_id)
        source_ref, target_ref = checks.reference(from_ref, "from"), checks.reference(to_ref, "to")
        rel = checks.relation(relation)
        props, srcs = checks.properties(properties), checks.sources(sources)
        start = checks.moment(valid_from, "valid_from")

        def work() -> RelationWrite:
            now = self._clock.now()
            with self._store.transaction():
                source = self._ensure(agent, source_ref, srcs, now, "from")
                target = self._ensure(agent, target_ref, srcs, now, "to")
                # A new typed target may have absorbed the source ("ana" -> "person:Ana"): read it again.
                source = self._follow(self._stored(agent, source.entity_id))
                if source.entity_id == target.entity_id:
                    raise ValidationError(f"{from_ref!r} and {to_ref!r} are one entity: relate two", field="to")
                return self._relate(source, rel, target, props, srcs, start, now)

        return _retrying(work)

    def invalidate_relation(self, agent_id: str, relation_id: str) -> Triple:
        """Mark a relation no longer true (``invalid_at`` now; kept as history). Invalidating an invalid
        relation changes nothing. Raises ``NotFound`` for an unknown id (or another agent's)."""
        agent = checks.agent(agent_id)
        rid = validate.identifier(relation_id, name="relation_id")
        with self._store.transaction():
            found = self._store.graph.get_relation(agent, rid)
            if found is None:
                raise NotFound(f"no relation {rid!r}")
            if found.invalid_at is None:
                found = replace(found, invalid_at=self._clock.now())
                self._store.graph.write_relation(found)
            return self._triples(agent, [found])[0]

    def merge_entities(self, agent_id: str, keep_id: str, dup_id: str) -> MergeReport:
        """Merge entity ``dup_id`` into ``keep_id`` (followed to where it was merged, if it was): its
        relations move to the kept entity, its sources and properties join the kept one's (the kept entity's
        values win), and it is marked ``merged_into``. Raises ``NotFound`` for an unknown id and
        ``ValidationError`` when the two are already one entity."""
        agent = checks.agent(agent_id)
        keep_ref = validate.identifier(keep_id, name="keep_id")
        dup_ref = validate.identifier(dup_id, name="dup_id")
        if keep_ref == dup_ref:
            raise ValidationError("an entity cannot be merged into itself", field="dup_id")

        def work() -> MergeReport:
            with self._store.transaction():
                keep = self._follow(self._stored(agent, keep_ref))
                dup = self._stored(agent, dup_ref)
                if dup.merged_into is not None:
                    raise ValidationError(f"{dup_ref!r} was already merged into {dup.merged_into!r}", field="dup_id")
                if keep.entity_id == dup.entity_id:
                    raise ValidationError(f"{keep_ref!r} was merged into {dup_ref!r}: they are one", field="keep_id")
                return self._merge(keep, dup, self._clock.now())

        return _retrying(work)

    # -- reads -------------------------------------------------------------------------------------------
    def get_entity(self, agent_id: str, entity_id: str) -> Entity:
        """The entity with that id, or the one it was merged into. Raises ``NotFound``."""
        agent = checks.agent(agent_id)
        return self._follow(self._stored(agent, validate.identifier(entity_id, name="entity_id")))

    def resolve(self, agent_id: str, ref: str) -> Entity:
        """The entity ``ref`` names (``type:name``, or a bare name: see the module), following merges.
        Raises ``NotFound`` when there is none, ``ValidationError`` when a bare name is ambiguous."""
        return self._resolve(checks.agent(agent_id), checks.reference(ref, "ref"), "ref")

    def list_entities(
        self,
        agent_id: str,
        *,
        type: str | None = None,
        limit: int | None = None,
    ) -> list[Entity]:
        """Live entities (of one type), most recently seen first."""
        agent = checks.agent(agent_id)
        kind = None if type is None else checks.entity_type(type)
        return self._store.graph.list_entities(agent, type=kind, limit=self._limit(limit))

    def entities_page(
        self, agent_id: str, *, type: str | None = None, cursor: str | None = None, limit: int | None = None
    ) -> Page[Entity]:
        """Live entities (of one type) a page at a time, in id order (stable, not meaningful), at most
        ``limit`` (default ``list_limit``); ``next_cursor`` for the next page (None on the last). Keyset on the
        id: a walk sees every entity that was live for the whole walk exactly once."""
        agent = checks.agent(agent_id)
        kind = None if type is None else checks.entity_type(type)
        return filters.keyset_page(
            lambda after, n: self._store.graph.entities_page(
                agent, type=kind, after=None if after is None else after[1], limit=n
            ),
            cursor,
            self._limit(limit),
            filters.fingerprint("entities", agent, kind),
            lambda entity: (None, entity.entity_id),
        )

    def search_entities(self, agent_id: str, text: str, *, limit: int | None = None) -> list[Entity]:
        """Live entities whose name contains ``text`` (case-insensitive), exact names first."""
        agent = checks.agent(agent_id)
        return self._store.graph.search_entities(agent, checks.search_text(text), limit=self._limit(limit))

    def relations(
        self,
        agent_id: str,
        *,
        from_ref: str | None = None,
        relation: str | None = None,
        to_ref: str | None = None,
        entity_ref: str | None = None,
        include_invalid: bool = False,
        limit: int | None = None,
    ) -> list[Triple]:
        """Relations matching every filter given (``entity_ref``: either end), oldest first; valid ones
        only unless ``include_invalid``. Raises ``NotFound`` for a reference to no entity."""
        agent = checks.agent(agent_id)
        wanted = self._relation_filter(agent, from_ref, relation, to_ref, entity_ref, include_invalid)
        return self._triples(agent, self._store.graph.relations(agent, **wanted, limit=self._limit(limit)))

    def relations_page(
        self,
        agent_id: str,
        *,
        from_ref: str | None = None,
        relation: str | None = None,
        to_ref: str | None = None,
        entity_ref: str | None = None,
        include_invalid: bool = False,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Page[Triple]:
        """``relations`` a page at a time, in relation-id order (stable, not meaningful), at most ``limit``
        (default ``list_limit``); ``next_cursor`` for the next page (None on the last). Keyset on the id: a
        walk sees every matching relation that matched for the whole walk exactly once."""
        agent = checks.agent(agent_id)
        wanted = self._relation_filter(agent, from_ref, relation, to_ref, entity_ref, include_invalid)
        return filters.keyset_page(
            lambda after, n: self._triples(
                agent,
                self._store.graph.relations_page(agent, **wanted, after=None if after is None else after[1], limit=n),
            ),
            cursor,
            self._limit(limit),
            filters.fingerprint("relations", agent, wanted),
            lambda triple: (None, triple.relation.relation_id),
        )

    def _relation_filter(
        self, agent: str, from_ref: object, relation: object, to_ref: object, entity_ref: object, invalid: object
    ) -> dict[str, Any]:
        """The checked filters of a relation query as the repository's keywords (references resolved to ids)."""
        invalid_too = checks.flag(invalid, "include_invalid")
        ids: dict[str, str | None] = {}
        for name, ref in (("from", from_ref), ("to", to_ref), ("entity", entity_ref)):
            ids[name] = None if ref is None else self._resolve(agent, checks.reference(ref, name), name).entity_id
        return {
            "entity_id": ids["entity"],
            "source_id": ids["from"],
            "relation": None if relation is None else checks.relation(relation),
            "target_id": ids["to"],
            "include_invalid": invalid_too,
        }

    def path(self, agent_id: str, from_ref: str, to_ref: str, max_depth: int | None = None) -> GraphPath | None:
        """One shortest chain of valid relations between two entities (either direction), of at most
        ``max_depth`` relations (default and cap ``[graph] max_depth``), or None when there is none."""
        agent = checks.agent(agent_id)
        depth = self._depth(max_depth, default=self.config.max_depth, name="max_depth")
        start = self._resolve(agent, checks.reference(from_ref, "from"), "from")
        goal = self._resolve(agent, checks.reference(to_ref, "to"), "to")
        edges = rules.shortest_path(start.entity_id, goal.entity_id, self._expand(agent), depth)
        if edges is None:
            return None
        return GraphPath(start=start, goal=goal, triples=tuple(self._triples(agent, edges)))

    def subgraph(self, agent_id: str, ref: str, *, depth: int = 2, limit: int | None = None) -> EntitySubgraph:
        """The entities within ``depth`` hops of ``ref`` (at most ``limit``, default ``[graph]
        subgraph_limit``) and every valid relation among them."""
        agent = checks.agent(agent_id)
        hops = self._depth(depth, default=2, name="depth")
        cap = self.config.subgraph_limit if limit is None else validate.limit(limit, maximum=MAX_LIMIT)
        center = self._resolve(agent, checks.reference(ref, "entity"), "entity")
        walked = rules.subgraph(center.entity_id, self._expand(agent), hops, limit=cap)
        entities = self._entities(agent, walked.nodes)
        return EntitySubgraph(
            center=center,
            depth=hops,
            entities=tuple(entities[i] for i in walked.nodes if i in entities),
            triples=tuple(self._triples(agent, walked.edges, entities)),
            distances=dict(walked.distances),
            truncated=walked.truncated,
        )

    # -- internals: identity -----------------------------------------------------------------------------
    def _stored(self, agent: str, entity_id: str) -> Entity:
        found = self._store.graph.get_entity(agent, entity_id)
        if found is None:
            raise NotFound(f"no entity {entity_id!r}")
        return found

    def _follow(self, entity: Entity) -> Entity:
        """The entity ``entity`` was (transitively) merged into, or itself."""
        for _ in range(_MAX_CHAIN):
            if entity.merged_into is None:
                return entity
            nxt = self._store.graph.get_entity(entity.agent_id, entity.merged_into)
            if nxt is None:  # cannot happen through this service: merges point at stored entities
                log.warning("entity %s is merged into missing %s", entity.entity_id, entity.merged_into)
                return entity
            entity = nxt
        return entity

    def _lookup(self, agent: str, kind: str, key: str, field_name: str) -> Entity | None:
        """The entity ``kind``/``key`` names (following merges), or None. ``thing`` is "any type": the one
        live entity with that key, else the thing; several typed ones and no thing: ambiguous."""
        if kind != THING:
            found = self._store.graph.find_entity(agent, kind, key)
            return None if found is None else self._follow(found)
        live = self._store.graph.entities_by_key(agent, key)
        if len(live) == 1:
            return live[0]
        things = [e for e in live if e.type == THING]
        if things:
            return things[0]
        if live:
            refs = ", ".join(sorted(ref_of(e) for e in live))
            raise ValidationError(
                f"{key!r} names {len(live)} entities ({refs}): say which, as type:name", field=field_name
            )
        thing = self._store.graph.find_entity(agent, THING, key)  # merged or archived
        return None if thing is None else self._follow(thing)

    def _resolve(self, agent: str, ref: tuple[str, str, str], field_name: str) -> Entity:
        kind, shown, key = ref
        found = self._lookup(agent, kind, key, field_name)
        if found is None:
            raise NotFound(f"no entity {rules.format_ref(kind, shown)!r}")
        return found

    def _ensure(self, agent: str, ref: tuple[str, str, str], srcs: tuple[str, ...], now: datetime, fld: str) -> Entity:
        kind, shown, key = ref
        return self._upsert(agent, kind, shown, key, {}, srcs, now, fld).entity

    def _upsert(
        self,
        agent: str,
        kind: str,
        shown: str,
        key: str,
        props: dict[str, Any],
        srcs: tuple[str, ...],
        now: datetime,
        field_name: str,
    ) -> EntityWrite:
        """Inside a transaction: touch the entity with that identity, or create it (absorbing a live
        ``thing`` of the same name when it is typed)."""
        found = self._lookup(agent, kind, key, field_name)
        if found is not None:
            return EntityWrite(self._touch(found, props, srcs, now), "updated")
        created = Entity(
            agent_id=agent,
            entity_id=_new_id(),
            type=kind,
            name=shown,
            key=key,
            properties=props,
            created_at=now,
            updated_at=now,
            last_seen_at=now,
            sources=srcs,
        )
        self._store.graph.add_entity(created)
        thing = None if kind == THING else self._store.graph.find_entity(agent, THING, key)
        if thing is None or thing.merged_into is not None or thing.archived_at is not None:
            return EntityWrite(created, "created")
        report = self._merge(created, thing, now)
        return EntityWrite(report.entity, "created", (thing.entity_id,))

    def _touch(self, entity: Entity, props: dict[str, Any], srcs: tuple[str, ...], now: datetime) -> Entity:
        """Seen again: properties merged (given values win), sources unioned, revived if archived."""
        merged = checks.properties({**entity.properties, **props}) if props else entity.properties
        sources = _union(entity.sources, srcs)
        changed = merged != entity.properties or sources != entity.sources or entity.archived_at is not None
        touched = replace(
            entity,
            properties=merged,
            sources=sources,
            last_seen_at=now,
            updated_at=now if changed else entity.updated_at,
            archived_at=None,
        )
        self._store.graph.write_entity(touched)
        return touched

    # -- internals: relations ----------------------------------------------------------------------------
    def _relate(
        self,
        source: Entity,
        rel: str,
        target: Entity,
        props: dict[str, Any],
        srcs: tuple[str, ...],
        valid_from: datetime | None,
        now: datetime,
    ) -> RelationWrite:
        agent, graph = source.agent_id, self._store.graph
        known = graph.relations(agent, source_id=source.entity_id, relation=rel, target_id=target.entity_id, limit=1)
        same = known[0] if known else None
        if same is not None:
            reinforced = replace(
                same,
                properties=checks.properties({**same.properties, **props}) if props else same.properties,
                sources=_union(same.sources, srcs),
                valid_from=_earliest(same.valid_from, valid_from),
            )
            self._store.graph.write_relation(reinforced)
            return RelationWrite(Triple(reinforced, source, target), "reinforced")
        start = valid_from or now
        created = Relation(agent, _new_id(), source.entity_id, rel, target.entity_id, props, start, None, now, srcs)
        stale: list[Relation] = []
        if rel in self.config.exclusive_relations:
            # The last one told wins, whatever valid_from says: a default valid_from is only when it was learned.
            current = graph.relations(agent, source_id=source.entity_id, relation=rel, limit=MAX_LIMIT)
            stale = [replace(r, invalid_at=_superseded_at(r, start, now)) for r in current]
        self._store.graph.add_relation(created)  # replacement before retirement
        for old in stale:
            self._store.graph.write_relation(old)
        return RelationWrite(Triple(created, source, target), "created", tuple(stale))

    def _merge(self, keep: Entity, dup: Entity, now: datetime) -> MergeReport:
        """Inside a transaction: re-point every relation of ``dup`` to ``keep``, then retire ``dup``."""
        graph = self._store.graph
        agent = keep.agent_id
        valid = {(r.source_id, r.relation, r.target_id): r for r in graph.neighbours(agent, [keep.entity_id])}
        twins: dict[str, Relation] = {}
        moved: list[str] = []
        duplicates: list[str] = []
        for rel in graph.neighbours(agent, [dup.entity_id], include_invalid=True):
            ends = tuple(keep.entity_id if e == dup.entity_id else e for e in (rel.source_id, rel.target_id))
            repointed = replace(rel, source_id=ends[0], target_id=ends[1])
            identity = (ends[0], rel.relation, ends[1])
            twin = valid.get(identity) if rel.invalid_at is None else None
            if twin is not None:
                twin = replace(
                    twin,
                    sources=_union(twin.sources, rel.sources),
                    properties={**rel.properties, **twin.properties},
                    valid_from=_earliest(twin.valid_from, rel.valid_from),
                )
                valid[identity] = twins[twin.relation_id] = twin
                repointed = replace(
                    repointed, invalid_at=now, properties={**rel.properties, DUPLICATE_OF: twin.relation_id}
                )
                duplicates.append(rel.relation_id)
            elif rel.invalid_at is None:
                valid[identity] = repointed
            graph.write_relation(repointed)
            moved.append(rel.relation_id)
        for twin in twins.values():
            graph.write_relation(twin)
        invalidated = self._settle_exclusive(agent, keep.entity_id, now)
        kept = replace(
            keep,
            properties={**dup.properties, **keep.properties},
            sources=_union(keep.sources, dup.sources),
            created_at=_earliest(keep.created_at, dup.created_at),
            last_seen_at=_latest(keep.last_seen_at, dup.last_seen_at),
            updated_at=now,
            archived_at=None,
        )
        graph.write_entity(kept)
        retired = replace(dup, merged_into=keep.entity_id, updated_at=now)
        graph.write_entity(retired)
        return MergeReport(kept, retired, tuple(moved), tuple(duplicates), invalidated)

    def _settle_exclusive(self, agent: str, source_id: str, now: datetime) -> tuple[str, ...]:
        """After a merge, an exclusive relation of ``source_id`` with several valid targets keeps the one
        learned last and invalidates the others, as ``add_relation`` would have."""
        out: list[str] = []
        for rel in sorted(self.config.exclusive_relations):
            current = self._store.graph.relations(agent, source_id=source_id, relation=rel, limit=MAX_LIMIT)
            if len(current) < 2:
                continue
            newest = max(current, key=lambda r: (_sort_time(r.created_at), _sort_time(r.valid_from), r.relation_id))
            for old in current:
                if old.relation_id != newest.relation_id:
                    self._store.graph.write_relation(
                        replace(old, invalid_at=_superseded_at(old, newest.valid_from, now))
                    )
                    out.append(old.relation_id)
        return tuple(out)

    # -- internals: reading --------------------------------------------------------------------------------
    def _expand(self, agent: str) -> Callable[[list[str]], list[Relation]]:
        return lambda ids: self._store.graph.neighbours(agent, ids)

    def _entities(self, agent: str, ids: Iterable[str], known: dict[str, Entity] | None = None) -> dict[str, Entity]:
        out = dict(known or {})
        for entity_id in ids:
            if entity_id not in out:
                found = self._store.graph.get_entity(agent, entity_id)
                if found is not None:
                    out[entity_id] = self._follow(found)
        return out

    def _triples(
        self, agent: str, relations: Iterable[Relation], known: dict[str, Entity] | None = None
    ) -> list[Triple]:
        rels = list(relations)
        entities = self._entities(agent, [i for r in rels for i in (r.source_id, r.target_id)], known)
        out = []
        for rel in rels:
            source, target = entities.get(rel.source_id), entities.get(rel.target_id)
            if source is None or target is None:  # cannot happen through this service: entities are kept
                log.warning("relation %s has a missing end", rel.relation_id)
                continue
            out.append(Triple(rel, source, target))
        return out

    def _limit(self, limit: int | None) -> int:
        return self.config.list_limit if limit is None else validate.limit(limit, maximum=MAX_LIMIT)

    def _depth(self, value: int | None, *, default: int, name: str) -> int:
        depth = default if value is None else value
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= self.config.max_depth:
            raise ValidationError(f"{name} must be a whole number from 1 to {self.config.max_depth}", field=name)
        return depth


# -- small helpers ---------------------------------------------------------------------------------------------
def _new_id() -> str:
    return secrets.token_hex(_ID_BYTES)


def _union(a: tuple[str, ...], b: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


def _earliest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def _sort_time(value: datetime | None) -> float:
    return float("-inf") if value is None else value.timestamp()


def _superseded_at(old: Relation, new_start: datetime | None, now: datetime) -> datetime:
    """When ``old`` stopped holding: when its successor started (never in the future, never before ``old``
    itself started)."""
    at = now if new_start is None else min(new_start, now)
    return at if old.valid_from is None else max(at, old.valid_from)


def _retrying(work: Callable[[], T]) -> T:
    """Run a write; once more when a concurrent writer created the same identity first (``Conflict``): the
    second attempt finds it and updates it."""
    try:
        return work()
    except Conflict:
        return work()
