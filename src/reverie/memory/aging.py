"""How memories age (seeds 000 and 003): the importance-decay pass and the forget sweep.

Both are passes over the store, run by ``reverie maintain decay|forget`` and, later, by the dream
scheduler. The arithmetic is in ``core.aging`` and ``core.compaction``; this module applies it.

Invariants:
- Importance decay keys on ``last_seen_at`` and never moves ``last_seen_at`` or ``updated_at``: only real
  save events reset the decay clock. Pinned entries never decay. Any cadence of passes over the same
  calendar span gives the same scores (``decayed_through`` records how far decay has been applied).
- The forget sweep only ages unpinned episodic entries (working notes age only with a configured
  half-life; semantic and procedural never). A cold entry is compacted (``compact_cold_episodic``) or
  archived, never deleted; every rewrite is a new version, restorable. An explicit expiry that has passed
  archives an entry even when it is pinned.
- The retention score drives only this sweep; it never changes search ranking.
- The sweep leaves superseded entries (a later entry contradicted them) alone: they are the only record of
  a changed belief, so they never go cold into the archive and the purge. The cold fold never folds two
  entries that differ in stance (``core.stance``); the older of such a pair is superseded by the newer
  instead (``memory.contradiction``), unless ``on_contradiction`` is ``keep_both``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from reverie.clock import Clock
from reverie.core.aging import (
    ImportanceDecay,
    ReadState,
    RetentionParams,
    decay_importance,
    is_cold,
    record_read,
    retention_score,
)
from reverie.core.compaction import KEPT_PREFIX, compact, is_low_information, keep_tokens
from reverie.core.coverage import DEFAULT_VOCABULARY, Vocabulary
from reverie.core.stance import stance_difference
from reverie.errors import ReverieError
from reverie.memory.contradiction import SUPERSEDE, older_newer, supersede
from reverie.storage.base import Store
from reverie.types import Change, MemoryEntry, Tier

log = logging.getLogger("reverie.memory")

# Feedback (Stale or Wrong) marks an entry through this metadata key; such an entry drops to the lowest
# salience in the sweep.
FLAG_KEY = "feedback"
LOWEST_SALIENCE_FLAGS = frozenset({"stale", "wrong"})


@dataclass(frozen=True, slots=True)
class AgingConfig:
    """The engine fills it from the ``[decay]`` settings."""

    importance: ImportanceDecay = ImportanceDecay()
    retention: RetentionParams = RetentionParams()
    compact_cold_episodic: bool = False
    dedup_cold_clusters: bool = False
    cluster_similarity: float = 0.88  # cosine; the save-time deduplication threshold
    on_contradiction: str = SUPERSEDE  # memory.contradiction


@dataclass(frozen=True, slots=True)
class DecayReport:
    examined: int
    decayed: tuple[str, ...]  # ids whose importance fell in this pass
    at_floor: int  # entries now at or below the floor


@dataclass(frozen=True, slots=True)
class ForgetReport:
    examined: int
    cold: int
    archived: tuple[str, ...]  # cold entries evicted (archived, restorable)
    compacted: tuple[str, ...]  # cold entries whose prose was dropped (a new version)
    expired: tuple[str, ...]  # entries whose explicit expiry passed (pinned ones too)
    superseded: tuple[str, ...] = ()  # cold near-duplicates folded into their cluster's survivor
    contradicted: tuple[str, ...] = ()  # cold entries a newer one of their cluster contradicts (kept, superseded)


class Aging:
    """Runs the decay pass and the forget sweep over one store, and keeps the reads that keep entries warm.

    Reads (search hits, ``get``) are noted in memory and written in batches (``flush_reads``: on a
    background thread when many are waiting, before a sweep, and when the engine closes), so a search never
    waits on a write. Flushes run one at a time. A crash loses at most the unflushed reads, which only ever
    make an entry warmer.
    """

    FLUSH_AT = 256

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: AgingConfig | None = None,
        *,
        model: str | None = None,
        vocabulary: Callable[[], Vocabulary] | None = None,
    ) -> None:
        """``model``: the embedding model whose stored vectors cluster cold entries (None: no clustering);
        ``vocabulary``: the coverage and stance vocabulary (the built-in one when None)."""
        self._store = store
        self._clock = clock
        self.config = config or AgingConfig()
        self._model = model
        self._vocabulary = vocabulary or (lambda: DEFAULT_VOCABULARY)
        self._reads: dict[str, list[datetime]] = {}
        self._reads_lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time
        self._flusher: threading.Thread | None = None

    # -- reads -------------------------------------------------------------------------------------
    def note_reads(self, entry_ids: Iterable[str]) -> None:
        """Count a read of each entry now (a search hit, a get)."""
        now = self._clock.now()
        with self._reads_lock:
            for entry_id in entry_ids:
                stamps = self._reads.setdefault(entry_id, [])
                if len(stamps) < 32:  # the boost saturates long before: more stamps change nothing
                    stamps.append(now)
            due = len(self._reads) >= self.FLUSH_AT and (self._flusher is None or not self._flusher.is_alive())
            if due:
                # Written on a thread of its own: a search that happens to fill the batch must not pay
                # for writing it (hundreds of rows: half a second on a remote database).
                self._flusher = threading.Thread(target=self._flush_quietly, name="reverie-reads", daemon=True)
                self._flusher.start()

    def _flush_quietly(self) -> None:
        try:
            self.flush_reads()
        except ReverieError as exc:  # the reads only make entries warmer: losing them loses nothing else
            log.warning("could not record recent reads: %s", exc)

    def flush_reads(self) -> int:
        """Write the waiting reads into each entry's read accumulator (housekeeping: no version, no time
        field moves). Returns how many entries were updated; entries gone meanwhile are skipped."""
        with self._flush_lock:
            with self._reads_lock:
                waiting, self._reads = self._reads, {}
            if not waiting:
                return 0
            return self._write_reads(waiting)

    def _write_reads(self, waiting: dict[str, list[datetime]]) -> int:
        """One transaction: the waiting entries' read accumulators read (rows locked), folded with the new
        reads, and written back as one batched two-column UPDATE: no full row, no version, no change-log row."""
        params = self.config.retention
        with self._store.transaction():
            stored = self._store.facts.read_states(list(waiting))
            reads: list[tuple[str, float, datetime]] = []
            for entry_id, stamps in waiting.items():
                if entry_id not in stored:
                    continue  # gone meanwhile (purged)
                tier, strength, read_at = stored[entry_id]
                state = None if read_at is None else ReadState(strength, read_at)
                for at in stamps:
                    state = record_read(state, now=at, tier=tier, params=params)
                assert state is not None
                reads.append((entry_id, state.strength, state.at))
            self._store.facts.write_reads(reads)
        return len(reads)

    def _live(self, agent_id: str | None) -> Iterator[MemoryEntry]:
        return (e for e in self._store.facts.iter_all(agent_id) if not e.archived)

    def decay(self, *, agent_id: str | None = None) -> DecayReport:
        """One importance-decay pass at the clock's now over every live, unpinned entry."""
        now = self._clock.now()
        params = self.config.importance
        examined, at_floor = 0, 0
        decayed: list[str] = []
        for entry in self._live(agent_id):
            if entry.pinned:
                continue
            examined += 1
            step = decay_importance(
                entry.importance,
                last_seen_at=entry.last_seen_at,
                decayed_through=entry.decayed_through,
                now=now,
                params=params,
            )
            if (step.importance, step.decayed_through) != (entry.importance, entry.decayed_through):
                changed = replace(entry, importance=step.importance, decayed_through=step.decayed_through)
                # Housekeeping: neither last_seen_at nor updated_at moves, and no version is recorded.
                self._store.facts.write(changed, change=Change.HOUSEKEEPING, at=now)
                if step.importance < entry.importance:
                    decayed.append(entry.id)
            at_floor += step.importance <= params.floor
        return DecayReport(examined=examined, decayed=tuple(decayed), at_floor=at_floor)

    def score(self, entry: MemoryEntry, now: datetime) -> float:
        """The entry's retention score now (seed 003): 1.0 for what does not age."""
        reads = None if entry.read_at is None else ReadState(entry.read_strength, entry.read_at)
        flag = entry.metadata.get(FLAG_KEY)
        return retention_score(
            tier=entry.tier,
            pinned=entry.pinned,
            last_seen_at=entry.last_seen_at,
            reads=reads,
            flagged_stale=isinstance(flag, str) and flag.lower() in LOWEST_SALIENCE_FLAGS,
            now=now,
            params=self.config.retention,
        )

    def forget(self, *, agent_id: str | None = None) -> ForgetReport:
        """The forget sweep at the clock's now: expired entries archived (pinned too); cold entries of the
        tiers that age first folded into their cluster's survivor (``dedup_cold_clusters``), then
        compacted or archived."""
        self.flush_reads()
        now = self._clock.now()
        live = [e for e in self._live(agent_id) if e.current]  # superseded entries never age out
        expired = [e for e in live if e.expires_at is not None and e.expires_at <= now]
        for entry in expired:
            self._store.facts.write(replace(entry, archived_at=now), change=Change.ARCHIVED, at=now)
        gone = {e.id for e in expired}
        cold = [e for e in live if e.id not in gone and self._ages(e) and self._cold(e, now)]
        superseded: set[str] = set()
        contradicted: set[str] = set()
        if self.config.dedup_cold_clusters:
            superseded, contradicted = self._fold_clusters(cold, now)
        archived: list[str] = []
        compacted: list[str] = []
        for entry in cold:
            if entry.id in superseded or entry.id in contradicted:
                continue
            entry = self._store.facts.get(entry.id, entry.scope) or entry  # as the fold may have left it
            outcome = self._compact(entry, now)
            if outcome == "compacted":
                compacted.append(entry.id)
            elif outcome == "evict":
                # Marked as a tombstone: the purge pass keeps it longer (decay.tombstone_days).
                tombstone = replace(entry, archived_at=now, metadata={**entry.metadata, "forgotten": now.isoformat()})
                self._store.facts.write(tombstone, change=Change.ARCHIVED, at=now)
                archived.append(entry.id)
        return ForgetReport(
            examined=len(live),
            cold=len(cold),
            archived=tuple(archived),
            compacted=tuple(compacted),
            expired=tuple(e.id for e in expired),
            superseded=tuple(sorted(superseded)),
            contradicted=tuple(sorted(contradicted)),
        )

    def _cold(self, entry: MemoryEntry, now: datetime) -> bool:
        return is_cold(self.score(entry, now), self.config.retention)

    @staticmethod
    def _ages(entry: MemoryEntry) -> bool:
        return not entry.pinned and entry.tier not in (Tier.SEMANTIC, Tier.PROCEDURAL)

    def _fold_clusters(self, cold: list[MemoryEntry], now: datetime) -> tuple[set[str], set[str]]:
        """Cluster cold entries (same agent and scope) whose stored vectors are within the similarity; the
        highest-scoring one survives and takes the others' keep-tokens; the others are superseded (archived,
        pointing at it). A member that differs in stance from the survivor is never folded: the older of
        the two is superseded by the newer, unarchived (``memory.contradiction``). Returns the folded ids and
        the contradicted ones."""
        if self._model is None or len(cold) < 2:
            return set(), set()
        vectors = self._vectors(cold)
        folded: set[str] = set()
        contradicted: set[str] = set()
        ranked = sorted(cold, key=lambda e: (-self.score(e, now), e.created_at, e.id))
        for i, survivor in enumerate(ranked):
            if survivor.id in folded or survivor.id in contradicted or survivor.id not in vectors:
                continue
            near = [
                other
                for other in ranked[i + 1 :]
                if other.id not in folded
                and other.id not in contradicted
                and other.id in vectors
                and other.scope == survivor.scope
                and float(vectors[survivor.id] @ vectors[other.id]) >= self.config.cluster_similarity
            ]
            members = [m for m in near if not self._contradicts(survivor, m, now, contradicted)]
            if members and survivor.id not in contradicted:
                self._absorb(survivor, members, now)
                folded.update(m.id for m in members)
        return folded, contradicted

    def _contradicts(self, a: MemoryEntry, b: MemoryEntry, now: datetime, contradicted: set[str]) -> bool:
        """Whether ``a`` and ``b`` differ in stance; if so the older is superseded by the newer (unless
        ``keep_both``) and, either way, left out of the fold."""
        older, newer = older_newer(a, b)
        difference = stance_difference(older.content, newer.content, self._vocabulary().stance)
        if difference is None:
            return False
        if supersede(self._store, older, newer, difference, now, mode=self.config.on_contradiction).superseded:
            contradicted.add(older.id)
        return True

    def _vectors(self, entries: list[MemoryEntry]) -> dict[str, npt.NDArray[np.float32]]:
        assert self._model is not None
        wanted = {e.id for e in entries}
        out: dict[str, npt.NDArray[np.float32]] = {}
        for agent in {e.scope.agent_id for e in entries}:
            for fact_id, blob in self._store.vectors.snapshot(agent, self._model).vectors:
                if fact_id in wanted and blob is not None:
                    out[fact_id] = np.frombuffer(blob, dtype=np.float32)
        return out

    def _absorb(self, survivor: MemoryEntry, members: list[MemoryEntry], now: datetime) -> None:
        survivor = self._store.facts.get(survivor.id, survivor.scope) or survivor  # a supersession may have marked it
        held = set(keep_tokens(survivor.content))
        extra: list[str] = []
        for member in members:
            extra.extend(t for t in keep_tokens(member.content) if t not in held and t not in extra)
        if extra:
            content = survivor.content.rstrip() + "\n\n" + KEPT_PREFIX + " ".join(extra)
            self._store.facts.write(replace(survivor, content=content, updated_at=now), change=Change.EXTENDED, at=now)
        for member in members:
            retired = replace(member, archived_at=now, superseded_by=survivor.id)
            self._store.facts.write(retired, change=Change.SUPERSEDED, at=now)

    def _compact(self, entry: MemoryEntry, now: datetime) -> str:
        """``compacted`` (a cold episodic entry keeps its abstract, first paragraph and keep-tokens, as a new
        version), ``kept`` (compacted before: nothing more to drop) or ``evict``. Near-empty or repetitive
        text has nothing worth keeping: evicted."""
        if not self.config.compact_cold_episodic or entry.tier is not Tier.EPISODIC:
            return "evict"
        if is_low_information(entry.content):
            return "evict"
        abstract = entry.metadata.get("abstract")
        shorter = compact(entry.content, abstract=abstract if isinstance(abstract, str) else None)
        if shorter == entry.content:
            return "kept" if entry.metadata.get("compacted") is True else "evict"
        metadata = {**entry.metadata, "compacted": True}
        self._store.facts.write(
            replace(entry, content=shorter, metadata=metadata, updated_at=now), change=Change.COMPACTED, at=now
        )
        return "compacted"
