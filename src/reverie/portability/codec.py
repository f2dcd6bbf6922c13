"""The JSONL export's lines: the header, and one portable row as JSON values by column ``Kind``.

A row travels as ``{"table": <portable table>, "row": {<column>: <value>}}`` with exactly the catalog's
columns (``storage.portable.TABLES``). Values by kind: text, int, float, bool and JSON as themselves; a time
as ISO-8601 in UTC (microseconds kept); a vector as base64 of its float32 bytes. None is JSON null.

Invariants:
- ``decode_record(encode_record(t, row)) == (t, row)`` for every row ``export_rows`` yields (floats travel
  as Python's shortest round-tripping repr, so they come back bit-equal).
- Decoding validates everything (the table, the column set, each value's type) and raises ``BadLine``
  with a message fit to show next to the line number; it never returns a half-read row.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from reverie.storage.portable import TABLES, Kind, Table

FORMAT = "reverie-export"
VERSION = 1
_BY_NAME = {t.name: t for t in TABLES}


class BadLine(ValueError):
    """A line that is not a well-formed record (the message says why)."""


# -- header ----------------------------------------------------------------------------------------------
def header(
    *, embedding_model: str | None, dimensions: int | None, agent: str | None, created_at: datetime, with_vectors: bool
) -> dict[str, Any]:
    """The first line of an export."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "embedding_model": embedding_model,
        "dimensions": dimensions,
        "agent": agent,
        "created_at": _time_out(created_at),
        "with_vectors": with_vectors,
    }


def parse_header(line: str) -> dict[str, Any]:
    """The header of an export, checked for its format and version; ``BadLine`` for anything else."""
    try:
        head = json.loads(line)
    except ValueError:
        raise BadLine("the first line is not JSON: this is not a Reverie JSONL export") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise BadLine(f'the first line is not a "{FORMAT}" header: this is not a Reverie JSONL export')
    if head.get("version") != VERSION:
        raise BadLine(f"export format version {head.get('version')!r} is not supported (this Reverie reads {VERSION})")
    model = head.get("embedding_model")
    if model is not None and not isinstance(model, str):
        raise BadLine("the header's embedding_model must be a string or null")
    if not isinstance(head.get("with_vectors"), bool):
        raise BadLine("the header's with_vectors must be true or false")
    agent = head.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise BadLine("the header's agent must be a string or null")
    return head


def header_digest(line: str) -> str:
    """A short, stable name for one export (its header line names the store, model and moment)."""
    return hashlib.sha256(line.strip().encode("utf-8")).hexdigest()[:24]


# -- records ---------------------------------------------------------------------------------------------
def encode_record(t: Table, row: dict[str, Any]) -> str:
    """One line (no newline) for ``row`` of ``t``, as ``export_rows`` yields it."""
    values = {name: _out(kind, row[name]) for name, kind in t.columns}
    return json.dumps({"table": t.name, "row": values}, ensure_ascii=False, separators=(",", ":"))


def decode_record(line: str) -> tuple[Table, dict[str, Any]]:
    """A record line as its table and its row of catalog values; ``BadLine`` when it is not one."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise BadLine(f"not JSON ({exc})") from None
    if not isinstance(record, dict) or set(record) != {"table", "row"}:
        raise BadLine('a record must be {"table": ..., "row": {...}}')
    t = _BY_NAME.get(record["table"]) if isinstance(record["table"], str) else None
    if t is None:
        raise BadLine(f"unknown table {record['table']!r}")
    row = record["row"]
    if not isinstance(row, dict) or set(row) != set(t.names):
        got = sorted(row) if isinstance(row, dict) else type(row).__name__
        raise BadLine(f"{t.name}: a row must have exactly the columns {', '.join(t.names)}; got {got}")
    out: dict[str, Any] = {}
    for name, kind in t.columns:
        try:
            out[name] = _in(kind, row[name])
        except (TypeError, ValueError, binascii.Error) as exc:
            raise BadLine(f"{t.name}.{name}: {exc}") from None
    return t, out


def _time_out(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _out(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TIME:
        return _time_out(value)
    if kind is Kind.VECTOR:
        return base64.b64encode(value).decode("ascii")
    return value


def _in(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind is Kind.TEXT:
        return _typed(value, str, "a string")
    if kind is Kind.INT:
        if isinstance(value, bool):
            raise TypeError(f"expected an integer, got {value!r}")
        return _typed(value, int, "an integer")
    if kind is Kind.FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"expected a number, got {value!r}")
        return float(value)
    if kind is Kind.BOOL:
        return _typed(value, bool, "true or false")
    if kind is Kind.TIME:
        stamp = datetime.fromisoformat(_typed(value, str, "an ISO-8601 time"))
        if stamp.tzinfo is None:
            raise ValueError(f"time {value!r} has no timezone")
        return stamp.astimezone(UTC)
    if kind is Kind.VECTOR:
        raw = base64.b64decode(_typed(value, str, "base64 text"), validate=True)
        if len(raw) % 4:
            raise ValueError("a vector must be whole float32 values (a multiple of 4 bytes)")
        return raw
    return value  # JSON: any JSON value


def _typed(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"expected {what}, got {value!r}")
    return value
