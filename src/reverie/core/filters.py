"""Checking an ``EntryFilter`` and the cursors of paged listings: pure rules, no I/O.

Invariants:
- ``entry_filter`` returns None for "no filter" (None or an empty filter), else a filter whose every field
  is of its declared type and in range: tags stripped and de-duplicated, tier a ``Tier``, importances in
  [0, 1] with min <= max, subject days ``YYYY``/``YYYY-MM``/``YYYY-MM-DD``, times aware (UTC) with from <
  to, metadata keys of ``METADATA_KEY`` characters and scalar values, flags (``pinned``, ``archived``,
  ``superseded``) True, False or None. A wrong field raises ``ValidationError`` naming it.
- ``reaches_retired``: a filter asking for archived or superseded entries (True) is read with them visible.
- A cursor is opaque to callers: URL-safe base64 of compact JSON holding the listing's order, the last row's
  order key and id, and a fingerprint of what was listed (scope, filter, order). ``decode_cursor`` refuses a
  token that is not one, or that belongs to another listing, with a ``ValidationError`` on ``cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from reverie.core import validate
from reverie.errors import ValidationError
from reverie.types import EntryFilter, MemoryEntry, MetadataScalar, Page, Tier

METADATA_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
MAX_METADATA_KEYS = 20
_DAY = re.compile(r"^\d{4}(?:-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)?$")
_MAX_CURSOR_CHARS = 2000
T = TypeVar("T")


def entry_filter(value: object) -> EntryFilter | None:
    """``value`` checked and normalised (see the module docstring); None when it filters nothing."""
    if value is None:
        return None
    if not isinstance(value, EntryFilter):
        raise ValidationError("filter must be an EntryFilter", field="filter")
    checked = replace(
        value,
        tags_any=_tags(value.tags_any, "tags_any"),
        tags_all=_tags(value.tags_all, "tags_all"),
        source=_text(value.source, "source"),
        tier=None if value.tier is None else validate.tier(value.tier, default=Tier.SEMANTIC),
        importance_min=_unit(value.importance_min, "importance_min"),
        importance_max=_unit(value.importance_max, "importance_max"),
        subject_from=_day(value.subject_from, "subject_from"),
        subject_to=_day(value.subject_to, "subject_to"),
        created_from=moment(value.created_from, "created_from"),
        created_to=moment(value.created_to, "created_to"),
        updated_from=moment(value.updated_from, "updated_from"),
        updated_to=moment(value.updated_to, "updated_to"),
        pinned=_flag(value.pinned, "pinned"),
        archived=_flag(value.archived, "archived"),
        superseded=_flag(value.superseded, "superseded"),
        metadata=_metadata(value.metadata),
    )
    _ordered(checked.importance_min, checked.importance_max, "importance_min", "importance_max")
    _ordered(checked.created_from, checked.created_to, "created_from", "created_to", strict=True)
    _ordered(checked.updated_from, checked.updated_to, "updated_from", "updated_to", strict=True)
    if checked.subject_from is not None and checked.subject_to is not None:
        width = min(len(checked.subject_from), len(checked.subject_to))
        _ordered(checked.subject_from[:width], checked.subject_to[:width], "subject_from", "subject_to")
    return None if checked.empty else checked


def reaches_retired(flt: EntryFilter | None) -> bool:
    """Whether ``flt`` asks for entries a read leaves out by default: archived ones (``archived=True``) or
    replaced ones (``superseded=True``). Such a filter widens the read's visibility as ``include_archived``
    does (the stores' ``visible``), so "only archived" needs no second flag; False values only narrow."""
    return flt is not None and (flt.archived is True or flt.superseded is True)


def _tags(value: object, name: str) -> tuple[str, ...]:
    try:
        return validate.tags(value)
    except ValidationError as exc:
        raise ValidationError(str(exc).replace("tags", name, 1), field=name) from None


def _text(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > validate.MAX_TAG_CHARS:
        raise ValidationError(f"{name} must be a non-empty string of at most 100 characters", field=name)
    return value.strip()


def _unit(value: object, name: str) -> float | None:
    return None if value is None else validate.unit_interval(value, name=name)


def _flag(value: object, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValidationError(f"{name} must be true, false or unset", field=name)


def _day(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _DAY.match(value.strip()):
        raise ValidationError(f"{name} must be a day as YYYY, YYYY-MM or YYYY-MM-DD, got {value!r}", field=name)
    return value.strip()


def moment(value: object, name: str) -> datetime | None:
    """A time: an aware datetime, or ISO 8601 text (a date alone is midnight UTC; no offset is UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValidationError(f"{name} must be an ISO 8601 date or time, got {value!r}", field=name) from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{name} must be a datetime or ISO 8601 text", field=name)
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)


def _ordered(low: Any, high: Any, low_name: str, high_name: str, *, strict: bool = False) -> None:
    if low is None or high is None:
        return
    if low > high or (strict and low == high):
        relation = "before" if strict else "at most"
        raise ValidationError(f"{low_name} must be {relation} {high_name}", field=low_name)


def _metadata(value: object) -> dict[str, MetadataScalar]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("metadata must map keys to scalar values", field="metadata")
    if len(value) > MAX_METADATA_KEYS:
        raise ValidationError(f"metadata: at most {MAX_METADATA_KEYS} keys", field="metadata")
    out: dict[str, MetadataScalar] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not METADATA_KEY.match(key):
            raise ValidationError(f"metadata key {key!r} must be 1-100 letters, digits or _ . : -", field="metadata")
        if item is not None and not isinstance(item, str | int | float | bool):
            raise ValidationError(f"metadata {key!r}: compare a string, number, boolean or null", field="metadata")
        if isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(f"metadata {key!r}: the number must be finite", field="metadata")
        out[key] = item
    return out


def metadata_pairs(pairs: Iterable[str], *, field: str = "metadata") -> dict[str, MetadataScalar]:
    """``KEY=VALUE`` texts (the command line's and the query string's spelling) as a metadata filter. A
    VALUE that reads as a JSON scalar (``5``, ``2.5``, ``true``, ``null``, ``"5"``) is that value; any
    other VALUE is the text itself."""
    out: dict[str, MetadataScalar] = {}
    for pair in pairs:
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise ValidationError(f"{field} must be KEY=VALUE, got {pair!r}", field=field)
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        out[key] = parsed if parsed is None or isinstance(parsed, str | int | float | bool) else text
    return out


def from_text(
    *,
    tags_any: Iterable[str] = (),
    tags_all: Iterable[str] = (),
    source: str | None = None,
    tier: str | None = None,
    importance_min: float | None = None,
    importance_max: float | None = None,
    subject_from: str | None = None,
    subject_to: str | None = None,
    created_from: str | None = None,
    created_to: str | None = None,
    updated_from: str | None = None,
    updated_to: str | None = None,
    pinned: bool | None = None,
    archived: bool | None = None,
    superseded: bool | None = None,
    metadata: Iterable[str] = (),
    metadata_field: str = "metadata",
) -> EntryFilter | None:
    """The filter a face reads as text (query parameters, command-line options): the tier by name, times as ISO
    8601, metadata as ``KEY=VALUE`` pairs (``metadata_pairs``), then checked as ``entry_filter`` does."""
    return entry_filter(
        EntryFilter(
            tags_any=tuple(tags_any),
            tags_all=tuple(tags_all),
            source=source,
            tier=None if tier is None else validate.tier(tier, default=Tier.SEMANTIC),
            importance_min=importance_min,
            importance_max=importance_max,
            subject_from=subject_from,
            subject_to=subject_to,
            created_from=moment(created_from, "created_from"),
            created_to=moment(created_to, "created_to"),
            updated_from=moment(updated_from, "updated_from"),
            updated_to=moment(updated_to, "updated_to"),
            pinned=pinned,
            archived=archived,
            superseded=superseded,
            metadata=metadata_pairs(metadata, field=metadata_field),
        )
    )


# -- cursors -------------------------------------------------------------------------------------------
# A listing's orders: name -> (the entry field it sorts by, descending). Each runs on (key, id), both in the
# same direction. "newest"/"oldest" sort by created_at, which no write changes, so a walk in them is exact
# under any writes; the others sort by fields that writes move (see docs/library.md, "Paging"). "reinforced"
# is the most reinforced first; "cold" the least recently seen first (what retention will let go of next).
ORDERS: dict[str, tuple[str, bool]] = {
    "newest": ("created_at", True),
    "oldest": ("created_at", False),
    "recent": ("last_seen_at", True),
    "updated": ("updated_at", True),
    "importance": ("importance", True),
    "reinforced": ("reinforcement_count", True),
    "cold": ("last_seen_at", False),
}


def order(value: object) -> str:
    if not isinstance(value, str) or value not in ORDERS:
        raise ValidationError(f"order must be one of {', '.join(ORDERS)}, got {value!r}", field="order")
    return value


def order_key(entry: MemoryEntry, name: str) -> str | float | int:
    """The order key of ``entry`` in listing order ``name`` as a cursor holds it: ISO text for a time (the
    last rewrite, or the creation for an entry never rewritten, under "updated"), a number for importance,
    an integer for the reinforcement count."""
    column = ORDERS[name][0]
    if column == "importance":
        return entry.importance
    if column == "reinforcement_count":
        return entry.reinforcement_count
    moment = entry.updated_at or entry.created_at if column == "updated_at" else getattr(entry, column)
    return str(moment.astimezone(UTC).isoformat())


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page ended: the last row's order key (ISO text, a number, or None) and id."""

    key: Any
    id: str


def fingerprint(*parts: object) -> str:
    """A short digest of what a listing lists (its scope, filter and order): a cursor carries it, so a
    cursor used with another listing is refused instead of silently skipping or repeating rows."""
    text = json.dumps([_plain(p) for p in parts], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _plain(value: object) -> object:
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def encode_cursor(cursor: Cursor, listing: str) -> str:
    """The opaque token for ``cursor`` in the listing whose fingerprint is ``listing``."""
    text = json.dumps([listing, cursor.key, cursor.id], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(token: object, listing: str) -> Cursor | None:
    """The position ``token`` holds (None for no token: the first page)."""
    if token is None or token == "":
        return None
    if not isinstance(token, str) or len(token) > _MAX_CURSOR_CHARS:
        raise ValidationError("cursor must be a token from an earlier page's next_cursor", field="cursor")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        owner, key, last = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise ValidationError("cursor is not a token from an earlier page's next_cursor", field="cursor") from None
    if owner != listing:
        raise ValidationError(
            "cursor belongs to another listing (its scope, filter or order differ): start again without it",
            field="cursor",
        )
    if not isinstance(last, str) or not (key is None or isinstance(key, str | int | float)):
        raise ValidationError("cursor is not a token from an earlier page's next_cursor", field="cursor")
    return Cursor(key=key, id=last)


def keyset_page(
    read: Callable[[tuple[Any, str] | None, int], list[T]],
    cursor: object,
    limit: int,
    listing: str,
    position: Callable[[T], tuple[Any, str]],
) -> Page[T]:
    """One page of a keyset listing: ``read(after, n)`` gives up to ``n`` rows strictly after position
    ``after`` (order key and id; None: from the start); ``position`` gives a row's. One row more than
    ``limit`` is read: its presence says whether a next page exists, without a count. ``cursor`` is checked
    against ``listing`` (see ``decode_cursor``)."""
    after = decode_cursor(cursor, listing)
    rows = read(None if after is None else (after.key, after.id), limit + 1)
    items = rows[:limit]
    if len(rows) <= limit:
        return Page(tuple(items), None)
    key, last = position(items[-1])
    return Page(tuple(items), encode_cursor(Cursor(key, last), listing))
