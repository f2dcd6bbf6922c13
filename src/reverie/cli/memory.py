"""``reverie memory ...``: long-term memory from the shell."""

from __future__ import annotations

import typer

from reverie.cli import kv, render
from reverie.cli.common import (
    AgentOption,
    JsonOption,
    SessionOption,
    UserOption,
    console,
    emit,
    emit_json,
    engine,
    escape,
    read_text_argument,
    scope_of,
)

app = typer.Typer(
    help="Long-term memory: save, search, browse, archive, restore, history, explain, lint.", no_args_is_help=True
)
app.add_typer(kv.app, name="kv")


@app.command()
def save(
    ctx: typer.Context,
    content: str = typer.Argument(..., help="The fact to remember ('-' reads standard input)."),
    category: str | None = typer.Option(None, "--category", "-c", help="Category path, e.g. user-preferences/tz."),
    tag: list[str] | None = typer.Option(None, "--tag", "-t", help="A tag (repeatable)."),
    source: str | None = typer.Option(None, help="Provenance: user, tool:<name> or inferred."),
    importance: float | None = typer.Option(None, help="Salience from 0 to 1 (default 0.5)."),
    tier: str | None = typer.Option(None, help="episodic, semantic (default) or procedural."),
    pin: bool = typer.Option(False, "--pin", help="Exempt from decay and purge."),
    observed_at: str | None = typer.Option(
        None,
        "--observed-at",
        help="When the fact was observed (dated history): ISO 8601 with an offset, e.g. 2023-05-08T13:56:00+00:00; "
        "not in the future. Default: now.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the id (for scripts)."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Save a fact and print its id."""
    with engine(ctx) as rv:
        result = rv.memory.save(
            read_text_argument(content),
            category=category,
            tags=tag,
            source=source,
            importance=importance,
            tier=tier,
            pinned=pin,
            scope=scope_of(agent, user, session),
            observed_at=observed_at,
        )
        if as_json:
            emit_json(result)
            return
        if quiet:
            typer.echo(result.id)
            return
        console.print(f"{result.outcome} [cyan]{result.id}[/] in {escape(result.entry.category)}")
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}")


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to recall."),
    category: str | None = typer.Option(None, "--category", "-c", help="Only this category and below."),
    limit: int | None = typer.Option(None, "--limit", "-n", help="How many results (default 10)."),
    archived: bool = typer.Option(False, "--archived", help="Include archived entries."),
    mode: str = typer.Option("auto", "--mode", "-m", help="auto, hybrid, bm25 or vector."),
    min_similarity: float | None = typer.Option(None, "--min-similarity", help="Vector floor for this search."),
    pin_first: bool = typer.Option(False, "--pin-first", help="Up to 10 pinned entries ahead of the results."),
    include_superseded: bool = typer.Option(
        False, "--include-superseded", help="Append matching entries folded into another (labelled)."
    ),
    explain: bool = typer.Option(False, "--explain", help="Under each hit: what found it and its score's parts."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Search long-term memory: BM25 and embeddings fused (hybrid), or one of them."""
    with engine(ctx, read=True) as rv:
        rv.embed_pending()  # entries saved by earlier commands get their vectors before we search
        results = rv.memory.search(
            query,
            category=category,
            limit=limit,
            include_archived=archived,
            mode=mode,
            min_similarity=min_similarity,
            scope=scope_of(agent, user, session),
            pin_first=pin_first,
            include_superseded=include_superseded,
        )
        if as_json:
            emit_json({"mode": results.mode, "notes": list(results.notes), "hits": list(results)})
        else:
            render.hits(results, rv.clock.now(), query, explain=explain)
            for note in results.notes:
                console.print(f"[yellow]note:[/] {escape(note)}")


@app.command("list")
def list_(
    ctx: typer.Context,
    category: str | None = typer.Option(None, "--category", "-c", help="Only this category and below."),
    limit: int | None = typer.Option(None, "--limit", "-n", help="How many entries (default 20)."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Browse: the most recently reinforced entries, then the full category taxonomy."""
    with engine(ctx, read=True) as rv:
        result = rv.memory.browse(category=category, limit=limit, scope=scope_of(agent, user, session))
        if as_json:
            emit_json(result)
        else:
            render.browse(result, rv.clock.now())


@app.command()
def get(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one entry (archived ones too)."""
    with engine(ctx, read=True) as rv:
        entry = rv.memory.get(entry_id, scope=scope_of(agent, user, session))
        if as_json:
            emit_json(entry)
        else:
            render.entry_detail(entry)


@app.command()
def explain(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Why an entry stands where it does: when it was seen, retention, confidence and its inputs,
    contradictions, what superseded it, how many versions it has."""
    with engine(ctx, read=True) as rv:
        rv.embed_pending()  # contradictions are found by embedding when vectors exist
        result = rv.lint.explain(entry_id, scope=scope_of(agent, user, session))
        if as_json:
            emit_json(result)
        else:
            render.explanation(result)


@app.command()
def lint(
    ctx: typer.Context,
    category: str | None = typer.Option(None, "--category", "-c", help="Only this category and below."),
    limit: int | None = typer.Option(None, "--limit", "-n", help="Entries to examine (default 1000)."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Pairs of entries about the same topic that disagree on a specific, and which is newer (advisory:
    changes nothing)."""
    with engine(ctx) as rv:
        rv.embed_pending()
        report = rv.lint.run(scope_of(agent, user, session), category=category, limit=limit)
        if as_json:
            emit_json(report)
        else:
            render.lint_report(report)


@app.command()
def edit(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    content: str | None = typer.Option(None, "--content", help="New text ('-' reads standard input)."),
    category: str | None = typer.Option(None, "--category", "-c"),
    tag: list[str] | None = typer.Option(None, "--tag", "-t", help="Replace the tags (repeatable)."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Rewrite an entry's text, category or tags (the old text stays in its history)."""
    with engine(ctx) as rv:
        entry = rv.memory.edit(
            entry_id,
            content=None if content is None else read_text_argument(content),
            category=category,
            tags=tag,
            scope=scope_of(agent, user, session),
        )
        emit(entry, as_json, f"edited [cyan]{entry.id}[/]")


@app.command()
def delete(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Archive an entry: hidden from search, kept and restorable until the purge pass."""
    with engine(ctx) as rv:
        entry = rv.memory.archive(entry_id, scope=scope_of(agent, user, session))
        days = rv.memory.config.archive_retention_days
        emit(
            entry,
            as_json,
            f"archived [cyan]{entry.id}[/]: gone from search, still readable with `reverie memory get`, "
            f"restorable with `reverie memory restore` until purged {days:g} days after archiving.",
        )


@app.command()
def restore(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Bring an archived entry back into search."""
    with engine(ctx) as rv:
        entry = rv.memory.restore(entry_id, scope=scope_of(agent, user, session))
        emit(entry, as_json, f"restored [cyan]{entry.id}[/]")


@app.command()
def history(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    restore_version: int | None = typer.Option(None, "--restore", help="Make this version current again."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Every version of an entry; with --restore N, bring version N back (as a new version)."""
    with engine(ctx, read=restore_version is None) as rv:
        scope = scope_of(agent, user, session)
        if restore_version is not None:
            rv.memory.restore_version(entry_id, restore_version, scope=scope)
            if not as_json:
                console.print(f"restored version {restore_version} of [cyan]{escape(entry_id)}[/]")
        versions = rv.memory.history(entry_id, scope=scope)
        if as_json:
            emit_json(versions)
        else:
            render.history(versions)


@app.command()
def importance(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    value: float = typer.Argument(..., help="New importance, 0 to 1."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Re-score an entry's importance."""
    with engine(ctx) as rv:
        entry = rv.memory.set_importance(entry_id, value, scope=scope_of(agent, user, session))
        emit(entry, as_json, f"importance of [cyan]{entry.id}[/] is now {entry.importance:.2f}")


@app.command()
def purge(
    ctx: typer.Context,
    agent: str | None = typer.Option(None, "--agent", "-a", help="Only this agent (default: every agent)."),
    as_json: bool = JsonOption,
) -> None:
    """Hard-delete entries archived longer than the retention (never high-value ones)."""
    with engine(ctx) as rv:
        report = rv.purge(agent_id=agent)
        emit(report, as_json, f"purged {len(report.purged)} entries; kept {len(report.protected)} high-value ones")
