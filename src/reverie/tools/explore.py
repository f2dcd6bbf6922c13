"""memory_explore: the walk from one long-term entry to related ones, a thin handler over
``reverie.memory.explore`` (``rv.explorer``), which owns the relations, the walk and their invariants. Also the
views of a related entry that ``memory_query``'s ``include_related`` shows.
"""

from __future__ import annotations

from typing import Any

from reverie.memory.explore import MAX_RELATED, Related
from reverie.tools.base import ToolContext, ToolError, ToolResult, entry_data, entry_line
from reverie.tools.services import ToolServices


def describe(related: Related) -> str:
    """How ``related`` is related to the entry it was found from, as a sentence."""
    thread = related.entry.metadata.get("thread")
    via = related.via
    return {
        "merged_from": f"merged into [{via}] (one of its sources)",
        "merged_into": f"[{via}] was merged into it",
        "sequence_previous": f"comes just before [{via}] in sequence {thread}",
        "sequence_next": f"comes just after [{via}] in sequence {thread}",
        "recall": f"recall finds it for the text of [{via}]",
        "shared_entity": f"names {related.entity} as [{via}] does",
    }.get(related.relation, related.relation)


def related_data(related: Related) -> dict[str, Any]:
    out = {**entry_data(related.entry), "relation": related.relation, "via": related.via, "hop": related.hop}
    if related.score is not None:
        out["score"] = round(related.score, 6)
    if related.entity is not None:
        out["entity"] = related.entity
    return out


def whole(value: object, default: int) -> int:
    """A whole number the schema already admitted (JSON Schema counts 2.0 as an integer)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"expected a whole number, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ToolError(f"expected a whole number, got {value!r}")
    return int(value)


def memory_explore(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    depth = whole(args.get("depth"), 1)
    start = rv.memory.get(args["id"], scope=ctx.scope)
    related = rv.explorer.walk(start, depth, ctx.scope)
    now = rv.clock.now()
    lines = ["Memory:", entry_line(start, now)]
    if related:
        lines.append(f"Related within {depth} hop(s), nearest first:")
        lines.extend(f"{entry_line(r.entry, now)}\n  hop {r.hop}: {describe(r)}" for r in related)
    else:
        lines.append(f"No related memories within {depth} hop(s).")
    if len(related) >= MAX_RELATED:
        lines.append(f"Note: the walk stopped at {MAX_RELATED} related memories.")
    data = {"entry": entry_data(start), "depth": depth, "related": [related_data(r) for r in related]}
    return ToolResult("\n".join(lines), data)
