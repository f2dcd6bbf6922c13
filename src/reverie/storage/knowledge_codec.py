"""What the KV and graph repositories of both backends share: the JSON rules of a stored value and the graph
fingerprint (``storage.knowledge``). Pure functions, no I/O.

Invariants:
- A value that cannot be stored the same way on both backends is refused before any statement runs
  (``ValidationError``): not JSON, NaN or infinity (SQLite's JSON and PostgreSQL's jsonb reject them) or a
  NUL character in a string (jsonb rejects it), so a write that fails on one backend fails on the other.
- The fingerprint is computed here from decoded rows, in a fixed order, so it depends on what is stored,
  not on how a backend sorts or spells it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from reverie.errors import ValidationError
from reverie.types import Entity, Relation

_SPACES = re.compile(r"\s+")


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


def search_needle(text: str) -> str:
    """``text`` folded as entity keys are (NFKC, casefolded, whitespace collapsed and trimmed), so a
    substring test on the key is a case-insensitive test on the name."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def fingerprint(entities: Iterable[Entity], relations: Iterable[Relation]) -> str:
    """SHA-256 of the live entities and valid relations given, each with every stored field but an
    entity's ``last_seen_at`` (a mention alone is not a change of the graph), in id order."""
    digest = hashlib.sha256()
    for e in sorted(entities, key=lambda e: e.entity_id):
        record = [
            "e", e.entity_id, e.type, e.key, e.name, e.properties, list(e.sources), _time(e.created_at),
            _time(e.updated_at),
        ]  # fmt: skip
        digest.update(json.dumps(record, ensure_ascii=False, sort_keys=True).encode())
        digest.update(b"\n")
    for r in sorted(relations, key=lambda r: r.relation_id):
        record = [
            "r", r.relation_id, r.source_id, r.relation, r.target_id, r.properties, list(r.sources),
            _time(r.valid_from), _time(r.invalid_at), _time(r.created_at),
        ]  # fmt: skip
        digest.update(json.dumps(record, ensure_ascii=False, sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()
