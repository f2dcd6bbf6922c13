"""Conversation sessions and their turns on PostgreSQL (``SessionRepository``).

Invariants:
- Every query names ``(agent_id, session_id)``: one agent never reads or changes another's sessions.
- Every write is one ``PgDatabase.write`` transaction, joining the caller's ``Store.transaction()`` when one
  is open (nested: a savepoint), so a service's read-decide-write sequence (append, then retention) commits
  or rolls back as one.
- A session's turns are deleted with it (``ON DELETE CASCADE``); nothing here reads a clock.
- JSON (metadata, tool calls) is serialised before any statement runs, with SQLite's rules (no NaN), so a
  value that cannot be stored raises before anything is written. Session ids tie-break by code point
  (``COLLATE "C"``), as SQLite's binary order does.
"""

from __future__ import annotations

import builtins
import json
from datetime import datetime
from typing import Any

from reverie.errors import NotFound
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.types import SessionRecord, TurnCounts, TurnRecord

_SESSION_COLUMNS = (
    "agent_id, session_id, name, metadata, created_at, last_active_at, started_at, summary, compacted_through,"
    " deleted_at"
)
_TURN_COLUMNS = "agent_id, session_id, turn_index, role, content, at, name, tool_call_id, tool_calls, archived"
_SESSION_VALUES = "%s, %s, %s, %s::jsonb, %s, %s, %s, %s, %s, %s"
_TURN_VALUES = "%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _session_params(s: SessionRecord) -> tuple[Any, ...]:
    return (
        s.agent_id,
        s.session_id,
        s.name,
        _dumps(s.metadata),
        s.created_at,
        s.last_active_at,
        s.started_at,
        s.summary,
        s.compacted_through,
        s.deleted_at,
    )


def _session_from_row(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        agent_id=row[0],
        session_id=row[1],
        name=row[2],
        metadata=row[3],
        created_at=row[4],
        last_active_at=row[5],
        started_at=row[6],
        summary=row[7],
        compacted_through=int(row[8]),
        deleted_at=row[9],
    )


def _turn_from_row(row: tuple[Any, ...]) -> TurnRecord:
    return TurnRecord(
        agent_id=row[0],
        session_id=row[1],
        index=int(row[2]),
        role=row[3],
        content=row[4],
        at=row[5],
        name=row[6],
        tool_call_id=row[7],
        tool_calls=row[8],
        archived=bool(row[9]),
    )


class PgSessions:
    """``SessionRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    # -- sessions ------------------------------------------------------------------------------------
    def create(self, session: SessionRecord) -> None:
        params = _session_params(session)  # serialised first: bad metadata raises before any write
        self._db.write(
            lambda c: c.execute(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({_SESSION_VALUES})", params)
        )

    def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = %s AND session_id = %s",
                (agent_id, session_id),
            ).fetchone()
        )
        return None if row is None else _session_from_row(row)

    def list(self, agent_id: str, *, include_deleted: bool = False) -> builtins.list[SessionRecord]:
        deleted = "" if include_deleted else " AND deleted_at IS NULL"
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = %s{deleted}"
                ' ORDER BY last_active_at DESC, session_id COLLATE "C"',
                (agent_id,),
            ).fetchall()
        )
        return [_session_from_row(r) for r in rows]

    def update(self, session: SessionRecord) -> None:
        p = _session_params(session)

        def work(c: Conn) -> int:
            cur = c.execute(
                "UPDATE sessions SET name = %s, metadata = %s::jsonb, created_at = %s, last_active_at = %s,"
                " started_at = %s, summary = %s, compacted_through = %s, deleted_at = %s"
                " WHERE agent_id = %s AND session_id = %s",
                (*p[2:], p[0], p[1]),
            )
            return int(cur.rowcount)

        if not self._db.write(work):
            raise NotFound(f"no session {session.session_id!r} for agent {session.agent_id!r}")

    def mark_deleted(self, agent_id: str, session_id: str, at: datetime) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute(
                "UPDATE sessions SET deleted_at = %s WHERE agent_id = %s AND session_id = %s AND deleted_at IS NULL",
                (at, agent_id, session_id),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def purge_deleted(self, before: datetime) -> int:
        def work(c: Conn) -> int:
            cur = c.execute("DELETE FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= %s", (before,))
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
            turn.at,
            turn.name,
            turn.tool_call_id,
            calls,
            turn.archived,
        )

        def work(c: Conn) -> None:
            known = c.execute(
                "SELECT 1 FROM sessions WHERE agent_id = %s AND session_id = %s", (turn.agent_id, turn.session_id)
            ).fetchone()
            if known is None:
                raise NotFound(f"no session {turn.session_id!r} for agent {turn.agent_id!r}")
            # A session deleted after the check fails the foreign key: Conflict, nothing written.
            c.execute(f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES ({_TURN_VALUES})", params)

        self._db.write(work)

    def turns(
        self, agent_id: str, session_id: str, *, archived: bool | None = None, after: int = 0, last: int | None = None
    ) -> builtins.list[TurnRecord]:
        sql = f"SELECT {_TURN_COLUMNS} FROM turns WHERE agent_id = %s AND session_id = %s AND turn_index > %s"
        params: builtins.list[Any] = [agent_id, session_id, after]
        if archived is not None:
            sql += " AND archived = %s"
            params.append(archived)
        if last is None:
            sql += " ORDER BY turn_index"
        else:
            sql = f"SELECT * FROM ({sql} ORDER BY turn_index DESC LIMIT %s) AS newest ORDER BY turn_index"
            params.append(max(last, 0))
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [_turn_from_row(r) for r in rows]

    def turn_counts(self, agent_id: str, session_id: str) -> TurnCounts:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT count(*) FILTER (WHERE NOT archived), count(*) FILTER (WHERE archived),"
                " coalesce(min(turn_index), 0), coalesce(max(turn_index), 0)"
                " FROM turns WHERE agent_id = %s AND session_id = %s",
                (agent_id, session_id),
            ).fetchone()
        )
        if row is None:  # an aggregate always returns a row; this keeps the type checker honest
            return TurnCounts()
        return TurnCounts(retained=int(row[0]), archived=int(row[1]), first_index=int(row[2]), last_index=int(row[3]))

    def archive_turns_before(self, agent_id: str, session_id: str, index: int) -> int:
        def work(c: Conn) -> int:
            cur = c.execute(
                "UPDATE turns SET archived = true WHERE agent_id = %s AND session_id = %s AND NOT archived"
                " AND turn_index < %s",
                (agent_id, session_id, index),
            )
            return int(cur.rowcount)

        return self._db.write(work)

    def drop_archived_beyond(self, agent_id: str, session_id: str, keep: int) -> int:
        def work(c: Conn) -> int:
            cur = c.execute(
                "DELETE FROM turns WHERE agent_id = %(a)s AND session_id = %(s)s AND archived AND turn_index NOT IN"
                " (SELECT turn_index FROM turns WHERE agent_id = %(a)s AND session_id = %(s)s AND archived"
                " ORDER BY turn_index DESC LIMIT %(keep)s)",
                {"a": agent_id, "s": session_id, "keep": max(keep, 0)},
            )
            return int(cur.rowcount)

        return self._db.write(work)

    def discard_turns(self, agent_id: str, session_id: str) -> int:
        def work(c: Conn) -> int:
            cur = c.execute("DELETE FROM turns WHERE agent_id = %s AND session_id = %s", (agent_id, session_id))
            return int(cur.rowcount)

        return self._db.write(work)
