"""Store-wide commands: status, doctor, backup, restore-backup, vacuum."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from reverie.cli import render
from reverie.cli.common import JsonOption, emit, emit_json, engine


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Where the store is, how big, and its entries per tier and category."""
    with engine(ctx) as rv:
        result = rv.stats()
        if as_json:
            emit_json(result)
        else:
            render.stats(result)


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
