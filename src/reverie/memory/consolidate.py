"""Semantic consolidation on an agent's request (seed 004's agent-callable semantic memory): the near-duplicate
groups among the live entries a scope sees, and their consolidation. Served by the tools
``memory_semantic_duplicates`` and ``memory_semantic_consolidate``.

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
  ``allowed`` answers it; the caller (the tool registry) refuses before ``consolidate`` runs.
- Eligible entries are the ones dream consolidation may merge: live, unexpired, not pinned, not working
  notes, not left alone by deduplication (feedback/*, claim/capability/*, sequence members).
- Bounded: at most ``MAX_ENTRIES`` live entries of the scope are examined (the most recently reinforced).
- ``duplicates`` reads only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from reverie.clock import Clock
from reverie.core.clusters import Item, near_duplicate_clusters
from reverie.core.consolidation import absorbed
from reverie.core.coverage import CoverageSource, Vocabulary, check_coverage
from reverie.core.dedup import content_tokens, top_category
from reverie.core.stance import StanceDifference, stance_difference
from reverie.memory.contradiction import SUPERSEDE, newness, supersede
from reverie.memory.dedup import bypasses
from reverie.storage.base import FactFilter, Store
from reverie.types import Change, MemoryEntry, Scope, Tier

log = logging.getLogger("reverie.memory")
MAX_ENTRIES = 10_000
MAX_GROUP = 8  # members of one group


@dataclass(frozen=True, slots=True)
class SemanticConfig:
    """``similarity``: ``dream.consolidation_similarity_threshold``; ``on_contradiction``:
    ``memory.on_contradiction``; ``allowed_agents``: the agents whose ``[agents.<id>]`` set
    ``allow_self_consolidation = true``."""

    similarity: float = 0.88
    on_contradiction: str = SUPERSEDE
    allowed_agents: frozenset[str] = frozenset()


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


@dataclass(frozen=True, slots=True)
class DuplicateScan:
    """The groups found, how many entries were examined, and whether there were more than ``MAX_ENTRIES``."""

    groups: tuple[DuplicateGroup, ...]
    examined: int
    truncated: bool


@dataclass(frozen=True, slots=True)
class ConsolidatedGroup:
    """One group after consolidation: the newest entry (``keep``), the members archived into it, the ids kept
    live (``keep`` first), and among those the ones it now supersedes as a changed belief."""

    keep: str
    archived: tuple[str, ...]
    kept: tuple[str, ...]
    contradicted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    groups: tuple[ConsolidatedGroup, ...]
    examined: int
    truncated: bool

    @property
    def archived(self) -> list[str]:
        return [i for g in self.groups for i in g.archived]

    @property
    def kept(self) -> list[str]:
        return [i for g in self.groups for i in g.kept]


def eligible(entry: MemoryEntry) -> bool:
    """Whether consolidation may touch ``entry`` (see the module invariants)."""
    return entry.current and not (entry.pinned or entry.tier is Tier.WORKING or bypasses(entry))


def _covers(
    newest: MemoryEntry, member: MemoryEntry, vocabulary: Vocabulary
) -> tuple[bool, tuple[str, ...], StanceDifference | None]:
    stance = stance_difference(member.content, newest.content, vocabulary.stance)
    result = check_coverage([CoverageSource(member.content, member.category)], newest.content, vocabulary=vocabulary)
    return result.ok and stance is None, result.missing, stance


class SemanticConsolidation:
    """Near-duplicate groups and their consolidation, in one store. Thread-safe as the store is."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: SemanticConfig,
        *,
        vocabulary: Callable[[], Vocabulary],
        model: str | None,
    ) -> None:
        """``vocabulary``: the merge coverage vocabulary, read at every call (an edited file takes effect at
        the next one); ``model``: the embedder's model id, whose stored vectors the grouping compares (None
        without an embedder: token Jaccard only)."""
        self._store = store
        self._clock = clock
        self.config = config
        self._vocabulary = vocabulary
        self._model = model

    def allowed(self, agent_id: str) -> bool:
        """Whether ``agent_id``'s own settings allow it to consolidate (``allow_self_consolidation``)."""
        return agent_id in self.config.allowed_agents

    def duplicates(self, scope: Scope) -> DuplicateScan:
        """The groups among the live entries ``scope`` sees. Each entry is in at most one group. Reads only."""
        found = self._store.facts.recent(FactFilter(scope=scope, now=self._clock.now()), MAX_ENTRIES + 1)
        pool = [e for e in found[:MAX_ENTRIES] if eligible(e)]
        vectors = self._vectors(scope.agent_id, pool)
        items = [
            Item(e.id, (e.scope, top_category(e.category)), content_tokens(e.content), vectors.get(e.id)) for e in pool
        ]
        threshold = self.config.similarity
        clusters = near_duplicate_clusters(items, [e.id for e in pool], threshold=threshold, max_size=MAX_GROUP)
        by_id = {e.id: e for e in pool}
        vocabulary = self._vocabulary()
        placed: set[str] = set()
        groups: list[DuplicateGroup] = []
        for cluster in clusters:
            entries = [by_id[i] for i in cluster.ids if i not in placed]
            if len(entries) < 2:
                continue
            placed.update(e.id for e in entries)
            # Seen last, then saved last: an entry that absorbed others keeps the latest last_seen_at (and the
            # earliest created_at), so it stays the newest of its group and a second call changes nothing.
            newest = max(entries, key=newness)
            others = sorted((e for e in entries if e.id != newest.id), key=newness, reverse=True)
            members = tuple(Member(e, *_covers(newest, e, vocabulary)) for e in others)
            groups.append(DuplicateGroup(newest, members, cluster.similarity, cluster.by))
        return DuplicateScan(tuple(groups), len(pool), len(found) > MAX_ENTRIES)

    def consolidate(self, scope: Scope) -> ConsolidationReport:
        """Consolidate every group ``duplicates`` finds for ``scope``, in one transaction (see the module
        invariants). The caller checks ``allowed`` first."""
        scan = self.duplicates(scope)
        vocabulary = self._vocabulary()
        now = self._clock.now()
        done: list[ConsolidatedGroup] = []
        with self._store.transaction():
            for group in scan.groups:
                outcome = self._consolidate(group, vocabulary, now)
                if outcome is not None:
                    done.append(outcome)
        return ConsolidationReport(tuple(done), scan.examined, scan.truncated)

    def _vectors(self, agent_id: str, pool: Sequence[MemoryEntry]) -> dict[str, npt.NDArray[np.float32]]:
        if self._model is None or not pool:
            return {}
        wanted = {e.id for e in pool}
        snapshot = self._store.vectors.snapshot(agent_id, self._model)
        return {i: np.frombuffer(blob, dtype=np.float32) for i, blob in snapshot.vectors if blob and i in wanted}

    def _consolidate(self, group: DuplicateGroup, vocabulary: Vocabulary, now: datetime) -> ConsolidatedGroup | None:
        """Archive the covered members of ``group`` into its newest entry, re-checked on the rows as they are
        now (inside the caller's transaction). None when the newest entry is no longer eligible."""
        facts = self._store.facts
        newest = facts.get(group.newest.id, group.newest.scope)
        if newest is None or not eligible(newest):
            return None
        retired: list[MemoryEntry] = []
        kept = [newest.id]
        contradicted: list[str] = []
        for member in group.members:
            current = facts.get(member.entry.id, member.entry.scope)
            if current is None or not eligible(current):
                continue
            covered, _, stance = _covers(newest, current, vocabulary)
            if stance is not None:
                mode = self.config.on_contradiction
                if supersede(self._store, current, newest, stance, now, mode=mode).superseded:
                    contradicted.append(current.id)
                    newest = facts.get(newest.id, newest.scope) or newest  # it now lists what it superseded
                kept.append(current.id)
            elif covered:
                retired.append(current)
            else:
                kept.append(current.id)
        for entry in retired:
            facts.write(replace(entry, archived_at=now, superseded_by=newest.id), change=Change.SUPERSEDED, at=now)
            log.info("memory_semantic_consolidate: archived [%s] superseded by [%s]", entry.id, newest.id)
        if retired:
            facts.write(absorbed(newest, retired, now), change=Change.REINFORCED, at=now)
        return ConsolidatedGroup(newest.id, tuple(e.id for e in retired), tuple(kept), tuple(contradicted))
