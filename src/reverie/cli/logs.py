"""``reverie executions ...`` and ``reverie tool-calls ...``: the execution log and the tool-call log of an agent
(append-only, kept in the store): record one, list them. ``reverie logs export``: any of the store's logs
(conversation, executions, tool calls) as JSONL, the record shapes of the files they were once kept in.

A step is given as ``NAME=ok`` or ``NAME=failed`` (``NAME=failed:why`` with the error), repeatable, in order.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

import reverie
from reverie.cli.common import AgentOption, JsonOption, console, emit_json, engine, escape, fail
from reverie.core.execution_patterns import WINDOW_DAYS
from reverie.core.text import preview
from reverie.errors import ValidationError

if TYPE_CHECKING:  # the logs and their records load when a command runs
    from reverie.logs import StoredLog
    from reverie.skills.activity_logs import ExecutionRecord, ToolCallRecord

executions_app = typer.Typer(
    help="The execution log: logged multi-step executions (what was attempted, its steps, success).",
    no_args_is_help=True,
)
tool_calls_app = typer.Typer(help="The tool-call log: the agent's tool calls (tool, ok, error).", no_args_is_help=True)
logs_app = typer.Typer(
    help="The store's telemetry logs (conversation, executions, tool-calls): export them as JSONL.",
    no_args_is_help=True,
)
LOG_NAMES = ("conversation", "executions", "tool-calls")
DaysOption = typer.Option(WINDOW_DAYS, "--days", help="Only the last this many days.")
LimitOption = typer.Option(100, "--limit", "-n", help="At most this many (1 to 1000).")


def parse_step(text: str) -> dict[str, Any]:
    """``NAME=ok`` / ``NAME=failed[:error]`` as a step object (the name ends at the first ``=``);
    ValidationError for anything else."""
    name, sep, status = text.partition("=")
    state, _, error = status.partition(":")
    if not sep or not name or state not in ("ok", "failed"):
        raise ValidationError(f"--step {text[:80]!r}: use NAME=ok or NAME=failed[:error]", field="steps")
    return {"name": name, "ok": state == "ok", **({"error": error} if error else {})}


def _execution_line(record: ExecutionRecord) -> str:
    mark = "[green]ok[/]" if record.success else "[red]failed[/]"
    steps = " ".join(f"{escape(s.name)}{'' if s.ok else '✗'}" for s in record.steps)
    skill = f" [dim]skill {escape(record.skill)}[/]" if record.skill else ""
    error = f" — {escape(preview(record.error, 120))}" if record.error else ""
    return f"{record.at.strftime('%Y-%m-%d %H:%M')} {mark} {escape(preview(record.description, 120))}{skill}{error}" + (
        f" [dim]steps: {steps}[/]" if steps else ""
    )


@executions_app.command("record")
def record_execution(
    ctx: typer.Context,
    description: str = typer.Argument(..., help="What was attempted."),
    success: bool = typer.Option(..., "--success/--failure", help="Whether the execution succeeded."),
    step: list[str] | None = typer.Option(None, "--step", help="NAME=ok or NAME=failed[:error] (repeatable)."),
    skill: str | None = typer.Option(None, "--skill", help="The skill whose plan it ran."),
    session: str | None = typer.Option(None, "--session", "-s", help="The session it ran in."),
    error: str | None = typer.Option(None, "--error", "-e", help="Why it failed."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Log one multi-step execution."""
    try:
        steps = [parse_step(s) for s in step or []]
    except ValidationError as exc:
        fail(exc)
    with engine(ctx) as rv:
        record = rv.executions.record(
            agent, description, success, steps=steps, session_id=session, skill=skill, error=error
        )
        if as_json:
            emit_json(record)
        else:
            console.print(f"logged {_execution_line(record)}")


@executions_app.command("list")
def list_executions(
    ctx: typer.Context,
    days: float = DaysOption,
    limit: int = LimitOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's logged executions, newest first."""
    with engine(ctx) as rv:
        found = rv.executions.list(agent, days=days, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print(f"no executions for agent {agent}", markup=False)
        for record in found:
            console.print(_execution_line(record))


def _call_line(record: ToolCallRecord) -> str:
    mark = "[green]ok[/]" if record.ok else "[red]failed[/]"
    took = f" {record.duration_ms:.0f} ms" if record.duration_ms is not None else ""
    error = f" — {escape(preview(record.error, 120))}" if record.error else ""
    return f"{record.at.strftime('%Y-%m-%d %H:%M')} {mark} [bold]{escape(record.tool)}[/]{took}{error}"


@tool_calls_app.command("record")
def record_tool_call(
    ctx: typer.Context,
    tool: str = typer.Argument(..., help="The tool's name."),
    ok: bool = typer.Option(..., "--ok/--failed", help="Whether the call succeeded."),
    error: str | None = typer.Option(None, "--error", "-e", help="Why it failed."),
    arguments: str | None = typer.Option(None, "--arguments", help="The call's arguments, a JSON object."),
    duration_ms: float | None = typer.Option(None, "--duration-ms", help="How long it took."),
    session: str | None = typer.Option(None, "--session", "-s", help="The session it ran in."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Log one tool call."""
    args = None
    if arguments is not None:
        try:
            args = json.loads(arguments)
        except ValueError as exc:
            fail(ValidationError(f"--arguments is not JSON: {exc}", field="arguments"))
        except RecursionError:  # the decoder gave up ~1,000 levels down: far past the limit
            from reverie.core.validate import too_deep

            fail(too_deep("arguments"))
    with engine(ctx) as rv:
        record = rv.tool_calls.record(
            agent, tool, ok, session_id=session, error=error, arguments=args, duration_ms=duration_ms
        )
        if as_json:
            emit_json(record)
        else:
            console.print(f"logged {_call_line(record)}")


@tool_calls_app.command("list")
def list_tool_calls(
    ctx: typer.Context,
    days: float = DaysOption,
    tool: str | None = typer.Option(None, "--tool", "-t", help="Only this tool."),
    limit: int = LimitOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's logged tool calls, newest first."""
    with engine(ctx) as rv:
        found = rv.tool_calls.list(agent, days=days, tool=tool, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print(f"no tool calls for agent {agent}", markup=False)
        for record in found:
            console.print(_call_line(record))


def _stored(rv: reverie.Reverie, name: str) -> StoredLog:
    logs: dict[str, StoredLog] = {
        "conversation": rv.conversation_log,
        "executions": rv.executions.log,
        "tool-calls": rv.tool_calls.log,
    }
    return logs[name]


def _write(lines: Iterable[bytes], path: Path | None) -> int:
    """Write ``lines`` to ``path`` (replacing it) or to standard output; returns how many."""
    count = 0
    if path is None:
        for line in lines:
            sys.stdout.buffer.write(line)
            count += 1
        sys.stdout.buffer.flush()
        return count
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line)
            count += 1
    return count


@logs_app.command("export")
def export_log(
    ctx: typer.Context,
    log: str = typer.Argument(..., help="conversation, executions or tool-calls."),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="A file (a directory for the conversation log); standard output without it."
    ),
    agent: str | None = typer.Option(None, "--agent", "-a", help="Only this agent's records (default: every agent)."),
    session: str | None = typer.Option(None, "--session", "-s", help="Only this session's records."),
) -> None:
    """Write a log's records as JSONL, oldest first, one record a line as the old files held them. The
    conversation log to a directory: one ``{session_id}.jsonl`` per session, as ``<home>/logs/conversation/``
    was; to standard output or with ``--session`` to a file, one stream (on standard output each record also
    names its ``session_id``, which the file name carried)."""
    from reverie.core import validate
    from reverie.logs.jsonl import encode_record, validate_session_id

    if log not in LOG_NAMES:
        fail(ValidationError(f"unknown log {log!r}: use one of {', '.join(LOG_NAMES)}", field="log"))
    try:
        agent = None if agent is None else validate.identifier(agent, name="agent_id")
        session = None if session is None else validate_session_id(session)
    except ValidationError as exc:
        fail(exc)
    with engine(ctx) as rv:
        stored = _stored(rv, log)
        rows = stored.rows(agent_id=agent, session_id=session)
        if log == "conversation" and session is None and output is not None:
            by_session: dict[str, list[bytes]] = {}
            for row in rows:
                by_session.setdefault(row.session_id or "", []).append(encode_record(row.record))
            output.mkdir(parents=True, exist_ok=True)
            written = sum(_write(lines, output / f"{sid}.jsonl") for sid, lines in sorted(by_session.items()))
        else:
            named = log == "conversation" and output is None and session is None
            records = ({**r.record, "session_id": r.session_id} if named else r.record for r in rows)
            written = _write((encode_record(r) for r in records), output)
    if output is not None:
        console.print(f"exported {written} records of the {log} log to {output}", markup=False)
