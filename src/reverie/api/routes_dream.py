"""Dream control and the memory audit over HTTP (admin keys only), seed 004's auto-dream surface:
``GET /api/dream/status``, ``POST /api/dream/agents/{agent_id}/trigger``, ``…/abort``, ``PUT …/enabled``;
``GET /api/audit/trend``, ``POST /api/audit/run``.

A trigger starts a manual dream in a background thread of this server and answers at once (202), so the
dream can be watched (status) and aborted while it runs; ``wait=true`` runs it in the request instead and
answers its report. The dream's own lock still allows one dream per agent across every process.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import AdminAgent, Engine, admin_access
from reverie.api.errors import COMMON_ERRORS
from reverie.api.filters import CursorQuery
from reverie.api.schemas import Flag, RequestModel, ValueOut
from reverie.core import validate
from reverie.engine.root import Reverie
from reverie.errors import StorageError

log = logging.getLogger("reverie.api")
router = APIRouter(
    tags=["dream and audit"], responses=COMMON_ERRORS, dependencies=[Depends(admin_access)], route_class=AgentRoute
)
AgentFilter = Annotated[str | None, Query(alias="agent", description="only this agent")]


class DreamRunner:
    """Manual dreams this server started, one thread per agent at a time; ``stop`` aborts and joins them."""

    def __init__(self, rv: Reverie) -> None:
        self._rv = rv
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}

    def start(self, agent_id: str) -> bool:
        """Start a manual dream of the agent in the background; False when this server is running one."""
        with self._lock:
            running = self._threads.get(agent_id)
            if running is not None and running.is_alive():
                return False
            thread = threading.Thread(target=self._run, args=(agent_id,), name=f"reverie-api-dream-{agent_id[:40]}")
            thread.daemon = True
            self._threads[agent_id] = thread
            thread.start()
            return True

    def _run(self, agent_id: str) -> None:
        try:
            report = self._rv.dream.run(agent_id, trigger="manual")  # attributes its LLM calls to the agent
            log.info("dream of %s %s %s", agent_id, report.phase, report.reason)
        except StorageError as exc:  # a full disk, a database away: the operator's matter, one line
            log.warning("the dream of %s failed: %s", agent_id, exc)
        except Exception:  # a background thread has no caller to tell: log it
            log.exception("the dream of %s failed", agent_id)

    def stop(self, timeout: float = 30.0) -> None:
        with self._lock:
            threads = dict(self._threads)
        for agent_id, thread in threads.items():
            if thread.is_alive():
                self._rv.dream.abort(agent_id)
                thread.join(timeout)


class RunOut(ValueOut):
    run_id: str
    trigger: str
    phase: str
    current_pass: str | None
    progress: str
    tokens: int
    cost: float
    started_at: datetime
    finished_at: datetime | None
    error: str | None


class HistoryRunOut(RunOut):
    agent_id: str
    report: dict[str, Any] = Field(description="the pass reports of a finished run")


class HolderOut(ValueOut):
    run_id: str
    pid: int | None = Field(description="the process holding the lock (None: a holder that named none)")
    host: str | None
    heartbeat_at: datetime | None = Field(description="its last sign of life")
    expires_at: datetime | None


class DreamStatusOut(ValueOut):
    agent_id: str
    enabled: bool
    running: bool = Field(description="a live dream holds the lock (a dead holder is cleared first)")
    last_dream_at: datetime | None
    abort_requested: bool
    run: RunOut | None = Field(
        description="the latest run: phase (interrupted: its process died), current pass, progress, tokens, cost"
    )
    holder: HolderOut | None = Field(None, description="the running dream's process, heartbeat and lease")


class PassOut(ValueOut):
    name: str
    status: str
    reason: str
    counts: dict[str, int]
    llm_calls: int
    tokens: int
    cost: float
    summary: str


class DreamReportOut(ValueOut):
    run_id: str | None
    agent_id: str
    trigger: str
    phase: str = Field(description="completed, failed, aborted, cancelled or skipped (a gate was closed)")
    reason: str
    started_at: datetime
    finished_at: datetime | None
    tokens: int
    llm_calls: int
    cost: float
    passes: dict[str, PassOut]


class TriggerOut(BaseModel):
    agent_id: str
    started: bool = Field(description="false when this server is already running a dream of the agent")
    report: DreamReportOut | None = Field(None, description="with wait=true: what the dream did")


class EnabledIn(RequestModel):
    enabled: Flag


class AbortOut(BaseModel):
    aborting: bool = Field(description="a live dream was asked to stop at its next step")
    interrupted: bool = Field(
        False, description="the holder was dead: its lock was freed at once and its run recorded interrupted"
    )


class AuditRecordOut(ValueOut):
    at: datetime
    agent_id: str
    live: int
    archived: int
    merged: int
    merge_targets: int
    rejected_clusters: int
    purged_since_last: int
    destroyed_outside_purge: int
    duplicate_rate: float
    sources: dict[str, int]
    destroyed_ids: list[str]


def _runner(request: Request) -> DreamRunner:
    runner: DreamRunner = request.app.state.dreams
    return runner


@router.get("/api/dream/status", response_model=list[DreamStatusOut], summary="Dream status of every agent")
def dream_status(rv: Engine, agent: AgentFilter = None) -> list[DreamStatusOut]:
    """One row per agent (every agent with memories and every agent in ``[agents]``, or only ``agent``):
    enabled, running, the last completed dream, and the latest run's phase, pass, progress, tokens and cost."""
    if agent is not None:
        agents: list[str] = [validate.identifier(agent, name="agent")]
    else:
        agents = rv.dream.agents()
    return [DreamStatusOut.model_validate(rv.dream.status(a)) for a in agents]


@router.post(
    "/api/dream/agents/{agent_id}/trigger",
    status_code=202,
    response_model=TriggerOut,
    responses={200: {"model": TriggerOut, "description": "with wait=true: the dream ran"}},
    summary="Dream now",
)
def trigger_dream(
    request: Request,
    response: Response,
    rv: Engine,
    agent: AdminAgent,
    wait: Annotated[bool, Query(description="run in the request and answer the report")] = False,
) -> TriggerOut:
    """A manual dream: bypasses the time and activity gates, never the opt-in or the lock."""
    agent = validate.identifier(agent, name="agent_id")
    if not wait:
        return TriggerOut(agent_id=agent, started=_runner(request).start(agent))
    report = rv.dream.run(agent, trigger="manual")  # attributed to the agent by AgentRoute
    response.status_code = 200
    return TriggerOut(agent_id=agent, started=report.phase != "skipped", report=DreamReportOut.model_validate(report))


class RunsPageOut(BaseModel):
    items: list[HistoryRunOut]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null on the last page")


@router.get("/api/dream/agents/{agent_id}/runs", response_model=RunsPageOut, summary="Dream history, a page")
def dream_runs(
    rv: Engine,
    agent: AdminAgent,
    cursor: CursorQuery = None,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="runs per page (default 100)")] = None,
) -> RunsPageOut:
    """The agent's recorded runs (the audit trail), newest first, a page at a time: pass ``next_cursor`` back
    as ``cursor``. A run whose process died shows ``interrupted``."""
    page = rv.dream.history_page(agent, cursor=cursor, limit=limit)
    return RunsPageOut(items=[HistoryRunOut.model_validate(r) for r in page.items], next_cursor=page.next_cursor)


@router.post("/api/dream/agents/{agent_id}/abort", response_model=AbortOut, summary="Abort the running dream")
def abort_dream(rv: Engine, agent: AdminAgent) -> AbortOut:
    """Stop the agent's running dream at its next step (any process's); its lock is rolled back so the time
    gate reopens. A dream whose process died is cleared at once (``interrupted``)."""
    done = rv.dream.abort_dream(agent)
    return AbortOut(aborting=done.aborting, interrupted=done.interrupted)


@router.put("/api/dream/agents/{agent_id}/enabled", response_model=DreamStatusOut, summary="Opt in or out")
def set_dream_enabled(rv: Engine, agent: AdminAgent, body: EnabledIn) -> DreamStatusOut:
    """Opt the agent in to dreaming (the default) or out of it."""
    rv.dream.set_enabled(agent, body.enabled)
    return DreamStatusOut.model_validate(rv.dream.status(agent))


@router.get("/api/audit/trend", response_model=list[AuditRecordOut], summary="The audit trend")
def audit_trend(rv: Engine, agent: AgentFilter = None) -> list[AuditRecordOut]:
    """The audit records, oldest first: live, archived, merged, destroyed outside the purge, rejected
    clusters, duplicate rate and source mix per agent."""
    return [AuditRecordOut.model_validate(r) for r in rv.audit.trend(agent)]


@router.post("/api/audit/run", response_model=list[AuditRecordOut], summary="Audit now")
def audit_run(rv: Engine) -> list[AuditRecordOut]:
    """Audit every agent now and add the records to the trend."""
    return [AuditRecordOut.model_validate(r) for r in rv.audit.run()]
