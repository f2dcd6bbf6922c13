"""Conversation sessions and their turns on SQLite (``SessionRepository``).

Invariants:
- Every query names ``(agent_id, session_id)``: one agent never reads or changes another's sessions.
- Every write is one ``Database.write`` transaction, joining the caller's ``Store.transaction()`` when one
  is open, so a service's read-decide-write sequence (append, then retention) is atomic across processes.
- A session's turns are deleted with it (``ON DELETE CASCADE``); nothing here reads a clock.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from datetime import datetime
from typing import Any

from reverie.errors import NotFound
from reverie.storage.sqlite.database import Database, parse_ts, parse_ts_or_none, ts, ts_or_none
from reverie.types import SessionRecord, TurnCounts, TurnRecord

_SESSION_COLUMNS = (
    "agent_id, session_id, name, metadata, created_at, last_active_at, started_at, summary, compacted_through,"
    " deleted_at"
)
_TURN_COLUMNS = "agent_id, session_id, turn_index, role, content, at, name, tool_call_id, tool_calls, archived"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _session_params(s: SessionRecord) -> tuple[Any, ...]:
    return (
        s.agent_id,
        s.session_id,
        s.name,
        _dumps(s.metadata),
        ts(s.created_at),
        ts(s.last_active_at),
        ts(s.started_at),
        s.summary,
        s.compacted_through,
        ts_or_none(s.deleted_at),
    )


def _session_from_row(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        agent_id=row[0],
        session_id=row[1],
        name=row[2],
        metadata=json.loads(row[3]),
        created_at=parse_ts(row[4]),
        last_active_at=parse_ts(row[5]),
        started_at=parse_ts(row[6]),
        summary=row[7],
        compacted_through=int(row[8]),
        deleted_at=parse_ts_or_none(row[9]),
    )


def _turn_from_row(row: tuple[Any, ...]) -> TurnRecord:
    return TurnRecord(
        agent_id=row[0],
        session_id=row[1],
        index=int(row[2]),
        role=row[3],
        content=row[4],
        at=parse_ts(row[5]),
        name=row[6],
        tool_call_id=row[7],
        tool_calls=None if row[8] is None else json.loads(row[8]),
        archived=bool(row[9]),
    )


class SqliteSessions:
    """``SessionRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- sessions ------------------------------------------------------------------------------------
    def create(self, session: SessionRecord) -> None:
        params = _session_params(session)  # serialised first: bad metadata raises before any write
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", params
            )
        )

    def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).fetchone()
        )
        return None if row is None else _session_from_row(tuple(row))

    def list(self, agent_id: str, *, include_deleted: bool = False) -> builtins.list[SessionRecord]:
        deleted = "" if include_deleted else " AND deleted_at IS NULL"
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = ?{deleted}"
                " ORDER BY last_active_at DESC, session_id",
                (agent_id,),
            ).fetchall()
        )
        return [_session_from_row(tuple(r)) for r in rows]

    def update(self, session: SessionRecord) -> None:
        p = _session_params(session)

        def work(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "UPDATE sessions SET name = ?, metadata = ?, created_at = ?, last_active_at = ?, started_at = ?,"
                " summary = ?, compacted_through = ?, deleted_at = ? WHERE agent_id = ? AND session_id = ?",
                (*p[2:], p[0], p[1]),
            )
            return int(cur.rowcount)

        if not self._db.write(work):
            raise NotFound(f"no session {session.session_id!r} for agent {session.agent_id!r}")

    def mark_deleted(self, agent_id: str, session_id: str, at: datetime) -> bool:
        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                "UPDATE sessions SET deleted_at = ? WHERE agent_id = ? AND session_id = ? AND deleted_at IS NULL",
                (ts(at), agent_id, session_id),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def purge_deleted(self, before: datetime) -> int:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute("DELETE FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= ?", (ts(before),))
            return int(cur.rowcount)

        return self._db.write(work)

    # -- turns ---------------------------------------------------------------------------------------
    def append_turn(self, turn: TurnRecord) -> None:
        calls = None if turn.tool_calls is None else _dumps(turn.tool_calls)
        params = (
            turn.agent_id,
            turn.session_id,
            turn.index,
            turn.role,
            turn.content,
            ts(turn.at),
            turn.name,
            turn.tool_call_id,
            calls,
            int(turn.archived),
        )

        def work(c: sqlite3.Connection) -> None:
            known = c.execute(
                "SELECT 1 FROM sessions WHERE agent_id = ? AND session_id = ?", (turn.agent_id, turn.session_id)
            ).fetchone()
            if known is None:
                raise NotFound(f"no session {turn.session_id!r} for agent {turn.agent_id!r}")
            c.execute(f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", params)

        self._db.write(work)

    def turns(
        self, agent_id: str, session_id: str, *, archived: bool | None = None, after: int = 0, last: int | None = None
    ) -> builtins.list[TurnRecord]:
        sql = f"SELECT {_TURN_COLUMNS} FROM turns WHERE agent_id = ? AND session_id = ? AND turn_index > ?"
        params: builtins.list[Any] = [agent_id, session_id, after]
        if archived is not None:
            sql += " AND archived = ?"
            params.append(int(archived))
        if last is None:
            sql += " ORDER BY turn_index"
        else:
            sql = f"SELECT * FROM ({sql} ORDER BY turn_index DESC LIMIT ?) ORDER BY turn_index"
            params.append(max(last, 0))
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [_turn_from_row(tuple(r)) for r in rows]

    def turn_counts(self, agent_id: str, session_id: str) -> TurnCounts:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT count(*) FILTER (WHERE archived = 0), count(*) FILTER (WHERE archived = 1),"
                " coalesce(min(turn_index), 0), coalesce(max(turn_index), 0)"
                " FROM turns WHERE agent_id = ? AND session_id = ?",
                (agent_id, session_id),
            ).fetchone()
        )
        return TurnCounts(retained=int(row[0]), archived=int(row[1]), first_index=int(row[2]), last_index=int(row[3]))

    def archive_turns_before(self, agent_id: str, session_id: str, index: int) -> int:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "UPDATE turns SET archived = 1 WHERE agent_id = ? AND session_id = ? AND archived = 0"
                " AND turn_index < ?",
                (agent_id, session_id, index),
            )
            return int(cur.rowcount)

        return self._db.write(work)

    def drop_archived_beyond(self, agent_id: str, session_id: str, keep: int) -> int:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "DELETE FROM turns WHERE agent_id = ? AND session_id = ? AND archived = 1 AND turn_index NOT IN"
                " (SELECT turn_index FROM turns WHERE agent_id = ? AND session_id = ? AND archived = 1"
                " ORDER BY turn_index DESC LIMIT ?)",
                (agent_id, session_id, agent_id, session_id, max(keep, 0)),
            )
            return int(cur.rowcount)

        return self._db.write(work)

    def discard_turns(self, agent_id: str, session_id: str) -> int:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute("DELETE FROM turns WHERE agent_id = ? AND session_id = ?", (agent_id, session_id))
            return int(cur.rowcount)

        return self._db.write(work)
