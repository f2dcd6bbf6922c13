"""The upkeep of proactive memory (seed 004): the confidence decay sweep, the per-agent cap and
auto-consolidation. ``ProactiveMemory`` (``memory.proactive``) calls it; the arithmetic is ``core.proactive``'s.

Invariants:
- Nothing is deleted: the cap and consolidation archive (consolidation ``superseded_by`` the survivor, with
  ``Change.SUPERSEDED``), and an archived entry's key-value copy (``memory:{id}``) is marked deleted with it.
- Writes that change no text (decay, the survivor's bookkeeping) are ``Change.HOUSEKEEPING`` /
  ``Change.REINFORCED``: no version row. Each sweep, cap and consolidation is one transaction.
- Only proactive entries (tag ``proactive``) are ever touched, and a consolidation only merges entries of
  one exact scope (agent, user, session): it never widens or narrows who sees a fact. In user-level memory it
  merges only entries of one writer (``metadata.writtenBy``): never one agent's entry into another's.
- The decay sweep of an agent runs at most once per ``decay_sweep_minutes`` unless forced (the time of the last
  one is kept in the store's meta table, so every process shares it); user-level memory (``@user/<id>``) never
  decays. The dream's maintenance runs it (``dream.passes.maintenance.ProactiveSweepPass``), and so do explicit
  calls (``reverie proactive sweep``); a context build never does.

Cost: an agent's proactive entries are listed by reading all of the agent's entries (the store has no tag
index). That happens in a sweep (in a dream, at most every ``decay_sweep_minutes``), in a manual consolidation
and when the agent may be over its cap: a counter in the meta table (``proactive.live.<agent>``) bounds the
agent's live proactive entries from above, so the scan runs only when the bound passes the cap (every creation
while the agent sits at its cap). The auto-consolidation reads only the entries saved since the last one and
their nearest neighbours (``proactive.fresh``). User-level memory is read per user through the index.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from reverie.clock import Clock
from reverie.core.consolidation import absorbed
from reverie.core.proactive import (
    TAG,
    USER,
    Candidate,
    CapRow,
    Merge,
    current_confidence,
    duplicate_clusters,
    merged_state,
    over_cap,
    state_of,
    writer_of,
)
from reverie.embed.base import Embedder
from reverie.errors import EmbeddingError
from reverie.kv.service import KvMemory
from reverie.proactive.fresh import FRESH_KEY, FreshKey, FreshPlanner, read_keys, write_keys
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import Change, MemoryEntry, Scope, is_user_agent, user_agent

log = logging.getLogger("reverie.proactive")

SWEPT_KEY = "proactive.swept."  # + agent id: when its decay sweep last ran (ISO 8601)
CALLS_KEY = "proactive.calls."  # + agent id: memorize calls that saved something new so far
LIVE_KEY = "proactive.live."  # + agent id: an upper bound of its live proactive entries
KV_PREFIX = "memory:"
KV_SOURCE = "proactive"
_EPSILON = 1e-12


@dataclass(frozen=True, slots=True)
class UpkeepConfig:
    confidence_decay_rate: float = 0.01
    decay_sweep_minutes: float = 60.0
    max_entries_per_agent: int = 1000
    consolidate_window: int = 100
    duplicate_cosine: float = 0.9
    duplicate_jaccard: float = 0.7


@dataclass(frozen=True, slots=True)
class SweepReport:
    """A decay sweep: whether it ran (or was not due), entries examined, those whose confidence moved, and
    key-value copies of archived entries marked deleted."""

    agent_id: str
    ran: bool
    examined: int = 0
    decayed: tuple[str, ...] = ()
    copies_removed: int = 0


@dataclass(frozen=True, slots=True)
class MergeDone:
    keep: str
    archived: tuple[str, ...]
    rungs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """A consolidation: each cluster merged (survivor, archived members, the ladder's rungs), how many
    entries were examined, and whether the whole history was (``full``) or the recent window."""

    agent_id: str
    user_id: str | None
    full: bool
    examined: int
    merges: tuple[MergeDone, ...]

    @property
    def archived(self) -> tuple[str, ...]:
        return tuple(i for m in self.merges for i in m.archived)


def is_proactive(entry: MemoryEntry) -> bool:
    return TAG in entry.tags and state_of(entry.metadata) is not None


def copied_to_kv(scope: Scope) -> bool:
    """Whether an entry of ``scope`` has a key-value copy (and a place in the graph): only agent-wide ones.
    The key-value store and the graph are the agent's, read by all its users and sessions, so a copy of a
    user's or a session's memory there would show it to the others."""
    return not is_user_agent(scope.agent_id) and scope.user_id is None and scope.session_id is None


class ProactiveUpkeep:
    """Decay, cap and consolidation over one store."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        kv: KvMemory,
        config: UpkeepConfig | None = None,
        *,
        embedder: Embedder | None = None,
        recall: HybridSearch | None = None,
    ) -> None:
        """``recall``: the search whose indexes give the auto-consolidation the new entries' neighbours (None:
        none are found, and it compares the new entries among themselves)."""
        self._store = store
        self._clock = clock
        self._kv = kv
        self.config = config or UpkeepConfig()
        self._embedder = embedder
        cfg = self.config
        self._fresh = FreshPlanner(
            store, recall, cosine_threshold=cfg.duplicate_cosine, jaccard_threshold=cfg.duplicate_jaccard
        )

    # -- reading -------------------------------------------------------------------------------------------
    def live_entries(self, agent_id: str, now: datetime) -> list[MemoryEntry]:
        """Every live, unexpired proactive entry of the agent, in every user and session scope."""
        return [e for e in self._store.facts.iter_all(agent_id) if _live(e, now) and is_proactive(e)]

    def user_entries(self, user_id: str, now: datetime, limit: int | None = None) -> list[MemoryEntry]:
        """The user's live user-level memories, most recently reinforced first (all when ``limit`` is None)."""
        flt = FactFilter(scope=Scope(agent_id=user_agent(user_id), user_id=user_id), now=now)
        if limit is None:
            limit = self._user_count(user_id, now)
        if limit <= 0:
            return []
        return [e for e in self._store.facts.recent(flt, limit) if e.scope.user_id == user_id and is_proactive(e)]

    # -- the decay sweep -------------------------------------------------------------------------------------
    def sweep(self, agent_id: str, *, force: bool = False) -> SweepReport:
        """Recompute the confidence of the agent's proactive entries from their last access (seed 004's
        decay), when due or ``force``; then mark deleted the key-value copies whose entry is archived."""
        now = self._clock.now()
        key = SWEPT_KEY + agent_id
        if not force and not self._due(key, now):
            return SweepReport(agent_id, ran=False)
        self._store.meta.set(key, now.isoformat())
        if is_user_agent(agent_id):
            return SweepReport(agent_id, ran=True)  # user-level memory never decays
        entries = self.live_entries(agent_id, now)
        decayed: list[str] = []
        with self._store.transaction():
            for entry in entries:
                state = state_of(entry.metadata)
                if state is None or state.kind == USER:
                    continue
                value = current_confidence(state, now, self.config.confidence_decay_rate)
                if abs(value - entry.confidence) > _EPSILON:
                    self._store.facts.write(replace(entry, confidence=value), change=Change.HOUSEKEEPING, at=now)
                    decayed.append(entry.id)
        removed = self._reconcile_copies(agent_id, now)
        if decayed or removed:
            log.info(
                "proactive decay sweep of %s: %d decayed, %d stale copies removed", agent_id, len(decayed), removed
            )
        return SweepReport(agent_id, True, len(entries), tuple(decayed), removed)

    def _due(self, key: str, now: datetime) -> bool:
        raw = self._store.meta.get(key)
        try:
            last = None if raw is None else datetime.fromisoformat(raw)
        except ValueError:
            last = None
        if last is None or last.tzinfo is None or last > now:  # never, unreadable, or the clock went back
            return True
        return now - last >= timedelta(minutes=self.config.decay_sweep_minutes)

    def _reconcile_copies(self, agent_id: str, now: datetime) -> int:
        """Mark deleted every key-value copy (``memory:{id}``, written by proactive memory) whose entry is no
        longer live: archived outside proactive memory (``rv.memory.archive``), superseded, or expired."""
        removed, after = 0, None
        while True:
            items = self._kv.list(agent_id, KV_PREFIX, limit=1000, after=after)
            if not items:
                return removed
            after = items[-1].key
            # Ours only (written by proactive memory), checked a page at a time: get_many returns just the live
            # ones (unarchived, unexpired) that the agent-wide scope sees.
            ours = {
                item.key[len(KV_PREFIX) :]: item.key
                for item in items
                if isinstance(item.value, dict) and item.value.get("source") == KV_SOURCE
            }
            flt = FactFilter(scope=Scope(agent_id=agent_id), now=now)
            live = {e.id for e in self._store.facts.get_many(list(ours), flt)} if ours else set()
            for entry_id, key in ours.items():
                if entry_id not in live:
                    removed += int(self._kv.delete(agent_id, key))

    # -- the cap -----------------------------------------------------------------------------------------------
    def note_created(self, agent_id: str, created: int) -> int:
        """Raise the agent's bound of live proactive entries by ``created``; returns the new bound."""
        key = LIVE_KEY + agent_id
        bound = max(0, _int(self._store.meta.get(key)) + created)
        self._store.meta.set(key, str(bound))
        return bound

    def enforce_cap(self, agent_id: str, user_id: str | None, *, created: int) -> list[str]:
        """After a memorize that created ``created`` agent or session entries: archive the agent's weakest
        proactive entries past ``max_entries_per_agent`` (when its bound says it may be over), and the user's past the
        same cap. Returns the archived ids."""
        evicted: list[str] = []
        now = self._clock.now()
        if created and self.note_created(agent_id, created) > self.config.max_entries_per_agent:
            evicted += self._cap(self.live_entries(agent_id, now), agent_id)
        if user_id is not None and self._user_count(user_id, now) > self.config.max_entries_per_agent:
            evicted += self._cap(self.user_entries(user_id, now), None)
        return evicted

    def _user_count(self, user_id: str, now: datetime) -> int:
        """The user's live user-level memories, counted by the store (no entry is read)."""
        flt = FactFilter(scope=Scope(agent_id=user_agent(user_id), user_id=user_id), now=now)
        return sum(c.count for c in self._store.facts.taxonomy(flt))

    def _cap(self, entries: Sequence[MemoryEntry], agent_id: str | None) -> list[str]:
        """Archive the lowest-confidence, then oldest, of ``entries`` past the cap; ``agent_id``: reset its
        bound to the exact count left."""
        now = self._clock.now()
        rows = [CapRow(e.id, e.confidence, e.created_at) for e in entries]
        gone = set(over_cap(rows, self.config.max_entries_per_agent))
        if gone:
            with self._store.transaction():
                for entry in entries:
                    if entry.id in gone:
                        self.retire(entry, now)
            log.info("proactive cap: archived %d entr%s", len(gone), "y" if len(gone) == 1 else "ies")
        if agent_id is not None:
            self._store.meta.set(LIVE_KEY + agent_id, str(len(entries) - len(gone)))
        return [e.id for e in entries if e.id in gone]

    def retire(self, entry: MemoryEntry, now: datetime, *, superseded_by: str | None = None) -> MemoryEntry:
        """Archive ``entry`` (superseded by another when given) and mark its key-value copy deleted. Call
        inside a transaction."""
        change = Change.ARCHIVED if superseded_by is None else Change.SUPERSEDED
        archived = replace(entry, archived_at=now, superseded_by=superseded_by or entry.superseded_by)
        self._store.facts.write(archived, change=change, at=now)
        if copied_to_kv(entry.scope):
            self.drop_copy(entry.scope.agent_id, entry.id)
        return archived

    def drop_copy(self, agent_id: str, entry_id: str) -> bool:
        """Mark the key-value copy of an entry deleted; False when there was none (or not ours)."""
        key = KV_PREFIX + entry_id
        item = self._store.kv.get(agent_id, key)
        if item is None or not isinstance(item.value, dict) or item.value.get("source") != KV_SOURCE:
            return False
        return self._kv.delete(agent_id, key)

    # -- auto-consolidation --------------------------------------------------------------------------------------
    def consolidate(self, agent_id: str, *, user_id: str | None = None, full: bool = False) -> ConsolidationReport:
        """Merge duplicate proactive entries of the agent (and of ``user_id``'s user-level memory): the most
        recent ``consolidate_window`` of each, or every live one with ``full``. Also resets the agent's bound
        of live entries to the exact count."""
        now = self._clock.now()
        merges: list[MergeDone] = []
        examined = 0
        if not is_user_agent(agent_id):
            entries = self.live_entries(agent_id, now)
            self._store.meta.set(LIVE_KEY + agent_id, str(len(entries)))
            window = entries if full else _newest(entries, self.config.consolidate_window)
            examined += len(window)
            merges += self._merge(window, self._stored_vectors(agent_id, window), now)
        if user_id is not None:
            limit = None if full else self.config.consolidate_window
            window = _newest(self.user_entries(user_id, now, limit), None)
            examined += len(window)
            vectors = self._embedded(window)
            # One writer's entries at a time: a merge keeps the newest, so merging across writers would let one
            # agent's restatement archive what another agent wrote (docs/operations.md, user memory).
            for writer in sorted({writer_of(e.metadata) or "" for e in window}):
                merges += self._merge([e for e in window if (writer_of(e.metadata) or "") == writer], vectors, now)
        if full:  # every entry of the agent (and of the user) was compared: none is new any more
            self._forget_fresh(agent_id, {agent_id} | ({user_agent(user_id)} if user_id is not None else set()))
        report = ConsolidationReport(agent_id, user_id, full, examined, tuple(merges))
        if merges:
            log.info(
                "proactive consolidation of %s%s: %d cluster(s) merged, %d entr(ies) archived",
                agent_id,
                f" (user {user_id})" if user_id else "",
                len(merges),
                len(report.archived),
            )
        return report

    def note_saving_call(self, agent_id: str, saved: Sequence[MemoryEntry], every: int) -> list[FreshKey] | None:
        """Count a memorize call of the agent that saved ``saved`` (something new) and record those entries;
        on every ``every``-th such call, return every entry recorded since the last time (and forget them):
        the auto-consolidation is due. One transaction, so processes sharing the store count each call once."""
        with self._store.transaction():
            calls = _int(self._store.meta.get(CALLS_KEY + agent_id)) + 1
            self._store.meta.set(CALLS_KEY + agent_id, str(calls))
            keys = read_keys(self._store.meta.get(FRESH_KEY + agent_id)) + [FreshKey(e.id, e.scope) for e in saved]
            due = calls % every == 0
            self._store.meta.set(FRESH_KEY + agent_id, write_keys([] if due else keys))
        return keys if due else None

    def _forget_fresh(self, agent_id: str, owners: set[str]) -> None:
        """Drop the recorded new entries stored under ``owners`` (a full consolidation compared them)."""
        with self._store.transaction():
            keys = read_keys(self._store.meta.get(FRESH_KEY + agent_id))
            self._store.meta.set(FRESH_KEY + agent_id, write_keys([k for k in keys if k.scope.agent_id not in owners]))

    def consolidate_fresh(
        self, agent_id: str, keys: Sequence[FreshKey], *, user_id: str | None = None
    ) -> ConsolidationReport:
        """The auto-consolidation: merge the duplicates the entries ``keys`` name make with each other and
        with their nearest neighbours (``proactive.fresh``), reading neither every entry nor every vector."""
        now = self._clock.now()
        new = [e for e in self._fresh.entries(keys, now) if _live(e, now) and is_proactive(e)]
        vectors = self._embedded(new)
        candidates, plan = self._fresh.plan(new, vectors, now, live=lambda e: _live(e, now) and is_proactive(e))
        merges = self._apply(plan, {e.id: e.scope for e in candidates}, now) if plan else []
        owners = {e.id: e.scope.agent_id for e in candidates}
        gone = sum(1 for m in merges for i in m.archived if owners.get(i) == agent_id)
        if gone:  # the agent's bound of live entries: still an upper bound, a tighter one
            self.note_created(agent_id, -gone)
        report = ConsolidationReport(agent_id, user_id, False, len(candidates), tuple(merges))
        if merges:
            log.info("proactive auto-consolidation of %s: %d entr(ies) archived", agent_id, len(report.archived))
        return report

    def _merge(
        self, entries: Sequence[MemoryEntry], vectors: dict[str, npt.NDArray[np.float32]], now: datetime
    ) -> list[MergeDone]:
        candidates = [Candidate(e.id, e.scope, e.content, e.created_at, vectors.get(e.id)) for e in entries]
        plan = duplicate_clusters(
            candidates,
            cosine_threshold=self.config.duplicate_cosine,
            jaccard_threshold=self.config.duplicate_jaccard,
        )
        if not plan:
            return []
        return self._apply(plan, {e.id: e.scope for e in entries}, now)

    def _apply(self, plan: Sequence[Merge], scopes: dict[str, Scope], now: datetime) -> list[MergeDone]:
        """Carry out ``plan`` in one transaction: each cluster's members archived, superseded by its keeper,
        whose bookkeeping absorbs theirs; a cluster whose entries changed since they were read is skipped."""
        done: list[MergeDone] = []
        with self._store.transaction():
            for merge in plan:
                keep = self._store.facts.get(merge.keep, scopes[merge.keep])
                if keep is None or not _live(keep, now):
                    continue  # changed since it was read: the next consolidation looks again
                members = [self._store.facts.get(i, scopes[i]) for i in merge.archive]
                retired = [m for m in members if m is not None and _live(m, now)]
                if not retired:
                    continue
                for member in retired:
                    self.retire(member, now, superseded_by=keep.id)
                self._store.facts.write(_survivor(keep, retired, now), change=Change.REINFORCED, at=now)
                rungs = dict(zip(merge.archive, merge.rungs, strict=True))
                done.append(MergeDone(keep.id, tuple(m.id for m in retired), tuple(rungs[m.id] for m in retired)))
        return done

    def _stored_vectors(self, agent_id: str, entries: Iterable[MemoryEntry]) -> dict[str, npt.NDArray[np.float32]]:
        """The agent's stored vectors of ``entries`` (of the configured model), as memory.consolidate reads them."""
        if self._embedder is None:
            return {}
        wanted = {e.id for e in entries}
        if not wanted:
            return {}
        snapshot = self._store.vectors.snapshot(agent_id, self._embedder.model_id)
        return {i: np.frombuffer(blob, dtype=np.float32) for i, blob in snapshot.vectors if blob and i in wanted}

    def _embedded(self, entries: Sequence[MemoryEntry]) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors of ``entries`` by the configured model, computed now. For user-level memory: every user's
        entries share the reserved agent, so reading its stored vectors would read every user's; embedding the
        window (the same model makes the same vectors) costs only the window."""
        if self._embedder is None or not entries:
            return {}
        try:
            matrix = self._embedder.embed([e.content for e in entries])
        except EmbeddingError as exc:
            log.warning("proactive consolidation: embedding failed, comparing words only: %s", exc)
            return {}
        return {e.id: np.asarray(matrix[i], dtype=np.float32) for i, e in enumerate(entries)}


def _survivor(keep: MemoryEntry, retired: Sequence[MemoryEntry], now: datetime) -> MemoryEntry:
    """The kept entry after a merge: the shared merge arithmetic (``core.consolidation.absorbed``), its
    bookkeeping merged (``core.proactive.merged_state``), the highest confidence of the cluster."""
    merged = absorbed(keep, retired, now)
    states = [s for s in (state_of(e.metadata) for e in (keep, *retired)) if s is not None]
    metadata: dict[str, Any] = dict(merged.metadata)
    if states:
        metadata["proactive"] = merged_state(states).as_metadata()
    confidence = max(e.confidence for e in (keep, *retired))
    return replace(merged, metadata=metadata, confidence=confidence)


def _newest(entries: Sequence[MemoryEntry], limit: int | None) -> list[MemoryEntry]:
    ordered = sorted(entries, key=lambda e: (e.created_at, e.id), reverse=True)
    return ordered if limit is None else ordered[:limit]


def _live(entry: MemoryEntry, now: datetime) -> bool:
    # Current only: an entry a later one contradicted is kept as the record of the old belief, never merged.
    return entry.current and (entry.expires_at is None or entry.expires_at > now)


def _int(raw: str | None) -> int:
    try:
        return max(0, int(raw or 0))
    except ValueError:
        return 0
