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
from collections.abc import Callable, Iterable, Iterator
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


def compact_json(value: Any) -> str:
    """The repositories' own JSON encoding: compact, UTF-8 kept as is, no NaN (``kv_codec.dumps`` adds its checks)."""
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

    def for_update(self, strength: str = "UPDATE") -> str:
        """`` FOR <strength>`` (row locks held until commit) to end a SELECT on PostgreSQL; nothing on SQLite,
        whose one writer at a time already keeps the rows a write has read from changing under it."""
        return f" FOR {strength}" if self.postgres else ""

    def any_of(self, column: str, values: list[Any]) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values``, and its parameters: ``= ANY(?)`` with one array
        on PostgreSQL, ``IN (?, ...)`` on SQLite (give it one ``batches`` batch at a time).

        When to use it rather than ``in_list``: values of any type (integer ``seq``, not only text), and a
        statement that may run once per batch (no ``LIMIT`` or order across every value). SQLite sees a list
        of bound values, so its planner probes the column's index once per value (``SqlFacts.get_many``'s
        unary-``+`` note relies on that plan)."""
        if self.postgres:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def batches(self, values: list[Any], size: int = 500) -> Iterator[list[Any]]:
        """``values`` in lists that keep ``any_of`` under SQLite's bound-parameter limit; one list on
        PostgreSQL (an array is one parameter). Nothing at all when ``values`` is empty, so a caller runs no
        statement then. Only for ``any_of``: ``in_list`` takes the whole list as one parameter."""
        step = max(len(values), 1) if self.postgres else size
        for start in range(0, len(values), step):
            yield values[start : start + step]

    def contains(self, haystack: str, needle: str) -> str:
        """A condition that text ``haystack`` holds ``needle`` (SQL expressions), character for character:
        ``%`` and ``_`` are plain text (``instr`` on SQLite, ``strpos`` on PostgreSQL, never ``LIKE``)."""
        return f"{'strpos' if self.postgres else 'instr'}({haystack}, {needle}) > 0"

    def json_elements(self, column: str, alias: str) -> str:
        """A FROM item: the elements of the JSON array ``column`` as text, one row each, in ``<alias>.value``."""
        if self.postgres:
            return f"jsonb_array_elements_text({column}) {alias}(value)"
        return f"json_each({column}) {alias}"

    def unindexed(self, expression: str) -> str:
        """``expression`` kept off its indexes: SQLite's unary ``+``, for a query whose planner would pick a
        worse index; PostgreSQL's planner, costing with statistics, needs no hint (and has no text ``+``)."""
        return expression if self.postgres else f"+{expression}"

    def json_text(self, column: str, key: str) -> str:
        """The text of top-level ``key`` of JSON ``column`` (None when absent); ``key`` is a trusted name."""
        if self.postgres:
            return f"({column} ->> '{key}')"
        return f"json_extract({column}, '$.\"{key}\"')"

    def starts_with(self, column: str, prefix: str) -> tuple[str, tuple[Any, ...]]:
        """A condition that text ``column`` begins with ``prefix``, and its parameters. It compares characters
        (``substr`` on SQLite, whose ``>=`` on the binary collation lets it use an index; ``starts_with`` on
        PostgreSQL, with no collation-ordered ``>=`` that a locale could change), never ``LIKE``: ``%`` and
        ``_`` are plain text."""
        if self.postgres:
            return f"starts_with({column}, ?)", (prefix,)
        return f"{column} >= ? AND substr({column}, 1, ?) = ?", (prefix, len(prefix), prefix)

    def in_list(self, column: str) -> str:
        """The condition that ``column`` equals one of the strings of one parameter, ``text_list(values)``
        (a JSON array read by ``json_each`` on SQLite, a ``text[]`` on PostgreSQL): one parameter however
        many values, so no batching under SQLite's bound-parameter limit (``any_of``).

        When to use it rather than ``any_of``: text values in a statement that must stay one statement (a
        ``LIMIT`` or an ``ORDER BY`` over every match, one ``rowcount``, the same list in two conditions).
        Text only (``?::text[]``); an empty list is a statement that matches nothing."""
        if self.postgres:
            return f"{column} = ANY(?::text[])"
        return f"{column} IN (SELECT value FROM json_each(?))"

    def json_has_any(self, column: str) -> str:
        """The condition that JSON array ``column`` holds one of the strings of one parameter,
        ``text_list(values)``. PostgreSQL tests containment (``@>``), which a GIN index on the column serves;
        its ``?|`` operator cannot be written here, as ``sql()`` reads every ``?`` as a placeholder."""
        if self.postgres:
            return f"{column} @> ANY(ARRAY(SELECT to_jsonb(v) FROM unnest(?::text[]) v))"
        return f"EXISTS (SELECT 1 FROM json_each({column}) j WHERE j.value IN (SELECT value FROM json_each(?)))"

    def json_has_all(self, column: str) -> str:
        """The condition that JSON array ``column`` holds every string of one parameter, ``text_list(values)``
        (containment on PostgreSQL, which a GIN index on the column serves)."""
        if self.postgres:
            return f"{column} @> to_jsonb(?::text[])"
        return (
            f"NOT EXISTS (SELECT 1 FROM json_each(?) w"
            f" WHERE w.value NOT IN (SELECT j.value FROM json_each({column}) j))"
        )

    def json_key_equals(self, column: str, key: str, value: Any) -> tuple[str, list[Any]]:
        """The condition that top-level ``key`` of JSON object ``column`` equals scalar ``value``, type
        included (``5`` is not ``"5"``, ``true`` is not ``1``; ``5`` is ``5.0``), and its parameters. None
        matches a key that is absent or null. ``key`` travels as a parameter, never as SQL text."""
        if value is None:
            if self.postgres:
                return f"({column} -> ?::text) IS NULL OR jsonb_typeof({column} -> ?::text) = 'null'", [key, key]
            return f"json_type({column}, ?) IS NULL OR json_type({column}, ?) = 'null'", [_path(key), _path(key)]
        if self.postgres:
            return f"{column} @> ?", [self.json({key: value})]
        path = _path(key)
        if isinstance(value, bool):
            return f"json_type({column}, ?) = ?", [path, "true" if value else "false"]
        kinds = "'integer', 'real'" if isinstance(value, int | float) else "'text'"
        return f"json_type({column}, ?) IN ({kinds}) AND json_extract({column}, ?) = ?", [path, path, value]

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

            return Jsonb(value, dumps=compact_json)
        return compact_json(value)

    def json_or_none(self, value: Any) -> Any:
        return None if value is None else self.json(value)

    def json_now(self, value: Any) -> Any:
        """A JSON parameter serialised now rather than when the statement runs: a value that cannot be stored
        (NaN, an object json cannot encode) raises ``ValueError`` / ``TypeError`` here, before any write."""
        text = compact_json(value)
        if self.postgres:
            from psycopg.types.json import Jsonb

            return Jsonb(text, dumps=_as_is)
        return text

    def json_out(self, value: Any) -> Any:
        """A stored JSON value as Python values (PostgreSQL hands ``jsonb`` back decoded already)."""
        if value is None or not isinstance(value, str | bytes):
            return value
        return json.loads(value) if not self.postgres else value

    def text_list(self, values: Iterable[str]) -> Any:
        """The parameter of ``in_list`` / ``json_has_any``: JSON array text on SQLite, a list on PostgreSQL.
        Never a parameter of ``any_of``, which takes the values themselves (``batches``)."""
        return list(values) if self.postgres else json.dumps(list(values))

    def json_encoded(self, text: str | None) -> Any:
        """A JSON parameter from JSON text a caller already encoded and checked (a codec's ``dumps``), sent as
        is: ``jsonb`` on PostgreSQL, text on SQLite. None stays NULL."""
        if text is None or not self.postgres:
            return text
        from psycopg.types.json import Jsonb

        return Jsonb(text, dumps=_as_is)


def _path(key: str) -> str:
    # A SQLite JSON path naming one top-level key, quoted so dots and brackets in it are plain characters.
    return '$."' + key.replace('"', '""') + '"'


def _as_is(text: str) -> str:
    # The dumps of a JSON parameter already serialised (json_now).
    return text


@lru_cache(maxsize=2048)
def _pg_sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


SQLITE = Dialect(name="sqlite", collate_c="", true="1", false="0")
POSTGRES = Dialect(name="postgresql", collate_c=' COLLATE "C"', true="true", false="false")
