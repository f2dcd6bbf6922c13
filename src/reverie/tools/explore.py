"""memory_explore: the walk from one long-term entry to related ones (seed 003's related pages, over
Reverie's links), also used by memory_query's ``include_related``.

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
from typing import TYPE_CHECKING, Any

from reverie.core.consolidation import MERGED_FROM
from reverie.graph.service import ref_of
from reverie.storage.base import FactFilter
from reverie.tools.base import ToolContext, ToolError, ToolResult, entry_data, entry_line
from reverie.types import SUPERSEDES, Entity, MemoryEntry, Scope

if TYPE_CHECKING:
    from reverie.engine.root import Reverie

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

    def describe(self) -> str:
        thread = self.entry.metadata.get("thread")
        return {
            "merged_from": f"merged into [{self.via}] (one of its sources)",
            "merged_into": f"[{self.via}] was merged into it",
            "sequence_previous": f"comes just before [{self.via}] in sequence {thread}",
            "sequence_next": f"comes just after [{self.via}] in sequence {thread}",
            "recall": f"recall finds it for the text of [{self.via}]",
            "shared_entity": f"names {self.entity} as [{self.via}] does",
        }.get(self.relation, self.relation)

    def as_data(self) -> dict[str, Any]:
        out = {**entry_data(self.entry), "relation": self.relation, "via": self.via, "hop": self.hop}
        if self.score is not None:
            out["score"] = round(self.score, 6)
        if self.entity is not None:
            out["entity"] = self.entity
        return out


def walk(rv: Reverie, start: MemoryEntry, depth: int, scope: Scope, *, seen: set[str] | None = None) -> list[Related]:
    """The entries related to ``start`` within ``depth`` hops, breadth first. ``seen``: ids not to report
    (updated with every id reported, so several walks can share it)."""
    visited = seen if seen is not None else set()
    visited.add(start.id)
    out: list[Related] = []
    frontier = [start]
    for hop in range(1, depth + 1):
        following: list[MemoryEntry] = []
        for entry in frontier:
            for found in _neighbours(rv, entry, scope, hop):
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


def _neighbours(rv: Reverie, entry: MemoryEntry, scope: Scope, hop: int) -> Iterator[Related]:
    now = rv.clock.now()
    every = FactFilter(scope=scope, now=now, include_archived=True)
    live = FactFilter(scope=scope, now=now)
    recorded = entry.metadata.get(MERGED_FROM)
    sources = [i for i in recorded if isinstance(i, str)] if isinstance(recorded, list) else []
    sources.extend(row.source_id for row in rv.store.dream.evidence(entry.id))
    for source in _hydrate(rv, sources, every):
        yield Related(source, "merged_from", entry.id, hop)
    if entry.superseded_by is not None:
        how = "merged_into" if entry.archived else "superseded_by"
        for target in _hydrate(rv, [entry.superseded_by], every):
            yield Related(target, how, entry.id, hop)
    listed = entry.metadata.get(SUPERSEDES)
    earlier = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
    for older in _hydrate(rv, earlier, every):
        yield Related(older, "supersedes", entry.id, hop)
    yield from _sequence(rv, entry, live, hop)
    yield from _shared_entities(rv, entry, live, hop)
    hits = rv.recall.search(entry.content[:RECALL_QUERY_CHARS], live, RECALL_NEIGHBOURS + 1)
    for hit in [h for h in hits if h.entry.id != entry.id][:RECALL_NEIGHBOURS]:
        yield Related(hit.entry, "recall", entry.id, hop, hit.score)


def _sequence(rv: Reverie, entry: MemoryEntry, flt: FactFilter, hop: int) -> Iterator[Related]:
    thread, position = entry.metadata.get("thread"), entry.metadata.get("position")
    if not isinstance(thread, str) or not isinstance(position, int) or isinstance(position, bool):
        return
    found = rv.store.facts.neighbours([(thread, position - 1), (thread, position + 1)], flt)
    for other in sorted(found, key=lambda e: (e.metadata.get("position", 0), e.id)):
        if other.metadata.get("thread") != thread or other.id == entry.id:
            continue
        relation = "sequence_previous" if other.metadata.get("position") == position - 1 else "sequence_next"
        yield Related(other, relation, entry.id, hop)


def _shared_entities(rv: Reverie, entry: MemoryEntry, flt: FactFilter, hop: int) -> Iterator[Related]:
    entities = rv.store.graph.entities_of_sources(flt.scope.agent_id, [entry.id])
    via: dict[str, Entity] = {}
    for entity in sorted(entities, key=lambda e: (len(e.sources), e.type, e.key)):
        for source in reversed(entity.sources):  # sources grow in the order they were learned
            if source != entry.id and len(via) < GRAPH_CANDIDATES:
                via.setdefault(source, entity)
    for other in _hydrate(rv, list(via), flt)[:GRAPH_NEIGHBOURS]:
        yield Related(other, "shared_entity", entry.id, hop, entity=ref_of(via[other.id]))


def _hydrate(rv: Reverie, ids: Iterable[str], flt: FactFilter) -> list[MemoryEntry]:
    """The entries among ``ids`` that ``flt`` lets through, in the order of ``ids``, each once."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    found = {e.id: e for e in rv.store.facts.get_many(wanted, flt)}
    return [found[i] for i in wanted if i in found]


def whole(value: object, default: int) -> int:
    """A whole number the schema already admitted (JSON Schema counts 2.0 as an integer)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"expected a whole number, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ToolError(f"expected a whole number, got {value!r}")
    return int(value)


def memory_explore(rv: Reverie, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    depth = whole(args.get("depth"), 1)
    start = rv.memory.get(args["id"], scope=ctx.scope)
    related = walk(rv, start, depth, ctx.scope)
    now = rv.clock.now()
    lines = ["Memory:", entry_line(start, now)]
    if related:
        lines.append(f"Related within {depth} hop(s), nearest first:")
        lines.extend(f"{entry_line(r.entry, now)}\n  hop {r.hop}: {r.describe()}" for r in related)
    else:
        lines.append(f"No related memories within {depth} hop(s).")
    if len(related) >= MAX_RELATED:
        lines.append(f"Note: the walk stopped at {MAX_RELATED} related memories.")
    data = {"entry": entry_data(start), "depth": depth, "related": [r.as_data() for r in related]}
    return ToolResult("\n".join(lines), data)
