"""The rules of a stored JSON value, and the KV compare-and-set (``storage.kv``). Pure functions, no I/O.

``dumps`` is the encoding of every JSON column the SQL repositories write: KV values, graph properties and
sources (``sql/graph.py``), skills' and feedback's JSON (``skills_codec``).

Invariants:
- A value that cannot be stored the same way on both backends is refused before any statement runs
  (``ValidationError``): not JSON, NaN or infinity (SQLite's JSON and PostgreSQL's jsonb reject them) or a
  NUL character in a string (jsonb rejects it), so a write that fails on one backend fails on the other.
"""

from __future__ import annotations

import json
import math
from typing import Any

from reverie.errors import ValidationError


def dumps(value: Any, *, field: str) -> str:
    """``value`` as compact JSON text (UTF-8 kept as is); ``ValidationError`` naming ``field`` when it
    cannot be stored on every backend."""
    _check(value, field)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{field} must be a JSON value: {exc}", field=field) from exc


def _check(value: Any, field: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValidationError(f"{field} must not contain a NUL character", field=field)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{field} must not hold NaN or infinity", field=field)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, field)
            _check(item, field)
    elif isinstance(value, list | tuple):
        for item in value:
            _check(item, field)


def cas_refusal(key: str, live_version: int | None, expected: int | None) -> str | None:
    """Why a put with ``expected`` must fail against the live version (None: not live), or None."""
    if expected is None or expected == (live_version or 0):
        return None
    if live_version is None:
        return f"key {key!r} is not set (expected version {expected})"
    return f"key {key!r} is at version {live_version} (expected {'absent' if expected == 0 else expected})"
