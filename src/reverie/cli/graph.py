"""``reverie kg ...``: the knowledge graph of an agent (seed 004's ``kg`` commands).

Entities are named by references ``type:name`` (``person:John Doe``); a bare name means the one entity of
that name whatever its type (an untyped ``thing`` when there is none yet). ``--json`` prints the values the
library returns.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import AgentOption, JsonOption, console, emit_json, engine, escape, fail
from reverie.core.text import preview
from reverie.errors import ValidationError

if TYPE_CHECKING:  # the service (and the storage port it imports) loads when a command runs
    from reverie.engine import Reverie
    from reverie.graph.values import EntitySubgraph, GraphPath, Triple
    from reverie.types import Entity

app = typer.Typer(
    help="The knowledge graph: entities (type:name), relations between them, paths and subgraphs.",
    no_args_is_help=True,
)

PropertiesOption = typer.Option(None, "--properties", "-p", help='A JSON object, e.g. \'{"role": "developer"}\'.')
SourceOption = typer.Option(None, "--source", help="Id of a memory entry it came from (repeatable).")
LimitOption = typer.Option(None, "--limit", "-n", help="At most this many (default [graph] list_limit).")
AllOption = typer.Option(False, "--all", help="Include invalidated relations (history).")
CursorOption = typer.Option(None, "--cursor", help="One page in relation-id order after this cursor ('' the first).")


def _properties(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(ValidationError(f"--properties is not JSON: {exc}", field="properties"))
    except RecursionError:  # the decoder gave up ~1,000 levels down: far past the limit
        from reverie.core.validate import too_deep

        fail(too_deep("properties"))
    if not isinstance(value, dict):
        fail(ValidationError("--properties must be a JSON object", field="properties"))
    return value


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def ref_of(entity: Entity) -> str:
    from reverie.graph.values import ref_of as service_ref_of

    return service_ref_of(entity)


def _entity_line(entity: Entity, *, distance: int | None = None) -> str:
    props = f" {escape(preview(json.dumps(entity.properties, ensure_ascii=False), 120))}" if entity.properties else ""
    hops = f" [dim]({distance} hop{'s' if distance != 1 else ''})[/]" if distance is not None else ""
    return (
        f"[cyan]\\[{entity.entity_id}][/] [bold]{escape(ref_of(entity))}[/]{props}{hops}"
        f" [dim]— last seen {_when(entity.last_seen_at)}[/]"
    )


def _triple_line(triple: Triple) -> str:
    rel = triple.relation
    extras = [f"since {_when(rel.valid_from)}"]
    if rel.invalid_at is not None:
        extras.append(f"invalid since {_when(rel.invalid_at)}")
    if rel.sources:
        extras.append(f"sources: {', '.join(rel.sources[:5])}{' …' if len(rel.sources) > 5 else ''}")
    props = f" {escape(preview(json.dumps(rel.properties, ensure_ascii=False), 120))}" if rel.properties else ""
    return f"[cyan]\\[{rel.relation_id}][/] {escape(triple.text)}{props} [dim]— {escape('; '.join(extras))}[/]"


def _triples(found: list[Triple], empty: str) -> None:
    if not found:
        console.print(empty, markup=False)
    for triple in found:
        console.print(_triple_line(triple))


@app.command("add-entity")
def add_entity(
    ctx: typer.Context,
    type_: str = typer.Option(..., "--type", "-t", help="person, company, place, … (lower snake case)."),
    name: str = typer.Option(..., "--name", help="The name; 'Ana', 'ana' and 'Ana ' are one entity."),
    properties: str | None = PropertiesOption,
    source: list[str] | None = SourceOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Add an entity, or update the one with that type and name (properties merged, sources added)."""
    with engine(ctx) as rv:
        written = rv.graph.add_entity(agent, type_, name, _properties(properties), source or ())
        if as_json:
            emit_json(written)
            return
        console.print(f"{written.outcome} {_entity_line(written.entity)}")
        for absorbed in written.absorbed:
            console.print(f"[yellow]note:[/] merged the untyped thing [cyan]{absorbed}[/] into it")


@app.command("list-entities")
def list_entities(
    ctx: typer.Context,
    type_: str | None = typer.Option(None, "--type", "-t", help="Only entities of this type."),
    limit: int | None = LimitOption,
    every: bool = typer.Option(False, "--all", help="Every entity, page after page, in id order."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page (id order) after this cursor."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """List entities, most recently seen first; with --all every one (in id order, walked a page at a time),
    with --cursor the page after it (stderr gives the cursor of the next)."""
    with engine(ctx) as rv:
        if every or cursor is not None:
            found = _entity_pages(rv, agent, type_, limit, cursor, every=every)
        else:
            found = rv.graph.list_entities(agent, type=type_, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print("no entities", markup=False)
        for entity in found:
            console.print(_entity_line(entity))


def _entity_pages(
    rv: Reverie, agent: str, type_: str | None, limit: int | None, cursor: str | None, *, every: bool
) -> list[Entity]:
    """The page after ``cursor`` (None: the first), or with ``every`` all pages from there; the cursor of the
    next page goes to stderr when it stops early."""
    found: list[Entity] = []
    while True:
        page = rv.graph.entities_page(agent, type=type_, cursor=cursor, limit=limit)
        found.extend(page.items)
        if page.next_cursor is None:
            return found
        if not every:
            typer.echo(f"more: reverie kg list-entities --cursor {page.next_cursor}", err=True)
            return found
        cursor = page.next_cursor


@app.command("search-entities")
def search_entities(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="Part of a name (case-insensitive)."),
    limit: int | None = LimitOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Find entities whose name contains TEXT, exact names first."""
    with engine(ctx) as rv:
        found = rv.graph.search_entities(agent, text, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print(f"no entity name contains {text!r}", markup=False)
        for entity in found:
            console.print(_entity_line(entity))


@app.command("add-relation")
def add_relation(
    ctx: typer.Context,
    from_: str = typer.Option(..., "--from", help="The source entity, type:name (created when missing)."),
    relation: str = typer.Option(..., "--relation", "-r", help="e.g. works_at ('Works At' is the same)."),
    to: str = typer.Option(..., "--to", help="The target entity, type:name (created when missing)."),
    properties: str | None = PropertiesOption,
    source: list[str] | None = SourceOption,
    valid_from: str | None = typer.Option(None, "--valid-from", help="Since when (YYYY-MM-DD or ISO 8601)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Relate two entities. A relation already known is reinforced; for an exclusive one (works_at, …) a
    new target invalidates the previous one, which is kept as history."""
    from reverie.graph import inputs as graph_input

    with engine(ctx) as rv:
        since = graph_input.parse_time(valid_from, "valid_from")
        written = rv.graph.add_relation(agent, from_, relation, to, _properties(properties), source or (), since)
        if as_json:
            emit_json(written)
            return
        console.print(f"{written.outcome} {_triple_line(written.triple)}")
        for old in written.invalidated:
            console.print(f"[yellow]invalidated[/] [cyan]{old.relation_id}[/] (contradicted by the new target)")


@app.command("list-relations")
def list_relations(
    ctx: typer.Context,
    entity: str = typer.Option(..., "--entity", "-e", help="The entity, type:name."),
    include_invalid: bool = AllOption,
    limit: int | None = LimitOption,
    cursor: str | None = CursorOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The relations of one entity, either direction, oldest first; with --cursor one page in id order
    ('' for the first; stderr gives the cursor of the next)."""
    with engine(ctx) as rv:
        wanted: dict[str, Any] = {"entity_ref": entity, "include_invalid": include_invalid, "limit": limit}
        if cursor is not None:
            found = _relation_page(rv, agent, wanted, cursor, "list-relations")
        else:
            found = rv.graph.relations(agent, **wanted)
        if as_json:
            emit_json(found)
            return
        _triples(found, f"no relations of {entity}")


@app.command()
def query(
    ctx: typer.Context,
    from_: str | None = typer.Option(None, "--from", help="Only relations from this entity."),
    relation: str | None = typer.Option(None, "--relation", "-r", help="Only this relation."),
    to: str | None = typer.Option(None, "--to", help="Only relations to this entity."),
    include_invalid: bool = AllOption,
    limit: int | None = LimitOption,
    cursor: str | None = CursorOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Relations matching every filter given, oldest first; with --cursor one page in id order ('' for
    the first; stderr gives the cursor of the next)."""
    with engine(ctx) as rv:
        wanted: dict[str, Any] = {
            "from_ref": from_,
            "relation": relation,
            "to_ref": to,
            "include_invalid": include_invalid,
            "limit": limit,
        }
        if cursor is not None:
            found = _relation_page(rv, agent, wanted, cursor, "query")
        else:
            found = rv.graph.relations(agent, **wanted)
        if as_json:
            emit_json(found)
            return
        _triples(found, "no relations match")


def _relation_page(rv: Reverie, agent: str, wanted: dict[str, Any], cursor: str | None, command: str) -> list[Triple]:
    """The page of relations after ``cursor`` (None: the first); the next page's cursor goes to stderr."""
    page = rv.graph.relations_page(agent, cursor=cursor, **wanted)
    if page.next_cursor is not None:
        typer.echo(f"more: reverie kg {command} --cursor {page.next_cursor} (with the same flags)", err=True)
    return list(page.items)


@app.command()
def path(
    ctx: typer.Context,
    from_: str = typer.Option(..., "--from", help="Where the path starts, type:name."),
    to: str = typer.Option(..., "--to", help="Where it ends, type:name."),
    max_depth: int | None = typer.Option(None, "--max-depth", help="Most relations walked (default 6)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """A shortest chain of valid relations between two entities (either direction)."""
    with engine(ctx) as rv:
        found = rv.graph.path(agent, from_, to, max_depth)
        if as_json:
            emit_json({"found": found is not None, "path": found})
            return
        _print_path(found, from_, to, max_depth or rv.graph.config.max_depth)


def _print_path(found: GraphPath | None, from_: str, to: str, depth: int) -> None:
    if found is None:
        console.print(f"no path from {from_} to {to} within {depth} relations", markup=False)
        return
    hops = len(found.triples)
    console.print(f"{escape(ref_of(found.start))} to {escape(ref_of(found.goal))}: {hops} relation(s)")
    for triple in found.triples:
        console.print(f"  {_triple_line(triple)}")


@app.command()
def subgraph(
    ctx: typer.Context,
    entity: str = typer.Option(..., "--entity", "-e", help="The centre, type:name."),
    depth: int = typer.Option(2, "--depth", "-d", help="Hops from the centre."),
    limit: int | None = typer.Option(None, "--limit", "-n", help="Most entities (default [graph] subgraph_limit)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The entities within DEPTH hops of an entity and every valid relation among them."""
    with engine(ctx) as rv:
        found = rv.graph.subgraph(agent, entity, depth=depth, limit=limit)
        if as_json:
            emit_json(found)
            return
        _print_subgraph(found)


def _print_subgraph(found: EntitySubgraph) -> None:
    console.print(f"{len(found.entities)} entities within {found.depth} hops of {escape(ref_of(found.center))}:")
    for entity in found.entities:
        console.print(f"  {_entity_line(entity, distance=found.distances.get(entity.entity_id))}")
    console.print(f"{len(found.triples)} relations:")
    for triple in found.triples:
        console.print(f"  {_triple_line(triple)}")
    if found.truncated:
        console.print("[yellow]note:[/] the entity limit cut the walk short; raise --limit or lower --depth")


@app.command()
def merge(
    ctx: typer.Context,
    keep: str = typer.Argument(..., help="Id of the entity to keep."),
    duplicate: str = typer.Argument(..., help="Id of the duplicate to merge into it."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Merge a duplicate entity into another: its relations move over, nothing is deleted."""
    with engine(ctx) as rv:
        report = rv.graph.merge_entities(agent, keep, duplicate)
        if as_json:
            emit_json(report)
            return
        console.print(
            f"merged [cyan]{report.merged.entity_id}[/] into {_entity_line(report.entity)}: "
            f"{len(report.moved)} relation(s) moved, {len(report.duplicates)} duplicate(s) invalidated"
        )


@app.command()
def invalidate(
    ctx: typer.Context,
    relation_id: str = typer.Argument(..., metavar="RELATION_ID"),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Mark a relation no longer true; it is kept as history (query --all shows it)."""
    with engine(ctx) as rv:
        triple = rv.graph.invalidate_relation(agent, relation_id)
        if as_json:
            emit_json(triple)
            return
        console.print(_triple_line(triple))
