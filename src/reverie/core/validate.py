"""Input validation shared by every entry point. Each function returns the clean value or raises
``ValidationError`` naming the field; none of them touches storage, so a rejected call changes nothing.

Caller JSON (memory and skill metadata, graph properties, key-value values, tool-call arguments, a turn's
tool calls) passes one check, ``json_shape``: at most ``MAX_JSON_DEPTH`` levels of arrays and objects, string
keys, finite numbers, no NUL and no lone surrogate anywhere. It walks the value with an explicit stack, never
by recursion, so a value nested 100,000 deep is a ``ValidationError`` like any other; a value it passes is
shallow enough for every JSON codec the engine uses (``json``, pydantic's serialiser, jsonb) to handle.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from reverie.core.subject_time import subject_time_problem
from reverie.errors import ValidationError
from reverie.types import RESERVED_AGENT_PREFIX, USER_AGENT_PREFIX, Scope, Tier, is_user_agent

CATEGORY_PATTERN = re.compile(r"^[a-z0-9_-]+(?:/[a-z0-9_-]+)*$")
MAX_CATEGORY_CHARS = 200
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_ID_CHARS = 200
MAX_METADATA_BYTES = 64_000
# Levels of arrays and objects in a caller's JSON value (the value itself is the first). Far more than any real
# value needs, and far below where a recursive codec fails: pydantic's serialiser refuses ~255 levels, json's
# C code and the interpreter's recursion limit about 1,000.
MAX_JSON_DEPTH: Final = 64
# How far past the clock's now an observed time may be (another machine's clock running ahead); such a time
# is taken as now, never later.
OBSERVED_AT_TOLERANCE = timedelta(minutes=5)
# Unicode control characters (category Cc): the C0 and C1 ranges and DEL.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def content(value: object, *, max_chars: int) -> str:
    """Non-empty text of at most ``max_chars`` characters, valid UTF-8; kept exactly as given."""
    if not isinstance(value, str):
        raise ValidationError("content must be a string", field="content")
    if not value.strip():
        raise ValidationError("content is empty", field="content")
    if "\x00" in value:
        # PostgreSQL text cannot hold NUL, and no fact needs one: refuse it on every backend alike.
        raise ValidationError("content contains a NUL character", field="content")
    if len(value) > max_chars:
        raise ValidationError(f"content is {len(value):,} characters; the maximum is {max_chars:,}", field="content")
    _utf8(value, "content")
    return value


MAX_QUERY_CHARS = 30_000


def query(value: object) -> str:
    """Search text: any string; a longer one is cut to ``MAX_QUERY_CHARS`` rather than refused."""
    if not isinstance(value, str):
        raise ValidationError("query must be a string", field="query")
    value = value[:MAX_QUERY_CHARS]
    _utf8(value, "query")
    return value


def category(value: object, *, default: str) -> str:
    """A relative path of lower-case letters, digits, ``-``, ``_`` and ``/``; ``default`` when None."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise ValidationError("category must be a string", field="category")
    if len(value) > MAX_CATEGORY_CHARS:
        raise ValidationError(f"category is longer than {MAX_CATEGORY_CHARS} characters", field="category")
    if not CATEGORY_PATTERN.fullmatch(value):
        raise ValidationError(
            f"category {value!r} must be a relative path of lower-case letters, digits, '-', '_' and '/' "
            "(no '..', no leading or trailing '/', no empty segment), e.g. 'user-preferences/timezone'",
            field="category",
        )
    return value


def category_prefix(value: object) -> str | None:
    """A category filter: the same shape as a category, a trailing '/' allowed; None means no filter."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.endswith("/"):
        value = value[:-1]
    return category(value, default="")


def tags(value: object) -> tuple[str, ...]:
    """Strings, stripped, de-duplicated in order; empty strings dropped."""
    if value is None:
        return ()
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        raise ValidationError("tags must be a list of strings", field="tags")
    out: dict[str, None] = {}
    for tag in value:
        if not isinstance(tag, str):
            raise ValidationError(f"tag {tag!r} is not a string", field="tags")
        clean = tag.strip()
        if len(clean) > MAX_TAG_CHARS or _CONTROL.search(clean):
            raise ValidationError(f"tag {clean[:40]!r} is too long or has control characters", field="tags")
        _utf8(clean, "tags")
        if clean:
            out.setdefault(clean, None)
    if len(out) > MAX_TAGS:
        raise ValidationError(f"at most {MAX_TAGS} tags", field="tags")
    return tuple(out)


def unit_interval(value: object, *, name: str) -> float:
    """A real number in [0, 1] (booleans and NaN refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number between 0 and 1", field=name)
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValidationError(f"{name} must be between 0 and 1, got {value!r}", field=name)
    return number


def tier(value: object, *, default: Tier) -> Tier:
    if value is None:
        return default
    try:
        return Tier(str(value))
    except ValueError:
        names = ", ".join(t.value for t in Tier)
        raise ValidationError(f"tier must be one of {names}, got {value!r}", field="tier") from None


def identifier(value: object, *, name: str) -> str:
    """A non-empty id of printable characters (agent, user, session and entry ids)."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string", field=name)
    if len(value) > MAX_ID_CHARS or not value.isprintable() or value != value.strip():
        raise ValidationError(
            f"{name} must be at most {MAX_ID_CHARS} printable characters without surrounding spaces",
            field=name,
        )
    _utf8(value, name)
    return value


def agent_id(value: object, *, name: str = "agent_id") -> str:
    """An agent id a caller may use: an identifier that does not start with ``@`` (reserved for the
    engine's own scopes, such as proactive memory's user-level ``@user/<id>``)."""
    clean = identifier(value, name=name)
    if clean.startswith(RESERVED_AGENT_PREFIX):
        raise ValidationError(
            f"{name} {clean!r} is reserved: agent ids starting with {RESERVED_AGENT_PREFIX!r} belong to the engine",
            field=name,
        )
    return clean


def scope(value: object) -> Scope:
    """The scope of a public call: every id valid, the agent id not a reserved one (``agent_id``)."""
    clean = internal_scope(value)
    agent_id(clean.agent_id)
    return clean


def internal_scope(value: object) -> Scope:
    """A scope the engine's own services use: as ``scope``, but a reserved agent id (a user's ``@user/<id>``)
    is allowed (its user part is checked as an id: the prefix does not count against the length). Interfaces
    never call it."""
    if value is None:
        return Scope()
    if not isinstance(value, Scope):
        raise ValidationError("scope must be a reverie.Scope", field="scope")
    agent = value.agent_id
    if isinstance(agent, str) and is_user_agent(agent):
        identifier(agent[len(USER_AGENT_PREFIX) :], name="agent_id")
    else:
        identifier(agent, name="agent_id")
    if value.user_id is not None:
        identifier(value.user_id, name="user_id")
    if value.session_id is not None:
        identifier(value.session_id, name="session_id")
    return value


def metadata(value: object) -> dict[str, Any]:
    """A JSON object with string keys (``json_object``), at most ``MAX_METADATA_BYTES`` when serialised."""
    return json_object(value, field="metadata", max_bytes=MAX_METADATA_BYTES)


def json_object(value: object, *, field: str, max_bytes: int) -> dict[str, Any]:
    """A JSON object (``json_shape``) of at most ``max_bytes`` UTF-8 bytes as compact JSON, as it reads back
    from JSON (a fresh copy: tuples become lists, any mapping a dict); ``{}`` for None."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{field} must be a mapping of strings to JSON values", field=field)
    encoded = json_text(value, field=field)
    if len(encoded.encode("utf-8")) > max_bytes:
        raise ValidationError(f"{field} is larger than {max_bytes} bytes", field=field)
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


def json_text(value: object, *, field: str) -> str:
    """``value`` checked by ``json_shape``, then serialised as compact JSON (non-ASCII kept)."""
    json_shape(value, field=field)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_as_dict)
    except (TypeError, ValueError) as exc:  # what the walk cannot see, e.g. an int too long to print
        raise ValidationError(f"{field} is not JSON-serialisable: {exc}", field=field) from None


def _as_dict(value: object) -> object:
    # json.dumps writes only dicts as objects; json_shape accepted any Mapping.
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_shape(value: object, *, field: str) -> None:
    """Raise ``ValidationError`` naming ``field`` unless ``value`` is JSON that every backend can hold: null,
    booleans, whole and finite numbers, strings without NUL or lone surrogates, lists (or tuples) and mappings
    with string keys, nested at most ``MAX_JSON_DEPTH`` levels of arrays and objects. Iterative: the depth of
    the value costs no stack, and a value that contains itself is too deep rather than an endless walk."""
    pending: list[tuple[object, int]] = [(value, 1)]  # (a value, the level a container there would be at)
    while pending:
        item, level = pending.pop()
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise ValidationError(f"{field} contains NaN or an infinity, which JSON cannot hold", field=field)
            continue
        if isinstance(item, str):
            _json_string(item, field)
            continue
        if not isinstance(item, list | tuple | Mapping):
            raise ValidationError(f"{field} holds a {type(item).__name__}, which is not JSON", field=field)
        if level > MAX_JSON_DEPTH:
            raise too_deep(field)
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if not isinstance(key, str):
                    raise ValidationError(f"{field} has a non-string object key {key!r:.40}", field=field)
                _json_string(key, field)
                pending.append((inner, level + 1))
        else:
            pending.extend((inner, level + 1) for inner in item)


def too_deep(field: str) -> ValidationError:
    """The error for JSON nested past ``MAX_JSON_DEPTH``: what ``json_shape`` raises, and what an interface
    says when its own JSON decoder runs out of recursion first (~1,000 levels: past the limit all the same)."""
    return ValidationError(f"{field} is nested deeper than {MAX_JSON_DEPTH} levels", field=field)


def _json_string(text: str, field: str) -> None:
    if "\x00" in text:
        # PostgreSQL's jsonb cannot hold NUL: refuse it on every backend alike.
        raise ValidationError(f"{field} contains a NUL character", field=field)
    _utf8(text, field)


def subject_time(value: Mapping[str, Any]) -> None:
    """Raise unless the subject-time keys of a save's metadata (``core.subject_time``) are well formed: each
    ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` or an ISO 8601 date and time, and a start not after its end."""
    problem = subject_time_problem(value)
    if problem is not None:
        key, message = problem
        raise ValidationError(message, field=f"metadata.{key}")


def observed_at(value: object, *, now: datetime, name: str = "observed_at") -> datetime:
    """When a saved fact was observed, in UTC: ``now`` when None; otherwise a timezone-aware datetime or an ISO
    8601 string with an offset (``2023-05-08T13:56:00+00:00``, ``…Z``), at most ``OBSERVED_AT_TOLERANCE``
    after ``now`` (and then taken as ``now``). A naive time is refused: it could mean any zone."""
    if value is None:
        return now
    shown = (
        value.isoformat() if isinstance(value, datetime) else repr(value[:40] if isinstance(value, str) else value)[:80]
    )
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValidationError(
                f"{name} must be an ISO 8601 date and time with an offset, e.g. 2023-05-08T13:56:00+00:00; got {shown}",
                field=name,
            ) from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{name} must be a timezone-aware datetime, got {shown}", field=name)
    if value.utcoffset() is None:
        raise ValidationError(
            f"{name} {shown} has no timezone, so it could mean any zone: give an offset "
            "(2023-05-08T13:56:00+00:00, or Z for UTC)",
            field=name,
        )
    try:
        when = value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(f"{name} {shown} is out of range", field=name) from None
    if when - now > OBSERVED_AT_TOLERANCE:
        raise ValidationError(
            f"{name} {when.isoformat()} is in the future (now is {now.isoformat()}): a fact cannot be observed "
            "after it is saved",
            field=name,
        )
    return min(when, now)


def has_nul(value: object) -> bool:
    """Whether a JSON-able value holds a NUL character in any string or key (PostgreSQL refuses those).
    Iterative, so any depth is fine (a value that contains itself is walked once per container)."""
    pending: list[object] = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, Mapping):
                pending.extend(item.keys())
                pending.extend(item.values())
            else:
                pending.extend(item)
    return False


def flag(value: object, *, name: str) -> bool:
    """A true/false option: a bool, nothing else (1, "yes" and None are refused)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false", field=name)
    return value


def optional_text(value: object, *, name: str) -> str | None:
    """A string or None; anything else is refused."""
    if value is None or isinstance(value, str):
        return value
    raise ValidationError(f"{name} must be a string", field=name)


def limit(value: object, *, maximum: int = 1000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValidationError(f"limit must be a whole number from 1 to {maximum}", field="limit")
    return value


def _utf8(value: str, name: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} is not valid Unicode text (lone surrogate)", field=name) from None
