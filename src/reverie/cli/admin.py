"""Store-wide commands: status, doctor, backup, restore-backup, vacuum."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import Progress

import reverie
from reverie.cli import render
from reverie.cli.common import JsonOption, console, emit, emit_json, engine, fail, state
from reverie.errors import ReverieError
from reverie.settings import home_from_env
from reverie.views.plain import to_jsonable


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Where the store is, how big, its entries per tier and category, and its embeddings."""
    with engine(ctx) as rv:
        result = rv.stats()
        embedding = rv.embedding_status()
        if as_json:
            emit_json({**to_jsonable(result), "embedding": embedding})
        else:
            render.stats(result)
            render.embedding(embedding)


def reindex(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Re-embed every entry with the configured embedding model (after a model change). Resumable: an
    interrupted reindex picks up where it stopped."""
    try:
        rv = reverie.open(home_from_env(state(ctx).home), reindex=True, embedding={"background": False})
    except ReverieError as exc:
        fail(exc)
    try:
        pending = int(str(rv.embedding_status()["pending"]))
        with Progress(console=console, transient=as_json, disable=as_json) as bar:
            task = bar.add_task(f"embedding with {rv.embedder.model_id if rv.embedder else 'none'}", total=pending)
            done = 0
            while step := rv.embed_pending(limit=256):
                done += step
                bar.update(task, completed=done)
        emit({"embedded": done, **rv.embedding_status()}, as_json, f"re-embedded {done} entries")
    except ReverieError as exc:
        fail(exc)
    finally:
        rv.close()


def doctor(
    ctx: typer.Context,
    repair: bool = typer.Option(False, "--repair", help="Rebuild what can be rebuilt (the full-text index)."),
    as_json: bool = JsonOption,
) -> None:
    """Check integrity, full-text index consistency and version rows; optionally repair."""
    with engine(ctx) as rv:
        report = rv.check(repair=repair)
        if as_json:
            emit_json(report)
        else:
            render.health(report)
        if not report.ok:
            raise typer.Exit(1)


def backup(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Where to write the backup file."),
    as_json: bool = JsonOption,
) -> None:
    """Copy the store to PATH with SQLite's online backup (safe while other processes write)."""
    with engine(ctx) as rv:
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
