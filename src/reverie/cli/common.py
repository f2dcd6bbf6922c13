"""What every command shares: the data directory, opening the engine, errors, JSON output, scope options.

A command that only reads opens the engine with ``read=True``: a missing store is "no store at ..." (nothing
is created), and a store it cannot write is opened read-only with a one-line notice on stderr. A command
that writes creates a missing store. ``verify=True`` (servers, ``status``) runs the store's quick integrity
check first and refuses a store that fails it, before anything is written.

Start-up: every CLI module is imported to build the command line, so what they import at the top is paid by
``reverie --version`` and ``--help``. Only typer, the standard library and Reverie's light modules (errors,
clock, types, views, pure ``core`` rules) are imported at the top; settings, storage and the engine are
imported by the functions that use them, and Rich by the first print (``console``, ``err_console`` and
``escape`` here defer it). tests/integration/test_startup_imports.py holds this.

Output (docs/cli.md, Conventions): stdout carries only the command's data (text, or JSON with ``--json``);
notes, warnings, progress bars and errors go to stderr, except that under ``--json`` an error is a JSON object
on stdout (``error_json``: the HTTP API's error shape and kinds) so a script reads one stream. The exit code is
the same either way: 2 for bad input or an unknown id, 1 for anything else. Text read from standard input
(``-``) loses its trailing newlines (what ``echo`` and heredocs add), nothing else.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import typer

import reverie
from reverie.errors import (
    OTHER_KIND,
    EmbeddingError,
    LLMError,
    NotFound,
    ReverieError,
    StorageError,
    ValidationError,
    error_kind,
)

if TYPE_CHECKING:
    from rich.console import Console

    from reverie.settings import Settings
    from reverie.storage.base import StoreOptions
    from reverie.types import Scope


class _DeferredConsole:
    """A Rich ``Console`` made on first use: Rich costs tens of milliseconds to import, and ``reverie
    --version`` prints nothing through it. Every attribute is the real console's, and so is ``with``
    (Rich's ``Live``, under a progress bar, enters its console)."""

    def __init__(self, **options: Any) -> None:
        self._deferred_options = options
        self._deferred_console: Console | None = None

    def _real(self) -> Console:
        if self._deferred_console is None:
            from rich.console import Console

            self._deferred_console = Console(**self._deferred_options)
        return self._deferred_console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def __enter__(self) -> Console:
        return self._real().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._real().__exit__(*exc)


console = cast("Console", _DeferredConsole(highlight=False))
err_console = cast("Console", _DeferredConsole(stderr=True, highlight=False))


def escape(text: str) -> str:
    """Rich's ``escape`` (user text is never read as markup), importing Rich on first use."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


# Whether the running command was given --json: its errors are then JSON on stdout. Set by the option's
# callback as the command's options are parsed, and reset by the root callback before every command.
_errors_as_json: ContextVar[bool] = ContextVar("reverie_cli_errors_as_json", default=False)


def errors_as_json(value: bool) -> bool:
    """``--json``'s callback (and the root's reset): report this command's errors as JSON or as text."""
    _errors_as_json.set(value)
    return value


JsonOption = typer.Option(
    False,
    "--json",
    help="Print machine-readable JSON instead of text (errors too, on stdout).",
    callback=errors_as_json,
)
AgentOption = typer.Option("default", "--agent", "-a", envvar="REVERIE_AGENT", help="Agent id (scope).")
UserOption = typer.Option(None, "--user", "-u", help="User id (scope); omit for agent-wide memory.")
SessionOption = typer.Option(None, "--session", "-s", help="Session id (scope).")
READ_ONLY_NOTICE = "the store is read-only: writes are off"
# What SQLite says when a page of the file is not what it should be.
_DAMAGE_MARKS = ("malformed", "not a database", "corrupt")


@dataclass
class State:
    """Options given before the command (``reverie --home DIR memory ...``)."""

    home: Path | None = None


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    return obj if isinstance(obj, State) else State()


def fail(exc: ReverieError | str) -> NoReturn:
    """Report an error and exit: 2 for bad input or an unknown id, 1 for everything else. One line on stderr,
    or with ``--json`` the ``error_json`` object on stdout."""
    if _errors_as_json.get():
        sys.stdout.write(json.dumps(error_json(exc), ensure_ascii=False) + "\n")
    else:
        # One line however long (a log keeps it whole), and the message's own brackets are text, not markup.
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(exit_code(exc))


def exit_code(exc: ReverieError | str) -> int:
    """2 for bad input or an unknown id, 1 for everything else."""
    return 2 if isinstance(exc, ValidationError | NotFound) else 1


def error_json(exc: ReverieError | str, *, kind: str | None = None, field: str | None = None) -> dict[str, Any]:
    """An error as the HTTP API's error body: ``{error, message, field, details}``, ``error`` the same kind
    the API names (``reverie.errors.error_kind``; a plain message, the CLI's own failure, is ``server``)."""
    if kind is None:
        kind = OTHER_KIND if isinstance(exc, str) else error_kind(exc)
    if field is None and isinstance(exc, ValidationError):
        field = exc.field
    return {"error": kind, "message": str(exc), "field": field, "details": []}


def damage_advice(exc: ReverieError) -> ReverieError:
    """A storage error that says the file is damaged, with what to do about it."""
    text = str(exc)
    if not isinstance(exc, StorageError) or not any(mark in text.lower() for mark in _DAMAGE_MARKS):
        return exc
    if "doctor" in text:
        return exc
    return StorageError(
        f"{text}: the store file is damaged; `reverie doctor` checks it and `reverie doctor --repair` copies what "
        "can still be read into a new file beside it"
    )


def store_location(ctx: typer.Context) -> tuple[str, StoreOptions]:
    """The home's store URL and options (``store.url`` in its settings, else ``<home>/reverie.db``), for the
    commands that open the store itself rather than the engine."""
    from reverie.settings import config_from, home_from_env, load_settings
    from reverie.storage import store_url
    from reverie.storage.base import StoreOptions

    try:
        settings: Settings = load_settings(home_from_env(state(ctx).home))
    except ReverieError as exc:
        fail(exc)
    return settings.store.url or store_url(settings.home), config_from(StoreOptions, settings.store)


@contextmanager
def engine(
    ctx: typer.Context, *, background: bool = False, read: bool = False, verify: bool = False, finish: bool = True
) -> Iterator[reverie.Reverie]:
    """Open the engine for the chosen home; turn Reverie's errors into a message and an exit code.
    ``background``: keep the background workers (long-running commands). ``read``: the command only reads
    (see the module docstring). ``verify``: refuse a store that fails its quick integrity check. ``finish``:
    do the pending work before closing (off: the command hands the store to processes that will do it)."""
    from reverie.settings import home_from_env

    if verify:
        _verify(ctx)  # before opening: the open itself (migrations, workers) may write
    try:
        # A one-shot command has no time for background threads: it expands (with an LLM), extracts into the
        # knowledge graph and embeds what is pending before it exits instead, so all keep up with the shell.
        rv = reverie.open(
            home_from_env(state(ctx).home),
            mode="read" if read else "rw",
            embedding={"background": background},
            memory={"expansion_background": background},
            graph={"extraction_background": background},
            proactive={"memorize_background": background},
        )
    except ReverieError as exc:
        fail(damage_advice(exc))
    if rv.store.read_only:
        err_console.print(f"note: {READ_ONLY_NOTICE}", markup=False, highlight=False, soft_wrap=True)
    failure: ReverieError | None = None
    try:
        yield rv
        if finish:
            _finish_pending(rv)
    except ReverieError as exc:
        failure = exc
    except typer.Exit as done:
        # The command chose its exit code; a store that then fails to close says so only after a success.
        closing = _close(rv)
        if closing is not None and not done.exit_code:
            fail(closing)
        raise
    except BaseException:
        _close(rv)
        raise
    # Closing writes too (reads noted for aging): its failure is the command's error, one line like any other.
    closing = _close(rv, quiet=failure is not None)
    failure = failure or closing
    if failure is not None:
        fail(damage_advice(failure))


def _close(rv: reverie.Reverie, *, quiet: bool = True) -> ReverieError | None:
    """Close the engine; its error, if it raised one. ``quiet``: the command failed already, so the warnings
    closing logs (reads it could not record: the same full disk) would only repeat that one error."""
    library = logging.getLogger("reverie")
    level = library.level
    if quiet:
        library.setLevel(logging.ERROR)
    try:
        rv.close()
    except ReverieError as exc:
        return exc
    finally:
        library.setLevel(level)
    return None


def _finish_pending(rv: reverie.Reverie) -> None:
    """What a one-shot command does before it exits: memorize, expand, extract into the graph and embed what
    it (or an earlier command) saved. A write that fails here (a full disk) is the command's error."""
    _memorize_before_exit(rv)
    _expand_before_exit(rv)
    _extract_before_exit(rv)
    _embed_before_exit(rv)


def _verify(ctx: typer.Context) -> None:
    """Refuse (exit 1, one line) a store file that fails SQLite's quick check, before anything opens it."""
    from reverie.storage.resolve import file_problem, recoverable

    url, _ = store_location(ctx)
    try:
        problem = file_problem(url, quick=True)
    except ReverieError as exc:
        fail(exc)
    if problem is None:
        return
    if "nothing was" not in problem:
        problem += "; nothing was written"
    if recoverable(url):
        problem += ". `reverie doctor --repair` copies what can still be read into a new file beside it"
    fail(StorageError(problem))


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
    from reverie.types import Scope

    return Scope(agent_id=agent, user_id=user, session_id=session)


def emit_json(value: Any) -> None:
    from reverie.views.entry import face_json

    sys.stdout.write(json.dumps(face_json(value), ensure_ascii=False, indent=2) + "\n")


def emit(value: Any, as_json: bool, message: str) -> None:
    """``value`` as JSON with ``--json``, else the (Rich markup) ``message``."""
    if as_json:
        emit_json(value)
    else:
        console.print(message)


def read_text_argument(value: str) -> str:
    """``-`` means: read the text from standard input, without its trailing newlines (``echo`` and heredocs
    end the text with one; spaces and everything before them are kept). A text given as the argument is
    taken as it is."""
    return sys.stdin.read().rstrip("\r\n") if value == "-" else value
