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
from datetime import datetime
from typing import Final, Protocol

from reverie.types.skills import CoUsage, Feedback, Skill, SkillUsage, SkillVersion

FEEDBACK_KINDS: Final = ("correction", "session_summary", "stale", "wrong")
RATINGS: Final = ("poor", "fair", "good", "excellent")  # a session_summary's rating, worst first


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

    def history_page(self, agent_id: str, name: str, after: int | None, limit: int) -> builtins.list[SkillVersion]:
        """Up to ``limit`` versions of the skill numbered above ``after`` (None: from the first), oldest first.
        Keyset, never an offset."""
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
