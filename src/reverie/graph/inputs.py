"""The checks every argument of the knowledge graph passes before the store is touched (``memory.graph``).
Each returns the clean value or raises ``ValidationError`` naming the field, so a refused call writes nothing.

Limits: a name is at most ``MAX_NAME_CHARS`` characters, a type ``MAX_TYPE_CHARS``, a relation name
``MAX_RELATION_CHARS``; names hold no control characters but whitespace (which collapses); properties are a
JSON object checked as memory metadata is (nested at most ``validate.MAX_JSON_DEPTH`` levels); a call carries at
most ``MAX_SOURCES`` source ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from reverie.core import graph as rules
from reverie.core import validate
from reverie.errors import ValidationError

MAX_NAME_CHARS: Final = 200
MAX_TYPE_CHARS: Final = 64
MAX_RELATION_CHARS: Final = 100
MAX_REF_CHARS: Final = MAX_TYPE_CHARS + 1 + MAX_NAME_CHARS
MAX_SOURCES: Final = 100  # per call; an entity's stored sources grow as the union of every call's
MAX_LIMIT: Final = 1000
MAX_DEPTH: Final = 10  # the deepest walk a configuration may allow
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_WHITESPACE = {ord(c): " " for c in "\t\n\r\x0b\x0c"}  # collapses in a name; any other control is refused


def agent(value: object) -> str:
    return validate.identifier(value, name="agent_id")


def text(value: object, field_name: str, max_chars: int) -> str:
    """A string of at most ``max_chars`` characters, valid Unicode, no control characters but whitespace."""
    if not isinstance(value, str):
        raise ValidationError(f"{field_name} must be a string", field=field_name)
    if len(value) > max_chars:
        raise ValidationError(f"{field_name} is longer than {max_chars} characters", field=field_name)
    if _CONTROL.search(value.translate(_WHITESPACE)):
        raise ValidationError(f"{field_name} contains a control character", field=field_name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{field_name} is not valid Unicode text (lone surrogate)", field=field_name) from None
    return value


def entity_type(value: object) -> str:
    """A type, normalised (``core.graph.type_key``): "Person" -> "person"."""
    raw = text(value, "type", MAX_TYPE_CHARS)
    try:
        return rules.type_key(raw)
    except ValueError as exc:
        raise ValidationError(str(exc), field="type") from None


def entity_name(value: object, field_name: str) -> tuple[str, str]:
    """An entity name as (display name, key)."""
    raw = text(value, field_name, MAX_NAME_CHARS)
    try:
        return rules.display_name(raw), rules.entity_key(raw)
    except ValueError as exc:
        raise ValidationError(str(exc), field=field_name) from None


def reference(value: object, field_name: str) -> tuple[str, str, str]:
    """A reference (``type:name`` or a bare name) as (type, display name, key); a bare name's type is
    ``thing``."""
    raw = text(value, field_name, MAX_REF_CHARS)
    try:
        kind, name = rules.parse_ref(raw)
    except ValueError as exc:
        raise ValidationError(str(exc), field=field_name) from None
    if len(kind) > MAX_TYPE_CHARS:
        raise ValidationError(f"the type in {field_name} is longer than {MAX_TYPE_CHARS} characters", field=field_name)
    shown, key = entity_name(name, field_name)
    return kind, shown, key


def relation(value: object) -> str:
    """A relation name in lower snake case: "Works At" -> "works_at"."""
    raw = text(value, "relation", MAX_RELATION_CHARS)
    try:
        return rules.relation_key(raw)
    except ValueError as exc:
        raise ValidationError(str(exc), field="relation") from None


def search_text(value: object) -> str:
    """What an entity search looks for: non-empty, stripped."""
    raw = text(value, "text", MAX_NAME_CHARS)
    if not raw.strip():
        raise ValidationError("search text is empty", field="text")
    return raw.strip()


def properties(value: object) -> dict[str, Any]:
    """A JSON object, checked as memory metadata is (``validate.json_object``: string keys, JSON values, no
    NUL, nested at most ``validate.MAX_JSON_DEPTH`` levels, the metadata size cap)."""
    return validate.json_object(value, field="properties", max_bytes=validate.MAX_METADATA_BYTES)


def sources(value: object) -> tuple[str, ...]:
    """Ids of the memory entries a fact came from: distinct, in order."""
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ValidationError("sources must be a list of entry ids", field="sources")
    out: dict[str, None] = {}
    for item in value:
        out.setdefault(validate.identifier(item, name="sources"), None)
        if len(out) > MAX_SOURCES:
            raise ValidationError(f"at most {MAX_SOURCES} sources per call", field="sources")
    return tuple(out)


def moment(value: object, field_name: str) -> datetime | None:
    """None, or a timezone-aware datetime."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ValidationError(f"{field_name} must be a timezone-aware datetime", field=field_name)
    return value


def flag(value: object, field_name: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{field_name} must be true or false", field=field_name)
    return value


def parse_time(value: object, field_name: str) -> datetime | None:
    """A time given as text (interfaces): ``YYYY-MM-DD`` (that day's start, UTC) or ISO 8601 (UTC when it
    names no offset); None stays None."""
    if value is None:
        return None
    raw = text(value, field_name, 64).strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError(
            f"{field_name}: {raw!r} is not a date (YYYY-MM-DD) or an ISO 8601 time", field=field_name
        ) from None
    return moment.replace(tzinfo=UTC) if moment.utcoffset() is None else moment
