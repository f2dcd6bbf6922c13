"""The knowledge-graph tools (seed 004): knowledge_add_entity, knowledge_add_relation and knowledge_query,
over the caller's own graph (``rv.graph``, the agent of the ``ToolContext``).

Invariants:
- Every call works in ``ctx.agent_id``'s graph only; another agent's entities are unknown (``not_found``).
- Entities are named by ``type:name`` references; a bare name is the one entity of that name whatever its
  type. A reference to no entity in a query is ``not_found``, never an empty answer that looks like "no".
- ``data`` is plain JSON: entities and relations as ``entity_data`` and ``relation_data`` show them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.core.text import preview
from reverie.graph import inputs as graph_input
from reverie.graph.values import EntitySubgraph, GraphPath, Triple, ref_of
from reverie.tools.base import ToolContext, ToolError, ToolResult
from reverie.tools.services import ToolServices
from reverie.tools.specs import KNOWLEDGE_QUERY
from reverie.types import Entity
from reverie.views.plain import iso_z_or_none

PROPERTY_CHARS = 200  # of an entity's or relation's properties in a result line; ``data`` has them whole


def entity_data(entity: Entity) -> dict[str, Any]:
    return {
        "id": entity.entity_id,
        "ref": ref_of(entity),
        "type": entity.type,
        "name": entity.name,
        "properties": entity.properties,
        "sources": list(entity.sources),
        "last_seen_at": iso_z_or_none(entity.last_seen_at),
    }


def relation_data(triple: Triple) -> dict[str, Any]:
    rel = triple.relation
    return {
        "id": rel.relation_id,
        "from": ref_of(triple.source),
        "relation": rel.relation,
        "to": ref_of(triple.target),
        "from_id": triple.source.entity_id,
        "to_id": triple.target.entity_id,
        "properties": rel.properties,
        "sources": list(rel.sources),
        "valid_from": iso_z_or_none(rel.valid_from),
        "invalid_at": iso_z_or_none(rel.invalid_at),
    }


def _day(value: datetime | None) -> str:
    return "?" if value is None else value.strftime("%Y-%m-%d")


def _props(properties: dict[str, Any]) -> str:
    if not properties:
        return ""
    shown = ", ".join(f"{k}={v!r}" for k, v in properties.items())
    return f" {{{preview(shown, PROPERTY_CHARS)}}}"


def entity_line(entity: Entity) -> str:
    return f"- [{entity.entity_id}] {ref_of(entity)}{_props(entity.properties)}"


def relation_line(triple: Triple) -> str:
    rel = triple.relation
    span = f"since {_day(rel.valid_from)}"
    if rel.invalid_at is not None:
        span += f", no longer true since {_day(rel.invalid_at)}"
    return f"- [{rel.relation_id}] {triple.text}{_props(rel.properties)} ({span})"


def knowledge_add_entity(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    written = rv.graph.add_entity(
        ctx.agent_id, args["type"], args["name"], args.get("properties"), args.get("sources") or ()
    )
    lines = [f"{written.outcome.capitalize()} entity:", entity_line(written.entity)]
    if written.absorbed:
        lines.append(f"Merged into it: the untyped entity of the same name ({', '.join(written.absorbed)}).")
    data = {"outcome": written.outcome, "entity": entity_data(written.entity), "absorbed": list(written.absorbed)}
    return ToolResult("\n".join(lines), data)


def knowledge_add_relation(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    since = graph_input.parse_time(args.get("valid_from"), "valid_from")
    written = rv.graph.add_relation(
        ctx.agent_id,
        args["from"],
        args["relation"],
        args["to"],
        args.get("properties"),
        args.get("sources") or (),
        since,
    )
    lines = [f"{written.outcome.capitalize()} relation:", relation_line(written.triple)]
    if written.invalidated:
        ids = ", ".join(r.relation_id for r in written.invalidated)
        lines.append(f"It replaces what was recorded before ({ids}: now marked no longer true, kept as history).")
    data = {
        "outcome": written.outcome,
        "relation": relation_data(written.triple),
        "invalidated": [r.relation_id for r in written.invalidated],
    }
    return ToolResult("\n".join(lines), data)


def knowledge_query(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    mode = args.get("mode", "relations")
    if mode == "path":
        return _path(rv, args, ctx)
    if mode == "subgraph":
        return _subgraph(rv, args, ctx)
    if mode == "entities":
        return _entities(rv, args, ctx)
    return _relations(rv, args, ctx)


def _relations(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    wanted: dict[str, Any] = {
        "from_ref": args.get("from"),
        "relation": args.get("relation"),
        "to_ref": args.get("to"),
        "entity_ref": args.get("entity"),
        "include_invalid": args.get("include_invalid", False),
        "limit": args.get("limit"),
    }
    next_cursor = None
    if "cursor" in args:  # a page in id order ('' for the first), so a walk by next_cursor sees every one
        page = rv.graph.relations_page(ctx.agent_id, cursor=args["cursor"], **wanted)
        found, next_cursor = list(page.items), page.next_cursor
    else:
        found = rv.graph.relations(ctx.agent_id, **wanted)
    filters = " ".join(f"{k}={args[k]!r}" for k in ("from", "relation", "to", "entity") if k in args) or "(no filter)"
    which = "" if args.get("include_invalid") else "valid "
    order = "one page, in id order" if "cursor" in args else "oldest first"
    if not found:
        text = f"No {which}relations match {filters}. The graph holds only what was recorded in it."
    else:
        text = "\n".join([f"{len(found)} {which}relation(s) for {filters}, {order}:", *map(relation_line, found)])
    if next_cursor is not None:
        text += f"\nMore: call {KNOWLEDGE_QUERY} again with the same filters and cursor={next_cursor!r}."
    data = {"mode": "relations", "relations": [relation_data(t) for t in found], "next_cursor": next_cursor}
    return ToolResult(text, data)


def _path(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if "from" not in args or "to" not in args:
        raise ToolError("mode path needs both from and to", field="to" if "from" in args else "from")
    found: GraphPath | None = rv.graph.path(ctx.agent_id, args["from"], args["to"], args.get("max_depth"))
    if found is None:
        depth = args.get("max_depth", rv.graph.config.max_depth)
        text = f"No chain of valid relations links {args['from']!r} and {args['to']!r} within {depth} steps."
        return ToolResult(text, {"mode": "path", "found": False, "entities": [], "relations": []})
    head = f"{ref_of(found.start)} to {ref_of(found.goal)} in {len(found.triples)} step(s):"
    data = {
        "mode": "path",
        "found": True,
        "entities": [entity_data(e) for e in found.entities],
        "relations": [relation_data(t) for t in found.triples],
    }
    return ToolResult("\n".join([head, *map(relation_line, found.triples)]), data)


def _subgraph(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    if "entity" not in args:
        raise ToolError("mode subgraph needs entity", field="entity")
    found: EntitySubgraph = rv.graph.subgraph(
        ctx.agent_id, args["entity"], depth=args.get("depth", 2), limit=args.get("limit")
    )
    lines = [f"{len(found.entities)} entities within {found.depth} step(s) of {ref_of(found.center)}:"]
    lines.extend(entity_line(e) for e in found.entities)
    lines.append(f"{len(found.triples)} relation(s) among them:" if found.triples else "No relations among them.")
    lines.extend(relation_line(t) for t in found.triples)
    if found.truncated:
        lines.append("Note: the entity limit cut the walk short; ask for less depth or a higher limit.")
    data = {
        "mode": "subgraph",
        "center": entity_data(found.center),
        "entities": [{**entity_data(e), "distance": found.distances.get(e.entity_id)} for e in found.entities],
        "relations": [relation_data(t) for t in found.triples],
        "truncated": found.truncated,
    }
    return ToolResult("\n".join(lines), data)


def _entities(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    text = args.get("text")
    if text is None:
        return _entity_page(rv, args, ctx)
    if args.get("cursor") is not None:
        raise ToolError("cursor pages the listing without text: leave text out to walk every entity", field="cursor")
    found = rv.graph.search_entities(ctx.agent_id, text, limit=args.get("limit"))
    kind = args.get("type")
    found = [e for e in found if kind is None or e.type == graph_input.entity_type(kind)]
    if not found:
        return ToolResult("No entities match. The graph holds only what was recorded in it.", _entities_data([]))
    head = f"Entities whose name contains {text!r}, exact names first:"
    return ToolResult("\n".join([head, *map(entity_line, found)]), _entities_data(found))


def _entity_page(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """The entities (of ``type``) a page at a time in id order, so a walk by ``next_cursor`` sees every one."""
    page = rv.graph.entities_page(
        ctx.agent_id, type=args.get("type"), cursor=args.get("cursor"), limit=args.get("limit")
    )
    found = list(page.items)
    lines = (
        ["Entities (one page, in id order):", *map(entity_line, found)]
        if found
        else ["No entities match. The graph holds only what was recorded in it."]
    )
    if page.next_cursor is not None:
        lines.append(f"More: call {KNOWLEDGE_QUERY} again with mode='entities' and cursor={page.next_cursor!r}.")
    return ToolResult("\n".join(lines), _entities_data(found, page.next_cursor))


def _entities_data(found: list[Entity], next_cursor: str | None = None) -> dict[str, Any]:
    return {"mode": "entities", "entities": [entity_data(e) for e in found], "next_cursor": next_cursor}
