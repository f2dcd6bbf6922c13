"""Portable rows on SQLite (``Store.export_rows`` / ``import_rows``; catalog: ``storage.portable``).

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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from reverie.errors import StorageError
from reverie.storage.portable import Kind, Table, table
from reverie.storage.sqlite.database import Database, parse_ts, ts

_BATCH = 500


class _Damaged(Exception):
    """A stored timestamp that cannot be read back."""


def _dumps(value: Any) -> str:
    # The repositories' own encoding (facts, versions, sessions): compact, UTF-8 kept as is.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _time_out(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _Damaged(value)
    try:
        parsed = parse_ts(value)
    except ValueError as exc:
        raise _Damaged(value) from exc
    if parsed.tzinfo is None:
        raise _Damaged(value)
    return parsed.astimezone(UTC)


def _value_out(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TIME:
        return _time_out(value)
    if kind is Kind.JSON:
        return json.loads(value)
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.INT:
        return int(value)
    if kind is Kind.FLOAT:
        return float(value)
    if kind is Kind.VECTOR:
        return bytes(value)
    return value


def _row_out(t: Table, values: tuple[Any, ...]) -> dict[str, Any] | None:
    """The row as catalog values, or None when ``t`` skips a row with a damaged timestamp."""
    out: dict[str, Any] = {}
    for (name, kind), value in zip(t.columns, values, strict=True):
        try:
            out[name] = _value_out(kind, value)
        except _Damaged:
            if t.on_damage == "skip":
                return None
            if t.on_damage == "null":
                out[name] = None
                continue
            raise StorageError(f"{t.name}.{name}: cannot read the stored timestamp {value!r}") from None
        except (ValueError, TypeError) as exc:
            raise StorageError(f"{t.name}.{name}: cannot read the stored value {value!r}: {exc}") from exc
    return out


def _value_in(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TIME:
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise TypeError(f"expected an aware datetime, got {value!r}")
        return ts(value)
    if kind is Kind.JSON:
        return _dumps(value)
    if kind is Kind.BOOL:
        return int(bool(value))
    if kind is Kind.VECTOR:
        return bytes(value)
    return value


def _row_in(t: Table, row: dict[str, Any]) -> tuple[Any, ...]:
    if len(row) != len(t.columns) or not all(name in row for name in t.names):
        raise StorageError(f"{t.name}: a row must have exactly the columns {', '.join(t.names)}; got {sorted(row)}")
    try:
        return tuple(_value_in(kind, row[name]) for name, kind in t.columns)
    except (TypeError, ValueError) as exc:
        raise StorageError(f"{t.name}: {exc}") from exc


def export_rows(db: Database, name: str) -> Iterator[dict[str, Any]]:
    """``Store.export_rows`` on SQLite: pages of ``_BATCH`` rows by keyset (the catalog order)."""
    t = table(name)
    keys = ", ".join(t.order)
    select = f"SELECT {keys}, {', '.join(t.names)} FROM {t.name}"
    after = f"({keys}) > ({', '.join('?' for _ in t.order)})"
    width = len(t.order)
    last: tuple[Any, ...] | None = None
    while True:
        sql = f"{select}{'' if last is None else ' WHERE ' + after} ORDER BY {keys} LIMIT {_BATCH}"
        params = () if last is None else last
        page = db.read(lambda c, s=sql, p=params: c.execute(s, p).fetchall())  # type: ignore[misc]
        for row in page:
            converted = _row_out(t, tuple(row[width:]))
            if converted is not None:
                yield converted
        if len(page) < _BATCH:
            return
        last = tuple(page[-1][:width])


def import_rows(db: Database, name: str, rows: Iterable[dict[str, Any]]) -> int:
    """``Store.import_rows`` on SQLite: ``executemany`` in batches, inside one transaction."""
    t = table(name)
    sql = f"INSERT INTO {t.name} ({', '.join(t.names)}) VALUES ({', '.join('?' for _ in t.columns)})"
    total = 0
    batch: list[tuple[Any, ...]] = []

    def flush() -> None:
        db.write(lambda c: c.executemany(sql, batch))

    with db.transaction():
        for row in rows:
            batch.append(_row_in(t, row))
            if len(batch) >= _BATCH:
                flush()
                total += len(batch)
                batch = []
        if batch:
            flush()
            total += len(batch)
    return total


def count_rows(db: Database, name: str) -> int:
    t = table(name)
    row = db.read(lambda c: c.execute(f"SELECT count(*) FROM {t.name}").fetchone())
    return int(row[0])


def delete_rows(db: Database, name: str) -> int:
    t = table(name)
    return int(db.write(lambda c: c.execute(f"DELETE FROM {t.name}").rowcount))


@contextmanager
def read_snapshot(db: Database) -> Iterator[None]:
    """A read transaction on this thread's connection: in WAL mode it sees the state of its first read until
    it ends, while other connections go on writing. Inside an open transaction, that one is the snapshot."""
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
