"""Portable rows written once (``Store.export_rows`` / ``import_rows``; catalog: ``storage.portable``).

``SqlRows`` holds what both backends share: the import loop, counting and deleting, the catalog order, and
the skeleton of the value conversions (NULL, integers, floats and booleans read back the same everywhere;
a row in must have exactly the catalog's columns, a timestamp in must be aware). A backend subclass
(``sqlite.rows``, ``postgres.rows``) supplies how its storage types travel (``_out`` / ``_in``), how it
reads a table in catalog order (``_scan``), how it inserts a batch, and its read snapshot.

Invariants:
- An export yields the table's rows in catalog order (``order_by``: ``seq`` or the primary key, text
  compared byte-wise on both backends, SQLite's BINARY collation), converted to the catalog's values.
- A stored timestamp that cannot be read back (``Damaged``) does what the table's ``on_damage`` says:
  fail (``StorageError``), skip the row, or read as None. Any other unreadable value is ``StorageError``.
- An import is one transaction (or joins the caller's), inserting in the given order, in batches of
  ``BATCH`` rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing
from datetime import datetime
from typing import Any

from reverie.errors import StorageError
from reverie.storage.portable import Kind, Table, table
from reverie.storage.sql.dialect import Dialect, SqlDatabase

BATCH = 500


class Damaged(Exception):
    """A stored timestamp that cannot be read back."""


def order_by(t: Table, d: Dialect) -> str:
    """The catalog order of ``t`` as an ``ORDER BY`` list: text keys compare by code point on both backends."""
    kinds = dict(t.columns)
    return ", ".join(f"{key}{d.collate_c}" if kinds.get(key) is Kind.TEXT else key for key in t.order)


class SqlRows(ABC):
    """The portable-row half of a ``Store`` on ``db``; the store delegates its row methods here."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- what a backend supplies -----------------------------------------------------------------------
    @abstractmethod
    def _scan(self, t: Table) -> Generator[Sequence[Any], None, None]:
        """The stored values of ``t.names``, one row at a time, in catalog order (``order_by``). Closed as
        soon as the export ends, exhausted or not, so whatever it holds (a transaction) ends with it."""

    @abstractmethod
    def _out(self, kind: Kind, value: Any) -> Any:
        """A non-NULL stored TIME, JSON or VECTOR value as the catalog's (``Damaged`` for a bad timestamp)."""

    @abstractmethod
    def _in(self, kind: Kind, value: Any) -> Any:
        """A non-NULL catalog BOOL, TIME (already known aware), JSON or VECTOR value as a parameter."""

    @abstractmethod
    def _insert_many(self, c: Any, statement: str, batch: list[tuple[Any, ...]]) -> None:
        """Run ``statement`` once per row of ``batch`` on connection ``c``."""

    def _after_import(self, t: Table, total: int) -> None:
        """Bookkeeping after ``total`` rows went into ``t``, inside the import's transaction."""
        return  # none on SQLite: the working repository numbers from max(seq), imported rows included

    @abstractmethod
    def read_snapshot(self) -> AbstractContextManager[None]:
        """``Store.read_snapshot``: every read on this thread inside it sees one state."""

    # -- the store's row methods -----------------------------------------------------------------------
    def export_rows(self, name: str) -> Iterator[dict[str, Any]]:
        t = table(name)
        with closing(self._scan(t)) as scan:
            for values in scan:
                converted = self._row_out(t, values)
                if converted is not None:
                    yield converted

    def import_rows(self, name: str, rows: Iterable[dict[str, Any]]) -> int:
        """``executemany`` in batches, inside one transaction."""
        t = table(name)
        statement = self._d.sql(
            f"INSERT INTO {t.name} ({', '.join(t.names)}) VALUES ({', '.join('?' for _ in t.columns)})"
        )
        total = 0
        batch: list[tuple[Any, ...]] = []

        def flush(c: Any) -> None:
            self._insert_many(c, statement, batch)

        with self._db.transaction():
            for row in rows:
                batch.append(self._row_in(t, row))
                if len(batch) >= BATCH:
                    self._db.write(flush)
                    total += len(batch)
                    batch = []
            if batch:
                self._db.write(flush)
                total += len(batch)
            self._after_import(t, total)
        return total

    def count_rows(self, name: str) -> int:
        t = table(name)
        row = self._db.read(lambda c: c.execute(f"SELECT count(*) FROM {t.name}").fetchone())
        return 0 if row is None else int(row[0])

    def delete_rows(self, name: str) -> int:
        t = table(name)
        return int(self._db.write(lambda c: c.execute(f"DELETE FROM {t.name}").rowcount))

    # -- conversions -----------------------------------------------------------------------------------
    def _value_out(self, kind: Kind, value: Any) -> Any:
        if value is None:
            return None
        if kind is Kind.INT:
            return int(value)
        if kind is Kind.FLOAT:
            return float(value)
        if kind is Kind.BOOL:
            return bool(value)
        if kind is Kind.TEXT:
            return value
        return self._out(kind, value)

    def _row_out(self, t: Table, values: Sequence[Any]) -> dict[str, Any] | None:
        """The row as catalog values, or None when ``t`` skips a row with a damaged timestamp."""
        out: dict[str, Any] = {}
        for (name, kind), value in zip(t.columns, values, strict=True):
            try:
                out[name] = self._value_out(kind, value)
            except Damaged:
                if t.on_damage == "skip":
                    return None
                if t.on_damage == "null":
                    out[name] = None
                    continue
                raise StorageError(f"{t.name}.{name}: cannot read the stored timestamp {value!r}") from None
            except (ValueError, TypeError) as exc:
                raise StorageError(f"{t.name}.{name}: cannot read the stored value {value!r}: {exc}") from exc
        return out

    def _value_in(self, kind: Kind, value: Any) -> Any:
        if value is None:
            return None
        if kind is Kind.TIME and (not isinstance(value, datetime) or value.tzinfo is None):
            raise TypeError(f"expected an aware datetime, got {value!r}")
        if kind in (Kind.TEXT, Kind.INT, Kind.FLOAT):
            return value
        return self._in(kind, value)

    def _row_in(self, t: Table, row: dict[str, Any]) -> tuple[Any, ...]:
        if len(row) != len(t.columns) or not all(name in row for name in t.names):
            raise StorageError(f"{t.name}: a row must have exactly the columns {', '.join(t.names)}; got {sorted(row)}")
        try:
            return tuple(self._value_in(kind, row[name]) for name, kind in t.columns)
        except (TypeError, ValueError) as exc:
            raise StorageError(f"{t.name}: {exc}") from exc
