"""Portable rows on PostgreSQL (``Store.export_rows`` / ``import_rows``; catalog: ``storage.portable``; the
shared part: ``sql.rows``).

Columns have native types (timestamptz, jsonb, boolean, double precision, vector), so the conversion is
light: jsonb goes in as ``Jsonb``, a vector as a numpy float32 array (pgvector's adapter) and comes back
as float32 bytes; timestamps are aware UTC datetimes both ways.

Invariants:
- An export streams the table through a server-side cursor inside a transaction (the caller's
  ``read_snapshot`` when open: one repeatable-read state for every table), ordered as the catalog says
  with text keys compared byte-wise (``COLLATE "C"``, SQLite's order), so both backends export a table
  in the same order. While it runs, this thread's statements on the database join its transaction (it
  holds one connection until exhausted or closed).
- An import is one transaction (or joins the caller's). The generated ``seq`` columns number the rows in
  import order; ``search_text`` and the change logs are written by the triggers.
- ``working_entries_order`` (the sequence the working repository numbers writes with) never moves back,
  and after an import it is past every imported ``seq``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC
from typing import Any

import numpy as np
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from reverie.storage.portable import Kind, Table
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.rows import BATCH, SqlRows, order_by


class PgRows(SqlRows):
    """Portable rows of one PostgreSQL database."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, POSTGRES)
        self._pool = db

    def _out(self, kind: Kind, value: Any) -> Any:
        if kind is Kind.TIME:
            return value.astimezone(UTC)
        if kind is Kind.VECTOR:
            # pgvector >= 0.4 loads a ``Vector``; older versions a numpy array. Binary transfer: exact float32.
            array = value.to_numpy() if hasattr(value, "to_numpy") else value
            return np.asarray(array, dtype=np.float32).tobytes()
        return value  # jsonb comes back decoded

    def _in(self, kind: Kind, value: Any) -> Any:
        if kind is Kind.JSON:
            return Jsonb(value)
        if kind is Kind.VECTOR:
            return np.frombuffer(bytes(value), dtype=np.float32)
        if kind is Kind.BOOL:
            return bool(value)
        return value  # an aware datetime travels as is

    def _scan(self, t: Table) -> Generator[Sequence[Any], None, None]:
        sql = f"SELECT {', '.join(t.names)} FROM {t.name} ORDER BY {order_by(t, POSTGRES)}"
        with self._pool.transaction():  # a cursor that streams needs a transaction (joins the snapshot when open)
            conn: Conn = self._pool.read(lambda c: c)
            with conn.cursor(name=f"reverie_export_{t.name}", binary=True) as cursor:
                cursor.itersize = BATCH
                cursor.execute(sql)
                yield from cursor

    def _insert_many(self, c: Conn, statement: str, batch: list[tuple[Any, ...]]) -> None:
        with c.cursor() as cursor:
            cursor.executemany(statement, batch)

    def _after_import(self, t: Table, total: int) -> None:
        if t.name == "working_entries" and total:
            self._pool.write(_advance_working_order)

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """A read-only repeatable-read transaction on this thread: every read inside sees one state while other
        sessions go on writing. Inside an open transaction, that one is the snapshot."""
        status = self._pool.read(lambda c: c.info.transaction_status)
        if status != TransactionStatus.IDLE:
            yield
            return
        with self._pool.transaction():
            self._pool.read(lambda c: c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
            yield


def _advance_working_order(c: Conn) -> None:
    # setval is not transactional: never move the sequence back, even if this import rolls back.
    c.execute(
        "SELECT setval('working_entries_order', greatest((SELECT max(seq) FROM working_entries),"
        " (SELECT last_value FROM working_entries_order)))"
    )
