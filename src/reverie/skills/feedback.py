"""The feedback store (seed 001's ``IFeedbackStore``): quality signals about an agent's sessions, which the
dream reads to improve skills (Pass 4: corrections, sessions rated poor or fair) and to mine anti-patterns and
preferences (seed 000, "Anti-patterns"; Pass 5: the last 7 days of signals).

Signals: ``correction`` (the user corrected the agent), ``session_summary`` (how the session went: poor, fair,
good or excellent), ``stale`` (something recalled was out of date) and ``wrong`` (something recalled or done
was wrong). Each is tied to a session, and optionally to the long-term entries and skills it is about.

Invariants:
- Every argument is validated before the store is touched; a refused call writes nothing.
- Referenced entries and skills must exist and belong to the agent (archived ones count: a signal may well be
  about what was since archived); an id or name of another agent reads as unknown (``NotFound``).
- The log is append-only; rows older than ``log_retention_days`` are purged (0 keeps them forever).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta

from reverie.clock import Clock
from reverie.core import validate
from reverie.errors import NotFound
from reverie.skills import inputs
from reverie.storage.base import Store
from reverie.types import Feedback

log = logging.getLogger("reverie.feedback")
PURGE_EVERY = timedelta(hours=1)
ID_BYTES = 6  # 12 hex characters, as entry ids


class FeedbackStore:
    """Feedback over ``store.feedback``. Thread-safe as the store is."""

    def __init__(self, store: Store, clock: Clock, *, log_retention_days: float = 90.0) -> None:
        self._store = store
        self._clock = clock
        self.log_retention_days = log_retention_days
        self._last_purge: datetime | None = None

    def record(
        self,
        agent_id: str,
        kind: str,
        session_id: str,
        *,
        rating: str | None = None,
        comment: str | None = None,
        entry_ids: Sequence[str] | None = None,
        skill_names: Sequence[str] | None = None,
    ) -> Feedback:
        """Record one signal. ``rating`` is required for a ``session_summary`` and refused for other kinds.
        Raises ``ValidationError``, ``NotFound`` (an entry or skill the agent does not have)."""
        agent_id, session_id = inputs.agent(agent_id), inputs.session(session_id)
        kind = inputs.kind(kind)
        signal = Feedback(
            feedback_id=secrets.token_hex(ID_BYTES),
            agent_id=agent_id,
            session_id=session_id,
            kind=kind,
            created_at=self._clock.now(),
            rating=inputs.rating(rating, kind_=kind),
            comment=inputs.comment(comment),
            entry_ids=inputs.entry_ids(entry_ids),
            skill_names=inputs.skill_names(skill_names),
        )
        with self._store.transaction():
            self._check_references(signal)
            self._store.feedback.add(signal)
        return signal

    def _check_references(self, signal: Feedback) -> None:
        for entry_id in signal.entry_ids:
            owner = self._store.facts.owner(entry_id)
            if owner is None or owner.agent_id != signal.agent_id:
                raise NotFound(f"entry_ids: no entry {entry_id!r} for agent {signal.agent_id!r}")
        for name in signal.skill_names:
            if self._store.skills.get(signal.agent_id, name) is None:
                raise NotFound(f"skill_names: no skill {name!r} for agent {signal.agent_id!r}")

    def get(self, agent_id: str, feedback_id: str) -> Feedback:
        """One signal; ``NotFound`` for an unknown id (another agent's alike)."""
        agent_id = inputs.agent(agent_id)
        feedback_id = validate.identifier(feedback_id, name="feedback_id")
        found = self._store.feedback.get(agent_id, feedback_id)
        if found is None:
            raise NotFound(f"no feedback {feedback_id!r} for agent {agent_id!r}")
        return found

    def list(
        self,
        agent_id: str,
        *,
        days: float | None = None,
        since: datetime | None = None,
        kinds: Sequence[str] | None = None,
        session_id: str | None = None,
        limit: int = 100,
    ) -> list[Feedback]:
        """Signals of the last ``days`` (or since ``since``; all when neither is given), of those kinds, of one
        session, newest first, at most ``limit`` (1 to 1000)."""
        agent_id = inputs.agent(agent_id)
        start = None if since is None else inputs.moment(since, field="since")
        if days is not None:
            start = self._clock.now() - timedelta(days=inputs.days(days))
        sessions = None if session_id is None else [inputs.session(session_id)]
        return self._store.feedback.list(
            agent_id, since=start, kinds=inputs.kinds(kinds), session_ids=sessions, limit=inputs.limit(limit)
        )

    def purge(self) -> int:
        """Hard-delete signals (every agent's) older than ``log_retention_days``; returns how many."""
        if self.log_retention_days <= 0:
            return 0
        return self._store.feedback.purge_before(self._clock.now() - timedelta(days=self.log_retention_days))

    def purge_job(self, now: datetime) -> None:
        """``purge`` at most once per ``PURGE_EVERY`` of ``now``: a job for the dream's serve loop."""
        if self._last_purge is None or now - self._last_purge >= PURGE_EVERY:
            self._last_purge = now
            purged = self.purge()
            if purged:
                log.info("purged %d feedback signals", purged)
