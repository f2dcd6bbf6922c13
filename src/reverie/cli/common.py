"""What every command shares: the data directory, opening the engine, errors, JSON output, scope options."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

import reverie
from reverie.errors import EmbeddingError, LLMError, NotFound, ReverieError, ValidationError
from reverie.settings import home_from_env
from reverie.types import Scope
from reverie.views.entry import face_json

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON instead of text.")
AgentOption = typer.Option("default", "--agent", "-a", envvar="REVERIE_AGENT", help="Agent id (scope).")
UserOption = typer.Option(None, "--user", "-u", help="User id (scope); omit for agent-wide memory.")
SessionOption = typer.Option(None, "--session", "-s", help="Session id (scope).")


@dataclass
class State:
    """Options given before the command (``reverie --home DIR memory ...``)."""

    home: Path | None = None


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, State) else State()


def fail(exc: ReverieError | str) -> NoReturn:
    """Report an error on stderr and exit: 2 for bad input or an unknown id, 1 for everything else."""
    message = str(exc)
    err_console.print(f"[bold red]error:[/] {message}", markup=True, highlight=False)
    code = 2 if isinstance(exc, ValidationError | NotFound) else 1
    raise typer.Exit(code)


@contextmanager
def engine(ctx: typer.Context, *, background: bool = False) -> Iterator[reverie.Reverie]:
    """Open the engine for the chosen home; turn Reverie's errors into a message and an exit code.
    ``background``: keep the background workers (long-running commands)."""
    try:
        # A one-shot command has no time for background threads: it expands (with an LLM), extracts into the
        # knowledge graph and embeds what is pending before it exits instead, so all keep up with the shell.
        rv = reverie.open(
            home_from_env(state(ctx).home),
            embedding={"background": background},
            memory={"expansion_background": background},
            graph={"extraction_background": background},
            proactive={"memorize_background": background},
        )
    except ReverieError as exc:
        fail(exc)
    try:
        yield rv
        _memorize_before_exit(rv)
        _expand_before_exit(rv)
        _extract_before_exit(rv)
        _embed_before_exit(rv)
    except ReverieError as exc:
        fail(exc)
    finally:
        rv.close()


def _memorize_before_exit(rv: reverie.Reverie) -> None:
    """With an LLM and ``proactive.memorize_on_turn``, memorize the turns this command recorded. A failing
    LLM loses them (the queue is in-process): a warning, not an error."""
    try:
        rv.proactive.memorize_pending()
    except LLMError as exc:
        err_console.print(f"[yellow]warning:[/] turns were not memorized: {exc}")


def _expand_before_exit(rv: reverie.Reverie) -> None:
    """With an LLM configured, expand what this command saved (before embedding, so the expanded facts get
    their vectors too). A failing LLM leaves the entries pending for the next run: a warning, not an error."""
    if rv.expansion is None:
        return
    try:
        rv.expand_pending()
    except LLMError as exc:
        err_console.print(f"[yellow]warning:[/] entries wait for their expansion: {exc}")


def _extract_before_exit(rv: reverie.Reverie) -> None:
    """Learn the entities and relations of what this command saved. A failing LLM leaves the entries queued
    for the next run: a warning, not an error."""
    if rv.graph_extraction is None:
        return
    try:
        rv.extract_pending()
    except LLMError as exc:
        err_console.print(f"[yellow]warning:[/] entries wait for their graph extraction: {exc}")


def _embed_before_exit(rv: reverie.Reverie) -> None:
    try:
        rv.embed_pending()
    except EmbeddingError as exc:
        err_console.print(f"[yellow]warning:[/] entries wait for their embedding: {exc}")


def scope_of(agent: str, user: str | None, session: str | None) -> Scope:
    return Scope(agent_id=agent, user_id=user, session_id=session)


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(face_json(value), ensure_ascii=False, indent=2) + "\n")


def emit(value: Any, as_json: bool, message: str) -> None:
    """``value`` as JSON with ``--json``, else the (Rich markup) ``message``."""
    if as_json:
        emit_json(value)
    else:
        console.print(message)


def read_text_argument(value: str) -> str:
    """``-`` means: read the text from standard input."""
    return sys.stdin.read() if value == "-" else value
