"""Portable rows on SQLite (``Store.export_rows`` / ``import_rows``; catalog: ``storage.portable``; the shared
part: ``sql.rows``).

SQLite keeps timestamps as fixed-width UTC text (``database.ts``), JSON as text, booleans as 0/1 and
vectors as float32 BLOBs; this module converts between those and the catalog's Python values.

Invariants:
- An export pages through the table in its catalog order (``seq``, or the primary key: BINARY collation,
  i.e. byte order), one read per page, so a large table never sits in memory whole; inside
  ``read_snapshot`` every page reads the same state.
- An import is one transaction (or joins the caller's), inserting in the given order.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from reverie.errors import StorageError
from reverie.storage.portable import Kind, Table
from reverie.storage.sql.dialect import SQLITE, compact_json
from reverie.storage.sql.rows import BATCH, Damaged, SqlRows, order_by
from reverie.storage.sqlite.database import Database, parse_ts, ts


def _time_out(value: Any) -> datetime:
    if not isinstance(value, str):
        raise Damaged(value)
    try:
        parsed = parse_ts(value)
    except ValueError as exc:
        raise Damaged(value) from exc
    if parsed.tzinfo is None:
        raise Damaged(value)
    return parsed.astimezone(UTC)


class SqliteRows(SqlRows):
    """Portable rows of one SQLite file."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, SQLITE)
        self._file = db

    def _out(self, kind: Kind, value: Any) -> Any:
        if kind is Kind.TIME:
            return _time_out(value)
        if kind is Kind.JSON:
            return json.loads(value)
        if kind is Kind.VECTOR:
            return bytes(value)
        return value

    def _in(self, kind: Kind, value: Any) -> Any:
        if kind is Kind.TIME:
            return ts(value)
        if kind is Kind.JSON:
            return compact_json(value)  # the repositories' own encoding
        if kind is Kind.BOOL:
            return int(bool(value))
        if kind is Kind.VECTOR:
            return bytes(value)
        return value

    def _scan(self, t: Table) -> Generator[Sequence[Any], None, None]:
        """Pages of ``BATCH`` rows by keyset (the catalog order), one read each."""
        keys = ", ".join(t.order)
        select = f"SELECT {keys}, {', '.join(t.names)} FROM {t.name}"
        after = f"({keys}) > ({', '.join('?' for _ in t.order)})"
        width = len(t.order)
        last: tuple[Any, ...] | None = None
        while True:
            sql = f"{select}{'' if last is None else ' WHERE ' + after} ORDER BY {order_by(t, SQLITE)} LIMIT {BATCH}"
            params = () if last is None else last
            page = self._file.read(lambda c, s=sql, p=params: c.execute(s, p).fetchall())  # type: ignore[misc]
            for row in page:
                yield tuple(row[width:])
            if len(page) < BATCH:
                return
            last = tuple(page[-1][:width])

    def _insert_many(self, c: sqlite3.Connection, statement: str, batch: list[tuple[Any, ...]]) -> None:
        c.executemany(statement, batch)

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """A read transaction on this thread's connection: in WAL mode it sees the state of its first read
        until it ends, while other connections go on writing. Inside an open transaction, that one is the
        snapshot."""
        db = self._file
        conn = db.connection()
        if conn.in_transaction:
            yield
            return
        db.read(lambda c: c.execute("BEGIN DEFERRED"))
        try:
            db.read(lambda c: c.execute("SELECT count(*) FROM sqlite_master").fetchone())  # pins the snapshot
            yield
        finally:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error as exc:  # pragma: no cover - a read transaction always rolls back
                    raise StorageError(f"{db.path}: ending a read snapshot failed: {exc}") from exc
