"""``reverie export`` and ``reverie import``: memory out of a store and into one (``reverie.portability``).

Progress and warnings go to stderr; stdout holds only the result (the report, as JSON with ``--json``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import JsonOption, emit, engine, err_console, escape, fail
from reverie.errors import ValidationError

if TYPE_CHECKING:  # the engine and Rich's widgets load when a command runs
    import reverie
    from reverie.portability.report import ExportReport, ImportReport

EXPORT_FORMATS = ("jsonl", "markdown")
IMPORT_FORMATS = ("auto", "jsonl", "markdown", "mem0")
DEFAULT_AGENT = "default"  # Markdown works on one agent's entries


def export(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="Where to write: a .jsonl file, or a folder for --format markdown."),
    agent: str | None = typer.Option(
        None, "--agent", "-a", help="Only this agent's records (default: all; markdown: the default agent)."
    ),
    fmt: str = typer.Option("jsonl", "--format", "-f", help="jsonl (lossless, every record) or markdown (notes)."),
    with_vectors: bool = typer.Option(False, "--with-vectors", help="JSONL: include the embeddings (base64)."),
    force: bool = typer.Option(False, "--force", help="Overwrite PATH when it exists."),
    as_json: bool = JsonOption,
) -> None:
    """Export the store's memory: JSONL holds every record (entries with their versions, sessions, KV, the
    graph, skills, logs), Markdown one note per live entry.

    Example: reverie export backup.jsonl --agent default --with-vectors
    """
    if fmt not in EXPORT_FORMATS:
        fail(ValidationError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}", field="format"))
    if fmt == "markdown" and with_vectors:
        fail(
            ValidationError(
                "--with-vectors is for --format jsonl: Markdown notes hold no vectors", field="with_vectors"
            )
        )
    with engine(ctx, read=True, finish=False) as rv, _progress() as tick:
        if fmt == "jsonl":
            from reverie.portability.jsonl import export_jsonl

            report = export_jsonl(
                rv.store,
                path,
                clock=rv.clock,
                embedding_model=rv.embedder.model_id if rv.embedder is not None else None,
                dimensions=rv.embedder.dim if rv.embedder is not None else None,
                agent_id=agent,
                with_vectors=with_vectors,
                force=force,
                progress=tick,
            )
        else:
            report = _export_markdown(rv, path, agent, force)
    told = ", ".join(f"{n:,} {escape(kind)}" for kind, n in report.counts.items() if n)
    emit(asdict(report), as_json, f"exported to {escape(report.path)} ({report.format}): {told or 'nothing'}")


def import_(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help="An export file (JSONL), a folder of Markdown notes, or a mem0 JSON file."),
    agent: str | None = typer.Option(None, "--agent", "-a", help="Import into this agent (default: as recorded)."),
    source_format: str = typer.Option(
        "auto", "--from", help="auto (by content), jsonl, markdown or mem0.", show_default=True
    ),
    reembed: bool = typer.Option(
        False, "--reembed", help="Accept an export of another embedding model and re-embed every entry."
    ),
    stop_on_error: bool = typer.Option(
        False, "--stop-on-error", help="Stop at the first malformed line (run again to continue after it)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import memory: a Reverie JSONL export (into an empty store as it was; into a non-empty one merged
    through save-time dedup, resumable), a folder of Markdown notes, or mem0's exported memories.

    Example: reverie import backup.jsonl --reembed
    """
    if source_format not in IMPORT_FORMATS:
        fail(ValidationError(f"--from must be one of {', '.join(IMPORT_FORMATS)}, got {source_format!r}", field="from"))
    kind = detect_format(path) if source_format == "auto" else source_format
    with engine(ctx) as rv, _progress() as tick:
        if kind == "jsonl":
            report = _import_jsonl(rv, path, agent, reembed, stop_on_error, tick)
        elif kind == "markdown":
            report = _import_markdown(rv, path, agent)
        else:
            report = _import_mem0(rv, path, agent)
        _embed(rv, tick)
    for where, why in report.skipped:
        err_console.print(f"[yellow]skipped[/] {escape(where)}: {escape(why)}", soft_wrap=True)
    emit(asdict(report), as_json, _summary(report))


def detect_format(path: Path) -> str:
    """``--from auto``: a folder is Markdown notes, a file opening with our header is JSONL, a JSON list or
    ``{"results": [...]}`` is a mem0 export. Anything else is a ``ValidationError`` (exits 2)."""
    if path.is_dir():
        return "markdown"
    if not path.is_file():
        fail(ValidationError(f"{path} does not exist", field="path"))
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
            head = _json_or_none(first)
            if isinstance(head, dict) and "format" in head:
                return "jsonl"  # read_header then says what is wrong with it, if anything
            f.seek(0)
            whole = _json_or_none(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        fail(ValidationError(f"{path} cannot be read as UTF-8 text: {exc}", field="path"))
    if isinstance(whole, list) or (isinstance(whole, dict) and isinstance(whole.get("results"), list)):
        return "mem0"
    fail(
        ValidationError(
            f"cannot tell what {path} is: not a Reverie JSONL export (no header line), not a folder of Markdown "
            'notes, not a mem0 export (a JSON list or {"results": [...]}); give --from',
            field="path",
        )
    )


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _import_jsonl(
    rv: reverie.Reverie,
    path: Path,
    agent: str | None,
    reembed: bool,
    stop_on_error: bool,
    tick: Callable[[str, int, int], None],
) -> ImportReport:
    from reverie.portability.jsonl import import_jsonl

    return import_jsonl(
        rv.store,
        path,
        memory=rv.memory,
        clock=rv.clock,
        embedding_model=rv.embedder.model_id if rv.embedder is not None else None,
        agent_id=agent,
        reembed=reembed,
        stop_on_error=stop_on_error,
        progress=tick,
    )


def _export_markdown(rv: reverie.Reverie, path: Path, agent: str | None, force: bool) -> ExportReport:
    """One note per live entry of ``agent`` (default: the default agent) under the folder ``path``."""
    from reverie.portability.markdown import export_markdown

    return export_markdown(rv.store, agent or DEFAULT_AGENT, path, force=force)


def _import_markdown(rv: reverie.Reverie, path: Path, agent: str | None) -> ImportReport:
    from reverie.portability.markdown import import_markdown

    return import_markdown(rv.memory, rv.store, rv.clock, path, agent_id=agent or DEFAULT_AGENT)


def _import_mem0(rv: reverie.Reverie, path: Path, agent: str | None) -> ImportReport:
    from reverie.portability.mem0 import import_mem0

    return import_mem0(rv.memory, rv.store, path, agent_id=agent)


def _embed(rv: reverie.Reverie, tick: Callable[[str, int, int], None]) -> None:
    """Embed what the import left without a vector (re-embedded records, merged entries), with progress."""
    pending = int(str(rv.embedding_status()["pending"]))
    done = 0
    while pending and (step := rv.embed_pending(limit=256)):
        done += step
        tick("embedding", done, pending)


def _summary(report: ImportReport) -> str:
    parts = []
    for kind, outcomes in report.counts.items():
        told = ", ".join(f"{n:,} {outcome}" for outcome, n in outcomes.items())
        parts.append(f"  {escape(kind)}: {escape(told)}")
    resumed = f" (resumed at line {report.resumed_from})" if report.resumed_from else ""
    head = f"imported {escape(report.source)} ({report.format}){resumed}"
    if report.skipped:
        head += f"; {len(report.skipped):,} skipped (listed on stderr)"
    return "\n".join([head, *parts]) if parts else head + ": nothing new"


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A Rich progress bar on stderr (stdout stays data): yields ``tick(what, done, total)`` (total 0: unknown)."""
    from rich.progress import Progress, TaskID

    with Progress(console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        tasks: dict[str, TaskID] = {}

        def tick(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total or None)
            bar.update(tasks[what], completed=done, total=total or None)

        yield tick
