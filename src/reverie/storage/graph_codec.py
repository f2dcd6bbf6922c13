"""What the graph repository needs beyond SQL (``storage.graph``): the search needle and the graph
fingerprint. Pure functions, no I/O.

Invariants:
- The fingerprint is computed here from decoded rows, in a fixed order, so it depends on what is stored,
  not on how a backend sorts or spells it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime

from reverie.types import Entity, Relation

_SPACES = re.compile(r"\s+")


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
