"""The dream service (seeds 001, 003, 004): runs the passes of a dream cycle for an agent, on a schedule, behind
LibreFang's gates, with status, trigger and abort controls that work across processes.

Gates, in order: dreaming enabled (globally and for the agent) → time since the agent's last dream
(``min_hours``) → sessions active since then (``min_sessions``) → the agent's dream lock. A manual trigger
bypasses the time and activity gates, never the opt-in or the lock.

Invariants:
- One dream per agent at a time, across processes: the lock is a lease in the store, renewed at every
  checkpoint; a crashed holder's lease expires after ``lease_seconds`` (on PostgreSQL the lock is also an
  advisory lock, freed as soon as the holder's process dies). A scheduled or idle run checks its gates again
  once it holds the lock, so a dream another worker completed in between is not run a second time.
- A dream that completes advances the agent's ``last_dream_at`` (the time gate); one that fails, is
  aborted or is cancelled leaves it where it was, so the gate reopens and the next tick retries.
- A pass whose capability is missing is skipped; a pass that raises is reported failed and the cycle goes
  on to the next pass (best effort), but the run then counts as failed.
- The service never queues an LLM call behind a user's turn: while ``llm.busy`` it polls every
  ``busy_poll_seconds``.
- Every run is recorded (``store.dream`` runs): phase, current pass, progress, tokens, cost and the pass
  reports — the status page and the audit trail.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.coverage import Vocabulary
from reverie.dream.ledger import DreamPassLedger
from reverie.dream.passes.base import Capability, DreamPass, DreamStopped, PassContext, PassReport
from reverie.dream.schedule import Schedule
from reverie.errors import ValidationError
from reverie.llm.base import LLM
from reverie.llm.usage import agent_context
from reverie.runtime.background import BackgroundService
from reverie.storage.base import Store
from reverie.types import DreamRun

log = logging.getLogger("reverie.dream")
TRIGGERS = ("scheduled", "manual", "idle")
_ENABLED_KEY = "dream.enabled."


@dataclass(frozen=True, slots=True)
class DreamConfig:
    enabled: bool = True
    min_hours: float = 1.0
    min_sessions: int = 0
    lease_seconds: float = 600.0
    busy_poll_seconds: float = 5.0
    idle_trigger: bool = False
    idle_window_seconds: float = 300.0
    schedule: Schedule = Schedule()
    runs_retention_days: float = 400.0
    configured_agents: frozenset[str] = frozenset()  # each agent with its own [agents.<id>] section


@dataclass(frozen=True, slots=True)
class DreamRunReport:
    """What one ``run`` did. ``phase``: ``completed``, ``failed``, ``aborted``, ``cancelled`` or ``skipped``
    (a gate was closed: ``reason`` says which, and no run was recorded)."""

    agent_id: str
    trigger: str
    phase: str
    started_at: datetime
    run_id: str | None = None
    reason: str = ""
    finished_at: datetime | None = None
    passes: dict[str, PassReport] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.passes.values())

    @property
    def llm_calls(self) -> int:
        return sum(p.llm_calls for p in self.passes.values())

    @property
    def cost(self) -> float:
        return sum(p.cost for p in self.passes.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "trigger": self.trigger,
            "phase": self.phase,
            "reason": self.reason,
            "started_at": self.started_at.isoformat(),
            "finished_at": None if self.finished_at is None else self.finished_at.isoformat(),
            "tokens": self.tokens,
            "llm_calls": self.llm_calls,
            "cost": self.cost,
            "passes": {name: p.as_dict() for name, p in self.passes.items()},
        }


@dataclass(frozen=True, slots=True)
class DreamStatus:
    """An agent's dream state as every process sees it."""

    agent_id: str
    enabled: bool
    running: bool
    last_dream_at: datetime | None
    abort_requested: bool
    run: DreamRun | None  # the latest run (its phase, current pass, progress, tokens, cost)

    def as_dict(self) -> dict[str, Any]:
        run = self.run
        return {
            "agent_id": self.agent_id,
            "enabled": self.enabled,
            "running": self.running,
            "last_dream_at": None if self.last_dream_at is None else self.last_dream_at.isoformat(),
            "abort_requested": self.abort_requested,
            "run": None
            if run is None
            else {
                "run_id": run.run_id,
                "trigger": run.trigger,
                "phase": run.phase,
                "current_pass": run.current_pass,
                "progress": run.progress,
                "tokens": run.tokens,
                "cost": run.cost,
                "started_at": run.started_at.isoformat(),
                "finished_at": None if run.finished_at is None else run.finished_at.isoformat(),
                "error": run.error,
            },
        }


class DreamService(BackgroundService):
    """Runs dream cycles. ``run`` does one now (in the caller's thread); ``start`` serves the schedule in a
    background thread (``reverie dream serve``)."""

    thread_name = "reverie-dream"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        passes: Sequence[DreamPass],
        *,
        config: DreamConfig,
        ledger: DreamPassLedger,
        home: Path,
        llm: LLM | None,
        capabilities: frozenset[Capability],
        vocabulary: Callable[[], Vocabulary],
        embedding_model: str | None,
        jobs: Sequence[Callable[[datetime], object]] = (),
    ) -> None:
        """``jobs``: other scheduled work the serve loop drives (the memory audit), each called with now on
        every loop turn and deciding for itself whether it is due."""
        super().__init__()
        self._store = store
        self._clock = clock
        self.passes = list(passes)
        self.config = config
        self.ledger = ledger
        self._home = home
        self._llm = llm
        self.capabilities = capabilities
        self._vocabulary = vocabulary
        self._model = embedding_model
        self._jobs = list(jobs)

    # -- controls ---------------------------------------------------------------------------------------
    def agent_enabled(self, agent_id: str) -> bool:
        return self._store.meta.get(_ENABLED_KEY + validate.identifier(agent_id, name="agent_id")) != "0"

    def set_enabled(self, agent_id: str, enabled: bool) -> None:
        """Opt an agent in or out of dreaming (every agent is in by default while ``[dream] enabled``)."""
        if not isinstance(enabled, bool):
            raise ValidationError("enabled must be true or false", field="enabled")
        self._store.meta.set(_ENABLED_KEY + validate.identifier(agent_id, name="agent_id"), "1" if enabled else "0")

    def abort(self, agent_id: str = "default") -> bool:
        """Ask the agent's running dream to stop at its next checkpoint (from any process). The lock is then
        rolled back, so the time gate reopens. False when no dream is running."""
        agent = validate.identifier(agent_id, name="agent_id")
        state = self._store.dream.lock_state(agent)
        if state.holder is None or state.expires_at is None or state.expires_at <= self._clock.now():
            return False
        return self._store.dream.request_abort(agent)

    def status(self, agent_id: str = "default") -> DreamStatus:
        agent = validate.identifier(agent_id, name="agent_id")
        state = self._store.dream.lock_state(agent)
        running = state.holder is not None and state.expires_at is not None and state.expires_at > self._clock.now()
        runs = self._store.dream.runs(agent, limit=1)
        return DreamStatus(
            agent_id=agent,
            enabled=self.config.enabled and self.agent_enabled(agent),
            running=running,
            last_dream_at=state.last_dream_at,
            abort_requested=state.abort_requested and running,
            run=runs[0] if runs else None,
        )

    def agents(self, *, configured: bool = True) -> list[str]:
        """The agents the dream knows, sorted: every agent with at least one entry (archived included) and,
        with ``configured``, every agent with its own ``[agents.<id>]`` section, which may have no entry yet
        (the status page lists both). The scheduled and idle ticks offer dreams to the first kind only."""
        found = set(self._store.facts.agents())
        if configured:
            found |= self.config.configured_agents
        return sorted(found)

    def history(self, agent_id: str | None = None, *, limit: int = 20) -> list[DreamRun]:
        """Recorded runs, newest first (the audit trail)."""
        agent = None if agent_id is None else validate.identifier(agent_id, name="agent_id")
        return self._store.dream.runs(agent, limit=validate.limit(limit))

    # -- running ----------------------------------------------------------------------------------------
    def run(self, agent_id: str = "default", *, trigger: str = "manual") -> DreamRunReport:
        """One dream cycle for the agent now, if the gates allow (see the module docstring)."""
        agent = validate.identifier(agent_id, name="agent_id")
        if trigger not in TRIGGERS:
            raise ValidationError(f"trigger must be one of {', '.join(TRIGGERS)}", field="trigger")
        now = self._clock.now()
        closed = self._closed_gate(agent, trigger, now)
        if closed is not None:
            return DreamRunReport(agent, trigger, "skipped", now, reason=closed)
        holder = uuid.uuid4().hex
        if self._store.dream.acquire(agent, holder, now=now, lease_seconds=self.config.lease_seconds) is None:
            return DreamRunReport(agent, trigger, "skipped", now, reason="another dream of this agent holds the lock")
        if trigger != "manual":
            # Asked again under the lock: a dream elsewhere may have completed between the first check and
            # the acquire, and must not be run a second time.
            closed = self._closed_gate(agent, trigger, now)
            if closed is not None:
                self._store.dream.release(agent, holder, completed_at=None)
                return DreamRunReport(agent, trigger, "skipped", now, reason=closed)
        record = DreamRun(run_id=holder, agent_id=agent, trigger=trigger, started_at=now, phase="running")
        self._store.dream.save_run(record)
        passes: dict[str, PassReport] = {}
        phase, error = "completed", None
        try:
            with agent_context(agent):  # the run's LLM calls are the agent's in the usage log
                phase = self._passes(agent, trigger, record, passes)
        except BaseException as exc:
            phase, error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            finished = self._clock.now()
            self._store.dream.release(agent, holder, completed_at=finished if phase == "completed" else None)
            self._save(record, passes, phase=phase, finished_at=finished, error=error, current_pass=None)
            self._store.dream.prune_runs(finished - timedelta(days=self.config.runs_retention_days))
        report = DreamRunReport(agent, trigger, phase, now, holder, finished_at=finished, passes=passes)
        log.info(
            "DreamService: %s dream of %s %s (%d LLM calls, %d tokens)",
            trigger,
            agent,
            phase,
            report.llm_calls,
            report.tokens,
        )
        return report

    def _closed_gate(self, agent: str, trigger: str, now: datetime) -> str | None:
        if not self.config.enabled:
            return "dreaming is disabled ([dream] enabled = false)"
        if not self.agent_enabled(agent):
            return f"dreaming is disabled for agent {agent!r}"
        if trigger == "manual":
            return None
        last = self._store.dream.lock_state(agent).last_dream_at
        if last is not None and now - last < timedelta(hours=self.config.min_hours):
            return f"last dream {last.isoformat(timespec='minutes')} is under {self.config.min_hours:g} hours ago"
        if self.config.min_sessions > 0:
            sessions, _ = self._store.dream.activity_since(agent, last)
            if sessions < self.config.min_sessions:
                return f"{sessions} of {self.config.min_sessions} sessions active since the last dream"
        return None

    def _passes(self, agent: str, trigger: str, record: DreamRun, out: dict[str, PassReport]) -> str:
        """Run every pass; returns the phase the run ends in."""
        checkpoint = self._checkpoint(agent, record.run_id, trigger, record.started_at)
        failed = False
        for position, dream_pass in enumerate(self.passes):
            missing = dream_pass.needs - self.capabilities
            if missing:
                reason = "needs " + ", ".join(sorted(c.value for c in missing))
                out[dream_pass.name] = PassReport(dream_pass.name, status="skipped", reason=reason)
                continue
            ctx = self._context(agent, record.run_id, dream_pass.name, checkpoint)
            ctx.trigger = trigger
            ctx.progress = self._progress(record, out, ctx.report, f"{position}/{len(self.passes)} passes")
            try:
                checkpoint()
                self._save(
                    record,
                    out,
                    phase="running",
                    current_pass=dream_pass.name,
                    progress=f"{position}/{len(self.passes)} passes",
                )
                out[dream_pass.name] = dream_pass.run(ctx)
            except DreamStopped as stop:
                ctx.report.status, ctx.report.reason = "stopped", stop.reason
                out[dream_pass.name] = ctx.report
                log.info("DreamService: dream of %s stopped in %s (%s)", agent, dream_pass.name, stop.reason)
                return "cancelled" if stop.reason == "cancelled" else "aborted"
            except Exception as exc:  # one pass failing must not cost the others
                log.exception("DreamService: pass %s failed for %s", dream_pass.name, agent)
                ctx.report.status, ctx.report.reason = "failed", f"{type(exc).__name__}: {exc}"
                out[dream_pass.name] = ctx.report
                failed = True
        try:  # an abort (or activity) that came during the last pass still stops the run: the gate reopens
            checkpoint()
        except DreamStopped as stop:
            log.info("DreamService: dream of %s stopped after its last pass (%s)", agent, stop.reason)
            return "cancelled" if stop.reason == "cancelled" else "aborted"
        return "failed" if failed else "completed"

    def _context(self, agent: str, run_id: str, name: str, checkpoint: Callable[[], None]) -> PassContext:
        ctx = PassContext(
            agent_id=agent,
            store=self._store,
            clock=self._clock,
            home=self._home,
            llm=self._llm,
            vocabulary=self._vocabulary(),
            ledger=self.ledger,
            embedding_model=self._model,
            checkpoint=checkpoint,
            wait_for_llm=lambda: self._wait_for_llm(checkpoint),
            report=PassReport(name),
            run_id=run_id,
        )
        return ctx

    def _progress(
        self, record: DreamRun, passes: dict[str, PassReport], report: PassReport, position: str
    ) -> Callable[[str], None]:
        """A running pass's ``ctx.progress``: the run record shows its text and its report (tokens, cost) so far."""

        def progress(text: str) -> None:
            current = {**passes, report.name: report}
            self._save(record, current, phase="running", current_pass=report.name, progress=f"{position}; {text}")

        return progress

    def _checkpoint(self, agent: str, holder: str, trigger: str, started: datetime) -> Callable[[], None]:
        def checkpoint() -> None:
            state = self._store.dream.lock_state(agent)
            if state.holder != holder:
                raise DreamStopped("lost lock")
            if state.abort_requested or self._stop.is_set():
                raise DreamStopped("aborted")
            if trigger == "idle":
                last = self._store.dream.last_activity()
                if last is not None and last > started:
                    raise DreamStopped("cancelled")
            now = self._clock.now()
            if not self._store.dream.renew(agent, holder, now=now, lease_seconds=self.config.lease_seconds):
                raise DreamStopped("lost lock")

        return checkpoint

    def _wait_for_llm(self, checkpoint: Callable[[], None]) -> None:
        """Back off while a user turn holds the LLM: poll, never queue behind it."""
        while self._llm is not None and self._llm.busy:
            checkpoint()
            self._stop.wait(self.config.busy_poll_seconds)

    def _save(self, record: DreamRun, passes: dict[str, PassReport], **changes: Any) -> None:
        reports = list(passes.values())
        self._store.dream.save_run(
            replace(
                record,
                tokens=sum(p.tokens for p in reports),
                cost=sum(p.cost for p in reports),
                report={name: p.as_dict() for name, p in passes.items()},
                **changes,
            )
        )

    # -- scheduling -------------------------------------------------------------------------------------
    def tick(self, trigger: str = "scheduled") -> list[DreamRunReport]:
        """Offer a dream to every agent the store knows (each behind its gates)."""
        reports = []
        for agent in self.agents(configured=False):
            reports.append(self.run(agent, trigger=trigger))
        return reports

    def idle_tick(self) -> list[DreamRunReport]:
        """ai-memory's idle trigger: once no client has been active for ``idle_window_seconds``, dream for
        each agent active since its last dream."""
        now = self._clock.now()
        last = self._store.dream.last_activity()
        if last is None or now - last < timedelta(seconds=self.config.idle_window_seconds):
            return []
        reports = []
        for agent in self.agents(configured=False):
            state = self._store.dream.lock_state(agent)
            _, active = self._store.dream.activity_since(agent, state.last_dream_at)
            if active is not None and (state.last_dream_at is None or active > state.last_dream_at):
                reports.append(self.run(agent, trigger="idle"))
        return reports

    def _loop(self) -> None:
        schedule = self.config.schedule
        due = schedule.first(self._clock.now())
        while not self._stop.is_set():
            now = self._clock.now()
            try:
                if now >= due:
                    self.tick("scheduled")
                    due = schedule.next_after(self._clock.now())
                if self.config.idle_trigger:
                    self.idle_tick()
                for job in self._jobs:
                    job(self._clock.now())
            except Exception:  # the scheduler outlives any one bad cycle
                log.exception("DreamService: scheduled work failed")
            wait = (due - self._clock.now()).total_seconds()
            self._stop.wait(max(0.05, min(wait, self.config.busy_poll_seconds)))
