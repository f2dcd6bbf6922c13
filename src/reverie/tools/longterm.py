"""The long-term memory tools (seed 000's memory tools, seed 003's memory_lint): save_memory, search_memory,
list_memories, delete_memory, update_memory_importance, memory_lint.

Invariants:
- Every handler reads in ``ctx.scope``; an id the scope cannot see is reported exactly like an unknown id.
  save_memory writes in ``ctx.durable_scope`` (agent and user, no session): the fact outlives the session.
- Arguments reach the service, which validates them all before it writes, so a refused call writes nothing.
- search_memory keeps the recall family's rules (``tools.family``): an empty search names its sibling and
  says it is not evidence; a query-less call browses and answers with the category taxonomy.
"""

from __future__ import annotations

from typing import Any

from reverie.core import filters, validate
from reverie.core.text import preview
from reverie.errors import ValidationError
from reverie.tools import family, specs
from reverie.tools.base import ToolContext, ToolResult, contradiction_data, entry_data, entry_line
from reverie.tools.services import ToolServices
from reverie.types import CategoryCount, EntryFilter, SearchResults, Tier

QUERY_CHARS = 200  # a query as an answer quotes it
LIST_PAGE = 20  # list_memories' page when the agent names no limit
_TIMES = ("created_from", "created_to", "updated_from", "updated_to")


def save_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    result = rv.memory.save(
        args["content"],
        category=args.get("category"),
        tags=args.get("tags"),
        source=args.get("source"),
        scope=ctx.durable_scope,  # cross-session knowledge: see ToolContext
    )
    entry = result.entry
    said = {
        "created": f"Saved as a new memory [{entry.id}] ({entry.category}).",
        "reinforced": (
            f"Already known: reinforced memory [{entry.id}] ({entry.category}), now seen "
            f"{entry.reinforcement_count}×; its text is unchanged."
        ),
        "extended": f"Extended memory [{entry.id}] ({entry.category}) with the new specifics.",
        "superseded": f"Saved as a new memory [{entry.id}] ({entry.category}), now the current belief.",
    }
    lines = [said.get(result.outcome, f"{result.outcome}: memory [{entry.id}].")]
    lines.extend(f"Note: {note}" for note in result.notes)
    data = {"outcome": result.outcome, "id": entry.id, "entry": entry_data(entry), "notes": list(result.notes)}
    if result.contradiction is not None:
        data["contradicts"] = contradiction_data(result.contradiction)
    return ToolResult("\n".join(lines), data)


def search_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    query = args.get("query")
    category = args.get("category")
    flt = entry_filter(args.get("filter"))
    if flt is None and (query is None or (isinstance(query, str) and not query.strip())):
        return _browse(rv, category, args.get("limit"), ctx)
    results = rv.memory.search(
        query or "",
        category=category,
        mode=args.get("mode", "auto"),
        scope=ctx.scope,
        filter=flt,
        limit=args.get("limit"),
    )
    return render_results(rv, results, query=query or "", category=category, ctx=ctx, name=family.SEARCH_MEMORY)


def list_memories(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """A page of long-term memories through the filter, and the cursor of the next page."""
    page = rv.memory.list(
        filter=entry_filter(args.get("filter")),
        order=args.get("order", "newest"),
        cursor=args.get("cursor"),
        limit=args.get("limit", LIST_PAGE),
        category=args.get("category"),
        scope=ctx.scope,
    )
    now = rv.clock.now()
    if page.items:
        lines = [f"{_count(len(page.items), 'memory', 'memories')}:"]
        lines.extend(entry_line(entry, now) for entry in page.items)
    else:
        lines = ["No memories match."]
    if page.next_cursor is not None:
        lines.append(f"More: call {specs.LIST_MEMORIES} again with cursor={page.next_cursor!r}.")
    data = {"items": [entry_data(entry) for entry in page.items], "next_cursor": page.next_cursor}
    return ToolResult("\n".join(lines), data)


def entry_filter(raw: object) -> EntryFilter | None:
    """A tool's ``filter`` argument (its schema checked the types) as a checked ``EntryFilter``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValidationError("filter must be an object", field="filter")
    tier = raw.get("tier")
    return filters.entry_filter(
        EntryFilter(
            tags_any=tuple(raw.get("tags_any", ())),
            tags_all=tuple(raw.get("tags_all", ())),
            source=raw.get("source"),
            tier=None if tier is None else validate.tier(tier, default=Tier.SEMANTIC),
            importance_min=raw.get("importance_min"),
            importance_max=raw.get("importance_max"),
            subject_from=raw.get("subject_from"),
            subject_to=raw.get("subject_to"),
            **{name: filters.moment(raw.get(name), name) for name in _TIMES},
            pinned=raw.get("pinned"),
            archived=raw.get("archived"),
            superseded=raw.get("superseded"),
            metadata=raw.get("metadata") or {},
        )
    )


def render_results(
    rv: ToolServices, results: SearchResults, *, query: str, category: str | None, ctx: ToolContext, name: str
) -> ToolResult:
    """Search hits as lines (or the family's empty result, with the taxonomy when a category filter
    missed), and as data. ``name``: the tool that searched, never suggested again when it found nothing."""
    quoted = repr(preview(query, QUERY_CHARS))
    data: dict[str, Any] = {
        "query": query,
        "mode": results.mode,
        "notes": list(results.notes),
        "results": [hit_data(hit.entry, hit.score, hit.matched_by) for hit in results],
    }
    if not results:
        what = quoted + (f" under category {category}" if category else "")
        lines = [family.empty_result(name, what)]
        if category:
            taxonomy = rv.memory.browse(limit=1, scope=ctx.scope).taxonomy
            lines.append(_taxonomy_text(taxonomy))
            data["taxonomy"] = _taxonomy_data(taxonomy)
    else:
        now = rv.clock.now()
        lines = [f"{_count(len(results), 'memory', 'memories')} for {quoted}, best first:"]
        lines.extend(entry_line(hit.entry, now, label=_label(hit.matched_by)) for hit in results)
    lines.extend(f"Note: {note}" for note in results.notes)
    return ToolResult("\n".join(lines), data)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def hit_data(entry: Any, score: float, matched_by: str) -> dict[str, Any]:
    return {**entry_data(entry), "score": round(score, 6), "matched_by": matched_by}


def _label(matched_by: str) -> str | None:
    return matched_by if matched_by in ("pinned", "superseded") else None


def _browse(rv: ToolServices, category: str | None, limit: int | None, ctx: ToolContext) -> ToolResult:
    """Seed 000's query-less search_memory: the most recently reinforced entries, then the whole taxonomy
    (shown even when the category filter matched nothing, so it shows which categories exist)."""
    found = rv.memory.browse(category=category, limit=limit, scope=ctx.scope)
    now = rv.clock.now()
    where = f" under {found.category}" if found.category else ""
    if found.entries:
        lines = [f"Most recently reinforced memories{where}:"]
        lines.extend(entry_line(entry, now) for entry in found.entries)
    elif found.taxonomy:
        lines = [f"No memories{where}."]
    else:
        lines = ["No long-term memories are stored in this scope yet."]
    if found.taxonomy:
        lines.append(_taxonomy_text(found.taxonomy))
    data = {
        "mode": "browse",
        "category": found.category,
        "entries": [entry_data(entry) for entry in found.entries],
        "taxonomy": _taxonomy_data(found.taxonomy),
    }
    return ToolResult("\n".join(lines), data)


def _taxonomy_text(taxonomy: tuple[CategoryCount, ...]) -> str:
    if not taxonomy:
        return "Category taxonomy: (no categories yet)"
    return "Category taxonomy (live memories per category):\n" + "\n".join(
        f"- {c.category} ({c.count})" for c in taxonomy
    )


def _taxonomy_data(taxonomy: tuple[CategoryCount, ...]) -> list[dict[str, Any]]:
    return [{"category": c.category, "count": c.count} for c in taxonomy]


def delete_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    entry = rv.memory.archive(args["id"], scope=ctx.scope)
    days = rv.memory.config.archive_retention_days
    text = (
        f"Archived memory [{entry.id}]: it no longer appears in search, but it is not destroyed — it can be "
        f"restored until the archive purge, {days:g} days after archiving."
    )
    return ToolResult(text, {"id": entry.id, "archived": True, "restorable": True, "purge_after_days": days})


def update_memory_importance(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    entry = rv.memory.set_importance(args["id"], args["importance"], scope=ctx.scope)
    text = f"Importance of memory [{entry.id}] set to {entry.importance:.2f}; its text is unchanged."
    return ToolResult(text, {"id": entry.id, "importance": entry.importance})


def memory_lint(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """memory_lint's findings with the text of both entries (read without counting as a read)."""
    report = rv.lint.run(ctx.scope)
    pairs = [*report.findings, *report.superseded]
    ids = list(dict.fromkeys(i for f in pairs for i in (f.newer_id, f.older_id)))
    texts = {e.id: e.content for e in rv.explorer.entries(ids, ctx.scope)}  # superseded texts too
    findings: list[dict[str, Any]] = []
    lines = [f"{len(report.findings)} pair(s) about the same topic that disagree (newer first):"]
    for f in pairs:
        if f.kind == "superseded" and f is report.superseded[0]:
            lines.append(f"{len(report.superseded)} superseded pair(s): a later entry contradicts the earlier one:")
        newer, older = texts.get(f.newer_id, ""), texts.get(f.older_id, "")
        findings.append(
            {
                "newer_id": f.newer_id,
                "older_id": f.older_id,
                "newer": newer,
                "older": older,
                "category": f.category,
                "similarity": f.similarity,
                "measure": f.measure,
                "newer_specifics": list(f.newer_specifics),
                "older_specifics": list(f.older_specifics),
                "kind": f.kind,
            }
        )
        lines.append(
            f"- [{f.newer_id}] says {', '.join(f.newer_specifics)}: {preview(newer, 300)}\n"
            f"  [{f.older_id}] (older) says {', '.join(f.older_specifics)}: {preview(older, 300)}"
        )
    if not findings:
        lines = [f"No contradicting or superseded pairs among the {report.examined} memories examined."]
    if report.truncated:
        lines.append(f"Note: only the {report.examined} most recently reinforced memories were examined.")
    data = {"findings": findings, "examined": report.examined, "truncated": report.truncated}
    return ToolResult("\n".join(lines), data)
