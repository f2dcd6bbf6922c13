"""``reverie proactive ...``: proactive memory from the shell (seed 004): memorize a turn, retrieve before
one, list, consolidate duplicates, run the decay sweep."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from reverie.cli.common import (
    AgentOption,
    JsonOption,
    SessionOption,
    UserOption,
    console,
    emit_json,
    engine,
    escape,
    read_text_argument,
    scope_of,
)

if TYPE_CHECKING:
    from reverie.proactive.upkeep import ConsolidationReport
    from reverie.types import MemoryEntry

app = typer.Typer(
    help="Proactive memory: what an agent learns about its user and work after each turn, recalled before the next.",
    no_args_is_help=True,
)


def _line(entry: MemoryEntry) -> str:
    from reverie.core.proactive import kind_of, writer_of  # imports numpy: not at the top

    writer = writer_of(entry.metadata)  # user memory: the agent that wrote it
    by = "" if writer is None else f", written by {escape(writer)}"
    return (
        f"[cyan]{entry.id}[/] ({escape(entry.category)}, {kind_of(entry.metadata)}) {escape(entry.content)}"
        f"  [dim]confidence {entry.confidence:.2f}{by}[/]"
    )


@app.command()
def memorize(
    ctx: typer.Context,
    user_message: str = typer.Argument(..., help="The user's message ('-' reads standard input)."),
    assistant: str | None = typer.Option(None, "--assistant", help="The agent's answer to it."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Extract and save what a turn says about the user and the work (the LLM when configured, else rules)."""
    with engine(ctx) as rv:
        result = rv.proactive.auto_memorize(
            read_text_argument(user_message), assistant, scope=scope_of(agent, user, session)
        )
        if as_json:
            emit_json(result)
            return
        if result.error:
            console.print(f"[yellow]nothing saved:[/] {escape(result.error)}")
        if not result.saved and not result.error:
            console.print("nothing worth remembering")
        for saved in result.saved:
            console.print(f"{saved.outcome} {_line(saved.entry)}")
        if result.evicted:
            console.print(f"archived by the cap: {', '.join(result.evicted)}")
        if result.consolidation is not None and result.consolidation.merges:
            _report(result.consolidation)


@app.command()
def retrieve(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="The incoming message ('' for the most recent memories)."),
    limit: int | None = typer.Option(None, "--limit", "-n", help="How many (default proactive.retrieve_limit)."),
    min_similarity: float | None = typer.Option(None, "--min-similarity", help="Cosine floor for this call."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """The proactive memories for a message: the agent's and the user's user-level memory, ranked together."""
    with engine(ctx) as rv:
        rv.embed_pending()  # memories saved by earlier commands get their vectors before we search
        hits = rv.proactive.auto_retrieve(
            query, scope=scope_of(agent, user, session), limit=limit, min_similarity=min_similarity
        )
        if as_json:
            emit_json({"hits": list(hits)})
            return
        if not hits:
            console.print("no proactive memory for this")
        for hit in hits:
            console.print(_line(hit.entry))


@app.command("list")
def list_(
    ctx: typer.Context,
    category: str | None = typer.Option(None, "--category", "-c", help="Only this category."),
    limit: int = typer.Option(100, "--limit", "-n", help="At most this many."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """The live proactive memories the scope sees (with --user, the user's user-level memory too)."""
    with engine(ctx) as rv:
        found = rv.proactive.list(scope=scope_of(agent, user, session), category=category, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print("no proactive memories")
        for entry in found:
            console.print(_line(entry))


@app.command()
def consolidate(
    ctx: typer.Context,
    window: bool = typer.Option(
        False, "--window", help="Only the most recent proactive.consolidate_window (default: the whole history)."
    ),
    agent: str = AgentOption,
    user: str | None = UserOption,
    as_json: bool = JsonOption,
) -> None:
    """Merge duplicate proactive memories of the agent (and of --user's user-level memory): each cluster keeps
    its newest member, the others are archived as superseded by it."""
    with engine(ctx) as rv:
        rv.embed_pending()
        report = rv.proactive.consolidate(agent, user_id=user, full=not window)
        if as_json:
            emit_json(report)
            return
        _report(report)


@app.command()
def sweep(
    ctx: typer.Context,
    if_due: bool = typer.Option(False, "--if-due", help="Only when proactive.decay_sweep_minutes have passed."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Recompute the decayed confidence of the agent's proactive memories now."""
    with engine(ctx) as rv:
        report = rv.proactive.sweep(agent, force=not if_due)
        if as_json:
            emit_json(report)
        elif not report.ran:
            console.print("not due yet")
        else:
            console.print(f"examined {report.examined}, decayed {len(report.decayed)}")


def _report(report: ConsolidationReport) -> None:
    console.print(f"examined {report.examined}, merged {len(report.merges)} cluster(s)")
    for merge in report.merges:
        console.print(f"- kept [cyan]{merge.keep}[/]; archived {', '.join(merge.archived)} ({', '.join(merge.rungs)})")
