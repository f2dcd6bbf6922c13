"""memory_semantic_duplicates and memory_semantic_consolidate (seed 004's agent-callable semantic memory).

A *group* is a set of near-duplicate live entries of one scope and one top-level category
(``core.clusters``, at ``dream.consolidation_similarity_threshold``: cosine of the stored vectors, else token
Jaccard). Its *newest* entry (latest ``last_seen_at``, then ``created_at``) is kept; each other member is
*covered* when the newest entry carries every specific it states (``core.coverage.check_coverage`` with the
engine's vocabulary).

Invariants:
- Consolidation archives only covered members, ``superseded_by`` the newest entry, so no specific is lost;
  a member with a specific of its own stays live. A member that differs in stance from the newest entry
  (``core.stance``: "likes" against "dislikes") is never covered: it is a changed belief, so it is kept,
  unarchived, superseded by the newest (``memory.contradiction``; both stay current under
  ``memory.on_contradiction = "keep_both"``). The newest entry takes the merge arithmetic of what it
  absorbed (earliest ``created_at``, latest ``last_seen_at``, summed reinforcement, highest importance, the
  more durable tier, union of tags, merged subject time) and lists them in ``metadata.mergedFrom``; its text
  and source do not change. Every write of a call happens in one transaction, and coverage is checked
  again inside it against the rows as they are then.
- Consolidation is withheld unless the agent's own settings allow it (``allow_self_consolidation``):
  its reach is the whole store, not a row the caller named (seed 004). There is no global switch.
- Eligible entries are the ones dream consolidation may merge: live, unexpired, not pinned, not working
  notes, not left alone by deduplication (feedback/*, claim/capability/*, sequence members).
- Bounded: at most ``MAX_ENTRIES`` live entries of the scope are examined (the most recently reinforced).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from reverie.core.clusters import Item, near_duplicate_clusters
from reverie.core.consolidation import absorbed
from reverie.core.coverage import CoverageSource, Vocabulary, check_coverage
from reverie.core.dedup import content_tokens, top_category
from reverie.core.stance import StanceDifference, stance_difference
from reverie.core.text import preview
from reverie.memory.contradiction import supersede
from reverie.memory.dedup import bypasses
from reverie.storage.base import FactFilter
from reverie.tools.base import ToolContext, ToolResult, entry_data
from reverie.types import Change, MemoryEntry, Scope, Tier

if TYPE_CHECKING:
    from reverie.engine.root import Reverie

log = logging.getLogger("reverie.tools")
MAX_ENTRIES = 10_000
MAX_GROUP = 8  # members of one group


def self_consolidation_allowed(rv: Reverie, agent_id: str) -> bool:
    """Whether ``[agents.<agent_id>] allow_self_consolidation`` is true. Read defensively: a missing
    ``agents`` table, or an agent without an entry, means no."""
    agents = getattr(rv.settings, "agents", None)
    if not isinstance(agents, Mapping):
        return False
    agent = agents.get(agent_id)
    if isinstance(agent, Mapping):
        return agent.get("allow_self_consolidation") is True
    return getattr(agent, "allow_self_consolidation", False) is True


@dataclass(frozen=True, slots=True)
class Member:
    """A group member other than the newest: whether the newest covers it, what it would lose if not, and
    how its stance differs from the newest's (then it is never covered)."""

    entry: MemoryEntry
    covered: bool
    missing: tuple[str, ...]
    stance: StanceDifference | None = None


@dataclass(frozen=True, slots=True)
class DuplicateGroup:
    newest: MemoryEntry
    members: tuple[Member, ...]  # newest first
    similarity: float
    measure: str

    def as_data(self) -> dict[str, Any]:
        return {
            "keep": entry_data(self.newest),
            "members": [
                {
                    **entry_data(m.entry),
                    "covered": m.covered,
                    "missing": list(m.missing),
                    "contradicts_newest": None if m.stance is None else m.stance.describe(),
                }
                for m in self.members
            ],
            "similarity": round(self.similarity, 6),
            "measure": self.measure,
        }


def _eligible(entry: MemoryEntry) -> bool:
    return entry.current and not (entry.pinned or entry.tier is Tier.WORKING or bypasses(entry))


def _newness(entry: MemoryEntry) -> tuple[datetime, datetime, str]:
    # Seen last, then saved last: an entry that absorbed others keeps the latest last_seen_at (and the
    # earliest created_at), so it stays the newest of its group and a second call changes nothing.
    return entry.last_seen_at, entry.created_at, entry.id


def _covers(
    newest: MemoryEntry, member: MemoryEntry, vocabulary: Vocabulary
) -> tuple[bool, tuple[str, ...], StanceDifference | None]:
    stance = stance_difference(member.content, newest.content, vocabulary.stance)
    result = check_coverage([CoverageSource(member.content, member.category)], newest.content, vocabulary=vocabulary)
    return result.ok and stance is None, result.missing, stance


def duplicate_groups(rv: Reverie, scope: Scope) -> tuple[list[DuplicateGroup], int, bool]:
    """The groups among the live entries ``scope`` sees, how many entries were examined, and whether there
    were more than ``MAX_ENTRIES``. Each entry is in at most one group. Reads only."""
    found = rv.store.facts.recent(FactFilter(scope=scope, now=rv.clock.now()), MAX_ENTRIES + 1)
    pool = [e for e in found[:MAX_ENTRIES] if _eligible(e)]
    vectors = _vectors(rv, scope.agent_id, pool)
    items = [
        Item(e.id, (e.scope, top_category(e.category)), content_tokens(e.content), vectors.get(e.id)) for e in pool
    ]
    threshold = rv.settings.dream.consolidation_similarity_threshold
    clusters = near_duplicate_clusters(items, [e.id for e in pool], threshold=threshold, max_size=MAX_GROUP)
    by_id = {e.id: e for e in pool}
    vocabulary = rv.coverage_vocabulary()
    placed: set[str] = set()
    groups: list[DuplicateGroup] = []
    for cluster in clusters:
        entries = [by_id[i] for i in cluster.ids if i not in placed]
        if len(entries) < 2:
            continue
        placed.update(e.id for e in entries)
        newest = max(entries, key=_newness)
        others = sorted((e for e in entries if e.id != newest.id), key=_newness, reverse=True)
        members = tuple(Member(e, *_covers(newest, e, vocabulary)) for e in others)
        groups.append(DuplicateGroup(newest, members, cluster.similarity, cluster.by))
    return groups, len(pool), len(found) > MAX_ENTRIES


def _vectors(rv: Reverie, agent_id: str, pool: Sequence[MemoryEntry]) -> dict[str, npt.NDArray[np.float32]]:
    if rv.embedder is None or not pool:
        return {}
    wanted = {e.id for e in pool}
    snapshot = rv.store.vectors.snapshot(agent_id, rv.embedder.model_id)
    return {i: np.frombuffer(blob, dtype=np.float32) for i, blob in snapshot.vectors if blob and i in wanted}


def memory_semantic_duplicates(rv: Reverie, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    groups, examined, truncated = duplicate_groups(rv, ctx.scope)
    if not groups:
        lines = [f"No near-duplicate groups among the {examined} memories examined."]
    else:
        lines = [f"{len(groups)} group(s) of near-duplicates among the {examined} memories examined:"]
        for group in groups:
            lines.append(f"- newest [{group.newest.id}] ({group.newest.category}) {preview(group.newest.content, 300)}")
            for m in group.members:
                said = "covered by the newest" if m.covered else f"has its own specifics: {', '.join(m.missing)}"
                if m.stance is not None:
                    said = f"contradicts the newest ({m.stance.describe()})"
                lines.append(f"  [{m.entry.id}] {said}: {preview(m.entry.content, 300)}")
        if not self_consolidation_allowed(rv, ctx.agent_id):
            lines.append("Consolidation is not enabled for this agent; an operator can run it.")
    if truncated:
        lines.append(f"Note: only the {MAX_ENTRIES} most recently reinforced memories were examined.")
    data = {"groups": [g.as_data() for g in groups], "examined": examined, "truncated": truncated}
    return ToolResult("\n".join(lines), data)


def memory_semantic_consolidate(rv: Reverie, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    groups, examined, truncated = duplicate_groups(rv, ctx.scope)
    vocabulary = rv.coverage_vocabulary()
    now = rv.clock.now()
    done: list[dict[str, Any]] = []
    with rv.store.transaction():
        for group in groups:
            outcome = _consolidate(rv, group, vocabulary, now)
            if outcome is not None:
                done.append(outcome)
    archived = [i for g in done for i in g["archived"]]
    kept = [i for g in done for i in g["kept"]]
    lines = [
        f"Consolidated {len(done)} group(s) of near-duplicates among {examined} memories: archived "
        f"{len(archived)} (each superseded by the newest of its group, restorable until the archive purge), "
        f"kept {len(kept)}."
    ]
    for g in done:
        gone = ", ".join(f"[{i}]" for i in g["archived"]) or "nothing"
        lines.append(f"- kept [{g['keep']}]; archived {gone}")
        changed = [f"[{i}]" for i in g["contradicted"]]
        own = [f"[{i}]" for i in g["kept"] if i != g["keep"] and i not in g["contradicted"]]
        if own:
            lines.append(f"  also kept {', '.join(own)}: each has specifics or a stance the newest entry lacks")
        if changed:
            lines.append(f"  kept {', '.join(changed)} as superseded: the newest entry contradicts each")
    if truncated:
        lines.append(f"Note: only the {MAX_ENTRIES} most recently reinforced memories were examined.")
    data = {"groups": done, "archived": archived, "kept": kept, "examined": examined, "truncated": truncated}
    return ToolResult("\n".join(lines), data)


def _consolidate(rv: Reverie, group: DuplicateGroup, vocabulary: Vocabulary, now: datetime) -> dict[str, Any] | None:
    """Archive the covered members of ``group`` into its newest entry, re-checked on the rows as they are
    now (inside the caller's transaction). None when the newest entry is no longer eligible."""
    facts = rv.store.facts
    newest = facts.get(group.newest.id, group.newest.scope)
    if newest is None or not _eligible(newest):
        return None
    retired: list[MemoryEntry] = []
    kept = [newest.id]
    contradicted: list[str] = []
    for member in group.members:
        current = facts.get(member.entry.id, member.entry.scope)
        if current is None or not _eligible(current):
            continue
        covered, _, stance = _covers(newest, current, vocabulary)
        if stance is not None:
            mode = rv.settings.memory.on_contradiction
            if supersede(rv.store, current, newest, stance, now, mode=mode).superseded:
                contradicted.append(current.id)
                newest = facts.get(newest.id, newest.scope) or newest  # it now lists what it superseded
            kept.append(current.id)
        elif covered:
            retired.append(current)
        else:
            kept.append(current.id)
    if not retired:
        return {"keep": newest.id, "archived": [], "kept": kept, "contradicted": contradicted}
    for entry in retired:
        facts.write(replace(entry, archived_at=now, superseded_by=newest.id), change=Change.SUPERSEDED, at=now)
        log.info("memory_semantic_consolidate: archived [%s] superseded by [%s]", entry.id, newest.id)
    facts.write(absorbed(newest, retired, now), change=Change.REINFORCED, at=now)
    return {"keep": newest.id, "archived": [e.id for e in retired], "kept": kept, "contradicted": contradicted}
