"""The console's dream page: an agent's dream status (phase, pass, progress, tokens, cost), its trigger and
abort, its run history with each pass's result, a run's merges and prunes with their before/after text, and
the memory audit's trends as plots.

- ``GET /agents/{id}/dream``: status, controls, history (a page of runs; ``cursor`` for the next).
- ``GET /agents/{id}/dream/live``: the status and history alone, polled every 2 s while a dream runs.
- ``POST /agents/{id}/dream/trigger`` and ``…/abort``: admin keys only, as the API's dream control.
- ``GET /agents/{id}/dream/runs/{run_id}``: one run: its passes, and what it merged, pruned and rejected.
- ``GET /agents/{id}/dream/audit`` (and ``POST …/audit/run``, admin): the audit trend and usage per day.

Invariants:
- The same services as the API's ``routes_dream``: ``rv.dream`` (status, history_page, abort_dream), the
  server's ``app.state.dreams`` runner for a manual dream (so one started here is the one the API would
  start, in the same background thread, under the same one-per-agent lock), ``rv.audit``.
- Viewing needs ``memory_read`` on the agent (it shows what the agent's own memory went through); changing
  anything (trigger, abort, audit now) needs an admin key, checked by the route whatever the page showed.
- A run's changes come from the store (a merged entry's sources and the evidence rows naming the run) and
  the dream log (``logs/dream.jsonl``: prunes and rejected merges, within the run's time); nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from reverie.api.auth import admin_access, admin_agent_access, engine
from reverie.api.console.pages_usage import Chart, chart, daily_usage, midnight
from reverie.api.console.render import fragment
from reverie.api.routes_dream import DreamRunner
from reverie.core import validate
from reverie.core.consolidation import MERGED_FROM
from reverie.engine.root import Reverie
from reverie.errors import NotFound
from reverie.types import DreamRun, MemoryEntry

router = APIRouter()
Reader = Annotated[str, Depends(admin_agent_access)]  # as the API: dream history and the audit need admin
Admin = Annotated[str, Depends(admin_agent_access)]
RUNS_PER_PAGE = 20
MAX_CHANGES = 200  # merges, prunes and rejections listed on a run's page
AUDIT_DAYS = 30  # days of tokens and cost on the audit page


def _live(request: Request, agent_id: str, *, cursor: str | None = None, started: bool = False) -> dict[str, Any]:
    """What the status and history show: the status, a page of runs, and whether the page should poll (a dream
    runs, or one was just started and has not recorded its run yet)."""
    rv = engine(request)
    status = rv.dream.status(agent_id)
    runs = rv.dream.history_page(agent_id, cursor=cursor, limit=RUNS_PER_PAGE)
    return {"status": status, "runs": runs, "polling": status.running or started, "cursor": cursor}


@router.get("/agents/{agent_id}/dream", response_class=HTMLResponse)
def dream_page(request: Request, agent_id: Reader, cursor: str | None = None) -> HTMLResponse:
    """The agent's dream: status, trigger and abort (admin), and the run history."""
    return fragment(
        request, "dream/dream.html", agent_id=agent_id, notice="", **_live(request, agent_id, cursor=cursor)
    )


@router.get("/agents/{agent_id}/dream/live", response_class=HTMLResponse)
def dream_live(request: Request, agent_id: Reader, started: bool = False) -> HTMLResponse:
    """The status and history alone: what the dream page polls while a dream runs."""
    return fragment(request, "dream/_live.html", agent_id=agent_id, **_live(request, agent_id, started=started))


@router.post("/agents/{agent_id}/dream/trigger", response_class=HTMLResponse)
def dream_trigger(request: Request, agent_id: Admin) -> HTMLResponse:
    """A manual dream in the server's background runner (as ``POST /api/dream/agents/{id}/trigger``)."""
    agent = validate.identifier(agent_id, name="agent_id")
    runner: DreamRunner = request.app.state.dreams
    started = runner.start(agent)
    notice = "A dream was started." if started else "This server is already running a dream of this agent."
    return fragment(request, "dream/dream.html", agent_id=agent, notice=notice, **_live(request, agent, started=True))


@router.post("/agents/{agent_id}/dream/abort", response_class=HTMLResponse)
def dream_abort(request: Request, agent_id: Admin) -> HTMLResponse:
    """Ask the running dream to stop at its next step (as ``POST /api/dream/agents/{id}/abort``)."""
    done = engine(request).dream.abort_dream(agent_id)
    if done.aborting:
        notice = "The dream was asked to stop at its next step."
    elif done.interrupted:
        notice = "The dream's process had died: its lock was freed and its run recorded interrupted."
    else:
        notice = "No dream of this agent is running."
    live = _live(request, agent_id, started=done.aborting)
    return fragment(request, "dream/dream.html", agent_id=agent_id, notice=notice, **live)


# -- one run ------------------------------------------------------------------------------------------------
@dataclass
class Merge:
    """A merge the run made: the entry it wrote and the entries it folded in (None: no longer stored)."""

    target_id: str
    text: str
    target: MemoryEntry | None
    sources: list[tuple[str, MemoryEntry | None]]


@dataclass
class Change:
    """A prune (an entry archived as ephemeral) or a rejected merge, as the dream log recorded it."""

    action: str
    entry_id: str
    text: str
    entry: MemoryEntry | None


def _entry(rv: Reverie, agent_id: str, entry_id: str) -> MemoryEntry | None:
    """The entry as stored now, archived or not, in whichever of the agent's scopes it lives (a read that does
    not count as one: the page must not warm what it shows)."""
    scope = rv.store.facts.owner(entry_id)
    if scope is None or scope.agent_id != agent_id:
        return None
    return rv.store.facts.get(entry_id, scope)


def _run_records(rv: Reverie, run: DreamRun) -> list[dict[str, Any]]:
    """The dream log's records of the run's agent written while the run went on (its start to its end)."""
    end = run.finished_at or rv.clock.now()
    found: list[dict[str, Any]] = []
    for record in rv.dream_log.read():
        if record.get("agent") != run.agent_id or "action" not in record:
            continue
        try:
            at = datetime.fromisoformat(str(record.get("at")))
        except ValueError:
            continue
        if at.tzinfo is not None and run.started_at <= at <= end + timedelta(seconds=1):
            found.append(record)
    return found


def run_changes(rv: Reverie, run: DreamRun) -> tuple[list[Merge], list[Change]]:
    """What ``run`` merged (its merged entries and their sources) and pruned or refused to merge."""
    merges: list[Merge] = []
    changes: list[Change] = []
    for record in _run_records(rv, run):
        action, entry_id, text = str(record["action"]), str(record.get("id", "")), str(record.get("text", ""))
        if action == "merged" and len(merges) < MAX_CHANGES:
            evidence = rv.store.dream.evidence(entry_id)
            if evidence and all(e.run_id != run.run_id for e in evidence):
                continue  # another run's merge at the same moment (a frozen test clock)
            target = _entry(rv, run.agent_id, entry_id)
            ids = [str(i) for i in record.get("sources") or (target.metadata.get(MERGED_FROM, []) if target else [])]
            merges.append(Merge(entry_id, text, target, [(i, _entry(rv, run.agent_id, i)) for i in ids]))
        elif action in ("archived", "rejected", "anti-pattern") and len(changes) < MAX_CHANGES:
            entry = _entry(rv, run.agent_id, entry_id) if action != "rejected" else None
            changes.append(Change(action, entry_id, text, entry))
    return merges, changes


@router.get("/agents/{agent_id}/dream/runs/{run_id}", response_class=HTMLResponse)
def dream_run(request: Request, agent_id: Reader, run_id: str) -> HTMLResponse:
    """One run: its passes' status, summary and reason, and its merges and prunes with before/after text."""
    rv = engine(request)
    run = rv.store.dream.get_run(validate.identifier(run_id, name="run_id"))
    if run is None or run.agent_id != agent_id:
        raise NotFound(f"no dream run {run_id!r} of agent {agent_id!r}")
    merges, changes = run_changes(rv, run)
    passes = [p for p in run.report.values() if isinstance(p, dict)]
    return fragment(
        request, "dream/run.html", agent_id=agent_id, run=run, passes=passes, merges=merges, changes=changes
    )


# -- the audit ----------------------------------------------------------------------------------------------
def audit_charts(rv: Reverie, agent_id: str) -> list[Chart]:
    """The audit's trend of the agent (one point per audit) and its LLM tokens and cost per day."""
    records = rv.audit.trend(agent_id)
    at = [datetime.fromisoformat(r.at) for r in records]

    def line(label: str, values: list[float | int | None]) -> dict[str, list[float | int | None]]:
        return {label: values}

    charts = [
        chart("Live entries", at, line("live", [r.live for r in records]), daily=False),
        chart("Near-duplicate rate", at, line("duplicate rate", [r.duplicate_rate for r in records]), daily=False),
        chart(
            "Merges",
            at,
            {"archived by a merge": [r.merged for r in records], "merged entries": [r.merge_targets for r in records]},
            daily=False,
        ),
        chart("Rejected merges", at, line("rejected", [r.rejected_clusters for r in records]), daily=False),
        chart(
            "Destroyed outside the purge (should stay 0)",
            at,
            line("destroyed", [r.destroyed_outside_purge for r in records]),
            daily=False,
        ),
    ]
    end = midnight(rv.clock.now().astimezone(UTC).date()) + timedelta(days=1)
    daily = daily_usage(rv, end - timedelta(days=AUDIT_DAYS), end, agent_id)
    charts.append(chart("LLM tokens per day", daily.days, daily.tokens, daily=True))
    charts.append(chart("LLM cost per day (USD)", daily.days, daily.cost, daily=True))
    return charts


@router.get("/agents/{agent_id}/dream/audit", response_class=HTMLResponse)
def audit_page(request: Request, agent_id: Reader) -> HTMLResponse:
    """The memory audit's trends for the agent as plots, with the latest record's numbers."""
    rv = engine(request)
    records = rv.audit.trend(agent_id)
    return fragment(
        request,
        "dream/audit.html",
        agent_id=agent_id,
        charts=audit_charts(rv, agent_id),
        latest=records[-1] if records else None,
        count=len(records),
        paused=rv.audit.paused_marker.exists(),
    )


@router.post("/agents/{agent_id}/dream/audit/run", response_class=HTMLResponse, dependencies=[Depends(admin_access)])
def audit_now(request: Request, agent_id: Reader) -> HTMLResponse:
    """Audit every agent now (as ``POST /api/audit/run``) and show this agent's trend again."""
    engine(request).audit.run()
    return audit_page(request, agent_id)
