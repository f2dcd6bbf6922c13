"""The dream lock on PostgreSQL: ``PgDream``, the shared ``SqlDream`` plus a session advisory lock.

Everything but the lock is ``storage.sql.dream`` (the ledger, activity, runs, evidence, the lease row's SQL).
The dream lock is a PostgreSQL advisory lock, so two workers never run the same pass on the same agent,
whichever hosts they run on. The lease row (``dream_locks``) is kept beside it for what the lock cannot say:
who holds it and until when (status), the abort flag, and ``last_dream_at`` (the time gate).

- ``acquire`` opens a dedicated connection (``PgDatabase.connect``, outside the pool) and takes
  ``pg_try_advisory_lock(LOCK_DREAM, hashtext(agent_id))`` on it: a session-level lock, held while that
  connection lives, so a holder whose process dies frees it at once (the server ends the session), without
  waiting for its lease. Granted: the lease row is upserted as on SQLite (holder, acquired_at, expires_at,
  abort_requested cleared) and the connection is kept in ``_held`` under the agent. Refused: another session
  holds it. When that session is ours (``_held``) and the row shows its lease expired at ``now``, ours is
  released (the contract: an expired lease is taken over) and the lock tried once more; otherwise the answer
  is None, even when the row looks expired: a live process elsewhere holds the lock (a hung holder is not
  taken over; it loses nothing but time, and ``request_abort`` still reaches it).
- The same holder acquiring again only extends its row. ``renew`` is True only while we hold the lock
  connection for ``(agent, holder)`` and the row still names the holder; a connection found dead means the
  lock is lost (its row is cleared as a failed release would).
- ``release`` updates the row first (``last_dream_at`` on completion, holder cleared), then unlocks and
  closes the connection, so a worker that takes the lock next already sees the new ``last_dream_at``. The
  unlock is explicit: closing alone frees the lock only once the server has ended the session, a moment
  later. A release by a non-holder is a no-op. ``close`` frees every lock this instance holds.
- ``holder_gone`` asks the server, never the row: True when no session holds the agent's advisory lock
  (``pg_locks``, read only, so asking never gets in an acquirer's way), False when one does (a live process
  somewhere, however stale its heartbeat), or when this instance holds it on a live connection. A holder
  SIGKILLed mid-dream is thus known dead as soon as the server has ended its session. ``break_lease`` of a
  lease this instance holds lets go of its lock too.
- Keys are ``hashtext`` of the agent id (32 bits): two agents whose ids collide share one lock, so one of them
  waits for the other's dream to end; never two dreams of one agent at once.
- ``_held`` is guarded by a thread lock held for a whole acquire, renew or release.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from datetime import datetime

import psycopg

from reverie.errors import StorageError
from reverie.storage.base import DreamLease
from reverie.storage.postgres.database import LOCK_DREAM, Conn, PgDatabase, translate
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.dream import SqlDream, lease_end
from reverie.types.dream import DreamProcess

# Whether any session holds the agent's dream lock: pg_try_advisory_lock(int4, int4) shows in pg_locks as
# classid = key 1, objid = key 2 (as an unsigned oid), objsubid = 2.
_LOCK_HELD = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = %s::integer::oid AND objid = hashtext(%s)::oid)"
)


@dataclass(frozen=True, slots=True)
class _Held:
    """A dream lock this instance holds: the run holding it and the connection the advisory lock lives on."""

    holder: str
    conn: Conn


def _alive(conn: Conn) -> bool:
    """Whether the session (and so its advisory lock) still exists: one round trip."""
    if conn.closed:
        return False
    try:
        conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def _let_go(conn: Conn, agent_id: str) -> None:
    """Unlock (at once, rather than when the server ends the session) and close; a dead connection's lock
    went with its session, so errors are ignored."""
    with contextlib.suppress(psycopg.Error):
        if not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_DREAM, agent_id))
    with contextlib.suppress(psycopg.Error):
        conn.close()


class PgDream(SqlDream):
    """``DreamRepository`` on PostgreSQL; the lock is an advisory lock plus the lease row (module docstring)."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, POSTGRES)
        self._pool = db
        self._held: dict[str, _Held] = {}
        self._guard = threading.Lock()

    def acquire(
        self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float, process: DreamProcess | None = None
    ) -> DreamLease | None:
        """Take the advisory lock, then the lease row (module docstring). The same holder acquiring again
        re-takes (and extends) its own lease."""
        expires = lease_end(now, lease_seconds)
        lease = DreamLease(agent_id=agent_id, holder=holder, acquired_at=now, expires_at=expires, process=process)
        with self._guard:
            held = self._held.get(agent_id)
            if held is not None and held.holder == holder and _alive(held.conn):
                self._db.write(lambda c: self._take_row(c, agent_id, holder, now, expires, process))
                return lease
            conn = self._try_lock(agent_id)
            if conn is None and held is not None and self._lease_over(agent_id, held.holder, now):
                self._forget(agent_id)  # our own expired lease: taken over, as the contract says
                conn = self._try_lock(agent_id)
            if conn is None:
                return None
            try:
                self._db.write(lambda c: self._take_row(c, agent_id, holder, now, expires, process))
            except BaseException:
                _let_go(conn, agent_id)
                raise
            # Granted while we had a connection for the agent: that one was dead (its lock went with it).
            self._forget(agent_id)
            self._held[agent_id] = _Held(holder, conn)
            return lease

    def renew(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> bool:
        """A lease that expired but was not taken over is still ours: renewing it succeeds."""
        expires = lease_end(now, lease_seconds)
        with self._guard:
            held = self._held.get(agent_id)
            if held is None or held.holder != holder:
                return False
            if not _alive(held.conn):  # the session ended (server restart, network): the lock is gone
                self._forget(agent_id)
                with contextlib.suppress(StorageError):
                    self._db.write(lambda c: self._release_row(c, agent_id, holder, None))
                return False
            return self._db.write(lambda c: self._renew_row(c, agent_id, holder, expires))

    def release(self, agent_id: str, holder: str, *, completed_at: datetime | None) -> None:
        """Also clears ``abort_requested``: the flag only ever concerns the dream holding the lock. The row is
        written before the lock is let go, and the lock is let go even when that write fails."""
        with self._guard:
            held = self._held.get(agent_id)
            if held is None or held.holder != holder:
                return
            try:
                self._db.write(lambda c: self._release_row(c, agent_id, holder, completed_at))
            finally:
                self._forget(agent_id)

    def break_lease(self, agent_id: str, holder: str, *, now: datetime, reason: str) -> bool:
        """As ``SqlDream.break_lease``; when this instance holds that lease, its lock is let go too."""
        with self._guard:
            held = self._held.get(agent_id)
            try:
                return super().break_lease(agent_id, holder, now=now, reason=reason)
            finally:
                if held is not None and held.holder == holder:
                    self._forget(agent_id)

    def holder_gone(self, agent_id: str) -> bool | None:
        """Whether the session holding the agent's advisory lock is gone (module docstring)."""
        with self._guard:
            held = self._held.get(agent_id)
            if held is not None and _alive(held.conn):
                return False
        row = self._db.read(lambda c: c.execute(_LOCK_HELD, (LOCK_DREAM, agent_id)).fetchone())
        return row is None or not row[0]

    def close(self) -> None:
        """Free every lock this instance holds (their rows stay: a lease simply runs out)."""
        with self._guard:
            for agent_id in list(self._held):
                self._forget(agent_id)

    def _try_lock(self, agent_id: str) -> Conn | None:
        """A new connection holding the agent's advisory lock, or None when another session holds it."""
        conn = self._pool.connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LOCK_DREAM, agent_id)).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise translate(exc, self._pool.where) from exc
        if row is not None and row[0]:
            return conn
        conn.close()
        return None

    def _lease_over(self, agent_id: str, holder: str, now: datetime) -> bool:
        """Whether the row names ``holder`` with a lease expired at ``now``."""
        state = self.lock_state(agent_id)
        return state.holder == holder and (state.expires_at is None or state.expires_at <= now)

    def _forget(self, agent_id: str) -> None:
        """Let go of our lock of the agent, if any (caller holds ``_guard``)."""
        held = self._held.pop(agent_id, None)
        if held is not None:
            _let_go(held.conn, agent_id)
