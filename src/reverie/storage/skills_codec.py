"""What the skill and feedback repositories of both backends share (``storage.skills``). Pure functions.

Invariants:
- JSON columns (see-also, metadata, entry ids, skill names) are encoded by ``kv_codec.dumps``, and
  text is checked for NUL, so a value one backend cannot hold is refused on both, before any statement runs.
- A compare-and-set refusal reads the same on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reverie.errors import ValidationError
from reverie.storage.kv_codec import dumps
from reverie.types import Feedback, Skill


def cas_refusal(name: str, live_version: int | None, expected: int | None) -> str | None:
    """Why a put with ``expected`` must fail against the live version (None: not live), or None."""
    if expected is None or expected == (live_version or 0):
        return None
    if live_version is None:
        return f"skill {name!r} does not exist (expected version {expected})"
    wanted = "absent" if expected == 0 else str(expected)
    return f"skill {name!r} is at version {live_version} (expected {wanted})"


def encode(skill: Skill) -> tuple[str, str]:
    """The skill's see-also list and metadata as JSON text; ``ValidationError`` (before any statement) for
    what a backend could not store: a NUL character in any text (PostgreSQL's text and jsonb refuse it)."""
    for name in ("agent_id", "name", "summary", "content"):
        if "\x00" in getattr(skill, name):
            raise ValidationError(f"{name} must not contain a NUL character", field=name)
    return dumps(list(skill.see_also), field="see_also"), dumps(skill.metadata, field="metadata")


def names_json(values: Sequence[str], *, field: str) -> str:
    return dumps(list(values), field=field)


def decoded_list(value: Any) -> tuple[str, ...]:
    """A JSON array column (already decoded) as a tuple of strings."""
    return tuple(str(v) for v in (value or ()))


def encode_feedback(feedback: Feedback) -> tuple[str, str]:
    """The signal's entry ids and skill names as JSON text; ``ValidationError`` for a NUL in any text."""
    for name in ("feedback_id", "agent_id", "session_id", "kind", "rating", "comment"):
        value = getattr(feedback, name)
        if value is not None and "\x00" in value:
            raise ValidationError(f"{name} must not contain a NUL character", field=name)
    return names_json(feedback.entry_ids, field="entry_ids"), names_json(feedback.skill_names, field="skill_names")
