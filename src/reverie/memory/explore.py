"""The walk from one long-term entry to related ones (seed 003's related pages, over Reverie's links): served by
the tool ``memory_explore`` and by ``memory_query``'s ``include_related``.

An entry's neighbours, each with how it is related:
- ``merged_from``: a source merged into it (its ``metadata.mergedFrom``, and the dream's merge evidence);
- ``merged_into``: the entry it was merged into (its ``superseded_by``, when it is archived);
- ``superseded_by``: the later entry that contradicts it (its ``superseded_by``, when it is kept unarchived:
  ``memory.contradiction``), and ``supersedes``: an earlier entry it contradicts (its ``metadata.supersedes``);
- ``sequence_previous`` / ``sequence_next``: the entries before and after it in its sequence
  (``metadata.thread`` / ``metadata.position``: the turns of a conversation, the chunks of a document);
- ``shared_entity``: an entry that names an entity it names, as the knowledge graph learned them
  (``memory.graph_extraction``: an entity's ``sources``), the rarest entity first (one few entries name says
  more than one most do), its most recent entries first, at most ``GRAPH_NEIGHBOURS``; ``entity`` names it;
- ``recall``: what recall finds for its text, best first (at most ``RECALL_NEIGHBOURS``).

Invariants:
- Read-only, and scoped: every neighbour is read through the caller's scope, so an id of another agent or
  user named in a link is skipped exactly like an id that no longer exists. Nothing counts as a read.
- Breadth first: an entry is reported once, at its first (shortest) hop; the walk stops at ``depth`` hops
  or ``MAX_RELATED`` entries.
- Merge and supersession links reach archived and superseded entries; sequence, shared-entity and recall
  neighbours are current ones. A shared-entity neighbour is read like any other: through the caller's scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from reverie.clock import Clock
from reverie.core.consolidation import MERGED_FROM
from reverie.core.graph import format_ref
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import SUPERSEDES, Entity, MemoryEntry, Scope

RECALL_NEIGHBOURS = 3
GRAPH_NEIGHBOURS = 3  # entries sharing an entity with an entry, per entry
GRAPH_CANDIDATES = 50  # source ids read to find them (some may be out of the caller's scope, or archived)
MAX_RELATED = 50
RECALL_QUERY_CHARS = 2000  # of an entry's text, as the query for its recall neighbours


@dataclass(frozen=True, slots=True)
class Related:
    """An entry found ``hop`` hops out, related to the entry ``via`` by ``relation`` (``score``: recall's;
    ``entity``: the ``type:name`` of the entity a ``shared_entity`` neighbour names)."""

    entry: MemoryEntry
    relation: str
    via: str
    hop: int
    score: float | None = None
    entity: str | None = None


class MemoryExplorer:
    """Related entries, read through a scope. Thread-safe as the store and recall are."""

    def __init__(self, store: Store, clock: Clock, recall: HybridSearch) -> None:
        self._store = store
        self._clock = clock
        self._recall = recall

    def walk(self, start: MemoryEntry, depth: int, scope: Scope, *, seen: set[str] | None = None) -> list[Related]:
        """The entries related to ``start`` within ``depth`` hops, breadth first. ``seen``: ids not to report
        (updated with every id reported, so several walks can share it)."""
        visited = seen if seen is not None else set()
        visited.add(start.id)
        out: list[Related] = []
        frontier = [start]
        for hop in range(1, depth + 1):
            following: list[MemoryEntry] = []
            for entry in frontier:
                for found in self._neighbours(entry, scope, hop):
                    if found.entry.id in visited:
                        continue
                    visited.add(found.entry.id)
                    out.append(found)
                    following.append(found.entry)
                    if len(out) >= MAX_RELATED:
                        return out
            frontier = following
            if not frontier:
                break
        return out

    def entries(self, ids: Iterable[str], scope: Scope) -> list[MemoryEntry]:
        """The entries among ``ids`` that ``scope`` sees, archived and superseded ones too, in the order of
        ``ids``, each once. Not counted as a read."""
        flt = FactFilter(scope=scope, now=self._clock.now(), include_archived=True)
        return self._hydrate(ids, flt)

    def _neighbours(self, entry: MemoryEntry, scope: Scope, hop: int) -> Iterator[Related]:
        now = self._clock.now()
        every = FactFilter(scope=scope, now=now, include_archived=True)
        live = FactFilter(scope=scope, now=now)
        recorded = entry.metadata.get(MERGED_FROM)
        sources = [i for i in recorded if isinstance(i, str)] if isinstance(recorded, list) else []
        sources.extend(row.source_id for row in self._store.dream.evidence(entry.id))
        for source in self._hydrate(sources, every):
            yield Related(source, "merged_from", entry.id, hop)
        if entry.superseded_by is not None:
            how = "merged_into" if entry.archived else "superseded_by"
            for target in self._hydrate([entry.superseded_by], every):
                yield Related(target, how, entry.id, hop)
        listed = entry.metadata.get(SUPERSEDES)
        earlier = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
        for older in self._hydrate(earlier, every):
            yield Related(older, "supersedes", entry.id, hop)
        yield from self._sequence(entry, live, hop)
        yield from self._shared_entities(entry, live, hop)
        hits = self._recall.search(entry.content[:RECALL_QUERY_CHARS], live, RECALL_NEIGHBOURS + 1)
        for hit in [h for h in hits if h.entry.id != entry.id][:RECALL_NEIGHBOURS]:
            yield Related(hit.entry, "recall", entry.id, hop, hit.score)

    def _sequence(self, entry: MemoryEntry, flt: FactFilter, hop: int) -> Iterator[Related]:
        thread, position = entry.metadata.get("thread"), entry.metadata.get("position")
        if not isinstance(thread, str) or not isinstance(position, int) or isinstance(position, bool):
            return
        found = self._store.facts.neighbours([(thread, position - 1), (thread, position + 1)], flt)
        for other in sorted(found, key=lambda e: (e.metadata.get("position", 0), e.id)):
            if other.metadata.get("thread") != thread or other.id == entry.id:
                continue
            relation = "sequence_previous" if other.metadata.get("position") == position - 1 else "sequence_next"
            yield Related(other, relation, entry.id, hop)

    def _shared_entities(self, entry: MemoryEntry, flt: FactFilter, hop: int) -> Iterator[Related]:
        entities = self._store.graph.entities_of_sources(flt.scope.agent_id, [entry.id])
        via: dict[str, Entity] = {}
        for entity in sorted(entities, key=lambda e: (len(e.sources), e.type, e.key)):
            for source in reversed(entity.sources):  # sources grow in the order they were learned
                if source != entry.id and len(via) < GRAPH_CANDIDATES:
                    via.setdefault(source, entity)
        for other in self._hydrate(list(via), flt)[:GRAPH_NEIGHBOURS]:
            found = via[other.id]
            yield Related(other, "shared_entity", entry.id, hop, entity=format_ref(found.type, found.name))

    def _hydrate(self, ids: Iterable[str], flt: FactFilter) -> list[MemoryEntry]:
        """The entries among ``ids`` that ``flt`` lets through, in the order of ``ids``, each once."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        found = {e.id: e for e in self._store.facts.get_many(wanted, flt)}
        return [found[i] for i in wanted if i in found]
