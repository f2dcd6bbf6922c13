"""The telemetry logs (``ActivityLogRepository``: the conversation, execution and tool-call logs) and the
context builder's delta filter (``InjectedRepository``), written once for both backends.

Invariants:
- The three logs share one shape (``seq, agent_id, session_id, at, record``), one table each
  (``storage.logs.LOG_TABLES``); a table name is only ever taken from that mapping, never from a caller.
- Append-only: no statement here updates a log row. ``seq`` (SQLite's rowid, PostgreSQL's identity) is the
  order of appending; every read is in ``seq`` order.
- A record is serialised before any statement runs (``Dialect.json_now``, no NaN), so a record that cannot
  be stored raises before anything is written.
- Retention deletes only rows the statement can see: a trim ranks the rows already there, and
  ``drop_session`` deletes a session only while its last row is the one the caller saw, so an append that
  lands meanwhile survives.
- A session's delta filter rows go with the session (``ON DELETE CASCADE``); adding an id twice keeps one row.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import closing
from datetime import datetime
from typing import Any

from reverie.errors import ValidationError
from reverie.storage.logs import LOG_TABLES, LogName, LogRow, SessionWrites
from reverie.storage.sql.dialect import Dialect, SqlDatabase

_COLUMNS = "seq, agent_id, session_id, at, record"


def _table(log: LogName) -> str:
    table = LOG_TABLES.get(log)
    if table is None:
        raise ValidationError(f"unknown log {log!r} (known: {', '.join(LOG_TABLES)})", field="log")
    return table


class SqlActivityLogs:
    """``ActivityLogRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def append(self, log: LogName, rows: Sequence[LogRow]) -> None:
        d = self._d
        try:
            params = [(r.agent_id, r.session_id, d.ts(r.at), d.json_now(r.record)) for r in rows]
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"a log record must be JSON: {exc}", field="record") from exc
        if not params:
            return
        statement = d.sql(f"INSERT INTO {_table(log)} (agent_id, session_id, at, record) VALUES (?, ?, ?, ?)")

        def work(c: Any) -> None:
            for values in params:
                c.execute(statement, values)

        self._db.write(work)

    def read(
        self,
        log: LogName,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
    ) -> list[LogRow]:
        where, params = self._where(agent_id=agent_id, session_id=session_id)
        if since is not None:
            where.append("at >= ?")
            params.append(self._d.ts(since))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM {_table(log)}{clause} ORDER BY seq")
        found = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [self._row(r) for r in found]

    def count(self, log: LogName) -> int:
        statement = f"SELECT count(*) FROM {_table(log)}"
        (total,) = self._db.read(lambda c: c.execute(statement).fetchone())
        return int(total)

    def delete(self, log: LogName, seqs: Collection[int]) -> int:
        d, table = self._d, _table(log)
        wanted = sorted({int(s) for s in seqs})

        def work(c: Any) -> int:
            gone = 0
            for batch in d.batches(wanted):
                condition, params = d.any_of("seq", batch)
                gone += int(c.execute(d.sql(f"DELETE FROM {table} WHERE {condition}"), params).rowcount)
            return gone

        return self._db.write(work) if wanted else 0

    def clear(self, log: LogName, *, agent_id: str | None = None, session_id: str | None = None) -> int:
        where, params = self._where(agent_id=agent_id, session_id=session_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        statement = self._d.sql(f"DELETE FROM {_table(log)}{clause}")
        return int(self._db.write(lambda c: c.execute(statement, params).rowcount))

    # -- retention ---------------------------------------------------------------------------------------
    def sessions(self, log: LogName) -> list[SessionWrites]:
        d = self._d
        statement = (
            f"SELECT session_id, max(at), max(seq) FROM {_table(log)} WHERE session_id IS NOT NULL"
            f" GROUP BY session_id ORDER BY session_id{d.collate_c}"
        )
        found = self._db.read(lambda c: c.execute(statement).fetchall())
        return [SessionWrites(r[0], d.ts_out(r[1]), int(r[2])) for r in found]

    def drop_session(self, log: LogName, session: SessionWrites) -> int:
        table = _table(log)
        statement = self._d.sql(
            f"DELETE FROM {table} WHERE session_id = ? AND (SELECT max(seq) FROM {table} WHERE session_id = ?) = ?"
        )
        params = (session.session_id, session.session_id, session.last_seq)
        return int(self._db.write(lambda c: c.execute(statement, params).rowcount))

    def trim(self, log: LogName, keep: int, *, per_session: bool) -> int:
        if keep < 1:
            raise ValidationError("a trim keeps at least one row", field="keep")
        table = _table(log)
        if per_session:
            statement = (
                f"DELETE FROM {table} WHERE seq IN (SELECT seq FROM (SELECT seq, row_number() OVER"
                f" (PARTITION BY session_id ORDER BY seq DESC) AS newer FROM {table}) AS ranked WHERE newer > ?)"
            )
        else:
            # Everything up to the newest row that falls outside the last ``keep``.
            statement = f"DELETE FROM {table} WHERE seq <= (SELECT seq FROM {table} ORDER BY seq DESC LIMIT 1 OFFSET ?)"
        sql = self._d.sql(statement)
        return int(self._db.write(lambda c: c.execute(sql, (keep,)).rowcount))

    # -- helpers -----------------------------------------------------------------------------------------
    @staticmethod
    def _where(*, agent_id: str | None, session_id: str | None) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if agent_id is not None:
            where.append("agent_id = ?")
            params.append(agent_id)
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        return where, params

    def _row(self, row: Any) -> LogRow:
        record = self._d.json_out(row[4])
        return LogRow(
            agent_id=row[1],
            session_id=row[2],
            at=self._d.ts_out(row[3]),
            record=record if isinstance(record, dict) else {},
            seq=int(row[0]),
        )


class SqlInjected:
    """``InjectedRepository`` over either backend: the ``context_injected`` table."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def injected(self, agent_id: str, session_id: str) -> set[str]:
        statement = self._d.sql("SELECT entry_id FROM context_injected WHERE agent_id = ? AND session_id = ?")
        found = self._db.read(lambda c: c.execute(statement, (agent_id, session_id)).fetchall())
        return {str(r[0]) for r in found}

    def add_injected(self, agent_id: str, session_id: str, entry_ids: Collection[str], *, at: datetime) -> None:
        ids = sorted(set(entry_ids))
        if not ids:
            return
        d = self._d
        statement = d.sql(
            "INSERT INTO context_injected (agent_id, session_id, entry_id, injected_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (agent_id, session_id, entry_id) DO NOTHING"
        )
        stamp = d.ts(at)
        rows = [(agent_id, session_id, entry_id, stamp) for entry_id in ids]

        def work(c: Any) -> None:
            with closing(c.cursor()) as cursor:  # one statement for the turn's ids (a turn injects up to ~10)
                cursor.executemany(statement, rows)

        self._db.write(work)

    def forget_injected(self, agent_id: str, session_id: str) -> int:
        statement = self._d.sql("DELETE FROM context_injected WHERE agent_id = ? AND session_id = ?")
        return int(self._db.write(lambda c: c.execute(statement, (agent_id, session_id)).rowcount))
