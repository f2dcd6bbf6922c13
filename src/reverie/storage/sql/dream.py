"""The dream service's state (``DreamRepository``), written once for both backends: the change-gate ledger,
the per-agent lock's lease row, activity, runs, evidence.

Invariants:
- Every write is one ``Database.write`` transaction (on SQLite ``BEGIN IMMEDIATE``), so a check and the
  update it decides on (``acquire``, ``renew``, ``release``) happen under the write lock: atomic across
  processes, not only threads. Upserts are ``ON CONFLICT``.
- The lock is a lease: valid while ``now < expires_at``. A holder that crashed frees it at expiry; nothing
  here reads a clock, the caller passes ``now``. This class is the whole lock on SQLite; PostgreSQL adds a
  session advisory lock beside the row (``postgres.dream.PgDream``), through the ``_take_row`` /
  ``_renew_row`` / ``_release_row`` steps here.
- The row also names the holder's process (pid, host, heartbeat period) and its last heartbeat, written by
  ``acquire`` and ``heartbeat`` and cleared with the holder, so the dream service can judge a holder dead
  long before its lease runs out (SQLite itself cannot tell: ``holder_gone`` is None). ``break_lease`` frees
  a dead holder's lease and records its run interrupted in one transaction, and only while the row still
  names that holder, so a lease taken in the meantime is never broken.
- A damaged row never blocks the service: an unreadable ledger stamp is left out (the pass runs once), and
  an unreadable lease expiry counts as expired (the lock can be taken over).
- A run's report is serialised before the transaction: one that is not JSON-able raises, writing nothing.
- Pass names tie-break by code point on both backends (SQLite's binary order, ``COLLATE "C"``).
"""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.storage.base import DreamLease, DreamLockState, LedgerStamp
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import DreamRun, Evidence
from reverie.types.dream import DreamProcess

_RUN_COLUMNS = (
    "run_id, agent_id, run_trigger, started_at, phase, finished_at, current_pass, progress, tokens, cost, report, error"
)
_RUN_FIELDS = _RUN_COLUMNS.split(", ")
_SAVE_RUN = (
    f"INSERT INTO dream_runs ({_RUN_COLUMNS}) VALUES ({', '.join('?' for _ in _RUN_FIELDS)})"
    " ON CONFLICT (run_id) DO UPDATE SET " + ", ".join(f"{n} = excluded.{n}" for n in _RUN_FIELDS if n != "run_id")
)


def _lenient_ts(value: object) -> datetime | None:
    """A stored timestamp, or None when it is missing or cannot be read back as an aware datetime."""
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo is not None else None
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _stamp_from_row(row: Any) -> LedgerStamp | None:
    """The stamp in ``row`` (agent_id, pass_name, stamped_at, fingerprint), or None when it is corrupt."""
    agent_id, pass_name, stamped_at, fingerprint = row
    when = _lenient_ts(stamped_at)
    if when is None or not isinstance(pass_name, str) or not isinstance(agent_id, str):
        return None
    if fingerprint is not None and not isinstance(fingerprint, str):
        return None
    return LedgerStamp(agent_id=agent_id, pass_name=pass_name, stamped_at=when, fingerprint=fingerprint)


def _process_from(pid: object, host: object, heartbeat_seconds: object) -> DreamProcess | None:
    """The holder's process as stored, or None when it was not recorded (or cannot be read back)."""
    if not isinstance(pid, int) or not isinstance(host, str) or not isinstance(heartbeat_seconds, int | float):
        return None
    return DreamProcess(pid=pid, host=host, heartbeat_seconds=float(heartbeat_seconds))


def lease_end(now: datetime, lease_seconds: float) -> datetime:
    """When a lease taken at ``now`` ends; ``ValueError`` unless ``lease_seconds`` is positive."""
    if not lease_seconds > 0:
        raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
    return now + timedelta(seconds=lease_seconds)


class SqlDream:
    """``DreamRepository`` over either backend; on PostgreSQL subclassed for the advisory lock."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- the change-gate ledger ----------------------------------------------------------------------
    def ledger(self, agent_id: str) -> dict[str, LedgerStamp]:
        statement = self._d.sql(
            "SELECT agent_id, pass_name, stamped_at, fingerprint FROM dream_ledger WHERE agent_id = ?"
            f" ORDER BY pass_name{self._d.collate_c}"
        )
        rows = self._db.read(lambda c: c.execute(statement, (agent_id,)).fetchall())
        stamps = (_stamp_from_row(tuple(r)) for r in rows)
        return {s.pass_name: s for s in stamps if s is not None}

    def stamp(self, stamp: LedgerStamp) -> None:
        statement = self._d.sql(
            "INSERT INTO dream_ledger (agent_id, pass_name, stamped_at, fingerprint) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (agent_id, pass_name) DO UPDATE SET stamped_at = excluded.stamped_at,"
            " fingerprint = excluded.fingerprint"
        )
        params = (stamp.agent_id, stamp.pass_name, self._d.ts(stamp.stamped_at), stamp.fingerprint)
        self._db.write(lambda c: c.execute(statement, params))

    def clear_ledger(self, agent_id: str | None = None) -> int:
        if agent_id is None:
            return self._db.write(lambda c: int(c.execute("DELETE FROM dream_ledger").rowcount))
        statement = self._d.sql("DELETE FROM dream_ledger WHERE agent_id = ?")
        return self._db.write(lambda c: int(c.execute(statement, (agent_id,)).rowcount))

    # -- the per-agent dream lock --------------------------------------------------------------------
    def acquire(
        self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float, process: DreamProcess | None = None
    ) -> DreamLease | None:
        """Check and take in one write transaction. The same holder acquiring again re-takes (and extends)
        its own lease."""
        expires = lease_end(now, lease_seconds)
        current = self._d.sql("SELECT holder, expires_at FROM dream_locks WHERE agent_id = ?")

        def work(c: Any) -> DreamLease | None:
            row = c.execute(current, (agent_id,)).fetchone()
            if row is not None and row[0] is not None and row[0] != holder:
                current_end = _lenient_ts(row[1])
                if current_end is not None and now < current_end:
                    return None  # another holder's lease is live
            self._take_row(c, agent_id, holder, now, expires, process)
            return DreamLease(agent_id=agent_id, holder=holder, acquired_at=now, expires_at=expires, process=process)

        return self._db.write(work)

    def renew(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> bool:
        """A lease that expired but was not taken over is still ours: renewing it succeeds."""
        expires = lease_end(now, lease_seconds)
        return self._db.write(lambda c: self._renew_row(c, agent_id, holder, expires))

    def release(self, agent_id: str, holder: str, *, completed_at: datetime | None) -> None:
        """Also clears ``abort_requested``: the flag only ever concerns the dream holding the lock."""
        self._db.write(lambda c: self._release_row(c, agent_id, holder, completed_at))

    def heartbeat(self, agent_id: str, holder: str, *, now: datetime) -> bool:
        statement = self._d.sql("UPDATE dream_locks SET heartbeat_at = ? WHERE agent_id = ? AND holder = ?")
        params = (self._d.ts(now), agent_id, holder)
        return self._db.write(lambda c: bool(c.execute(statement, params).rowcount > 0))

    def break_lease(self, agent_id: str, holder: str, *, now: datetime, reason: str) -> bool:
        """Clear the dead holder's lease and record its run interrupted, in one transaction (module docstring)."""
        interrupt = self._d.sql(
            "UPDATE dream_runs SET phase = 'interrupted', finished_at = ?, error = ?"
            " WHERE run_id = ? AND agent_id = ? AND finished_at IS NULL"
        )
        params = (self._d.ts(now), reason, holder, agent_id)

        def work(c: Any) -> bool:
            if not self._release_row(c, agent_id, holder, None):
                return False
            c.execute(interrupt, params)
            return True

        return self._db.write(work)

    def holder_gone(self, agent_id: str) -> bool | None:
        """SQLite cannot tell: the caller judges by the holder's process and heartbeat."""
        return None

    def _take_row(
        self, c: Any, agent_id: str, holder: str, now: datetime, expires: datetime, process: DreamProcess | None
    ) -> None:
        """Upsert the lease row for ``holder`` on connection ``c``, clearing ``abort_requested``, recording its
        process (or none) and a first heartbeat at ``now``."""
        d = self._d
        columns: tuple[str, ...] = ("holder", "acquired_at", "expires_at", "abort_requested")
        columns += ("holder_pid", "holder_host", "heartbeat_seconds", "heartbeat_at")
        statement = d.sql(
            f"INSERT INTO dream_locks (agent_id, {', '.join(columns)})"
            f" VALUES (?, ?, ?, ?, {d.false}, ?, ?, ?, ?) ON CONFLICT (agent_id) DO UPDATE SET "
            + ", ".join(f"{name} = excluded.{name}" for name in columns)
        )
        pid, host, beat = (
            (None, None, None) if process is None else (process.pid, process.host, process.heartbeat_seconds)
        )
        c.execute(statement, (agent_id, holder, d.ts(now), d.ts(expires), pid, host, beat, d.ts(now)))

    def _renew_row(self, c: Any, agent_id: str, holder: str, expires: datetime) -> bool:
        """Move the lease's end, if the row still names ``holder``."""
        statement = self._d.sql("UPDATE dream_locks SET expires_at = ? WHERE agent_id = ? AND holder = ?")
        return bool(c.execute(statement, (self._d.ts(expires), agent_id, holder)).rowcount > 0)

    def _release_row(self, c: Any, agent_id: str, holder: str, completed_at: datetime | None) -> bool:
        """Clear the row's holder (its process, heartbeat and abort flag too) if it names ``holder``; advance
        ``last_dream_at`` on completion. True when the row named ``holder``."""
        d = self._d
        statement = d.sql(
            "UPDATE dream_locks SET holder = NULL, acquired_at = NULL, expires_at = NULL,"
            f" abort_requested = {d.false}, last_dream_at = coalesce(?, last_dream_at), holder_pid = NULL,"
            " holder_host = NULL, heartbeat_seconds = NULL, heartbeat_at = NULL WHERE agent_id = ? AND holder = ?"
        )
        return bool(c.execute(statement, (d.ts_or_none(completed_at), agent_id, holder)).rowcount > 0)

    def lock_state(self, agent_id: str) -> DreamLockState:
        statement = self._d.sql(
            "SELECT holder, expires_at, last_dream_at, abort_requested, holder_pid, holder_host, heartbeat_seconds,"
            " heartbeat_at FROM dream_locks WHERE agent_id = ?"
        )
        row = self._db.read(lambda c: c.execute(statement, (agent_id,)).fetchone())
        if row is None:
            return DreamLockState(agent_id, holder=None, expires_at=None, last_dream_at=None, abort_requested=False)
        return DreamLockState(
            agent_id,
            holder=row[0],
            expires_at=_lenient_ts(row[1]),
            last_dream_at=_lenient_ts(row[2]),
            abort_requested=bool(row[3]),
            process=_process_from(row[4], row[5], row[6]),
            heartbeat_at=_lenient_ts(row[7]),
        )

    def request_abort(self, agent_id: str) -> bool:
        statement = self._d.sql(
            f"UPDATE dream_locks SET abort_requested = {self._d.true} WHERE agent_id = ? AND holder IS NOT NULL"
        )
        return self._db.write(lambda c: bool(c.execute(statement, (agent_id,)).rowcount > 0))

    # -- activity ------------------------------------------------------------------------------------
    def note_activity(self, agent_id: str, session_key: str, at: datetime) -> None:
        # The larger of the two instants (SQLite's fixed-width timestamps: text max() is time max()).
        d = self._d
        statement = d.sql(
            "INSERT INTO dream_activity (agent_id, session_key, last_at) VALUES (?, ?, ?)"
            " ON CONFLICT (agent_id, session_key) DO UPDATE"
            f" SET last_at = {d.greatest('dream_activity.last_at', 'excluded.last_at')}"
        )
        params = (agent_id, session_key, d.ts(at))
        self._db.write(lambda c: c.execute(statement, params))

    def activity_since(self, agent_id: str, since: datetime | None) -> tuple[int, datetime | None]:
        after = "" if since is None else " AND last_at > ?"
        statement = self._d.sql(
            f"SELECT count(*) FILTER (WHERE session_key <> ''{after}), max(last_at)"
            " FROM dream_activity WHERE agent_id = ?"
        )
        params = (agent_id,) if since is None else (self._d.ts(since), agent_id)
        row = self._db.read(lambda c: c.execute(statement, params).fetchone())
        return (0, None) if row is None else (int(row[0]), self._d.ts_out_or_none(row[1]))

    def last_activity(self) -> datetime | None:
        row = self._db.read(lambda c: c.execute("SELECT max(last_at) FROM dream_activity").fetchone())
        return None if row is None else self._d.ts_out_or_none(row[0])

    # -- runs ----------------------------------------------------------------------------------------
    def save_run(self, run: DreamRun) -> None:
        d = self._d
        params = (
            run.run_id,
            run.agent_id,
            run.trigger,
            d.ts(run.started_at),
            run.phase,
            d.ts_or_none(run.finished_at),
            run.current_pass,
            run.progress,
            run.tokens,
            run.cost,
            d.json_now(run.report),  # serialised before the transaction: raises, writing nothing
            run.error,
        )
        statement = d.sql(_SAVE_RUN)
        self._db.write(lambda c: c.execute(statement, params))

    def _run(self, row: Any) -> DreamRun:
        d = self._d
        return DreamRun(
            run_id=row[0],
            agent_id=row[1],
            trigger=row[2],
            started_at=d.ts_out(row[3]),
            phase=row[4],
            finished_at=d.ts_out_or_none(row[5]),
            current_pass=row[6],
            progress=row[7],
            tokens=int(row[8]),
            cost=float(row[9]),
            report=d.json_out(row[10]),
            error=row[11],
        )

    def get_run(self, run_id: str) -> DreamRun | None:
        statement = self._d.sql(f"SELECT {_RUN_COLUMNS} FROM dream_runs WHERE run_id = ?")
        row = self._db.read(lambda c: c.execute(statement, (run_id,)).fetchone())
        return None if row is None else self._run(row)

    def runs(self, agent_id: str | None = None, *, limit: int = 20) -> list[DreamRun]:
        sql = f"SELECT {_RUN_COLUMNS} FROM dream_runs"
        params: list[Any] = []
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params.append(agent_id)
        sql += " ORDER BY started_at DESC, seq DESC LIMIT ?"
        params.append(max(limit, 0))
        statement = self._d.sql(sql)
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [self._run(r) for r in rows]

    def runs_page(self, agent_id: str | None, after: tuple[str, str] | None, limit: int) -> list[DreamRun]:
        d = self._d
        # Keyset on (started_at, run_id), newest first: neither ever changes, so a walk is exact.
        clauses, params = ["1 = 1"], []
        if agent_id is not None:
            clauses.append("agent_id = ?")
            params.append(agent_id)
        if after is not None:
            moment = d.ts(datetime.fromisoformat(after[0]))
            clauses.append(f"(started_at < ? OR (started_at = ? AND run_id{d.collate_c} < ?))")
            params += [moment, moment, after[1]]
        statement = d.sql(
            f"SELECT {_RUN_COLUMNS} FROM dream_runs WHERE {' AND '.join(clauses)}"
            f" ORDER BY started_at DESC, run_id{d.collate_c} DESC LIMIT ?"
        )
        rows = self._db.read(lambda c: c.execute(statement, [*params, max(limit, 0)]).fetchall())
        return [self._run(r) for r in rows]

    def prune_runs(self, before: datetime) -> int:
        statement = self._d.sql("DELETE FROM dream_runs WHERE finished_at IS NOT NULL AND finished_at < ?")
        params = (self._d.ts(before),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

    # -- evidence ------------------------------------------------------------------------------------
    def add_evidence(self, rows: list[Evidence]) -> None:
        if not rows:
            return
        values = [(r.run_id, r.target_id, r.source_id, self._d.ts(r.at)) for r in rows]
        statement = self._d.sql(
            "INSERT INTO dream_evidence (run_id, target_id, source_id, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (run_id, target_id, source_id) DO NOTHING"
        )

        def work(c: Any) -> None:
            with closing(c.cursor()) as cur:
                cur.executemany(statement, values)

        self._db.write(work)

    def evidence(self, target_id: str) -> list[Evidence]:
        statement = self._d.sql(
            "SELECT run_id, target_id, source_id, at FROM dream_evidence WHERE target_id = ? ORDER BY at, seq"
        )
        rows = self._db.read(lambda c: c.execute(statement, (target_id,)).fetchall())
        return [Evidence(run_id=r[0], target_id=r[1], source_id=r[2], at=self._d.ts_out(r[3])) for r in rows]
