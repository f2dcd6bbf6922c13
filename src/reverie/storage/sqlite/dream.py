"""The dream service's state on SQLite: the change-gate ledger, the per-agent lock, activity, runs, evidence.

Invariants:
- Every write is one ``Database.write`` transaction (``BEGIN IMMEDIATE``), so a check and the update it
  decides on (``acquire``, ``renew``, ``release``) happen under the file's write lock: atomic across
  processes, not only threads.
- The lock is a lease: valid while ``now < expires_at``. A holder that crashed frees it at expiry; nothing
  here reads a clock, the caller passes ``now``.
- A damaged row never blocks the service: an unreadable ledger stamp is left out (the pass runs once), and
  an unreadable lease expiry counts as expired (the lock can be taken over).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from typing import Any

from reverie.storage.base import DreamLease, DreamLockState, LedgerStamp
from reverie.storage.sqlite.database import Database, parse_ts, parse_ts_or_none, ts, ts_or_none
from reverie.types import DreamRun, Evidence

_RUN_COLUMNS = (
    "run_id, agent_id, run_trigger, started_at, phase, finished_at, current_pass, progress, tokens, cost, report, error"
)


def _lenient_ts(value: object) -> datetime | None:
    """A stored timestamp, or None when it is missing or cannot be read back as an aware datetime."""
    if not isinstance(value, str):
        return None
    try:
        parsed = parse_ts(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _stamp_from_row(row: tuple[Any, ...]) -> LedgerStamp | None:
    """The stamp in ``row`` (agent_id, pass_name, stamped_at, fingerprint), or None when it is corrupt."""
    agent_id, pass_name, stamped_at, fingerprint = row
    when = _lenient_ts(stamped_at)
    if when is None or not isinstance(pass_name, str) or not isinstance(agent_id, str):
        return None
    if fingerprint is not None and not isinstance(fingerprint, str):
        return None
    return LedgerStamp(agent_id=agent_id, pass_name=pass_name, stamped_at=when, fingerprint=fingerprint)


def _run_params(run: DreamRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "run_trigger": run.trigger,
        "started_at": ts(run.started_at),
        "phase": run.phase,
        "finished_at": ts_or_none(run.finished_at),
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
        started_at=parse_ts(row[3]),
        phase=row[4],
        finished_at=parse_ts_or_none(row[5]),
        current_pass=row[6],
        progress=row[7],
        tokens=int(row[8]),
        cost=float(row[9]),
        report=json.loads(row[10]),
        error=row[11],
    )


_RUN_FIELDS = _RUN_COLUMNS.split(", ")
_SAVE_RUN = (
    f"INSERT INTO dream_runs ({_RUN_COLUMNS}) VALUES ({', '.join(':' + n for n in _RUN_FIELDS)})"
    " ON CONFLICT (run_id) DO UPDATE SET " + ", ".join(f"{n} = excluded.{n}" for n in _RUN_FIELDS if n != "run_id")
)


def _lease_end(now: datetime, lease_seconds: float) -> datetime:
    if not lease_seconds > 0:
        raise ValueError(f"lease_seconds must be positive, got {lease_seconds!r}")
    return now + timedelta(seconds=lease_seconds)


class SqliteDream:
    """``DreamRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- the change-gate ledger ----------------------------------------------------------------------
    def ledger(self, agent_id: str) -> dict[str, LedgerStamp]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT agent_id, pass_name, stamped_at, fingerprint FROM dream_ledger WHERE agent_id = ?"
                " ORDER BY pass_name",
                (agent_id,),
            ).fetchall()
        )
        stamps = (_stamp_from_row(tuple(r)) for r in rows)
        return {s.pass_name: s for s in stamps if s is not None}

    def stamp(self, stamp: LedgerStamp) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO dream_ledger (agent_id, pass_name, stamped_at, fingerprint) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (agent_id, pass_name) DO UPDATE SET stamped_at = excluded.stamped_at,"
                " fingerprint = excluded.fingerprint",
                (stamp.agent_id, stamp.pass_name, ts(stamp.stamped_at), stamp.fingerprint),
            )
        )

    def clear_ledger(self, agent_id: str | None = None) -> int:
        def work(c: sqlite3.Connection) -> int:
            if agent_id is None:
                return int(c.execute("DELETE FROM dream_ledger").rowcount)
            return int(c.execute("DELETE FROM dream_ledger WHERE agent_id = ?", (agent_id,)).rowcount)

        return self._db.write(work)

    # -- the per-agent dream lock --------------------------------------------------------------------
    def acquire(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> DreamLease | None:
        """Check and take in one write transaction. The same holder acquiring again re-takes (and extends)
        its own lease."""
        expires = _lease_end(now, lease_seconds)

        def work(c: sqlite3.Connection) -> DreamLease | None:
            row = c.execute("SELECT holder, expires_at FROM dream_locks WHERE agent_id = ?", (agent_id,)).fetchone()
            if row is not None and row[0] is not None and row[0] != holder:
                current_end = _lenient_ts(row[1])
                if current_end is not None and now < current_end:
                    return None  # another holder's lease is live
            c.execute(
                "INSERT INTO dream_locks (agent_id, holder, acquired_at, expires_at, abort_requested)"
                " VALUES (?, ?, ?, ?, 0) ON CONFLICT (agent_id) DO UPDATE SET holder = excluded.holder,"
                " acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, abort_requested = 0",
                (agent_id, holder, ts(now), ts(expires)),
            )
            return DreamLease(agent_id=agent_id, holder=holder, acquired_at=now, expires_at=expires)

        return self._db.write(work)

    def renew(self, agent_id: str, holder: str, *, now: datetime, lease_seconds: float) -> bool:
        """A lease that expired but was not taken over is still ours: renewing it succeeds."""
        expires = _lease_end(now, lease_seconds)

        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                "UPDATE dream_locks SET expires_at = ? WHERE agent_id = ? AND holder = ?",
                (ts(expires), agent_id, holder),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def release(self, agent_id: str, holder: str, *, completed_at: datetime | None) -> None:
        """Also clears ``abort_requested``: the flag only ever concerns the dream holding the lock."""
        self._db.write(
            lambda c: c.execute(
                "UPDATE dream_locks SET holder = NULL, acquired_at = NULL, expires_at = NULL, abort_requested = 0,"
                " last_dream_at = coalesce(?, last_dream_at) WHERE agent_id = ? AND holder = ?",
                (ts_or_none(completed_at), agent_id, holder),
            )
        )

    def lock_state(self, agent_id: str) -> DreamLockState:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT holder, expires_at, last_dream_at, abort_requested FROM dream_locks WHERE agent_id = ?",
                (agent_id,),
            ).fetchone()
        )
        if row is None:
            return DreamLockState(agent_id, holder=None, expires_at=None, last_dream_at=None, abort_requested=False)
        return DreamLockState(
            agent_id,
            holder=row[0],
            expires_at=_lenient_ts(row[1]),
            last_dream_at=_lenient_ts(row[2]),
            abort_requested=bool(row[3]),
        )

    def request_abort(self, agent_id: str) -> bool:
        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                "UPDATE dream_locks SET abort_requested = 1 WHERE agent_id = ? AND holder IS NOT NULL", (agent_id,)
            )
            return cur.rowcount > 0

        return self._db.write(work)

    # -- activity ------------------------------------------------------------------------------------
    def note_activity(self, agent_id: str, session_key: str, at: datetime) -> None:
        # Fixed-width timestamps: text max() is time max().
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO dream_activity (agent_id, session_key, last_at) VALUES (?, ?, ?)"
                " ON CONFLICT (agent_id, session_key) DO UPDATE SET last_at = max(last_at, excluded.last_at)",
                (agent_id, session_key, ts(at)),
            )
        )

    def activity_since(self, agent_id: str, since: datetime | None) -> tuple[int, datetime | None]:
        def work(c: sqlite3.Connection) -> tuple[int, datetime | None]:
            (sessions,) = c.execute(
                "SELECT count(*) FROM dream_activity WHERE agent_id = ? AND session_key != ''"
                " AND (? IS NULL OR last_at > ?)",
                (agent_id, ts_or_none(since), ts_or_none(since)),
            ).fetchone()
            (latest,) = c.execute("SELECT max(last_at) FROM dream_activity WHERE agent_id = ?", (agent_id,)).fetchone()
            return int(sessions), parse_ts_or_none(latest)

        return self._db.read(work)

    def last_activity(self) -> datetime | None:
        (latest,) = self._db.read(lambda c: c.execute("SELECT max(last_at) FROM dream_activity").fetchone())
        return parse_ts_or_none(latest)

    # -- runs ----------------------------------------------------------------------------------------
    def save_run(self, run: DreamRun) -> None:
        params = _run_params(run)
        self._db.write(lambda c: c.execute(_SAVE_RUN, params))

    def get_run(self, run_id: str) -> DreamRun | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_RUN_COLUMNS} FROM dream_runs WHERE run_id = ?", (run_id,)).fetchone()
        )
        return None if row is None else _run_from_row(row)

    def runs(self, agent_id: str | None = None, *, limit: int = 20) -> list[DreamRun]:
        sql = f"SELECT {_RUN_COLUMNS} FROM dream_runs"
        params: list[Any] = []
        if agent_id is not None:
            sql += " WHERE agent_id = ?"
            params.append(agent_id)
        sql += " ORDER BY started_at DESC, seq DESC LIMIT ?"
        params.append(limit)
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [_run_from_row(r) for r in rows]

    def prune_runs(self, before: datetime) -> int:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute("DELETE FROM dream_runs WHERE finished_at IS NOT NULL AND finished_at < ?", (ts(before),))
            return int(cur.rowcount)

        return self._db.write(work)

    # -- evidence ------------------------------------------------------------------------------------
    def add_evidence(self, rows: list[Evidence]) -> None:
        if not rows:
            return
        values = [(r.run_id, r.target_id, r.source_id, ts(r.at)) for r in rows]
        self._db.write(
            lambda c: c.executemany(
                "INSERT OR IGNORE INTO dream_evidence (run_id, target_id, source_id, at) VALUES (?, ?, ?, ?)", values
            )
        )

    def evidence(self, target_id: str) -> list[Evidence]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT run_id, target_id, source_id, at FROM dream_evidence WHERE target_id = ? ORDER BY at, seq",
                (target_id,),
            ).fetchall()
        )
        return [Evidence(run_id=r[0], target_id=r[1], source_id=r[2], at=parse_ts(r[3])) for r in rows]
