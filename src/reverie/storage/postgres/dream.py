"""The dream service's state on PostgreSQL: the change-gate ledger, the per-agent lock, activity, runs, evidence.

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
- Keys are ``hashtext`` of the agent id (32 bits): two agents whose ids collide share one lock, so one of them
  waits for the other's dream to end; never two dreams of one agent at once.
- ``_held`` is guarded by a thread lock held for a whole acquire, renew or release.
- Everything else is a plain port of the SQLite twin: every write one ``PgDatabase.write`` transaction,
  upserts by ``ON CONFLICT``, nothing here reads a clock.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg

from reverie.errors import StorageError
from reverie.storage.base import DreamLease, DreamLockState, LedgerStamp
from reverie.storage.postgres.database import LOCK_DREAM, Conn, PgDatabase, translate
from reverie.types import DreamRun, Evidence

_RUN_COLUMNS = (
    "run_id, agent_id, run_trigger, started_at, phase, finished_at, current_pass, progress, tokens, cost, report, error"
)
_RUN_FIELDS = _RUN_COLUMNS.split(", ")
_SAVE_RUN = (
    f"INSERT INTO dream_runs ({_RUN_COLUMNS}) VALUES ("
    + ", ".join(f"%({n})s::jsonb" if n == "report" else f"%({n})s" for n in _RUN_FIELDS)
    + ") ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{n} = excluded.{n}" for n in _RUN_FIELDS if n != "run_id")
)
_TAKE_ROW = (
    "INSERT INTO dream_locks (agent_id, holder, acquired_at, expires_at, abort_requested)"
    " VALUES (%s, %s, %s, %s, false) ON CONFLICT (agent_id) DO UPDATE SET holder = excluded.holder,"
    " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, abort_requested = false"
)
_RELEASE_ROW = (
    "UPDATE dream_locks SET holder = NULL, acquired_at = NULL, expires_at = NULL, abort_requested = false,"
    " last_dream_at = coalesce(%s, last_dream_at) WHERE agent_id = %s AND holder = %s"
)


def _stamp_from_row(row: tuple[Any, ...]) -> LedgerStamp | None:
    """The stamp in ``row`` (agent_id, pass_name, stamped_at, fingerprint), or None when it cannot be used."""
    agent_id, pass_name, stamped_at, fingerprint = row
    if not isinstance(stamped_at, datetime) or stamped_at.tzinfo is None:
        return None
    return LedgerStamp(agent_id=agent_id, pass_name=pass_name, stamped_at=stamped_at, fingerprint=fingerprint)


def _run_params(run: DreamRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "run_trigger": run.trigger,
        "started_at": run.started_at,
        "phase": run.phase,
        "finished_at": run.finished_at,
        "current_pass": run.current_pass,
        "progress": run.progress,
        "tokens": run.tokens,
        "cost": run.cost,
        # Serialised before the transaction: a report that is not JSON-able raises TypeError, writing nothing.
        "report": json.dumps(run.report, ensure_ascii=False, separators=(",", ":")),
        "error": run.error,
    }


def _run_from_row(row: tuple[Any, ...]) -> DreamRun:
    return DreamRun(
        run_id=row[0],
        agent_id=row[1],
        trigger=row[2],
        started_at=row[3],
        phase=row[4],
        finished_at=row[5],
        current_pass=row[6],
        progress=row[7],
        tokens=int(row[8]),
        cost=float(row[9]),
        report=row[10],
        error=row[11],
    )


def _lease_end(now: datetime, lease_seconds: float) -> datetime:
    if not lease_seconds > 0:
        raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
    return now + timedelta(seconds=lease_seconds)


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


class PgDream:
    """``DreamRepository`` on PostgreSQL; the lock is an advisory lock plus the lease row (module docstring)."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._held: dict[str, _Held] = {}
        self._guard = threading.Lock()

    # -- the change-gate ledger ----------------------------------------------------------------------
    def ledger(self, agent_id: str) -> dict[str, LedgerStamp]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT agent_id, pass_name, stamped_at, fingerprint FROM dream_ledger WHERE agent_id = %s"
                ' ORDER BY pass_name COLLATE "C"',
                (agent_id,),
            ).fetchall()
        )
        stamps = (_stamp_from_row(r) for r in rows)
        return {s.pass_name: s for s in stamps if s is not None}

    def stamp(self, stamp: LedgerStamp) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO dream_ledger (agent_id, pass_name, stamped_at, fingerprint) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (agent_id, pass_name) DO UPDATE SET stamped_at = excluded.stamped_at,"
                " fingerprint = excluded.fingerprint",
                (stamp.agent_id, stamp.pass_name, stamp.stamped_at, stamp.fingerprint),
            )
        )

    def clear_ledger(self, agent_id: str | None = None) -> int:
        def work(c: Conn) -> int:
            if agent_id is None:
                return int(c.execute("DELETE FROM dream_ledger").rowcount)
            return int(c.execute("DELETE FROM dream_ledger WHERE agent_id = %s", (agent_id,)).rowcount)

        return self._db.write(work)

    # -- the per-agent dream lock --------------------------------------------------------------------
    def acquire(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> DreamLease | None:
        """Take the advisory lock, then the lease row (module docstring). The same holder acquiring again
        re-takes (and extends) its own lease."""
        expires = _lease_end(now, lease_seconds)
        lease = DreamLease(agent_id=agent_id, holder=holder, acquired_at=now, expires_at=expires)
        with self._guard:
            held = self._held.get(agent_id)
            if held is not None and held.holder == holder and _alive(held.conn):
                self._db.write(lambda c: c.execute(_TAKE_ROW, (agent_id, holder, now, expires)))
                return lease
            conn = self._try_lock(agent_id)
            if conn is None and held is not None and self._lease_over(agent_id, held.holder, now):
                self._forget(agent_id)  # our own expired lease: taken over, as the contract says
                conn = self._try_lock(agent_id)
            if conn is None:
                return None
            try:
                self._db.write(lambda c: c.execute(_TAKE_ROW, (agent_id, holder, now, expires)))
            except BaseException:
                _let_go(conn, agent_id)
                raise
            # Granted while we had a connection for the agent: that one was dead (its lock went with it).
            self._forget(agent_id)
            self._held[agent_id] = _Held(holder, conn)
            return lease

    def renew(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> bool:
        """A lease that expired but was not taken over is still ours: renewing it succeeds."""
        expires = _lease_end(now, lease_seconds)
        with self._guard:
            held = self._held.get(agent_id)
            if held is None or held.holder != holder:
                return False
            if not _alive(held.conn):  # the session ended (server restart, network): the lock is gone
                self._forget(agent_id)
                with contextlib.suppress(StorageError):
                    self._db.write(lambda c: c.execute(_RELEASE_ROW, (None, agent_id, holder)))
                return False

            def work(c: Conn) -> bool:
                cur = c.execute(
                    "UPDATE dream_locks SET expires_at = %s WHERE agent_id = %s AND holder = %s",
                    (expires, agent_id, holder),
                )
                return cur.rowcount > 0

            return self._db.write(work)

    def release(self, agent_id: str, holder: str, *, completed_at: datetime | None) -> None:
        """Also clears ``abort_requested``: the flag only ever concerns the dream holding the lock. The row is
        written before the lock is let go, and the lock is let go even when that write fails."""
        with self._guard:
            held = self._held.get(agent_id)
            if held is None or held.holder != holder:
                return
            try:
                self._db.write(lambda c: c.execute(_RELEASE_ROW, (completed_at, agent_id, holder)))
            finally:
                self._forget(agent_id)

    def lock_state(self, agent_id: str) -> DreamLockState:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT holder, expires_at, last_dream_at, abort_requested FROM dream_locks WHERE agent_id = %s",
                (agent_id,),
            ).fetchone()
        )
        if row is None:
            return DreamLockState(agent_id, holder=None, expires_at=None, last_dream_at=None, abort_requested=False)
        return DreamLockState(
            agent_id, holder=row[0], expires_at=row[1], last_dream_at=row[2], abort_requested=bool(row[3])
        )

    def request_abort(self, agent_id: str) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute(
                "UPDATE dream_locks SET abort_requested = true WHERE agent_id = %s AND holder IS NOT NULL",
                (agent_id,),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def close(self) -> None:
        """Free every lock this instance holds (their rows stay: a lease simply runs out)."""
        with self._guard:
            for agent_id in list(self._held):
                self._forget(agent_id)

    def _try_lock(self, agent_id: str) -> Conn | None:
        """A new connection holding the agent's advisory lock, or None when another session holds it."""
        conn = self._db.connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", (LOCK_DREAM, agent_id)).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise translate(exc, self._db.where) from exc
        if row is not None and row[0]:
            return conn
        conn.close()
        return None

    def _lease_over(self, agent_id: str, holder: str, now: datetime) -> bool:
        """Whether the row names ``holder`` with a lease expired at ``now``."""
        row = self._db.read(
            lambda c: c.execute(
                "SELECT holder, expires_at FROM dream_locks WHERE agent_id = %s", (agent_id,)
            ).fetchone()
        )
        return row is not None and row[0] == holder and (row[1] is None or row[1] <= now)

    def _forget(self, agent_id: str) -> None:
        """Let go of our lock of the agent, if any (caller holds ``_guard``)."""
        held = self._held.pop(agent_id, None)
        if held is not None:
            _let_go(held.conn, agent_id)

    # -- activity ------------------------------------------------------------------------------------
    def note_activity(self, agent_id: str, session_key: str, at: datetime) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO dream_activity (agent_id, session_key, last_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (agent_id, session_key) DO UPDATE"
                " SET last_at = greatest(dream_activity.last_at, excluded.last_at)",
                (agent_id, session_key, at),
            )
        )

    def activity_since(self, agent_id: str, since: datetime | None) -> tuple[int, datetime | None]:
        after = "" if since is None else " AND last_at > %(since)s"

        def work(c: Conn) -> tuple[int, datetime | None]:
            row = c.execute(
                f"SELECT count(*) FILTER (WHERE session_key <> ''{after}), max(last_at)"
                " FROM dream_activity WHERE agent_id = %(agent)s",
                {"agent": agent_id, "since": since},
            ).fetchone()
            return (0, None) if row is None else (int(row[0]), row[1])

        return self._db.read(work)

    def last_activity(self) -> datetime | None:
        row = self._db.read(lambda c: c.execute("SELECT max(last_at) FROM dream_activity").fetchone())
        return None if row is None else row[0]

    # -- runs ----------------------------------------------------------------------------------------
    def save_run(self, run: DreamRun) -> None:
        params = _run_params(run)
        self._db.write(lambda c: c.execute(_SAVE_RUN, params))

    def get_run(self, run_id: str) -> DreamRun | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_RUN_COLUMNS} FROM dream_runs WHERE run_id = %s", (run_id,)).fetchone()
        )
        return None if row is None else _run_from_row(row)

    def runs(self, agent_id: str | None = None, *, limit: int = 20) -> list[DreamRun]:
        sql = f"SELECT {_RUN_COLUMNS} FROM dream_runs"
        params: list[Any] = []
        if agent_id is not None:
            sql += " WHERE agent_id = %s"
            params.append(agent_id)
        sql += " ORDER BY started_at DESC, seq DESC LIMIT %s"
        params.append(max(limit, 0))
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [_run_from_row(r) for r in rows]

    def prune_runs(self, before: datetime) -> int:
        def work(c: Conn) -> int:
            cur = c.execute("DELETE FROM dream_runs WHERE finished_at IS NOT NULL AND finished_at < %s", (before,))
            return int(cur.rowcount)

        return self._db.write(work)

    # -- evidence ------------------------------------------------------------------------------------
    def add_evidence(self, rows: list[Evidence]) -> None:
        if not rows:
            return
        values = [(r.run_id, r.target_id, r.source_id, r.at) for r in rows]

        def work(c: Conn) -> None:
            with c.cursor() as cur:
                cur.executemany(
                    "INSERT INTO dream_evidence (run_id, target_id, source_id, at) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (run_id, target_id, source_id) DO NOTHING",
                    values,
                )

        self._db.write(work)

    def evidence(self, target_id: str) -> list[Evidence]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT run_id, target_id, source_id, at FROM dream_evidence WHERE target_id = %s ORDER BY at, seq",
                (target_id,),
            ).fetchall()
        )
        return [Evidence(run_id=r[0], target_id=r[1], source_id=r[2], at=r[3]) for r in rows]
