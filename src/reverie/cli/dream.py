"""``reverie dream ...``: run, watch, abort and schedule dream cycles; ``reverie audit ...``: the memory audit."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

import typer

from reverie.cli.common import AgentOption, JsonOption, console, emit, emit_json, engine, escape

if TYPE_CHECKING:
    from reverie.dream.service import DreamRunReport, DreamStatus

app = typer.Typer(help="The dream service: background consolidation of memory.", no_args_is_help=True)
audit_app = typer.Typer(help="The memory audit: is the corpus converging, is anything lost?", no_args_is_help=False)


def _print_run(report: DreamRunReport) -> None:
    if report.phase == "skipped":
        console.print(f"dream of {report.agent_id} skipped: {report.reason}")
        return
    console.print(
        f"dream of {report.agent_id} {report.phase} — {report.llm_calls} LLM calls, {report.tokens} tokens, "
        f"${report.cost:.4f}"
    )
    for name, p in report.passes.items():
        detail = p.summary or p.reason or ", ".join(f"{k} {v}" for k, v in p.counts.items())
        console.print(f"  {name:<18} {p.status:<8} {detail}", markup=False)


@app.command()
def run(ctx: typer.Context, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Run one dream cycle now (a manual trigger: bypasses the time and activity gates, not the lock or the
    opt-in)."""
    with engine(ctx) as rv:
        rv.embed_pending()  # clusters compare vectors: give this cycle the newest ones
        report = rv.dream.run(agent, trigger="manual")
        if as_json:
            emit_json(report.as_dict())
        else:
            _print_run(report)


def _print_status(status: DreamStatus) -> None:
    # A run whose process died shows "interrupted" until the next run: its lock was freed when seen dead.
    state = "idle"
    if status.holder is not None and status.holder.pid is not None:
        state = f"running (process {status.holder.pid} on {escape(status.holder.host or '')})"
    elif status.running:
        state = "running"
    elif status.run is not None and status.run.phase == "interrupted":
        state = "interrupted"
    last = status.last_dream_at.isoformat(timespec="minutes") if status.last_dream_at else "never"
    console.print(f"agent {status.agent_id}: {state}, {'enabled' if status.enabled else 'disabled'}, last dream {last}")
    run_ = status.run
    if run_ is not None:
        console.print(
            f"  latest run {run_.run_id[:12]} ({run_.trigger}) {run_.phase}"
            + (f" in {run_.current_pass} {run_.progress}" if run_.current_pass else "")
            + f" — {run_.tokens} tokens, ${run_.cost:.4f}",
            markup=False,
        )


@app.command()
def status(ctx: typer.Context, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Phase, current pass, progress, tokens and cost of the agent's dream (from any process)."""
    with engine(ctx) as rv:
        found = rv.dream.status(agent)
        if as_json:
            emit_json(found.as_dict())
        else:
            _print_status(found)


@app.command()
def abort(ctx: typer.Context, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Stop the agent's running dream at its next step; its lock is rolled back so the time gate reopens. A
    dream whose process died is cleared at once: its lock freed, its run recorded as interrupted."""
    with engine(ctx) as rv:
        done = rv.dream.abort_dream(agent)
        if done.aborting:
            text = "abort requested: the dream stops at its next step"
        elif done.interrupted:
            text = (
                f"the dream of {agent} was interrupted: {escape(done.reason)}; its lock is cleared and its run recorded"
                " as interrupted"
            )
        else:
            text = f"no dream of {agent} is running"
        emit(done.as_dict(), as_json, text)


@app.command()
def history(
    ctx: typer.Context,
    agent: str = AgentOption,
    limit: int = 10,
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    as_json: bool = JsonOption,
) -> None:
    """Recorded dream runs, newest first: the audit trail (phase, tokens, cost, pass reports). When more runs
    are recorded than shown, stderr gives the cursor of the next page (--cursor)."""
    with engine(ctx) as rv:
        page = rv.dream.history_page(agent, cursor=cursor, limit=limit)
        runs = list(page.items)
        if page.next_cursor is not None:
            typer.echo(f"more: reverie dream history --cursor {page.next_cursor}", err=True)
        if as_json:
            emit_json(runs)
            return
        for r in runs:
            console.print(
                f"{r.started_at.isoformat(timespec='minutes')} {r.trigger:<9} {r.phase:<11} {r.tokens:>7} tokens "
                f"${r.cost:.4f}",
                markup=False,
            )


@app.command()
def enable(ctx: typer.Context, agent: str = AgentOption) -> None:
    """Opt the agent in to dreaming (the default)."""
    with engine(ctx) as rv:
        rv.dream.set_enabled(agent, True)
        console.print(f"dreaming enabled for {agent}")


@app.command()
def disable(ctx: typer.Context, agent: str = AgentOption) -> None:
    """Opt the agent out of dreaming (no cycle runs for it, manual ones included)."""
    with engine(ctx) as rv:
        rv.dream.set_enabled(agent, False)
        console.print(f"dreaming disabled for {agent}")


@app.command()
def serve(ctx: typer.Context) -> None:
    """The long-running scheduler: dream cycles for every agent on the [dream] schedule (and the idle
    trigger, and the memory audit on its own schedule) until interrupted."""
    done = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    with engine(ctx, background=True, verify=True) as rv:  # never dream into a damaged store
        rv.dream.start()
        schedule = rv.settings.dream.cron or f"every {rv.settings.dream.interval_hours:g} h"
        console.print(f"dream scheduler running ({schedule}); Ctrl-C stops it")
        done.wait()
        console.print("stopping")
        rv.dream.stop()


@audit_app.callback(invoke_without_command=True)
def audit(
    ctx: typer.Context, agent: str | None = typer.Option(None, "--agent", "-a"), as_json: bool = JsonOption
) -> None:
    """The audit trend: live, archived, merged, destroyed outside the purge, rejected clusters, duplicate
    rate and source mix, per audit run."""
    if ctx.invoked_subcommand is not None:
        return
    with engine(ctx) as rv:
        records = rv.audit.trend(agent)
        if as_json:
            emit_json([r.as_dict() for r in records])
            return
        if not records:
            console.print("no audit yet: run `reverie audit run`")
        for r in records[-30:]:
            console.print(
                f"{r.at[:16]} {r.agent_id:<12} live {r.live:>6} archived {r.archived:>6} merged {r.merged:>5} "
                f"destroyed {r.destroyed_outside_purge:>3} rejected {r.rejected_clusters:>3} "
                f"dup {r.duplicate_rate:.1%} sources {r.sources}",
                markup=False,
            )
        if rv.audit.paused_marker.exists():
            console.print(f"[yellow]consolidation is paused[/]: {rv.audit.paused_marker}")


@audit_app.command("run")
def audit_run(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Audit the store now and add the records to the trend."""
    with engine(ctx) as rv:
        records = rv.audit.run()
        if as_json:
            emit_json([r.as_dict() for r in records])
            return
        for r in records:
            console.print(
                f"{r.agent_id}: live {r.live}, archived {r.archived}, merged {r.merged}, "
                f"destroyed outside the purge {r.destroyed_outside_purge}, duplicate rate {r.duplicate_rate:.1%}",
                markup=False,
            )


@audit_app.command()
def resume(ctx: typer.Context) -> None:
    """Remove the consolidation-paused marker the audit wrote, so consolidation runs again."""
    with engine(ctx) as rv:
        console.print("consolidation resumed" if rv.audit.resume() else "consolidation was not paused")
