"""The root ``reverie`` command."""

from __future__ import annotations

from pathlib import Path

import typer

from reverie import __version__
from reverie.cli import (
    admin,
    bench,
    demo,
    dream,
    feedback,
    graph,
    keys,
    logs,
    maintain,
    mcp_cmd,
    memory,
    proactive,
    serve,
    session,
    skills,
    store_cmds,
    usage,
)
from reverie.cli.common import State

app = typer.Typer(
    help="Reverie: a memory engine for LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(memory.app, name="memory")
app.add_typer(bench.app, name="bench")
app.add_typer(maintain.app, name="maintain")
app.add_typer(dream.app, name="dream")
app.add_typer(dream.audit_app, name="audit")
app.add_typer(session.app, name="session")
app.add_typer(keys.app, name="keys")
app.add_typer(graph.app, name="kg")
app.add_typer(skills.app, name="skills")
app.add_typer(feedback.app, name="feedback")
app.add_typer(logs.executions_app, name="executions")
app.add_typer(logs.tool_calls_app, name="tool-calls")
app.add_typer(logs.logs_app, name="logs")
app.add_typer(proactive.app, name="proactive")
app.command()(admin.status)
app.command()(admin.doctor)
app.command()(admin.backup)
app.command("restore-backup")(admin.restore_backup)
app.command()(admin.vacuum)
app.command()(admin.reindex)
app.command()(store_cmds.copy)
app.command()(store_cmds.migrate)
app.command()(demo.demo)
app.command("mcp")(mcp_cmd.mcp)
app.command()(serve.serve)
app.command()(usage.usage)
app.command()(usage.cost)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"reverie {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    home: Path | None = typer.Option(
        None, "--home", envvar="REVERIE_HOME", help="Data directory (default ~/.reverie).", show_default=False
    ),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Reverie: a memory engine for LLM agents."""
    ctx.obj = State(home=home)


def main() -> None:
    app()
