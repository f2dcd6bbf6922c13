"""The root ``reverie`` command."""

from __future__ import annotations

import json
import sys
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
    portability,
    proactive,
    serve,
    session,
    skills,
    store_cmds,
    usage,
)
from reverie.cli.common import State, error_json, errors_as_json
from reverie.cli.examples import add_examples

# Plain help (no Rich panels): a flag is shown as `--json`, never `--json <bool>`, and `--help` loads no Rich.
# Every sub-app inherits the mode. Completion: `--install-completion` / `--show-completion` (shellingham finds
# the shell); a shell asks through `_REVERIE_COMPLETE=complete_bash|complete_zsh|complete_fish reverie`.
app = typer.Typer(
    help="Reverie: a memory engine for LLM agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
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
app.command("export")(portability.export)
app.command("import")(portability.import_)
app.command()(store_cmds.migrate)
app.command()(demo.demo)
app.command("mcp")(mcp_cmd.mcp)
app.command()(serve.serve)
app.command()(usage.usage)
app.command()(usage.cost)
add_examples(app)  # every command's --help ends with an example


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
    errors_as_json(False)  # until the command's own --json says otherwise


def main() -> None:
    """Run the command line. With ``--json`` a usage error (an unknown option, a missing argument, a value of
    the wrong type) is the same JSON error object as any other, on stdout, with Click's exit code 2."""
    # One program name however it was started (`reverie`, `python -m reverie`): the help's usage line and the
    # shell completion's variable (`_REVERIE_COMPLETE`) follow it.
    if not _asks_for_json(sys.argv[1:]):
        app(prog_name="reverie")
        return
    # Typer vendors Click; its usage errors are only reachable outside standalone mode.
    from typer._click.exceptions import ClickException

    try:
        code = app(prog_name="reverie", standalone_mode=False)
    except ClickException as exc:
        param = getattr(exc, "param", None)
        field = getattr(param, "name", None)
        body = error_json(exc.format_message(), kind="validation", field=field)
        sys.stdout.write(json.dumps(body, ensure_ascii=False) + "\n")
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _asks_for_json(args: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it would be a command's text)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options
