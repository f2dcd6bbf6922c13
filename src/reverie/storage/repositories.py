"""The storage contract, part two: the repositories of the services above long-term memory — the dream
(ledger, lock lease, activity, runs, evidence), conversation sessions and turns, working memory, API keys and
LLM usage. Same rules as ``storage.base`` (scope in every query, time passed in, a failed write changes
nothing); ``storage.base`` re-exports every name, and ``Store`` exposes each repository.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from reverie.types.dream import DreamProcess, DreamRun, Evidence
from reverie.types.keys import ApiKey
from reverie.types.sessions import SessionRecord, TurnCounts, TurnRecord
from reverie.types.usage import UsageRow, UsageSummary
from reverie.types.working import WorkingEntry


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
    holder: str  # unique per run (the dream service's run id)
    acquired_at: datetime
    expires_at: datetime
    process: DreamProcess | None = None  # who holds it (None: a caller that did not say)


@dataclass(frozen=True, slots=True)
class DreamLockState:
    """The lock of one agent as stored (no clock is read: the caller compares ``expires_at`` and judges the
    heartbeat)."""

    agent_id: str
    holder: str | None  # None: no dream running (or its lease expired: see expires_at)
    expires_at: datetime | None
    last_dream_at: datetime | None  # the last dream that completed: the time gate reads it
    abort_requested: bool
    process: DreamProcess | None = None  # the holder's pid, host and heartbeat period, when it gave them
    heartbeat_at: datetime | None = None  # the holder's last sign of life (acquire, then each heartbeat)


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
    def acquire(
        self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float, process: DreamProcess | None = None
    ) -> DreamLease | None:
        """Take the agent's dream lock, atomically: None when another holder's lease has not expired at now.
        Taking it clears abort_requested and records ``process`` (replacing the last holder's) with a first
        heartbeat at now. An expired lease of another holder is taken over."""
        ...

    def heartbeat(self, agent_id: str, holder: str, *, now: datetime) -> bool:
        """The holder's sign of life: ``heartbeat_at`` becomes now (the lease's end does not move); False when
        ``holder`` does not hold the lock."""
        ...

    def break_lease(self, agent_id: str, holder: str, *, now: datetime, reason: str) -> bool:
        """Free the lock of a holder found dead, in one transaction: the lease is cleared (as a failed release:
        ``last_dream_at`` stays) only while it still names ``holder``, and the run ``holder`` names, if still
        unfinished, is recorded ``interrupted`` at now with ``reason`` as its error (its current pass and
        progress kept: where it died). False when ``holder`` no longer held the lock."""
        ...

    def holder_gone(self, agent_id: str) -> bool | None:
        """What the store itself knows of the holder's life: True when the session that held the lock is
        gone (PostgreSQL: the advisory lock is free), False when a live session holds it, None when the store
        cannot tell (SQLite: the caller judges by the process and the heartbeat)."""
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

    def runs_page(self, agent_id: str | None, after: tuple[str, str] | None, limit: int) -> builtins.list[DreamRun]:
        """Up to ``limit`` runs (of one agent, or all), newest started first (``started_at``, then ``run_id``,
        both descending, the id in code-point order), strictly after ``after`` (the previous page's last
        ``started_at`` as ISO text, and run id; None: from the start). Keyset, never an offset."""
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

    def page(self, agent_id: str, after: tuple[str, str] | None, limit: int) -> builtins.list[SessionRecord]:
        """Up to ``limit`` of the agent's sessions (deleted ones hidden), newest first (``created_at``, then the
        id, both descending, the id in code-point order), strictly after ``after`` (the previous page's last
        ``created_at`` as ISO text, and id; None: from the start). Keyset, never an offset."""
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

    def page(
        self, agent_id: str, prefix: str, *, now: datetime, after: str | None, limit: int
    ) -> builtins.list[WorkingEntry]:
        """Up to ``limit`` live entries whose key starts with ``prefix`` and sorts after ``after`` (None: from
        the first), in key order (code points, on both backends). A rewrite never moves a key, so a keyset
        walk in this order sees every entry live throughout exactly once."""
        ...

    def oldest(self, agent_id: str, prefix: str, *, now: datetime) -> WorkingEntry | None:
        """The least recently stored live entry under ``prefix`` (the one the namespace cap evicts)."""
        ...

    def sweep(self, now: datetime) -> int:
        """Hard-delete every expired entry of every agent; returns how many."""
        ...


class ApiKeyRepository(Protocol):
    """API keys, by ``key_id`` (unique) and ``key_hash`` (unique). Keys are never deleted, only revoked."""

    def add(self, key: ApiKey) -> None:
        """Insert a key. Raises ``Conflict`` when its id or hash exists."""
        ...

    def get(self, key_id: str) -> ApiKey | None:
        """The key, revoked or not; None when unknown."""
        ...

    def by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose ``key_hash`` this is, revoked or not; None when none."""
        ...

    def revoke(self, key_id: str, at: datetime) -> bool:
        """Set ``revoked_at`` on a key not yet revoked; False when unknown or already revoked (its
        ``revoked_at`` is then left as it was)."""
        ...

    def set_users(self, key_id: str, users: tuple[str, ...]) -> bool:
        """Bind a key to ``users`` (``ApiKey.users``, replacing what it had, NULL included); False when unknown."""
        ...

    def touch(self, key_id: str, at: datetime) -> None:
        """Set ``last_used_at``; a no-op for an unknown key."""
        ...

    def list(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first (then by id)."""
        ...

    def page(self, after: tuple[datetime, str] | None, limit: int) -> builtins.list[ApiKey]:
        """Up to ``limit`` keys in ``list`` order (created_at, then id in code points), strictly after the
        position ``after`` (None: from the start). Keyset, never an offset."""
        ...


class UsageRepository(Protocol):
    """The usage log: append-only. Periods are half-open: ``since <= at < until`` (either bound None:
    unbounded); ``agent_id`` None means every agent."""

    def add(self, row: UsageRow) -> None: ...

    def rows(self, since: datetime | None, until: datetime | None, agent_id: str | None = None) -> list[UsageRow]:
        """The calls in the period, oldest first (then in the order they were added)."""
        ...

    def summary(
        self, since: datetime | None, until: datetime | None, agent_id: str | None = None
    ) -> list[UsageSummary]:
        """The calls in the period summed per ``(agent_id, provider, model)``, sorted by those three."""
        ...
