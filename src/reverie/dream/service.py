"""The dream service (seeds 001, 003, 004): runs the passes of a dream cycle for an agent, on a schedule, behind
LibreFang's gates, with status, trigger and abort controls that work across processes.

Gates, in order: dreaming enabled (globally and for the agent) → time since the agent's last dream
(``min_hours``) → sessions active since then (``min_sessions``) → the agent's dream lock. A manual trigger
bypasses the time and activity gates, never the opt-in or the lock.

Invariants:
- One dream per agent at a time, across processes: the lock is a lease in the store, renewed at every
  checkpoint, naming its holder's process and beaten by a heartbeat thread every ``heartbeat_seconds``
  (``dream.holder``). A holder found dead (``holder.dead_reason``: its session or process gone, its heartbeat
  stale, its lease run out) is reaped by whoever looks first (``status``, ``run``, ``abort``, ``history``):
  its lease is freed and its run recorded ``interrupted``, in one transaction. A live holder is only ever
  asked to stop (``abort``). A scheduled or idle run checks its gates again once it holds the lock, so a
  dream another worker completed in between is not run a second time.
- A dream that completes advances the agent's ``last_dream_at`` (the time gate); one that fails, is
  aborted or is cancelled leaves it where it was, so the gate reopens and the next tick retries.
- A pass whose capability is missing is skipped; a pass that raises is reported failed and the cycle goes
  on to the next pass (best effort), but the run then counts as failed.
- The service never queues an LLM call behind a user's turn: while ``llm.busy`` it polls every
  ``busy_poll_seconds``.
- Every run is recorded (``store.dream`` runs): phase, current pass, progress, tokens, cost and the pass
  reports — the status page and the audit trail. Its final record is written before its lock is released.
- A killed dream leaves nothing half-applied: every pass writes in transactions (a merge saves its entry and
  retires its sources in one), so a kill between two of them leaves each whole or absent.
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
from reverie.core import filters, validate
from reverie.core.coverage import Vocabulary
from reverie.dream import holder as holders
from reverie.dream.ledger import DreamPassLedger
from reverie.dream.passes.base import Capability, DreamPass, DreamStopped, PassContext, PassReport
from reverie.dream.schedule import Schedule
from reverie.errors import StorageError, ValidationError
from reverie.llm.base import LLM
from reverie.llm.usage import agent_context
from reverie.runtime.background import BackgroundService, Backoff, report_failure
from reverie.storage.base import DreamLockState, Store
from reverie.types import DreamRun, Page

log = logging.getLogger("reverie.dream")
TRIGGERS = ("scheduled", "manual", "idle")
_ENABLED_KEY = "dream.enabled."


@dataclass(frozen=True, slots=True)
class DreamConfig:
    enabled: bool = True
    min_hours: float = 1.0
    min_sessions: int = 0
    lease_seconds: float = 600.0
    heartbeat_seconds: float = 5.0
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
class DreamHolder:
    """The live holder of an agent's dream lock: its run, its process (when it named one), its last heartbeat
    and the end of its lease."""

    run_id: str
    pid: int | None
    host: str | None
    heartbeat_at: datetime | None
    expires_at: datetime | None

    @classmethod
    def of(cls, state: DreamLockState) -> DreamHolder | None:
        if state.holder is None:
            return None
        process = state.process
        return cls(
            run_id=state.holder,
            pid=None if process is None else process.pid,
            host=None if process is None else process.host,
            heartbeat_at=state.heartbeat_at,
            expires_at=state.expires_at,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "pid": self.pid,
            "host": self.host,
            "heartbeat_at": None if self.heartbeat_at is None else self.heartbeat_at.isoformat(),
            "expires_at": None if self.expires_at is None else self.expires_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class DreamAbort:
    """What ``abort_dream`` did: ``requested`` (a live dream was asked to stop at its next checkpoint),
    ``interrupted`` (its holder was dead: the lock was freed at once and the run recorded interrupted, for
    ``reason``) or ``none`` (no dream held the lock)."""

    agent_id: str
    outcome: str
    run_id: str | None = None  # the live run asked to stop
    reason: str = ""  # why the holder counted as dead

    @property
    def aborting(self) -> bool:
        return self.outcome == "requested"

    @property
    def interrupted(self) -> bool:
        return self.outcome == "interrupted"

    def as_dict(self) -> dict[str, Any]:
        return {"aborting": self.aborting, "interrupted": self.interrupted}


@dataclass(frozen=True, slots=True)
class DreamStatus:
    """An agent's dream state as every process sees it. ``running`` only while a live holder has the lock
    (a dead one is reaped first: its run then shows ``interrupted``)."""

    agent_id: str
    enabled: bool
    running: bool
    last_dream_at: datetime | None
    abort_requested: bool
    run: DreamRun | None  # the latest run (its phase, current pass, progress, tokens, cost)
    holder: DreamHolder | None = None  # the running dream's process and heartbeat

    def as_dict(self) -> dict[str, Any]:
        run = self.run
        return {
            "agent_id": self.agent_id,
            "enabled": self.enabled,
            "running": self.running,
            "last_dream_at": None if self.last_dream_at is None else self.last_dream_at.isoformat(),
            "abort_requested": self.abort_requested,
            "holder": None if self.holder is None else self.holder.as_dict(),
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
        self._heart = holders.Heartbeat(self._beat, config.heartbeat_seconds)

    # -- controls ---------------------------------------------------------------------------------------
    def agent_enabled(self, agent_id: str) -> bool:
        return self._store.meta.get(_ENABLED_KEY + validate.identifier(agent_id, name="agent_id")) != "0"

    def set_enabled(self, agent_id: str, enabled: bool) -> None:
        """Opt an agent in or out of dreaming (every agent is in by default while ``[dream] enabled``)."""
        if not isinstance(enabled, bool):
            raise ValidationError("enabled must be true or false", field="enabled")
        self._store.meta.set(_ENABLED_KEY + validate.identifier(agent_id, name="agent_id"), "1" if enabled else "0")

    def abort(self, agent_id: str = "default") -> bool:
        """Ask the agent's running dream to stop at its next checkpoint (from any process); the lock is then
        rolled back, so the time gate reopens. False when no live dream holds the lock (a dead holder's lock
        is freed at once: see ``abort_dream``)."""
        return self.abort_dream(agent_id).aborting

    def abort_dream(self, agent_id: str = "default") -> DreamAbort:
        """``abort``, saying what it did: a live holder is asked to stop at its next checkpoint; a dead one's
        lock is freed now and its run recorded interrupted."""
        agent = validate.identifier(agent_id, name="agent_id")
        state, reason = self._reap(agent)
        if reason is not None:
            return DreamAbort(agent, "interrupted", reason=reason)
        if state.holder is None or not self._store.dream.request_abort(agent):
            return DreamAbort(agent, "none")
        return DreamAbort(agent, "requested", run_id=state.holder)

    def status(self, agent_id: str = "default") -> DreamStatus:
        agent = validate.identifier(agent_id, name="agent_id")
        state, _ = self._reap(agent)
        running = state.holder is not None
        runs = self._store.dream.runs(agent, limit=1)
        return DreamStatus(
            agent_id=agent,
            enabled=self.config.enabled and self.agent_enabled(agent),
            running=running,
            last_dream_at=state.last_dream_at,
            abort_requested=state.abort_requested and running,
            run=runs[0] if runs else None,
            holder=DreamHolder.of(state),
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
        """Recorded runs, newest first (the audit trail); a run whose holder died shows ``interrupted``."""
        agent = None if agent_id is None else validate.identifier(agent_id, name="agent_id")
        limit = validate.limit(limit)
        runs = self._store.dream.runs(agent, limit=limit)
        reaped = [self._reap(a)[1] for a in sorted({r.agent_id for r in runs if r.phase == "running"})]
        return self._store.dream.runs(agent, limit=limit) if any(r is not None for r in reaped) else runs

    def history_page(
        self, agent_id: str | None = None, *, cursor: str | None = None, limit: int | None = None
    ) -> Page[DreamRun]:
        """One page of recorded runs (of one agent, or all), newest started first, at most ``limit`` (1..1000,
        default 100) long; pass ``next_cursor`` back as ``cursor`` for the next (None on the last). Keyset on
        (started_at, run_id), which never change: a walk sees every run recorded before it exactly once."""
        agent = None if agent_id is None else validate.identifier(agent_id, name="agent_id")
        count = validate.limit(100 if limit is None else limit)

        def page() -> Page[DreamRun]:
            return filters.keyset_page(
                lambda after, n: self._store.dream.runs_page(agent, after, n),
                cursor,
                count,
                filters.fingerprint("dream-runs", agent),
                lambda r: (r.started_at.isoformat(), r.run_id),
            )

        found = page()
        running = sorted({r.agent_id for r in found.items if r.phase == "running"})
        # As history(): a run whose holder died is shown interrupted, so read the page again once reaped.
        reaped = [self._reap(a)[1] for a in running]
        return page() if any(r is not None for r in reaped) else found

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the schedule's thread, then the heartbeat's (call it once no dream of this service runs)."""
        super().stop(timeout)
        self._heart.stop(timeout)

    # -- the lock's holder ------------------------------------------------------------------------------
    def _reap(self, agent: str) -> tuple[DreamLockState, str | None]:
        """The agent's lock state, after freeing it from a dead holder (module docstring); with the reason
        when this call freed it."""
        state = self._store.dream.lock_state(agent)
        if state.holder is None:
            return state, None
        now = self._clock.now()
        reason = holders.dead_reason(state, self._store.dream.holder_gone(agent), now)
        if reason is None:
            return state, None
        try:
            freed = self._store.dream.break_lease(agent, state.holder, now=now, reason=f"interrupted: {reason}")
        except StorageError as exc:  # a store opened read-only: the holder is still dead, only not reaped
            log.warning("DreamService: could not free the dead dream lock of %s: %s", agent, exc)
            return DreamLockState(agent, None, None, state.last_dream_at, abort_requested=False), None
        if freed:
            log.warning("DreamService: the dream of %s was interrupted (%s); its lock is freed", agent, reason)
        return self._store.dream.lock_state(agent), reason if freed else None

    def _acquire(self, agent: str, holder: str, now: datetime) -> bool:
        """Take the agent's lock for ``holder`` (this process named in its lease) and start beating it."""
        process = holders.this_process(self.config.heartbeat_seconds)
        holders.running_here(holder, True)
        try:
            taken = self._store.dream.acquire(
                agent, holder, now=now, lease_seconds=self.config.lease_seconds, process=process
            )
        except BaseException:
            holders.running_here(holder, False)
            raise
        if taken is None:
            holders.running_here(holder, False)
            return False
        self._heart.hold(agent, holder)
        return True

    def _let_go(self, agent: str, holder: str, *, completed_at: datetime | None) -> None:
        self._heart.drop(agent, holder)
        try:
            self._store.dream.release(agent, holder, completed_at=completed_at)
        finally:
            holders.running_here(holder, False)

    def _beat(self, agent: str, holder: str) -> None:
        self._store.dream.heartbeat(agent, holder, now=self._clock.now())

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
        self._reap(agent)  # a dead holder's lease must not hold this run back
        holder = uuid.uuid4().hex
        if not self._acquire(agent, holder, now):
            return DreamRunReport(agent, trigger, "skipped", now, reason="another dream of this agent holds the lock")
        if trigger != "manual":
            # Asked again under the lock: a dream elsewhere may have completed between the first check and
            # the acquire, and must not be run a second time.
            closed = self._closed_gate(agent, trigger, now)
            if closed is not None:
                self._let_go(agent, holder, completed_at=None)
                return DreamRunReport(agent, trigger, "skipped", now, reason=closed)
        record = DreamRun(run_id=holder, agent_id=agent, trigger=trigger, started_at=now, phase="running")
        passes: dict[str, PassReport] = {}
        phase, error = "completed", None
        try:
            self._store.dream.save_run(record)
            with agent_context(agent):  # the run's LLM calls are the agent's in the usage log
                phase = self._passes(agent, trigger, record, passes)
        except BaseException as exc:
            phase, error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            finished = self._clock.now()
            try:  # the record first: killed between the two, the lease left behind is reaped, the run stays whole
                self._save(record, passes, phase=phase, finished_at=finished, error=error, current_pass=None)
            finally:
                self._let_go(agent, holder, completed_at=finished if phase == "completed" else None)
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
        shared: dict[str, Any] = {}  # the run's shared reads (``PassContext.once``): the conversation log, once
        failed = False
        for position, dream_pass in enumerate(self.passes):
            missing = dream_pass.needs - self.capabilities
            if missing:
                reason = "needs " + ", ".join(sorted(c.value for c in missing))
                out[dream_pass.name] = PassReport(dream_pass.name, status="skipped", reason=reason)
                continue
            ctx = self._context(agent, record.run_id, dream_pass.name, checkpoint)
            ctx.trigger = trigger
            ctx.shared = shared
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
                if isinstance(exc, StorageError):  # a full disk, a database away: the store's trouble, one line
                    log.warning("DreamService: pass %s failed for %s: %s", dream_pass.name, agent, exc)
                else:
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
        # After a failure (a full disk, a database that cannot be reached) the next try waits a doubling time
        # on the service's clock, so the loop neither hammers the store nor logs a line every poll.
        backoff, retry_at = Backoff(1.0, 60.0), self._clock.now()
        while not self._stop.is_set():
            now = self._clock.now()
            try:
                if now >= retry_at:
                    if now >= due:
                        self.tick("scheduled")
                        due = schedule.next_after(self._clock.now())
                    if self.config.idle_trigger:
                        self.idle_tick()
                    for job in self._jobs:
                        job(self._clock.now())
                    backoff.reset()
            except Exception as exc:  # the scheduler outlives any one bad cycle
                delay = report_failure("DreamService: scheduled work", exc, backoff, log)
                retry_at = self._clock.now() + timedelta(seconds=delay)
            wait = (due - self._clock.now()).total_seconds()
            self._stop.wait(max(0.05, min(wait, self.config.busy_poll_seconds)))
