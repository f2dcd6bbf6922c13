"""Skill values: a skill, its versions, its usage and co-usage, and feedback on a session."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill of an agent: a named, reusable procedure (``name`` is a path such as ``mcp/email``).

    ``version`` starts at 1 and grows by one at every write that changes the skill (text, see-also,
    metadata, archive, restore): the compare-and-set handle. ``last_used_at`` moves when a session uses it.
    ``vector`` (float32 bytes, unit length) was embedded by ``vector_model`` from the current text, or is
    None. ``archived_at`` set: hidden, restorable, purged after the archive retention."""

    agent_id: str
    name: str
    summary: str
    content: str
    created_at: datetime
    updated_at: datetime
    see_also: tuple[str, ...] = ()
    last_used_at: datetime | None = None
    archived_at: datetime | None = None
    version: int = 1
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: bytes | None = field(default=None, repr=False)
    vector_model: str | None = None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


@dataclass(frozen=True, slots=True)
class SkillVersion:
    """A skill as one write left it. ``change`` says why (created, edited, archived, restored, reverted,
    merged, …). Version numbers start at 1 and never repeat while the skill exists."""

    agent_id: str
    name: str
    version: int
    change: str
    recorded_at: datetime
    summary: str
    content: str
    see_also: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    archived: bool = False


@dataclass(frozen=True, slots=True)
class SkillUsage:
    """One use of a skill in a session (seed 001's ``ISkillUsageStore``)."""

    agent_id: str
    session_id: str
    name: str
    used_at: datetime


@dataclass(frozen=True, slots=True)
class CoUsage:
    """Two skills used in the same sessions: ``first < second`` (code-point order), ``sessions`` how many."""

    first: str
    second: str
    sessions: int


@dataclass(frozen=True, slots=True)
class Feedback:
    """A quality signal about a session (seed 001's ``IFeedbackStore``): ``kind`` is one of
    ``FEEDBACK_KINDS``; ``rating`` one of ``RATINGS`` for a ``session_summary`` and None otherwise;
    ``comment`` what was wrong or what the user said; ``entry_ids`` and ``skill_names`` what it is about."""

    feedback_id: str
    agent_id: str
    session_id: str
    kind: str
    created_at: datetime
    rating: str | None = None
    comment: str | None = None
    entry_ids: tuple[str, ...] = ()
    skill_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillSaved:
    """What a save did: ``outcome`` is ``created``, ``updated`` or ``unchanged``; ``skill`` as stored now."""

    outcome: str
    skill: Skill
