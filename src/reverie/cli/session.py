"""``reverie session ...``: conversation sessions (seed 004's session commands): create, list, info, delete,
export, add a turn, compact, and the compaction status."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import AgentOption, JsonOption, console, emit, emit_json, engine, fail, read_text_argument
from reverie.errors import ValidationError
from reverie.views.plain import iso_z

if TYPE_CHECKING:  # the conversation service loads when a command runs
    from reverie.conversation.compaction import CompactionResult
    from reverie.conversation.service import SessionInfo
    from reverie.types import SessionRecord

app = typer.Typer(help="Conversation sessions: turns, the archive, compaction.", no_args_is_help=True)

EXPORT_FORMATS = ("json",)


def _iso(value: datetime) -> str:
    return iso_z(value, timespec="minutes")


def _when(record: SessionRecord) -> str:
    return _iso(record.last_active_at)


@app.command()
def create(
    ctx: typer.Context,
    name: str | None = typer.Option(None, "--name", "-n", help="A name to show beside the id."),
    session_id: str | None = typer.Option(None, "--id", help="The session id (default: a new random one)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a session; prints its id."""
    with engine(ctx) as rv:
        record = rv.conversation.create(session_id, name=name, agent_id=agent)
        emit(record, as_json, record.session_id)


@app.command("list")
def list_(
    ctx: typer.Context,
    limit: int | None = typer.Option(None, "--limit", "-n", help="One page of this many, newest first (1-1000)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's sessions, most recently active first (deleted ones hidden); with -n or --cursor, one page,
    newest first, and on stderr the cursor of the next."""
    with engine(ctx) as rv:
        if limit is None and cursor is None:
            sessions = rv.conversation.list(agent)
        else:
            page = rv.conversation.page(agent, cursor=cursor, limit=limit)
            sessions = list(page.items)
            if page.next_cursor is not None:
                typer.echo(f"more: reverie session list --cursor {page.next_cursor}", err=True)
        if as_json:
            emit_json(sessions)
            return
        if not sessions:
            console.print(f"no sessions for {agent}: `reverie session create` starts one", markup=False)
        for s in sessions:
            label = f"  {s.name}" if s.name else ""
            console.print(f"{s.session_id:<24} last active {_when(s)}{label}", markup=False)


def _print_info(info: SessionInfo) -> None:
    s = info.session
    state = "expired" if info.expired else "live"
    expires = _iso(info.expires_at) if info.expires_at else "never"
    title = f"session {s.session_id}" + (f" ({s.name})" if s.name else "")
    console.print(f"{title} of {s.agent_id}: {state}", markup=False)
    console.print(
        f"  created {_iso(s.created_at)}, started {_iso(s.started_at)}, last active {_iso(s.last_active_at)}, "
        f"expires {expires}",
        markup=False,
    )
    console.print(
        f"  turns: {info.live} live ({info.retained} retained, {info.archived} archived as stored)", markup=False
    )
    summary = f"summary through turn {s.compacted_through} ({info.summary_method})" if s.summary else "no summary"
    need = "needs compaction" if info.needs_compaction else "no compaction needed"
    console.print(f"  {summary}; {info.uncovered} messages not covered, {need}", markup=False)


@app.command()
def info(ctx: typer.Context, session_id: str, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Turn counts (retained, archived, live), expiry, and the summary / compaction state of a session."""
    with engine(ctx) as rv:
        found = rv.conversation.info(session_id, agent_id=agent)
        if as_json:
            emit_json(found)
        else:
            _print_info(found)


@app.command()
def delete(ctx: typer.Context, session_id: str, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Delete a session: hidden and no longer read; the purge removes it after the retention."""
    with engine(ctx) as rv:
        rv.conversation.delete(session_id, agent_id=agent)
        emit({"deleted": session_id}, as_json, f"deleted session {session_id}")


@app.command()
def export(
    ctx: typer.Context,
    session_id: str,
    export_format: str = typer.Option("json", "--format", "-f", help="Output format (json)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The session and every live turn (archive included), in order, as JSON."""
    if export_format not in EXPORT_FORMATS:
        fail(ValidationError(f"--format must be one of {', '.join(EXPORT_FORMATS)}", field="format"))
    with engine(ctx) as rv:
        emit_json(rv.conversation.export(session_id, agent_id=agent))


def _tool_calls(raw: str | None) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        fail(ValidationError(f"--tool-calls is not JSON: {exc}", field="tool_calls"))
    except RecursionError:  # the decoder gave up ~1,000 levels down: far past the limit
        from reverie.core.validate import too_deep

        fail(too_deep("tool_calls"))
    if not isinstance(value, list):
        fail(ValidationError("--tool-calls must be a JSON list of tool calls", field="tool_calls"))
    return value


@app.command()
def add(
    ctx: typer.Context,
    session_id: str,
    role: str = typer.Argument(..., help="user, assistant, system or tool."),
    text: str = typer.Argument(..., help="The turn's content; '-' reads standard input."),
    create_session: bool = typer.Option(False, "--create", help="Create the session if it does not exist."),
    name: str | None = typer.Option(None, "--name", help="The speaker's name (e.g. the tool's)."),
    tool_call_id: str | None = typer.Option(None, "--tool-call-id", help="A tool turn: the call it answers."),
    tool_calls: str | None = typer.Option(None, "--tool-calls", help="An assistant turn: its tool calls as JSON."),
    agent: str = AgentOption,
    user: str | None = typer.Option(None, "--user", "-u", help="The user it is with (proactive memory)."),
    as_json: bool = JsonOption,
) -> None:
    """Append a turn to a session (retention, the archive and auto compaction apply)."""
    content = read_text_argument(text)
    calls = _tool_calls(tool_calls)
    with engine(ctx) as rv:
        turn = rv.conversation.add_turn(
            session_id,
            role,
            content,
            name=name,
            tool_call_id=tool_call_id,
            tool_calls=calls,
            create=create_session,
            agent_id=agent,
            user_id=user,
        )
        emit(turn, as_json, f"turn {turn.index} added to {session_id}")


def _print_compaction(result: CompactionResult) -> None:
    if not result.compacted:
        console.print(f"{result.session_id}: not compacted — {result.reason}", markup=False)
        return
    console.print(
        f"{result.session_id}: summarised {result.turns_summarised} turns through turn {result.compacted_through} "
        f"({result.method})",
        markup=False,
    )
    if result.fallback:
        console.print(f"  [yellow]warning:[/] {result.reason}")


@app.command()
def compact(
    ctx: typer.Context,
    session_id: str | None = typer.Argument(None, help="The session to compact (or --all)."),
    all_sessions: bool = typer.Option(False, "--all", help="Compact every session of the agent."),
    force: bool = typer.Option(False, "--force", help="Compact even below the threshold."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Summarise the older turns of a session (of every session with --all), keeping the most recent verbatim:
    with the LLM when one is configured (falling back to the extractive summary if it fails)."""
    if (session_id is None) == (not all_sessions):
        fail(ValidationError("give a session id or --all (not both)", field="session_id"))
    with engine(ctx) as rv:
        if all_sessions:
            results = rv.conversation.compact_all(agent, force=force)
        else:
            assert session_id is not None
            results = [rv.conversation.compact(session_id, force=force, agent_id=agent)]
        if as_json:
            emit_json(results if all_sessions else results[0])
            return
        if not results:
            console.print(f"no live sessions for {agent}", markup=False)
        for result in results:
            _print_compaction(result)


@app.command("compaction-status")
def compaction_status(ctx: typer.Context, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Per session: live messages, messages the summary does not cover, the threshold, whether it needs
    compaction."""
    with engine(ctx) as rv:
        rows = rv.conversation.compaction_status(agent)
        if as_json:
            emit_json(rows)
            return
        for r in rows:
            need = "needs compaction" if r.needs_compaction else "ok"
            state = " (expired)" if r.expired else ""
            console.print(
                f"{r.session_id:<24} {r.live_messages:>5} live, {r.uncovered:>5} uncovered / {r.threshold}, "
                f"summary through {r.compacted_through} ({r.summary_method or 'none'}): {need}{state}",
                markup=False,
            )
