"""The storage contract, part four: the skill store, its usage log, and the feedback store (seed 001's
``ISkillStore``, ``ISkillUsageStore`` and ``IFeedbackStore``, which the dream's skill passes read).

Same rules as ``storage.base``: scope (the agent) is in every query, time is passed in, a failed write
changes nothing, and nothing is hard-deleted outside a purge. ``storage.base`` re-exports every name;
``Store`` exposes ``skills`` and ``feedback``.

- A skill is identified by ``(agent_id, name)``: one row per name, live or archived. Archiving marks it
  (``archived_at``); saving the name again brings it back. Every write that changes a skill bumps its
  ``version`` and records a ``SkillVersion`` row with the new state in the same transaction, so any version
  can be restored. Bookkeeping (``last_used_at``, the vector) moves no version.
- The usage log is append-only: which skills a session used, when. The feedback log is append-only too.
  Both are trimmed only by their purge, after a retention.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol

FEEDBACK_KINDS: Final = ("correction", "session_summary", "stale", "wrong")
RATINGS: Final = ("poor", "fair", "good", "excellent")  # a session_summary's rating, worst first


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


class SkillRepository(Protocol):
    """The skills and the skill-usage log of each agent. Names compare exactly and order by code point."""

    def get(self, agent_id: str, name: str) -> Skill | None:
        """The skill as stored (archived too), or None when the name was never stored (or was purged)."""
        ...

    def put(self, skill: Skill, *, change: str, at: datetime, expected_version: int | None = None) -> Skill:
        """Make ``skill`` the stored state of ``(skill.agent_id, skill.name)``: insert it (version 1) when
        the name is not stored, else replace every field (version: the stored one + 1). ``skill.version``
        is ignored; the returned skill carries the stored version. A ``SkillVersion`` row with the new state,
        ``change`` and ``at`` is recorded in the same transaction.

        ``expected_version``: compare-and-set against the *live* skill — its version must equal it (0: the
        name must not be live, i.e. absent or archived); otherwise ``Conflict`` and nothing changes."""
        ...

    def set_vector(self, agent_id: str, name: str, *, version: int, vector: bytes, model: str) -> bool:
        """Store the vector of the skill's text, only while the skill is still at ``version`` (a vector of
        an older text is dropped: False). No version moves and no version row is written."""
        ...

    def touch(self, agent_id: str, names: Sequence[str], *, at: datetime) -> int:
        """Move ``last_used_at`` of the live skills among ``names`` to ``at`` (never backwards); returns how
        many moved. No version moves."""
        ...

    def list(
        self,
        agent_id: str,
        prefix: str = "",
        *,
        include_archived: bool = False,
        limit: int = 1000,
        after: str | None = None,
    ) -> builtins.list[Skill]:
        """Skills whose name starts with ``prefix`` (plain characters: ``%`` and ``_`` are not wildcards),
        live ones only unless ``include_archived``, in name order, names after ``after`` only, at most
        ``limit``."""
        ...

    def count(self, agent_id: str, *, include_archived: bool = False) -> int:
        """How many skills the agent holds (live ones unless ``include_archived``)."""
        ...

    def history(self, agent_id: str, name: str) -> builtins.list[SkillVersion]:
        """Every version of the skill, oldest first; empty when the name is not stored."""
        ...

    def version(self, agent_id: str, name: str, version: int) -> SkillVersion | None: ...

    def purge_archived(self, before: datetime) -> int:
        """Hard-delete skills (every agent's) archived at or before ``before``, with their version rows;
        returns how many skills."""
        ...

    # -- the usage log
    def add_usage(self, rows: Sequence[SkillUsage]) -> None:
        """Append usage rows (in one transaction)."""
        ...

    def usage(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        session_ids: Sequence[str] | None = None,
        name: str | None = None,
        limit: int = 1000,
    ) -> builtins.list[SkillUsage]:
        """Usage rows at or after ``since``, of those sessions, of that skill (each filter when given),
        newest first (insertion order breaks ties), at most ``limit``."""
        ...

    def usage_counts(self, agent_id: str, since: datetime) -> dict[str, int]:
        """Uses at or after ``since`` per skill that is live now; skills with no use are left out."""
        ...

    def co_usage(self, agent_id: str, since: datetime, limit: int) -> builtins.list[CoUsage]:
        """Pairs of skills live now that were both used in a session at or after ``since``, with how many
        such sessions; most sessions first, then by the two names; at most ``limit``."""
        ...

    def purge_usage(self, before: datetime) -> int:
        """Hard-delete usage rows (every agent's) older than ``before``; returns how many."""
        ...


class FeedbackRepository(Protocol):
    """The feedback log of each agent."""

    def add(self, feedback: Feedback) -> None:
        """Append; ``Conflict`` when the id exists."""
        ...

    def get(self, agent_id: str, feedback_id: str) -> Feedback | None: ...

    def list(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        kinds: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[Feedback]:
        """Signals at or after ``since``, of those kinds, of those sessions (each filter when given), newest
        first (insertion order breaks ties), at most ``limit``."""
        ...

    def purge_before(self, before: datetime) -> int:
        """Hard-delete signals (every agent's) recorded before ``before``; returns how many."""
        ...
