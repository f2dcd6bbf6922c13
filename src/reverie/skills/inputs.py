"""The checks every argument of the skill and feedback stores passes before the store is touched. Each returns
the clean value or raises ``ValidationError`` naming the field, so a refused call writes nothing.

Rules:
- A skill name is a path of lower-case segments of letters, digits, ``-`` and ``_`` joined by ``/``
  (``mcp/email``, ``summarize-emails``), at most ``MAX_NAME_CHARS`` characters. A name prefix is the same,
  with an optional trailing ``/``.
- A summary is one line of text (no control characters), 1 to ``MAX_SUMMARY_CHARS`` characters; content is
  non-empty text (line breaks and tabs allowed, no other control character) up to the configured maximum.
- ``see_also`` is a list of at most ``MAX_SEE_ALSO`` names, de-duplicated in order, the skill itself dropped.
- Feedback: ``kind`` one of ``FEEDBACK_KINDS``; a ``session_summary`` needs a ``rating`` (``RATINGS``), the
  other kinds take none; a comment is text up to ``MAX_COMMENT_CHARS``; at most ``MAX_REFERENCES`` entry ids
  and skill names, each list de-duplicated in order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Final

from reverie.core import validate
from reverie.errors import ValidationError
from reverie.storage.skills import FEEDBACK_KINDS, RATINGS

MAX_NAME_CHARS: Final = 200
MAX_SUMMARY_CHARS: Final = 1000
MAX_SEE_ALSO: Final = 50
MAX_COMMENT_CHARS: Final = 10_000
MAX_REFERENCES: Final = 100
MAX_LIST_LIMIT: Final = 1000
NAME_PATTERN: Final = re.compile(r"^[a-z0-9_-]+(?:/[a-z0-9_-]+)*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # \t, \n and \r allowed


def agent(value: object) -> str:
    return validate.identifier(value, name="agent_id")


def session(value: object) -> str:
    return validate.identifier(value, name="session_id")


def name(value: object, *, field: str = "name") -> str:
    """A skill name (see the module rules)."""
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field=field)
    if len(value) > MAX_NAME_CHARS:
        raise ValidationError(f"{field} is longer than {MAX_NAME_CHARS} characters", field=field)
    if not NAME_PATTERN.fullmatch(value):
        raise ValidationError(
            f"{field} {value[:80]!r} must be a path of lower-case letters, digits, '-' and '_' segments joined by"
            " '/' (no empty segment, no leading or trailing '/'), e.g. 'mcp/email' or 'summarize-emails'",
            field=field,
        )
    return value


def prefix(value: object) -> str:
    """A name prefix: "" (every skill) or a name, a trailing "/" allowed and dropped."""
    if value is None or value == "":
        return ""
    if isinstance(value, str) and value.endswith("/"):
        value = value[:-1]
    return name(value, field="prefix")


def summary(value: object) -> str:
    text = _text(value, "summary", MAX_SUMMARY_CHARS, _CONTROL)
    if not text.strip():
        raise ValidationError("summary is empty", field="summary")
    return text


def content(value: object, *, max_chars: int) -> str:
    text = _text(value, "content", max_chars, _TEXT_CONTROL)
    if not text.strip():
        raise ValidationError("content is empty", field="content")
    return text


def see_also(value: object, *, own: str) -> tuple[str, ...]:
    """Related skill names, de-duplicated in order, without the skill's own name."""
    names = _names(value, "see_also", MAX_SEE_ALSO)
    return tuple(n for n in names if n != own)


def skill_names(value: object, *, field: str = "skill_names") -> tuple[str, ...]:
    return _names(value, field, MAX_REFERENCES)


def entry_ids(value: object) -> tuple[str, ...]:
    ids = _strings(value, "entry_ids", MAX_REFERENCES)
    return tuple(dict.fromkeys(validate.identifier(i, name="entry_ids") for i in ids))


def kind(value: object) -> str:
    if value not in FEEDBACK_KINDS:
        raise ValidationError(f"kind must be one of {', '.join(FEEDBACK_KINDS)}", field="kind")
    return str(value)


def rating(value: object, *, kind_: str) -> str | None:
    """The rating a signal of ``kind_`` carries: required for a session_summary, refused for the others."""
    if kind_ != "session_summary":
        if value is not None:
            raise ValidationError(f"a {kind_} signal takes no rating (only session_summary does)", field="rating")
        return None
    if value not in RATINGS:
        raise ValidationError(f"a session_summary needs a rating: one of {', '.join(RATINGS)}", field="rating")
    return str(value)


def comment(value: object) -> str | None:
    if value is None:
        return None
    text = _text(value, "comment", MAX_COMMENT_CHARS, _TEXT_CONTROL)
    return text if text.strip() else None


def kinds(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(kind(k) for k in _strings(value, "kinds", len(FEEDBACK_KINDS) * 4))


def limit(value: object) -> int:
    return validate.limit(value, maximum=MAX_LIST_LIMIT)


def version(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError("version must be a whole number from 1", field="version")
    return value


def expected_version(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError("expected_version must be a whole number from 0", field="expected_version")
    return value


def days(value: object, *, field: str = "days") -> float:
    """A positive number of days (at most 100 years)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 36_525:
        raise ValidationError(f"{field} must be a number of days above 0 (at most 36525)", field=field)
    return float(value)


def moment(value: object, *, field: str) -> datetime:
    """A timezone-aware datetime."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError(f"{field} must be a timezone-aware datetime", field=field)
    return value


def _text(value: object, field: str, max_chars: int, control: re.Pattern[str]) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a string", field=field)
    if len(value) > max_chars:
        raise ValidationError(f"{field} is {len(value):,} characters; the maximum is {max_chars:,}", field=field)
    if control.search(value):
        raise ValidationError(f"{field} contains a control character", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{field} is not valid Unicode text (lone surrogate)", field=field) from None
    return value


def _strings(value: object, field: str, most: int) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ValidationError(f"{field} must be a list of strings", field=field)
    items = list(value)
    if len(items) > most:
        raise ValidationError(f"{field} holds {len(items)} items; at most {most}", field=field)
    for item in items:
        if not isinstance(item, str):
            raise ValidationError(f"{field} must hold strings only", field=field)
    return items


def _names(value: object, field: str, most: int) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for item in _strings(value, field, most):
        out.setdefault(name(item, field=field), None)
    return tuple(out)
