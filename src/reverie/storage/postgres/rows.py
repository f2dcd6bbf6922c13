"""Portable rows on PostgreSQL (``Store.export_rows`` / ``import_rows``; catalog: ``storage.portable``).

Columns have native types (timestamptz, jsonb, boolean, double precision, vector), so the conversion is
light: jsonb goes in as ``Jsonb``, a vector as a numpy float32 array (pgvector's adapter) and comes back
as float32 bytes; timestamps are aware UTC datetimes both ways.

Invariants:
- An export streams the table through a server-side cursor inside a transaction (the caller's
  ``read_snapshot`` when open: one repeatable-read state for every table), ordered as the catalog says
  with text keys compared byte-wise (``COLLATE "C"``, SQLite's order), so both backends export a table
  in the same order.
- An import is one transaction (or joins the caller's). The generated ``seq`` columns number the rows in
  import order; ``search_text`` and the change logs are written by the triggers.
- ``working_entries_order`` (the sequence the working repository numbers writes with) never moves back,
  and after an import it is past every imported ``seq``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb

from reverie.errors import StorageError
from reverie.storage.portable import Kind, Table, table
from reverie.storage.postgres.database import Conn, PgDatabase

_BATCH = 500


def _order_by(t: Table) -> str:
    kinds = dict(t.columns)
    return ", ".join(f'{key} COLLATE "C"' if kinds.get(key) is Kind.TEXT else key for key in t.order)


def _value_out(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TIME:
        return value.astimezone(UTC)
    if kind is Kind.VECTOR:
        # pgvector >= 0.4 loads a ``Vector``; older versions a numpy array. Binary transfer: exact float32.
        array = value.to_numpy() if hasattr(value, "to_numpy") else value
        return np.asarray(array, dtype=np.float32).tobytes()
    if kind is Kind.INT:
        return int(value)
    if kind is Kind.FLOAT:
        return float(value)
    if kind is Kind.BOOL:
        return bool(value)
    return value


def _value_in(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TIME:
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise TypeError(f"expected an aware datetime, got {value!r}")
        return value
    if kind is Kind.JSON:
        return Jsonb(value)
    if kind is Kind.VECTOR:
        return np.frombuffer(bytes(value), dtype=np.float32)
    if kind is Kind.BOOL:
        return bool(value)
    return value


def _row_in(t: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    if len(row) != len(t.columns) or not all(name in row for name in t.names):
        raise StorageError(f"{t.name}: a row must have exactly the columns {', '.join(t.names)}; got {sorted(row)}")
    try:
        return tuple(_value_in(kind, row[name]) for name, kind in t.columns)
    except (TypeError, ValueError) as exc:
        raise StorageError(f"{t.name}: {exc}") from exc


def export_rows(db: PgDatabase, name: str) -> Iterator[dict[str, Any]]:
    """``Store.export_rows`` on PostgreSQL. While the generator runs, this thread's statements on ``db``
    join its transaction (it holds one connection until exhausted or closed)."""
    t = table(name)
    sql = f"SELECT {', '.join(t.names)} FROM {t.name} ORDER BY {_order_by(t)}"
    with db.transaction():  # a cursor that streams needs a transaction (joins the snapshot when open)
        conn: Conn = db.read(lambda c: c)
        with conn.cursor(name=f"reverie_export_{t.name}", binary=True) as cursor:
            cursor.itersize = _BATCH
            cursor.execute(sql)
            for row in cursor:
                yield {column: _value_out(kind, value) for (column, kind), value in zip(t.columns, row, strict=True)}


def import_rows(db: PgDatabase, name: str, rows: Iterable[dict[str, Any]]) -> int:
    """``Store.import_rows`` on PostgreSQL: ``executemany`` in batches, inside one transaction."""
    t = table(name)
    sql = f"INSERT INTO {t.name} ({', '.join(t.names)}) VALUES ({', '.join('%s' for _ in t.columns)})"
    total = 0
    batch: list[tuple[Any, ...]] = []

    def flush(c: Conn) -> None:
        with c.cursor() as cursor:
            cursor.executemany(sql, batch)

    with db.transaction():
        for row in rows:
            batch.append(_row_in(t, row))
            if len(batch) >= _BATCH:
                db.write(flush)
                total += len(batch)
                batch = []
        if batch:
            db.write(flush)
            total += len(batch)
        if t.name == "working_entries" and total:
            db.write(_advance_working_order)
    return total


def _advance_working_order(c: Conn) -> None:
    # setval is not transactional: never move the sequence back, even if this import rolls back.
    c.execute(
        "SELECT setval('working_entries_order', greatest((SELECT max(seq) FROM working_entries),"
        " (SELECT last_value FROM working_entries_order)))"
    )


def count_rows(db: PgDatabase, name: str) -> int:
    t = table(name)
    row = db.read(lambda c: c.execute(f"SELECT count(*) FROM {t.name}").fetchone())
    return 0 if row is None else int(row[0])


def delete_rows(db: PgDatabase, name: str) -> int:
    t = table(name)
    return int(db.write(lambda c: c.execute(f"DELETE FROM {t.name}").rowcount))


@contextmanager
def read_snapshot(db: PgDatabase) -> Iterator[None]:
    """A read-only repeatable-read transaction on this thread: every read inside sees one state while other
    sessions go on writing. Inside an open transaction, that one is the snapshot."""
    status = db.read(lambda c: c.info.transaction_status)
    if status != TransactionStatus.IDLE:
        yield
        return
    with db.transaction():
        db.read(lambda c: c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
        yield
