"""The skill-usage log (seed 001's ``ISkillUsageStore``) and the signals the dream's skill passes read from it:
usage counts, co-used pairs, and the skills at risk (used in sessions that went badly).

Invariants:
- ``record`` takes only live skills of the agent (an unknown, archived or other agent's name is ``NotFound``
  and nothing is written); its rows and the skills' ``last_used_at`` are written in one transaction.
- Windows are measured back from the clock: ``days`` None means ``usage_window_days`` (30, seed 001).
- Counts, pairs and risks concern skills live now; a skill merged away no longer counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reverie.clock import Clock
from reverie.errors import NotFound, ValidationError
from reverie.skills import inputs
from reverie.storage.base import Store
from reverie.types import CoUsage, Feedback, Skill, SkillUsage

# The failure signals of seed 001's Pass 4: an explicit correction, or a session summary rated poor or fair.
FAILING_RATINGS = ("poor", "fair")


@dataclass(frozen=True, slots=True)
class AtRisk:
    """A live skill used in sessions with failure signals, and those signals (newest first): the failure
    context the optimisation pass shows next to it."""

    skill: Skill
    sessions: tuple[str, ...]
    feedback: tuple[Feedback, ...]


def failing(signal: Feedback) -> bool:
    """A correction, or a session summary rated poor or fair."""
    return signal.kind == "correction" or (signal.kind == "session_summary" and signal.rating in FAILING_RATINGS)


class SkillUsageLog:
    """Usage rows over ``store.skills``. Thread-safe as the store is."""

    def __init__(self, store: Store, clock: Clock, *, window_days: float, pairs: int) -> None:
        self._store = store
        self._clock = clock
        self._window_days = window_days
        self._pairs = pairs

    def since(self, days: float | None) -> datetime:
        """The start of a window of ``days`` (None: the usage window) ending now."""
        span = self._window_days if days is None else inputs.days(days)
        return self._clock.now() - timedelta(days=span)

    def record(self, agent_id: str, session_id: str, names: Sequence[str]) -> list[SkillUsage]:
        """Log that session ``session_id`` used each of ``names`` (once per name per call) and move their
        ``last_used_at``. Raises ``ValidationError``, ``NotFound`` (a name that is not a live skill)."""
        agent_id, session_id = inputs.agent(agent_id), inputs.session(session_id)
        wanted = inputs.skill_names(names, field="names")
        if not wanted:
            raise ValidationError("names is empty: name at least one skill the session used", field="names")
        now = self._clock.now()
        rows = [SkillUsage(agent_id, session_id, name, now) for name in wanted]
        with self._store.transaction():
            missing = [n for n in wanted if not _live(self._store.skills.get(agent_id, n))]
            if missing:
                raise NotFound(f"no live skill {', '.join(map(repr, missing))} for agent {agent_id!r}")
            self._store.skills.add_usage(rows)
            self._store.skills.touch(agent_id, wanted, at=now)
        return rows

    def rows(
        self,
        agent_id: str,
        *,
        session_id: str | None = None,
        name: str | None = None,
        days: float | None = None,
        limit: int = 100,
    ) -> list[SkillUsage]:
        """Usage rows of the window, of one session and/or skill when given, newest first."""
        agent_id = inputs.agent(agent_id)
        sessions = None if session_id is None else [inputs.session(session_id)]
        skill = None if name is None else inputs.name(name)
        return self._store.skills.usage(
            agent_id, since=self.since(days), session_ids=sessions, name=skill, limit=inputs.limit(limit)
        )

    def counts(self, agent_id: str, live: Sequence[Skill], *, days: float | None = None) -> dict[str, int]:
        """Uses in the window of every skill in ``live`` (the agent's live skills), 0 included, in name order."""
        used = self._store.skills.usage_counts(inputs.agent(agent_id), self.since(days))
        return {s.name: used.get(s.name, 0) for s in sorted(live, key=lambda s: s.name)}

    def co_usage(self, agent_id: str, *, days: float | None = None, limit: int | None = None) -> list[CoUsage]:
        """The pairs of live skills used in the same sessions in the window, most shared sessions first, at
        most ``limit`` (default ``co_usage_pairs``: 10, seed 001)."""
        most = self._pairs if limit is None else inputs.limit(limit)
        return self._store.skills.co_usage(inputs.agent(agent_id), self.since(days), most)

    def at_risk(self, agent_id: str, *, days: float | None = None) -> list[AtRisk]:
        """Live skills used in sessions that have a failure signal (``failing``) in the window, each with
        the sessions and the signals; in name order."""
        agent_id = inputs.agent(agent_id)
        since = self.since(days)
        signals = [
            f
            for f in self._store.feedback.list(agent_id, since=since, kinds=["correction", "session_summary"])
            if failing(f)
        ]
        if not signals:
            return []
        by_session: dict[str, list[Feedback]] = {}
        for signal in signals:
            by_session.setdefault(signal.session_id, []).append(signal)
        used: dict[str, set[str]] = {}
        for row in self._store.skills.usage(agent_id, session_ids=sorted(by_session), limit=100_000):
            used.setdefault(row.name, set()).add(row.session_id)
        # A signal that names a skill counts against it even when the usage row is missing (or older).
        for signal in signals:
            for name in signal.skill_names:
                used.setdefault(name, set()).add(signal.session_id)
        out = []
        for name in sorted(used):
            skill = self._store.skills.get(agent_id, name)
            if not _live(skill) or skill is None:
                continue
            sessions = tuple(sorted(used[name]))
            context = sorted((f for s in sessions for f in by_session[s]), key=lambda f: f.created_at, reverse=True)
            out.append(AtRisk(skill, sessions, tuple(context)))
        return out


def _live(skill: Skill | None) -> bool:
    return skill is not None and not skill.archived
