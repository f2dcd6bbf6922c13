"""The storage contract. Every backend implements these Protocols and passes ``tests/contract/``.

Rules every backend keeps (DESIGN.md, "Storage contract"):
- Scope is in every query. A read never returns an entry its ``Scope`` cannot see (``Scope.sees``).
- Every write that changes text records a version row in the same transaction, before it returns.
- "Delete" is archive. Only ``FactRepository.purge`` hard-deletes, and never above the high-value floor.
- A write that raises leaves the store as it was.
- Time is passed in: repositories never read a clock.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from reverie.types import (
    CategoryCount,
    Change,
    EntryVersion,
    HealthReport,
    MemoryEntry,
    Scope,
    StoreStats,
)


@dataclass(frozen=True, slots=True)
class FactFilter:
    """What a read may return: the caller's scope plus the usual narrowing.

    ``now`` hides entries whose ``expires_at`` has passed; ``include_archived`` shows archived ones too.
    """

    scope: Scope
    now: datetime
    category_prefix: str | None = None
    include_archived: bool = False


@dataclass(frozen=True, slots=True)
class PurgeRule:
    """Hard-delete entries archived at or before ``archived_before``, except the high-value ones.

    Tombstones (entries the forget sweep archived: ``metadata.forgotten``) keep longer when
    ``tombstones_before`` is set: they go only when archived at or before it (seed 003: 180 days).
    ``purged_at`` is the time the purge log records for each deleted entry (None: ``archived_before``).
    """

    archived_before: datetime
    protect_importance: float
    protect_reinforcement: int
    agent_id: str | None = None  # None: every agent (the maintenance sweep)
    tombstones_before: datetime | None = None
    purged_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class PurgedRecord:
    """One entry ``FactRepository.purge`` hard-deleted: the purge log, so an audit can tell a purge from a
    deletion made any other way."""

    fact_id: str
    agent_id: str
    purged_at: datetime


@dataclass(frozen=True, slots=True)
class TextRow:
    """What a lexical index needs of an entry: its searchable text, its scope below the agent, and whether
    it is archived (expiry is left to the caller's hydration through ``get_many``)."""

    content: str
    tags: tuple[str, ...]
    category: str
    user_id: str | None
    session_id: str | None
    archived: bool


@dataclass(frozen=True, slots=True)
class TextSnapshot:
    """The searchable state of one agent's entries as of change-log position ``watermark``.

    ``rows`` holds ``(fact_id, row)``, where ``row`` is None when the entry no longer exists (purged).
    """

    watermark: int
    rows: list[tuple[str, TextRow | None]]


class FactRepository(Protocol):
    """Long-term entries."""

    def add(self, entry: MemoryEntry, *, at: datetime) -> None:
        """Insert a new entry and its version 1. Raises ``Conflict`` when the id exists."""
        ...

    def write(self, entry: MemoryEntry, *, change: Change, at: datetime) -> None:
        """Replace the stored entry with ``entry`` (same id, same scope), recording a version row when
        ``change.versioned`` or the text (content, category, tags) changed. Raises ``NotFound``."""
        ...

    def get(self, entry_id: str, scope: Scope) -> MemoryEntry | None:
        """The entry, archived or not, when ``scope`` can see it."""
        ...

    def fold_pending(self, entry_ids: list[str]) -> set[str]:
        """Which of ``entry_ids`` wait for the after-embedding duplicate check (``fold_pending``)."""
        ...

    def owner(self, entry_id: str) -> Scope | None:
        """The scope an entry was saved in, or None for an unknown id. For background passes handed ids by
        the store itself (the embedding worker); they then read through ``get`` with that scope."""
        ...

    def get_many(self, entry_ids: list[str], flt: FactFilter) -> list[MemoryEntry]:
        """The entries among ``entry_ids`` that ``flt`` lets through (scope, archived, expiry, category),
        in no particular order. Unknown ids are skipped: this is how untrusted candidate ids (from a vector
        index or an external backend) are hydrated."""
        ...

    def neighbours(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[MemoryEntry]:
        """Entries visible through ``flt`` whose ``metadata.thread`` / ``metadata.position`` is one of
        ``keys`` (sequence neighbours: the turns of a conversation, the chunks of a document)."""
        ...

    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        """BM25 full-text search. ``match`` is an FTS expression built by ``core.text.fts_match``.
        Scores are positive, larger is better."""
        ...

    def search_substring(self, needle: str, flt: FactFilter, limit: int, exclude: frozenset[str]) -> list[MemoryEntry]:
        """Entries whose content, tags or category contain ``needle`` (case-insensitive, Unicode-aware),
        most recently reinforced first: the fallback that lets the index only ever add matches."""
        ...

    def recent(self, flt: FactFilter, limit: int) -> list[MemoryEntry]:
        """Most recently reinforced first (``last_seen_at`` descending)."""
        ...

    def taxonomy(self, flt: FactFilter) -> list[CategoryCount]:
        """Every category with live entries visible to the scope (ignores ``category_prefix``)."""
        ...

    def purge(self, rule: PurgeRule) -> tuple[list[str], list[str]]:
        """Hard-delete per ``rule`` (with their versions and vectors); returns (purged, protected) ids. Each
        purged entry leaves a ``PurgedRecord`` in the purge log, written in the same transaction as the delete
        (``purged_at`` = ``rule.purged_at``, or ``rule.archived_before`` when that is None)."""
        ...

    def purge_log(self, since: datetime | None = None, agent_id: str | None = None) -> list[PurgedRecord]:
        """The purge log, oldest first: records purged at or after ``since`` (all when None), of one agent
        (every agent when None)."""
        ...

    def agents(self) -> list[str]:
        """Every agent id with at least one entry, archived included, sorted."""
        ...

    def expansion_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(position, fact_id)`` of entries waiting for the background expansion
        (``expand_pending``), in every scope and archived or not, in insertion order, starting after
        position ``after`` (a cursor, so a run passes an entry it leaves pending). The expansion queue then
        reads each through ``owner`` and ``get``."""
        ...

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        """Every entry, archived included, ordered by id: for copy, reindex and audits."""
        ...

    def text_snapshot(self, agent_id: str) -> TextSnapshot:
        """The searchable state of every entry of one agent (archived included, in insertion order), and
        the change-log position it reflects. The position is read first, so a change committed meanwhile
        is replayed by the next ``text_changes`` (harmlessly, as it is already in the rows)."""
        ...

    def text_changes(self, agent_id: str, after: int) -> TextSnapshot:
        """The current searchable state (or None: purged) of every entry of the agent whose content, tags,
        category, scope, archived state or expiry changed after log position ``after``. The returned
        watermark is the log's position; one below ``after`` means the log was replaced (a restored
        backup) and the caller must start again from ``text_snapshot``."""
        ...


class VersionRepository(Protocol):
    """The history of every entry. Append-only; purge removes the rows of purged entries only."""

    def history(self, entry_id: str, scope: Scope) -> list[EntryVersion]:
        """All versions, oldest first; empty when the entry is not visible to ``scope``."""
        ...

    def get(self, entry_id: str, version: int, scope: Scope) -> EntryVersion | None: ...


@dataclass(frozen=True, slots=True)
class VectorSnapshot:
    """What an in-memory index needs: the vectors of one agent and model as of ``watermark``.

    ``vectors`` holds ``(fact_id, vector)`` where ``vector`` is float32 bytes, or None when the fact has no
    vector of that model any more (dropped: the text changed, the entry was purged, a re-embed is due).
    """

    watermark: int
    vectors: list[tuple[str, bytes | None]]


class VectorRepository(Protocol):
    """Embeddings of long-term entries, one per entry, tagged with the model that made it.

    A vector always matches its entry's current text: a rewrite drops it, and ``put_many`` writes only
    when the text it was computed from is still current. Every write and drop is logged, so indexes held
    in memory by any process can catch up with ``changes``.
    """

    def put_many(self, rows: list[tuple[str, str, bytes]], *, model: str, dim: int, at: datetime) -> int:
        """Store ``(fact_id, embedded_text, vector)`` rows; a row whose entry's content is no longer
        ``embedded_text`` (or which is gone) is skipped. Returns how many were written."""
        ...

    def pending(self, model: str, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        """Up to ``limit`` ``(position, fact_id, content)`` of entries with no vector of ``model``, in
        insertion order, starting after ``position`` ``after`` (a cursor, so a long run stays linear)."""
        ...

    def snapshot(self, agent_id: str, model: str) -> VectorSnapshot:
        """Every vector of ``model`` for one agent, and the log position it reflects."""
        ...

    def changes(self, agent_id: str, model: str, after: int) -> VectorSnapshot:
        """The current vector (or None) of every fact whose vector changed after log position ``after``."""
        ...

    def counts(self) -> dict[str, int]:
        """How many vectors each model has."""
        ...


class MetaRepository(Protocol):
    """Small store-wide facts (the active embedding model)."""

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


@dataclass(frozen=True, slots=True)
class LedgerStamp:
    """The change gate's record of one pass for one agent (seed 001's DreamPassLedger)."""

    agent_id: str
    pass_name: str
    stamped_at: datetime  # when the pass last completed with usable output
    fingerprint: str | None = None  # hash of the corpus it last ran on (None: not corpus-gated)


@dataclass(frozen=True, slots=True)
class DreamLease:
    """The per-agent dream lock as one holder took it: valid while ``now < expires_at``."""

    agent_id: str
    holder: str  # unique per run
    acquired_at: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class DreamLockState:
    """The lock of one agent as stored (no clock is read: the caller compares ``expires_at``)."""

    agent_id: str
    holder: str | None  # None: no dream running (or its lease expired: see expires_at)
    expires_at: datetime | None
    last_dream_at: datetime | None  # the last dream that completed: the time gate reads it
    abort_requested: bool


@dataclass(frozen=True, slots=True)
class DreamRun:
    """One dream run: its live status while it runs, its report after (the audit trail)."""

    run_id: str
    agent_id: str
    trigger: str  # scheduled | manual | idle
    started_at: datetime
    phase: str  # running | completed | failed | aborted
    finished_at: datetime | None = None
    current_pass: str | None = None
    progress: str = ""  # e.g. "3/9 passes"
    tokens: int = 0
    cost: float = 0.0
    report: dict[str, Any] = field(default_factory=dict)  # JSON-able
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One source a dream merge folded into a target entry."""

    run_id: str
    target_id: str  # the entry a merge wrote into
    source_id: str  # one entry that fed it
    at: datetime


class DreamRepository(Protocol):
    """The dream service's state: the change-gate ledger, the per-agent lock, activity, runs and evidence.

    Every write is atomic across processes; the lock is a lease, so a crashed holder frees it at expiry.
    """

    # -- the change-gate ledger
    def ledger(self, agent_id: str) -> dict[str, LedgerStamp]:
        """Stamps by pass name. A row that cannot be read back (corrupt) is left out, so a damaged ledger
        means 'run that pass once', never 'skip it forever'."""
        ...

    def stamp(self, stamp: LedgerStamp) -> None:
        """Upsert by ``(agent_id, pass_name)``."""
        ...

    def clear_ledger(self, agent_id: str | None = None) -> int:
        """Remove the stamps of one agent (every agent when None); returns the rows removed."""
        ...

    # -- the per-agent dream lock (a lease, so a crashed holder frees it after expiry); works across processes
    def acquire(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> DreamLease | None:
        """Take the agent's dream lock, atomically: None when another holder's lease has not expired at now.
        Taking it clears abort_requested. An expired lease of another holder is taken over."""
        ...

    def renew(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> bool:
        """Extend our lease; False when we no longer hold it (expired and taken over, or released)."""
        ...

    def release(self, agent_id: str, holder: str, *, completed_at: datetime | None) -> None:
        """Give the lock back. completed_at set: last_dream_at becomes it (the time gate advances); None (failed or
        aborted): last_dream_at is left as it was, so the time gate reopens. No-op when holder does not hold it."""
        ...

    def lock_state(self, agent_id: str) -> DreamLockState:
        """The stored lock; for an agent never locked: all None / False."""
        ...

    def request_abort(self, agent_id: str) -> bool:
        """Ask the running dream of the agent to stop at its next step; True when one holds the lock (lease not
        checked against a clock here: the caller compares expires_at)."""
        ...

    # -- activity (LibreFang's min_sessions gate, ai-memory's idle trigger)
    def note_activity(self, agent_id: str, session_key: str, at: datetime) -> None:
        """Upsert (agent_id, session_key) -> last_at = max(existing, at). session_key '' = no session."""
        ...

    def activity_since(self, agent_id: str, since: datetime | None) -> tuple[int, datetime | None]:
        """(distinct non-empty session keys active after `since` (all when None), the latest activity time of any
        key of the agent, or None)."""
        ...

    def last_activity(self) -> datetime | None:
        """The latest activity of any agent (the idle trigger), or None."""
        ...

    # -- runs (status + audit trail)
    def save_run(self, run: DreamRun) -> None:
        """Upsert by ``run_id``."""
        ...

    def get_run(self, run_id: str) -> DreamRun | None: ...

    def runs(self, agent_id: str | None = None, *, limit: int = 20) -> list[DreamRun]:
        """The newest ``limit`` runs (of one agent, or all), newest started first."""
        ...

    def prune_runs(self, before: datetime) -> int:
        """Delete finished runs that finished before ``before``; returns how many. Running ones stay."""
        ...

    # -- evidence of merges
    def add_evidence(self, rows: list[Evidence]) -> None:
        """Record merge sources; a row already recorded (same run, target, source) is kept once."""
        ...

    def evidence(self, target_id: str) -> list[Evidence]:
        """The sources recorded for ``target_id``, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One conversation session of one agent (seed 000 conversation memory, seed 004 sessions).

    ``started_at`` is when the live conversation began: a fresh start (the first turn, or the first after the
    session expired) moves it. ``summary`` and ``compacted_through`` are session compaction's: the summary
    covers the live turns with ``index <= compacted_through``. ``deleted_at`` set: hidden, awaiting the purge.
    """

    agent_id: str
    session_id: str
    created_at: datetime
    last_active_at: datetime
    started_at: datetime
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # JSON-able
    summary: str | None = None
    compacted_through: int = 0
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn of a live conversation. ``index`` is its 1-based position in the live conversation; the
    indexes of a session's stored turns are always contiguous (appends take the next one, and only the
    oldest are ever dropped). ``archived``: evicted past the retained turns, kept for out-of-window recall."""

    agent_id: str
    session_id: str
    index: int
    role: str  # user | assistant | system | tool
    content: str
    at: datetime
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # JSON-able
    archived: bool = False


@dataclass(frozen=True, slots=True)
class TurnCounts:
    """How many turns a session stores, and the index range they span (0 and 0 when none)."""

    retained: int = 0
    archived: int = 0
    first_index: int = 0
    last_index: int = 0


class SessionRepository(Protocol):
    """Conversation sessions and their turns, per agent. Every query is scoped by ``(agent_id, session_id)``;
    the only hard deletes are the conversation's own rules (a fresh start, the archive cap, ``clear``) and
    ``purge_deleted``."""

    def create(self, session: SessionRecord) -> None:
        """Insert a session. Raises ``Conflict`` when ``(agent_id, session_id)`` exists, deleted or not."""
        ...

    def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """The session, deleted or not; None when unknown."""
        ...

    def list(self, agent_id: str, *, include_deleted: bool = False) -> list[SessionRecord]:
        """The agent's sessions, most recently active first (then by id)."""
        ...

    def update(self, session: SessionRecord) -> None:
        """Replace the stored session with ``session`` (same agent and id). Raises ``NotFound``."""
        ...

    def mark_deleted(self, agent_id: str, session_id: str, at: datetime) -> bool:
        """Set ``deleted_at`` on a session not yet deleted; False when there is none."""
        ...

    def append_turn(self, turn: TurnRecord) -> None:
        """Insert a turn. Raises ``Conflict`` when the session already has a turn at ``turn.index``, and
        ``NotFound`` when the session does not exist."""
        ...

    def turns(
        self, agent_id: str, session_id: str, *, archived: bool | None = None, after: int = 0, last: int | None = None
    ) -> builtins.list[TurnRecord]:  # builtins: ``list`` is a method here
        """Stored turns in index order: only archived (True) or retained (False) ones, or both (None); only
        those with ``index > after``; of those, only the ``last`` most recent (None: all)."""
        ...

    def turn_counts(self, agent_id: str, session_id: str) -> TurnCounts:
        """Retained and archived counts and the index range of the stored turns."""
        ...

    def archive_turns_before(self, agent_id: str, session_id: str, index: int) -> int:
        """Flag the retained turns with ``index`` below ``index`` as archived; returns how many."""
        ...

    def drop_archived_beyond(self, agent_id: str, session_id: str, keep: int) -> int:
        """Hard-delete the oldest archived turns beyond the ``keep`` most recent (0: all of them); returns how
        many (seed 000's MaxArchivedTurnsPerSession)."""
        ...

    def discard_turns(self, agent_id: str, session_id: str) -> int:
        """Hard-delete every turn of the session, archive included (a fresh start, a clear); returns how many."""
        ...

    def purge_deleted(self, before: datetime) -> int:
        """Hard-delete the sessions deleted at or before ``before``, with their turns; returns the sessions."""
        ...


@dataclass(frozen=True, slots=True)
class WorkingEntry:
    """One working-memory entry (seed 000): scratch text under a full path key, live until ``expires_at``.

    ``key`` is the full path (``session/abc123/emails_inbox``); its first two segments are its namespace.
    Working memory is scratch with a TTL, so expiry is its deletion: nothing here is versioned or archived.
    """

    agent_id: str
    key: str
    value: str
    stored_at: datetime
    expires_at: datetime
    category: str | None = None
    tags: tuple[str, ...] = ()


class WorkingRepository(Protocol):
    """Working-memory entries, per agent, keyed by ``(agent_id, key)``.

    An entry is live while ``now < expires_at``; every read takes ``now`` and never returns an expired entry.
    ``prefix`` matches keys by plain string prefix (the caller adds the trailing ``/``). "Most recently
    stored" orders by ``stored_at``, then by write order, so entries stored at the same instant keep the
    order they were written in. ``sweep`` is the only bulk delete.
    """

    def put(self, entry: WorkingEntry) -> None:
        """Upsert by ``(agent_id, key)``; a rewrite counts as the most recently stored."""
        ...

    def get(self, agent_id: str, key: str, *, now: datetime) -> WorkingEntry | None:
        """The live entry, or None when there is none or it has expired."""
        ...

    def list(self, agent_id: str, prefix: str, *, now: datetime, limit: int) -> list[WorkingEntry]:
        """Up to ``limit`` live entries whose key starts with ``prefix``, most recently stored first."""
        ...

    def count(self, agent_id: str, prefix: str, *, now: datetime) -> int:
        """How many live entries have a key starting with ``prefix``."""
        ...

    def delete(self, agent_id: str, key: str) -> bool:
        """Remove the entry (live or expired); False when there was none."""
        ...

    def oldest(self, agent_id: str, prefix: str, *, now: datetime) -> WorkingEntry | None:
        """The least recently stored live entry under ``prefix`` (the one the namespace cap evicts)."""
        ...

    def sweep(self, now: datetime) -> int:
        """Hard-delete every expired entry of every agent; returns how many."""
        ...


class Store(Protocol):
    """One backend: its repositories, transactions and maintenance."""

    @property
    def url(self) -> str: ...

    @property
    def facts(self) -> FactRepository: ...

    @property
    def versions(self) -> VersionRepository: ...

    @property
    def vectors(self) -> VectorRepository: ...

    @property
    def meta(self) -> MetaRepository: ...

    @property
    def dream(self) -> DreamRepository: ...

    @property
    def working(self) -> WorkingRepository: ...

    @property
    def sessions(self) -> SessionRepository: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes into one atomic unit (replacement before retirement). Repositories used inside
        it write through it. A nested call is a savepoint: it commits with the outer transaction, and an
        exception inside it undoes only the nested writes (the outer block may catch it and go on)."""
        ...

    def migrations(self) -> list[tuple[str, datetime]]:
        """Applied migrations, in order, with when they were applied."""
        ...

    def stats(self) -> StoreStats: ...

    def check(self, *, repair: bool = False) -> HealthReport:
        """Integrity, index consistency; with ``repair``, rebuild what can be rebuilt."""
        ...

    def backup(self, destination: Path) -> None:
        """A consistent copy, safe while other processes write."""
        ...

    def restore_backup(self, source: Path) -> None:
        """Replace the store's contents with a backup, atomically."""
        ...

    def vacuum(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Backend tuning the engine passes down from Settings."""

    busy_timeout_ms: int = 10_000
    lock_wait_seconds: float = 60.0
    synchronous: str = "FULL"
