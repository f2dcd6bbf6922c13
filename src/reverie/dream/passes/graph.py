"""The knowledge-graph pass of the dream (issue 9): duplicate entities merged, stale ones archived. No LLM:
every decision is a deterministic rule (``core.graph_upkeep``).

Invariants:
- Duplicates are exact-key only: an untyped ``thing`` merges into the one typed entity of its name, typed
  entities of different types merge only when ``[dream] graph_merge_types`` groups their types (Apple the
  company and apple the fruit stay two). Near-duplicate names are never merged.
- Nothing is lost: every merge is ``KnowledgeGraph.merge_entities`` (one transaction: every relation of the
  duplicate re-pointed, valid or not, before the duplicate is marked ``merged_into``), and archiving only sets
  ``archived_at`` (the entity, its relations and its sources stay; a later mention revives it).
- An entity is stale when it was last seen (``last_seen_at``) before now minus ``stale_days``, no valid
  relation of it was learned within that window, and none of its ``sources`` is a live entry of the agent
  (not archived, not expired). A stale entity is archived only together with everything it is connected to
  by valid relations, and only when all of that is stale: an entity related to a live one stays, so an archive
  never leaves a live entity with a valid relation to an archived one.
- Each merge and each archived group is its own transaction, re-read inside it (a group touched since the
  scan is left for the next run); ``ctx.checkpoint()`` sits between them, so an abort stops between two whole
  steps and the next run finishes the rest.
- The change gate: the pass is skipped while the graph's fingerprint (``GraphRepository.fingerprint``: live
  entities and valid relations, not ``last_seen_at``) matches the last stamp, but runs at least every
  ``max_skip_days`` (7), because staleness moves with time while the graph stands still. The stamp is the
  fingerprint the gate saw, written only when the pass completed (an aborted or failed pass runs again).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from reverie.core.graph_upkeep import archivable, merge_plan, type_groups
from reverie.dream.passes.base import Capability, PassContext, PassReport
from reverie.errors import NotFound, ValidationError
from reverie.graph.service import KnowledgeGraph
from reverie.storage.base import Store
from reverie.types import Entity, Relation

log = logging.getLogger("reverie.dream")
PASS_NAME = "graph_consolidation"
MAX_STALE_DAYS = 36_500  # a century: further back than any datetime arithmetic needs
_ALL = 2_147_483_647  # "every row" for the repository's limited listings (an agent's whole graph)


@dataclass(frozen=True, slots=True)
class GraphPassConfig:
    """``stale_days``: the staleness window (0 or less: nothing is archived). ``merge_types``: groups of
    types that name one kind of thing (``core.graph_upkeep.type_groups``)."""

    stale_days: float = 180.0
    merge_types: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.stale_days > MAX_STALE_DAYS:
            raise ValueError(f"stale_days must be at most {MAX_STALE_DAYS}")
        object.__setattr__(self, "merge_types", type_groups(self.merge_types))


@dataclass(slots=True)
class _Tally:
    entities: int = 0
    merged: int = 0
    relations_moved: int = 0
    ambiguous: int = 0
    homonyms: int = 0
    stale: int = 0
    archived: int = 0
    protected: int = 0
    skipped: int = 0  # merges or groups a concurrent writer changed under the pass (left for the next run)

    def counts(self) -> dict[str, int]:
        kept = self.entities - self.merged - self.archived
        return {
            "entities": self.entities,
            "merged": self.merged,
            "relations_moved": self.relations_moved,
            "ambiguous": self.ambiguous,
            "homonyms": self.homonyms,
            "stale": self.stale,
            "archived": self.archived,
            "protected": self.protected,
            "skipped": self.skipped,
            "kept": kept,
        }


@dataclass(frozen=True, slots=True)
class GraphConsolidationPass:
    """Merges duplicate entities of the agent's knowledge graph and archives stale ones (see the module)."""

    graph: KnowledgeGraph
    config: GraphPassConfig = field(default_factory=GraphPassConfig)
    name: str = PASS_NAME
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report, now, agent = ctx.report, ctx.now(), ctx.agent_id
        tally = _Tally()
        report.counts = tally.counts()
        if not ctx.store.graph.list_entities(agent, limit=1):
            report.reason = "no entities"
            report.summary = "graph consolidation — no entities"
            return report
        fingerprint = ctx.store.graph.fingerprint(agent)
        gate = ctx.ledger.gate(agent, self.name, fingerprint, now)
        if not gate.run:
            report.status, report.reason = "skipped", f"change gate: {gate.reason}"
            return report
        report.reason = gate.reason  # why it ran: a first run, a changed graph, or the forced run
        entities = ctx.store.graph.list_entities(agent, limit=_ALL)
        tally.entities = len(entities)
        self._merge(ctx, entities, tally)
        if self.config.stale_days > 0:
            self._archive(ctx, now, tally)
        # The graph as the gate saw it, not as the pass left it: a write racing the pass then still reads as a
        # change next cycle. The cost: a run that changed the graph is followed by one that finds it settled.
        ctx.ledger.stamp(agent, self.name, now, fingerprint)
        report.counts = tally.counts()
        c = report.counts
        report.summary = (
            f"graph consolidation — {c['entities']} entities, merged {c['merged']} "
            f"({c['relations_moved']} relations re-pointed), archived {c['archived']} stale, kept {c['kept']}"
        )
        log.info("DreamService: %s (agent %s)", report.summary, agent)
        return report

    def _merge(self, ctx: PassContext, entities: Sequence[Entity], tally: _Tally) -> None:
        """Every planned merge, one transaction each, a checkpoint before each."""
        plan = merge_plan(entities, self.config.merge_types)
        tally.ambiguous, tally.homonyms = len(plan.ambiguous), len(plan.homonyms)
        for keep, dup in plan.merges:
            ctx.checkpoint()
            try:
                done = self.graph.merge_entities(ctx.agent_id, keep.entity_id, dup.entity_id)
            except (NotFound, ValidationError) as exc:  # merged or changed by another writer since the scan
                log.info("DreamService: graph merge of %s into %s skipped (%s)", dup.entity_id, keep.entity_id, exc)
                tally.skipped += 1
                continue
            tally.merged += 1
            tally.relations_moved += len(done.moved)
            ctx.report.counts = tally.counts()

    def _archive(self, ctx: PassContext, now: datetime, tally: _Tally) -> None:
        """Archive every whole group of stale entities, one transaction each, a checkpoint before each."""
        agent, graph = ctx.agent_id, ctx.store.graph
        cutoff = now - timedelta(days=self.config.stale_days)
        entities = {e.entity_id: e for e in graph.list_entities(agent, limit=_ALL)}  # after the merges
        relations = graph.relations(agent, limit=_ALL)
        stale = _stale(ctx.store, agent, list(entities.values()), relations, cutoff, now)
        groups = archivable(entities.keys(), relations, stale)
        tally.stale = len(stale)
        tally.protected = len(stale) - sum(len(g) for g in groups)
        for group in groups:
            ctx.checkpoint()
            if _archive_group(ctx.store, [entities[i] for i in group], now):
                tally.archived += len(group)
            else:
                tally.skipped += 1
            ctx.report.counts = tally.counts()


def _stale(
    store: Store, agent: str, entities: list[Entity], relations: list[Relation], cutoff: datetime, now: datetime
) -> set[str]:
    """The ids of the stale entities among ``entities`` (see the module)."""
    fresh_ends = {
        end
        for r in relations
        if r.created_at is not None and r.created_at >= cutoff
        for end in (r.source_id, r.target_id)
    }
    live_entries: dict[str, bool] = {}

    def live(entry_id: str) -> bool:
        if entry_id not in live_entries:
            live_entries[entry_id] = _live_entry(store, agent, entry_id, now)
        return live_entries[entry_id]

    out: set[str] = set()
    for entity in entities:
        seen = entity.last_seen_at or entity.updated_at or entity.created_at
        if seen is None or seen >= cutoff or entity.entity_id in fresh_ends:
            continue
        if not any(live(source) for source in entity.sources):
            out.add(entity.entity_id)
    return out


def _live_entry(store: Store, agent: str, entry_id: str, now: datetime) -> bool:
    """True when ``entry_id`` is an entry of ``agent`` neither archived nor expired (another agent's entry, or
    an unknown or purged id, is not)."""
    scope = store.facts.owner(entry_id)
    if scope is None or scope.agent_id != agent:
        return False
    entry = store.facts.get(entry_id, scope)
    return entry is not None and not entry.archived and (entry.expires_at is None or entry.expires_at > now)


def _archive_group(store: Store, scanned: list[Entity], now: datetime) -> bool:
    """Archive the group in one transaction, unless a member changed since the scan (merged, archived, seen
    or updated: a mention or a new relation touches ``last_seen_at``); False then, and nothing is written."""
    with store.transaction():
        current = [store.graph.get_entity(e.agent_id, e.entity_id) for e in scanned]
        if any(stored != before for before, stored in zip(scanned, current, strict=True)):
            return False
        for entity in scanned:
            store.graph.write_entity(replace(entity, archived_at=now, updated_at=now))
    return True
