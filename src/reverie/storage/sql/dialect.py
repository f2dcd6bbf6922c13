"""What differs between SQLite and PostgreSQL for the repositories written once (``storage/sql/``).

A repository in ``storage/sql/`` writes its SQL once, in SQLite's spelling with ``?`` placeholders, and asks
its ``Dialect`` for the few things the two databases spell differently: the placeholder, how a timestamp, a
boolean or a JSON value travels, code-point collation, and a handful of functions. Each backend passes its
``Database`` (``SqlDatabase``: the same ``read`` / ``write`` / ``transaction`` shape on both) and its dialect.

Invariants:
- ``sql()`` is the only way a statement reaches a connection: on PostgreSQL it turns ``?`` into ``%s`` and
  doubles a literal ``%`` (psycopg reads ``%`` as a placeholder marker); a ``?`` inside a quoted literal is
  never used by the repositories (they pass values as parameters).
- Timestamps go in aware and come out aware, in UTC: SQLite stores fixed-width UTC text (text order is time
  order), PostgreSQL ``timestamptz``.
- Booleans come out as ``bool``, JSON as Python values, whatever the storage type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


class Cursor(Protocol):
    """The part of a DB-API cursor the repositories use (``sqlite3.Cursor``, ``psycopg.Cursor``)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The part of a connection the repositories use: ``execute`` with positional parameters."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


class SqlDatabase(Protocol):
    """What both backends' ``Database`` offer: reads, writes in a transaction, and explicit transactions.
    Driver errors come out as ``StorageError`` / ``Conflict`` / ``StoreBusy``."""

    def read(self, work: Callable[[Any], T]) -> T: ...

    def write(self, work: Callable[[Any], T]) -> T: ...

    def in_transaction(self) -> bool: ...

    def transaction(self) -> AbstractContextManager[None]: ...


def _dumps(value: Any) -> str:
    # The repositories' own encoding: compact, UTF-8 kept as is, no NaN.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Dialect:
    """One database's spelling. Use the two instances, ``SQLITE`` and ``POSTGRES``."""

    name: str
    #: ``COLLATE "C"`` on PostgreSQL (code-point order, as SQLite's BINARY), nothing on SQLite.
    collate_c: str
    #: SQL literals for true and false (``1``/``0`` on SQLite, whose booleans are integers).
    true: str
    false: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    # -- statements ------------------------------------------------------------------------------------
    def sql(self, statement: str) -> str:
        """``statement`` (written with ``?`` placeholders) in this database's spelling."""
        return _pg_sql(statement) if self.postgres else statement

    def greatest(self, *terms: str) -> str:
        """The larger of SQL expressions (``max(a, b)`` on SQLite, ``greatest(a, b)`` on PostgreSQL)."""
        return f"{'greatest' if self.postgres else 'max'}({', '.join(terms)})"

    def least(self, *terms: str) -> str:
        return f"{'least' if self.postgres else 'min'}({', '.join(terms)})"

    def json_text(self, column: str, key: str) -> str:
        """The text of top-level ``key`` of JSON ``column`` (None when absent); ``key`` is a trusted name."""
        if self.postgres:
            return f"({column} ->> '{key}')"
        return f"json_extract({column}, '$.\"{key}\"')"

    # -- values ----------------------------------------------------------------------------------------
    def ts(self, value: datetime) -> Any:
        """A timestamp parameter."""
        return value.astimezone(UTC) if self.postgres else value.astimezone(UTC).strftime(_TS_FORMAT)

    def ts_or_none(self, value: datetime | None) -> Any:
        return None if value is None else self.ts(value)

    def ts_out(self, value: Any) -> datetime:
        """A stored timestamp, aware and in UTC."""
        if isinstance(value, datetime):
            return value.astimezone(UTC)
        # fromisoformat (C) reads the fixed format, "Z" included, far faster than strptime on hot paths.
        return datetime.fromisoformat(value)

    def ts_out_or_none(self, value: Any) -> datetime | None:
        return None if value is None else self.ts_out(value)

    def flag(self, value: bool) -> Any:
        """A boolean parameter."""
        return bool(value) if self.postgres else int(value)

    def json(self, value: Any) -> Any:
        """A JSON parameter (``jsonb`` on PostgreSQL, text on SQLite)."""
        if self.postgres:
            from psycopg.types.json import Jsonb

            return Jsonb(value, dumps=_dumps)
        return _dumps(value)

    def json_or_none(self, value: Any) -> Any:
        return None if value is None else self.json(value)

    def json_out(self, value: Any) -> Any:
        """A stored JSON value as Python values (PostgreSQL hands ``jsonb`` back decoded already)."""
        if value is None or not isinstance(value, str | bytes):
            return value
        return json.loads(value) if not self.postgres else value


@lru_cache(maxsize=2048)
def _pg_sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


SQLITE = Dialect(name="sqlite", collate_c="", true="1", false="0")
POSTGRES = Dialect(name="postgresql", collate_c=' COLLATE "C"', true="true", false="false")
