"""Moving and upgrading stores: ``reverie copy SRC DST`` and ``reverie migrate``.

Both work on store URLs (or SQLite paths / data directories, as ``reverie.storage.store_url`` reads them)
rather than on an engine: a copy needs two stores, and a migration must be listable without opening one.
The default store is the home's (``--home`` / ``REVERIE_HOME``, then ``store.url`` in its settings).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import typer

from reverie.cli.common import JsonOption, console, emit, emit_json, err_console, escape, fail, state
from reverie.clock import SystemClock
from reverie.errors import ReverieError, StorageError

if TYPE_CHECKING:  # settings, storage and Rich's widgets load when a command runs
    from reverie.settings import Settings
    from reverie.storage.base import OpenMode, Store, StoreOptions


def _settings(ctx: typer.Context) -> Settings:
    from reverie.settings import home_from_env, load_settings

    try:
        return load_settings(home_from_env(state(ctx).home))
    except ReverieError as exc:
        fail(exc)


def _options(settings: Settings) -> StoreOptions:
    from reverie.settings import config_from
    from reverie.storage.base import StoreOptions

    return config_from(StoreOptions, settings.store)


def _shown(url: str) -> str:
    """``url`` without its password, for output."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


@contextmanager
def _opened(url: str, options: StoreOptions, mode: OpenMode = "rw") -> Iterator[Store]:
    from reverie.storage import open_store

    try:
        store = open_store(url, now=SystemClock().now(), options=options, mode=mode)
    except ReverieError as exc:
        fail(exc)
    try:
        yield store
    except ReverieError as exc:
        fail(exc)
    finally:
        store.close()


def copy(
    ctx: typer.Context,
    source: str = typer.Argument(..., help="The store to copy: a store URL, a .db file or a data directory."),
    destination: str = typer.Argument(..., help="Where to copy it: a new or empty store (URL, .db file, directory)."),
    as_json: bool = JsonOption,
) -> None:
    """Copy a whole store into a new, empty store of either backend (SQLite <-> PostgreSQL), keeping ids,
    versions, timestamps and vectors. One transaction: all or nothing; a non-empty destination is refused."""
    from rich.progress import Progress, TaskID
    from rich.table import Table

    from reverie.storage import portable, store_exists, store_url

    options = _options(_settings(ctx))
    src_url, dst_url = store_url(source), store_url(destination)
    if not store_exists(src_url):
        fail(StorageError(f"no store at {_shown(src_url)}"))
    # The source is only read: a read-only one is copied as it is (and never migrated by the copy).
    with _opened(src_url, options, "read") as src, _opened(dst_url, options) as dst:
        # Status, not data: the bar is on stderr, so stdout holds only the summary (or the JSON).
        with Progress(console=err_console, transient=as_json, disable=as_json) as bar:
            tasks: dict[str, TaskID] = {}

            def tick(table: str, done: int, total: int) -> None:
                if total == 0:  # an empty table is done at once (a 0 total would show 0%)
                    done = total = 1
                if table not in tasks:
                    tasks[table] = bar.add_task(table, total=total)
                bar.update(tasks[table], completed=done, total=total)

            counts = portable.copy(src, dst, progress=tick)
        if as_json:
            emit_json({"source": src.url, "destination": dst.url, "rows": counts, "total": sum(counts.values())})
            return
        summary = Table("table", "rows")
        for name, rows in counts.items():
            summary.add_row(name, f"{rows:,}")
        summary.add_row("[bold]total[/]", f"[bold]{sum(counts.values()):,}[/]")
        console.print(f"copied {escape(src.url)} -> {escape(dst.url)}")
        console.print(summary)


def migrate(
    ctx: typer.Context,
    store: str | None = typer.Option(
        None, "--store", help="A store URL, .db file or data directory (default: the home's store)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the pending migrations without applying them."),
    as_json: bool = JsonOption,
) -> None:
    """Apply the pending schema migrations (opening a store does it too) and list them; --dry-run only lists
    what would run."""
    from reverie.storage import pending_migrations, store_url

    settings = _settings(ctx)
    url = store_url(store) if store else settings.store.url or store_url(settings.home)
    try:
        pending = pending_migrations(url)
    except ReverieError as exc:
        fail(exc)
    if dry_run:
        lines = "\n".join(f"  {name}" for name in pending)
        message = f"{escape(_shown(url))}: " + (f"would apply\n{lines}" if pending else "up to date")
        emit({"store": _shown(url), "dry_run": True, "pending": pending}, as_json, message)
        return
    with _opened(url, _options(settings)) as opened:
        applied = opened.migrations()
    now = [name for name, _ in applied if name in pending]
    if as_json:
        emit_json(
            {
                "store": opened.url,
                "dry_run": False,
                "applied_now": now,
                "migrations": [{"name": name, "applied_at": when} for name, when in applied],
            }
        )
        return
    console.print(f"{escape(opened.url)}: " + (f"applied {', '.join(now)}" if now else "up to date"))
    for name, when in applied:
        console.print(f"  {name:<28} [dim]{when:%Y-%m-%d %H:%M:%S UTC}[/]")
