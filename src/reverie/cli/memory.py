"""``reverie memory ...``: long-term memory from the shell."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from reverie.cli import filters, kv, render
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
    fail,
    read_text_argument,
    scope_of,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from reverie.engine import Reverie
    from reverie.types import CategoryCount, MemoryEntry, Page

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
    archived: bool = typer.Option(False, "--archived", help="Include archived (and superseded) entries."),
    mode: str = typer.Option("auto", "--mode", "-m", help="auto, hybrid, bm25 or vector."),
    min_similarity: float | None = typer.Option(None, "--min-similarity", help="Vector floor for this search."),
    pin_first: bool = typer.Option(False, "--pin-first", help="Up to 10 pinned entries ahead of the results."),
    include_superseded: bool = typer.Option(
        False, "--include-superseded", help="Append matching entries folded into another (labelled)."
    ),
    explain: bool = typer.Option(False, "--explain", help="Under each hit: what found it and its score's parts."),
    tag: list[str] | None = filters.TagOption,
    tag_all: list[str] | None = filters.TagAllOption,
    source: str | None = filters.SourceOption,
    tier: str | None = filters.TierOption,
    min_importance: float | None = filters.MinImportanceOption,
    max_importance: float | None = filters.MaxImportanceOption,
    subject_from: str | None = filters.SubjectFromOption,
    subject_to: str | None = filters.SubjectToOption,
    created_from: str | None = filters.CreatedFromOption,
    created_to: str | None = filters.CreatedToOption,
    updated_from: str | None = filters.UpdatedFromOption,
    updated_to: str | None = filters.UpdatedToOption,
    pinned: bool | None = filters.PinnedOption,
    only_archived: bool | None = filters.OnlyArchivedOption,
    only_superseded: bool | None = filters.OnlySupersededOption,
    meta: list[str] | None = filters.MetaOption,
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Search long-term memory: BM25 and embeddings fused (hybrid), or one of them; the filter flags (as in
    `memory list`) keep only the entries they match.

    Example: reverie memory search "deploy steps" --tag work --source user"""
    flt = filters.entry_filter(
        tag=tag,
        tag_all=tag_all,
        source=source,
        tier=tier,
        min_importance=min_importance,
        max_importance=max_importance,
        subject_from=subject_from,
        subject_to=subject_to,
        created_from=created_from,
        created_to=created_to,
        updated_from=updated_from,
        updated_to=updated_to,
        pinned=pinned,
        meta=meta,
        only_archived=only_archived,
        only_superseded=only_superseded,
    )
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
            filter=flt,
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
    limit: int | None = typer.Option(None, "--limit", "-n", help="How many entries (default 20; any number)."),
    order: str = typer.Option(
        "newest", "--order", help="newest, oldest, recent, updated, importance, reinforced or cold."
    ),
    cursor: str | None = typer.Option(None, "--cursor", help="Start after this next_cursor of an earlier list."),
    every: bool = typer.Option(False, "--all", help="Every entry, page after page (with --json: JSON Lines)."),
    archived: bool = typer.Option(False, "--archived", help="Include archived (and superseded) entries."),
    tag: list[str] | None = filters.TagOption,
    tag_all: list[str] | None = filters.TagAllOption,
    source: str | None = filters.SourceOption,
    tier: str | None = filters.TierOption,
    min_importance: float | None = filters.MinImportanceOption,
    max_importance: float | None = filters.MaxImportanceOption,
    subject_from: str | None = filters.SubjectFromOption,
    subject_to: str | None = filters.SubjectToOption,
    created_from: str | None = filters.CreatedFromOption,
    created_to: str | None = filters.CreatedToOption,
    updated_from: str | None = filters.UpdatedFromOption,
    updated_to: str | None = filters.UpdatedToOption,
    pinned: bool | None = filters.PinnedOption,
    only_archived: bool | None = filters.OnlyArchivedOption,
    only_superseded: bool | None = filters.OnlySupersededOption,
    meta: list[str] | None = filters.MetaOption,
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """List entries, newest first, through the filter flags; then, on a first page, the category taxonomy.
    A listing longer than one page prints the cursor to go on with (on stderr; in --json, next_cursor).

    Example: reverie memory list --tag work --min-importance 0.7 --all --json > work.jsonl"""
    from reverie.errors import ValidationError
    from reverie.views.entry import face_json

    if limit is not None and limit < 1:
        fail(ValidationError("--limit must be at least 1", field="limit"))
    flt = filters.entry_filter(
        tag=tag,
        tag_all=tag_all,
        source=source,
        tier=tier,
        min_importance=min_importance,
        max_importance=max_importance,
        subject_from=subject_from,
        subject_to=subject_to,
        created_from=created_from,
        created_to=created_to,
        updated_from=updated_from,
        updated_to=updated_to,
        pinned=pinned,
        meta=meta,
        only_archived=only_archived,
        only_superseded=only_superseded,
    )
    scope = scope_of(agent, user, session)
    listing = {"filter": flt, "order": order, "category": category, "include_archived": archived, "scope": scope}
    with engine(ctx, read=True) as rv:
        walk = filters.pages(rv, None if every else (limit or 20), cursor, **listing)
        if every and as_json:
            for page in walk:  # JSON Lines, a page at a time: any number of entries in constant memory
                for entry in page.items:
                    typer.echo(json.dumps(face_json(entry), ensure_ascii=False))
            return
        first = cursor is None and not every
        taxonomy = rv.memory.browse(category=category, limit=1, scope=scope).taxonomy if first else ()
        _show_listing(rv, walk, taxonomy, as_json, category=category, narrowed=flt is not None)


def _show_listing(
    rv: Reverie,
    walk: Iterator[Page[MemoryEntry]],
    taxonomy: tuple[CategoryCount, ...],
    as_json: bool,
    *,
    category: str | None,
    narrowed: bool,
) -> None:
    """Print the pages of a listing (as one JSON object with ``--json``), the taxonomy, and on stderr the
    cursor to go on with when the listing stopped before its end."""
    entries: list[MemoryEntry] = []  # kept for --json only; text is printed a page at a time
    printed = 0
    next_cursor = None
    for page in walk:
        if as_json:
            entries.extend(page.items)
        else:
            for entry in page.items:
                console.print(render.entry_line(entry, rv.clock.now()))
        printed += len(page.items)
        next_cursor = page.next_cursor
    if as_json:
        emit_json({"entries": entries, "next_cursor": next_cursor, "taxonomy": list(taxonomy), "category": category})
        return
    if not printed:
        console.print("No entries match." if narrowed or category else "No live memories.")
    if taxonomy:
        console.print(render.taxonomy_tree(taxonomy))
    if next_cursor is not None:
        typer.echo(f"more: reverie memory list --cursor {next_cursor} (with the same flags)", err=True)


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
    limit: int | None = typer.Option(None, "--limit", "-n", help="One page of this many, oldest first (1-1000)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Every version of an entry; with --restore N, bring version N back (as a new version). With -n or
    --cursor, one page, oldest first, and on stderr the cursor of the next."""
    with engine(ctx, read=restore_version is None) as rv:
        scope = scope_of(agent, user, session)
        if restore_version is not None:
            rv.memory.restore_version(entry_id, restore_version, scope=scope)
            if not as_json:
                console.print(f"restored version {restore_version} of [cyan]{escape(entry_id)}[/]")
        if limit is None and cursor is None:
            versions = rv.memory.history(entry_id, scope=scope)
        else:
            page = rv.memory.history_page(entry_id, cursor=cursor, limit=limit, scope=scope)
            versions = list(page.items)
            if page.next_cursor is not None:
                typer.echo(f"more: reverie memory history {entry_id} --cursor {page.next_cursor}", err=True)
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
def pin(
    ctx: typer.Context,
    entry_id: str = typer.Argument(..., metavar="ID"),
    off: bool = typer.Option(False, "--off", help="Unpin instead."),
    agent: str = AgentOption,
    user: str | None = UserOption,
    session: str | None = SessionOption,
    as_json: bool = JsonOption,
) -> None:
    """Pin an entry (it never decays, is never forgotten or pruned, and comes first with --pin-first); --off
    unpins it."""
    with engine(ctx) as rv:
        entry = rv.memory.set_pinned(entry_id, not off, scope=scope_of(agent, user, session))
        emit(entry, as_json, f"[cyan]{entry.id}[/] is {'pinned' if entry.pinned else 'not pinned'}")


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
