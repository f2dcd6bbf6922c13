"""Store-wide commands: status, doctor, backup, restore-backup, vacuum.

``status`` and ``doctor`` only read (a read-only store is read, a missing one is not created). ``doctor`` opens
the store itself, not the engine, so it can still say what is wrong with a file the engine refuses; on a
file that fails its integrity check, ``--repair`` never writes to it: it copies what can still be read into
a new file beside it (``storage.resolve.recover_store``), says how many rows of each kind it saved and how to
switch to it, and otherwise points to ``restore-backup``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

import reverie
from reverie.cli import render
from reverie.cli.common import (
    READ_ONLY_NOTICE,
    JsonOption,
    console,
    damage_advice,
    emit,
    emit_json,
    engine,
    err_console,
    escape,
    fail,
    state,
    store_location,
)
from reverie.clock import SystemClock
from reverie.errors import ReverieError, StorageError
from reverie.views.plain import to_jsonable

if TYPE_CHECKING:
    from reverie.storage.resolve import Recovery


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Where the store is, how big, its entries per tier and category, and its embeddings (after SQLite's
    quick integrity check: a damaged store is reported, exit 1)."""
    with engine(ctx, read=True, verify=True) as rv:
        result = rv.stats()
        embedding = rv.embedding_status()
        if as_json:
            emit_json({**to_jsonable(result), "embedding": embedding})
        else:
            render.stats(result)
            render.embedding(embedding)


def reindex(
    ctx: typer.Context,
    force: bool = typer.Option(
        False, "--force", help="Re-embed every entry, even those that have a vector of the configured model."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Re-embed every entry with the configured embedding model (after a model change). Resumable: an
    interrupted reindex picks up where it stopped. --force re-embeds everything even when the model is
    unchanged (its weights or settings changed under the same name); run again if interrupted. The progress
    bar is on stderr.

    \b
    Example:
      reverie reindex
      reverie reindex --force --json
    """
    from reverie.settings import home_from_env

    try:
        rv = reverie.open(home_from_env(state(ctx).home), reindex=True, embedding={"background": False})
    except ReverieError as exc:
        fail(exc)
    try:
        done = _reembed(rv, force=force, quiet=as_json)
        emit({"embedded": done, **rv.embedding_status()}, as_json, f"re-embedded {done} entries")
    except ReverieError as exc:
        fail(exc)
    finally:
        rv.close()


def _reembed(rv: reverie.Reverie, *, force: bool, quiet: bool) -> int:
    """Embed what is pending (``force``: every entry) with a progress bar on stderr (none when ``quiet``)."""
    from rich.progress import Progress

    worker = rv.embedding
    if worker is None:  # no embedder configured: nothing to embed
        return 0
    stats = rv.stats()
    total = stats.live + stats.archived if force else int(str(rv.embedding_status()["pending"]))
    with Progress(console=err_console, transient=quiet, disable=quiet) as bar:
        task = bar.add_task(f"embedding with {rv.embedder.model_id if rv.embedder else 'none'}", total=total)
        if force:
            return worker.reembed_all(on_batch=lambda done: bar.update(task, completed=done))
        done = 0
        while step := rv.embed_pending(limit=256):
            done += step
            bar.update(task, completed=done)
        return done


def doctor(
    ctx: typer.Context,
    repair: bool = typer.Option(
        False,
        "--repair",
        help="Rebuild what can be rebuilt (the full-text index, missing versions); for a damaged file, copy what "
        "can still be read into a new file beside it.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Check integrity, full-text index consistency and version rows; optionally repair. Reads only without
    --repair (a read-only store is checked as it is)."""
    from reverie.storage import open_store, store_exists
    from reverie.storage.resolve import file_problem, sqlite_file

    url, options = store_location(ctx)
    if not store_exists(url):
        fail(StorageError(f"no store at {sqlite_file(url) or url}; nothing was created"))
    try:
        store = open_store(url, now=SystemClock().now(), options=options, mode="rw" if repair else "read")
    except ReverieError as exc:
        problem = file_problem(url) if isinstance(exc, StorageError) else None
        if problem is None:
            fail(damage_advice(exc))
        _damaged(url, problem, repair=repair, as_json=as_json)
    try:
        if store.read_only:
            err_console.print(f"note: {READ_ONLY_NOTICE}", markup=False, soft_wrap=True)
        report = store.check(repair=repair)
    except ReverieError as exc:
        fail(damage_advice(exc))
    finally:
        store.close()
    if report.checks.get("integrity", "ok") != "ok":
        _damaged(url, report.checks["integrity"], repair=repair, as_json=as_json)
    if as_json:
        emit_json(report)
    else:
        render.health(report, repaired=repair)
    if not report.ok:
        raise typer.Exit(1)


def _damaged(url: str, problem: str, *, repair: bool, as_json: bool) -> NoReturn:
    """Report a store file that is refused or fails its integrity check (exit 1); with ``repair``, recover
    what can be read of a damaged one into a new file. Never suggests ``--repair`` after a repair."""
    from reverie.storage.resolve import recover_store, recoverable, sqlite_file
    from reverie.types import HealthReport

    if not recoverable(url):  # empty, not SQLite, another program's database: the problem says what to do
        fail(StorageError(problem))
    checks = {"integrity": problem}
    if not repair:
        if as_json:
            emit_json(HealthReport(ok=False, checks=checks, repaired=()))
        else:
            render.health(HealthReport(ok=False, checks=checks, repaired=()))
            console.print("(`--repair` leaves this file as it is and writes the recovered store beside it)")
        raise typer.Exit(1)
    try:
        recovery = recover_store(url, now=SystemClock().now())
    except ReverieError as exc:
        fail(exc)
    path = sqlite_file(url)
    if recovery.destination is None:
        fail(
            StorageError(
                f"{path} is damaged ({problem}) and nothing could be read from it ({recovery.method}); restore a "
                f"backup: move it away (`mv {path} {path}.damaged`) and run `reverie restore-backup BACKUP`"
            )
        )
    if as_json:
        emit_json({"ok": False, "checks": checks, "recovered": _recovery_json(recovery)})
        raise typer.Exit(1)
    console.print(f"[red]problem[/]  integrity: {escape(problem)}", soft_wrap=True)
    console.print(
        f"recovered what could be read into {escape(str(recovery.destination))} ({escape(recovery.method)}); "
        "rows saved:",
        soft_wrap=True,
    )
    for table, rows in recovery.rows.items():
        lost = recovery.skipped.get(table, 0)
        if rows or lost:
            console.print(f"  {table} {rows}" + (f" ({lost} unreadable or refused)" if lost else ""), markup=False)
    for line in recovery.repaired:
        console.print(f"[yellow]repaired[/]  {escape(line)} (in the recovered store)", soft_wrap=True)
    console.print(
        "The damaged file is kept as it was. To switch to the recovered store, stop every Reverie process using "
        "it, then move the damaged file with its -wal and -shm files (a WAL left beside the recovered store "
        "would be replayed into it) and put the recovered one in its place:",
        markup=False,
        soft_wrap=True,
    )
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            console.print(f"  mv {path}{suffix} {path}.damaged{suffix}", markup=False, soft_wrap=True)
    console.print(f"  mv {recovery.destination} {path}", markup=False, soft_wrap=True)
    console.print("If what was recovered is not enough, restore a backup with `reverie restore-backup` instead.")
    raise typer.Exit(1)


def _recovery_json(recovery: Recovery) -> dict[str, object]:
    return {
        "destination": str(recovery.destination),
        "method": recovery.method,
        "rows": recovery.rows,
        "skipped": recovery.skipped,
        "total": recovery.total,
        "repaired": list(recovery.repaired),
    }


def backup(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Where to write the backup file."),
    as_json: bool = JsonOption,
) -> None:
    """Copy the store to PATH with SQLite's online backup (safe while other processes write; a read-only store
    is copied too)."""
    with engine(ctx, read=True) as rv:
        written = rv.backup(path)
        emit({"backup": str(written)}, as_json, f"backed up to {escape(str(written))}")


def restore_backup(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="A backup written by `reverie backup`."),
    as_json: bool = JsonOption,
) -> None:
    """Replace the store with a backup; the current contents are saved first under <home>/backups/."""
    with engine(ctx) as rv:
        safety = rv.restore_backup(path)
        emit(
            {"restored": str(path), "previous_contents": str(safety)},
            as_json,
            f"restored from {escape(str(path))}; the previous contents are in {escape(str(safety))}",
        )


def vacuum(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Compact the database file and optimise the full-text index."""
    with engine(ctx) as rv:
        before = rv.stats().size_bytes
        rv.vacuum()
        after = rv.stats().size_bytes
        emit(
            {"size_before": before, "size_after": after},
            as_json,
            f"vacuumed: {before / 1024:,.0f} KiB -> {after / 1024:,.0f} KiB",
        )
