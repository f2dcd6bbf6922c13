"""Conversation sessions and their turns (``SessionRepository``), written once for both backends.

Invariants:
- Every query names ``(agent_id, session_id)``: one agent never reads or changes another's sessions.
- Every write is one ``Database.write`` transaction, joining the caller's ``Store.transaction()`` when one
  is open (on PostgreSQL nested as a savepoint), so a service's read-decide-write sequence (append, then
  retention) is atomic across processes: it commits or rolls back as one.
- A session's turns are deleted with it (``ON DELETE CASCADE``); nothing here reads a clock.
- JSON (metadata, tool calls) is serialised before any statement runs, with one rule on both backends (no
  NaN), so a value that cannot be stored raises before anything is written. Session ids tie-break by code
  point (SQLite's binary order, ``COLLATE "C"`` on PostgreSQL).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from reverie.errors import NotFound
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import SessionRecord, TurnCounts, TurnRecord

_SESSION_COLUMNS = (
    "agent_id, session_id, name, metadata, created_at, last_active_at, started_at, summary, compacted_through,"
    " deleted_at"
)
_TURN_COLUMNS = "agent_id, session_id, turn_index, role, content, at, name, tool_call_id, tool_calls, archived"
_TEN_VALUES = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?"


class SqlSessions:
    """``SessionRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- rows ----------------------------------------------------------------------------------------
    def _session_params(self, s: SessionRecord) -> tuple[Any, ...]:
        d = self._d
        return (
            s.agent_id,
            s.session_id,
            s.name,
            d.json_now(s.metadata),
            d.ts(s.created_at),
            d.ts(s.last_active_at),
            d.ts(s.started_at),
            s.summary,
            s.compacted_through,
            d.ts_or_none(s.deleted_at),
        )

    def _session(self, row: Any) -> SessionRecord:
        d = self._d
        return SessionRecord(
            agent_id=row[0],
            session_id=row[1],
            name=row[2],
            metadata=d.json_out(row[3]),
            created_at=d.ts_out(row[4]),
            last_active_at=d.ts_out(row[5]),
            started_at=d.ts_out(row[6]),
            summary=row[7],
            compacted_through=int(row[8]),
            deleted_at=d.ts_out_or_none(row[9]),
        )

    def _turn(self, row: Any) -> TurnRecord:
        d = self._d
        return TurnRecord(
            agent_id=row[0],
            session_id=row[1],
            index=int(row[2]),
            role=row[3],
            content=row[4],
            at=d.ts_out(row[5]),
            name=row[6],
            tool_call_id=row[7],
            tool_calls=d.json_out(row[8]),
            archived=bool(row[9]),
        )

    # -- sessions ------------------------------------------------------------------------------------
    def create(self, session: SessionRecord) -> None:
        params = self._session_params(session)  # serialised first: bad metadata raises before any write
        statement = self._d.sql(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({_TEN_VALUES})")
        self._db.write(lambda c: c.execute(statement, params))

    def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        statement = self._d.sql(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = ? AND session_id = ?")
        row = self._db.read(lambda c: c.execute(statement, (agent_id, session_id)).fetchone())
        return None if row is None else self._session(row)

    def list(self, agent_id: str, *, include_deleted: bool = False) -> builtins.list[SessionRecord]:
        deleted = "" if include_deleted else " AND deleted_at IS NULL"
        statement = self._d.sql(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = ?{deleted}"
            f" ORDER BY last_active_at DESC, session_id{self._d.collate_c}"
        )
        rows = self._db.read(lambda c: c.execute(statement, (agent_id,)).fetchall())
        return [self._session(r) for r in rows]

    def page(self, agent_id: str, after: tuple[str, str] | None, limit: int) -> builtins.list[SessionRecord]:
        d = self._d
        # Keyset on (created_at, session_id), newest first: no write moves either, so a walk is exact.
        # The id compares and sorts in code-point order on both backends (COLLATE "C").
        keyset, params = "", [agent_id]
        if after is not None:
            keyset = f" AND (created_at < ? OR (created_at = ? AND session_id{d.collate_c} < ?))"
            moment = d.ts(datetime.fromisoformat(after[0]))
            params += [moment, moment, after[1]]
        statement = d.sql(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE agent_id = ? AND deleted_at IS NULL{keyset}"
            f" ORDER BY created_at DESC, session_id{d.collate_c} DESC LIMIT ?"
        )
        rows = self._db.read(lambda c: c.execute(statement, [*params, max(limit, 0)]).fetchall())
        return [self._session(r) for r in rows]

    def update(self, session: SessionRecord) -> None:
        p = self._session_params(session)
        statement = self._d.sql(
            "UPDATE sessions SET name = ?, metadata = ?, created_at = ?, last_active_at = ?, started_at = ?,"
            " summary = ?, compacted_through = ?, deleted_at = ? WHERE agent_id = ? AND session_id = ?"
        )
        if not self._db.write(lambda c: int(c.execute(statement, (*p[2:], p[0], p[1])).rowcount)):
            raise NotFound(f"no session {session.session_id!r} for agent {session.agent_id!r}")

    def mark_deleted(self, agent_id: str, session_id: str, at: datetime) -> bool:
        statement = self._d.sql(
            "UPDATE sessions SET deleted_at = ? WHERE agent_id = ? AND session_id = ? AND deleted_at IS NULL"
        )
        params = (self._d.ts(at), agent_id, session_id)
        return self._db.write(lambda c: bool(c.execute(statement, params).rowcount > 0))

    def purge_deleted(self, before: datetime) -> int:
        statement = self._d.sql("DELETE FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= ?")
        params = (self._d.ts(before),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

    # -- turns ---------------------------------------------------------------------------------------
    def append_turn(self, turn: TurnRecord) -> None:
        d = self._d
        params = (
            turn.agent_id,
            turn.session_id,
            turn.index,
            turn.role,
            turn.content,
            d.ts(turn.at),
            turn.name,
            turn.tool_call_id,
            None if turn.tool_calls is None else d.json_now(turn.tool_calls),
            d.flag(turn.archived),
        )
        known_sql = d.sql("SELECT 1 FROM sessions WHERE agent_id = ? AND session_id = ?")
        insert_sql = d.sql(f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES ({_TEN_VALUES})")

        def work(c: Any) -> None:
            if c.execute(known_sql, (turn.agent_id, turn.session_id)).fetchone() is None:
                raise NotFound(f"no session {turn.session_id!r} for agent {turn.agent_id!r}")
            # On PostgreSQL a session deleted after the check fails the foreign key: Conflict, nothing written.
            c.execute(insert_sql, params)

        self._db.write(work)

    def turns(
        self, agent_id: str, session_id: str, *, archived: bool | None = None, after: int = 0, last: int | None = None
    ) -> builtins.list[TurnRecord]:
        sql = f"SELECT {_TURN_COLUMNS} FROM turns WHERE agent_id = ? AND session_id = ? AND turn_index > ?"
        params: builtins.list[Any] = [agent_id, session_id, after]
        if archived is not None:
            sql += " AND archived = ?"
            params.append(self._d.flag(archived))
        if last is None:
            sql += " ORDER BY turn_index"
        else:
            sql = f"SELECT * FROM ({sql} ORDER BY turn_index DESC LIMIT ?) AS newest ORDER BY turn_index"
            params.append(max(last, 0))
        statement = self._d.sql(sql)
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [self._turn(r) for r in rows]

    def turn_counts(self, agent_id: str, session_id: str) -> TurnCounts:
        d = self._d
        statement = d.sql(
            f"SELECT count(*) FILTER (WHERE archived = {d.false}), count(*) FILTER (WHERE archived = {d.true}),"
            " coalesce(min(turn_index), 0), coalesce(max(turn_index), 0)"
            " FROM turns WHERE agent_id = ? AND session_id = ?"
        )
        lock = d.sql("SELECT 1 FROM sessions WHERE agent_id = ? AND session_id = ?") + d.for_update("NO KEY UPDATE")
        locking = d.postgres and self._db.in_transaction()

        def work(c: Any) -> Any:
            if locking:
                # A turn's append reads the last index here and writes the next in the same transaction: on
                # PostgreSQL two appends to one session read the same index (the second insert then failed,
                # a 409 under load). The session's row lock orders them; SQLite's one writer already did.
                c.execute(lock, (agent_id, session_id))
            return c.execute(statement, (agent_id, session_id)).fetchone()

        row = self._db.read(work)
        if row is None:  # an aggregate always returns a row; this keeps the type checker honest
            return TurnCounts()
        return TurnCounts(retained=int(row[0]), archived=int(row[1]), first_index=int(row[2]), last_index=int(row[3]))

    def archive_turns_before(self, agent_id: str, session_id: str, index: int) -> int:
        d = self._d
        statement = d.sql(
            f"UPDATE turns SET archived = {d.true} WHERE agent_id = ? AND session_id = ? AND archived = {d.false}"
            " AND turn_index < ?"
        )
        return self._db.write(lambda c: int(c.execute(statement, (agent_id, session_id, index)).rowcount))

    def drop_archived_beyond(self, agent_id: str, session_id: str, keep: int) -> int:
        d = self._d
        statement = d.sql(
            f"DELETE FROM turns WHERE agent_id = ? AND session_id = ? AND archived = {d.true} AND turn_index NOT IN"
            f" (SELECT turn_index FROM turns WHERE agent_id = ? AND session_id = ? AND archived = {d.true}"
            " ORDER BY turn_index DESC LIMIT ?)"
        )
        params = (agent_id, session_id, agent_id, session_id, max(keep, 0))
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

    def discard_turns(self, agent_id: str, session_id: str) -> int:
        statement = self._d.sql("DELETE FROM turns WHERE agent_id = ? AND session_id = ?")
        return self._db.write(lambda c: int(c.execute(statement, (agent_id, session_id)).rowcount))
