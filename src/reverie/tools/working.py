"""The working-memory tools (seed 000): save_to_working_memory, get_from_working_memory and
search_working_memory, through the caller's view (``rv.working.for_namespace``).

Invariants:
- Writes go to the caller's own namespace (``ToolContext.working_namespace``), never under ``stash/``;
  reads may cross namespaces with a full key or the ``namespace`` argument.
- A background caller's writes live at least the background TTL floor (the view enforces it).
- The bare namespace ``stash`` is the current run's stash: the run bound by the caller
  (``rv.stash.run``) when there is one, else the run of ``ctx.session_id`` (the session whose loop parked
  the results), else none, and the result says no stash is reachable.
- search_working_memory keeps the recall family's rules: an empty search names search_memory and says it
  is not evidence; an empty listing is just a fact about the namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from reverie.core import working_keys as keys
from reverie.errors import ValidationError
from reverie.tools import family
from reverie.tools.base import ToolContext, ToolResult
from reverie.tools.longterm import QUERY_CHARS
from reverie.tools.services import ToolServices
from reverie.types import WorkingEntry
from reverie.views.plain import iso_z_or_none
from reverie.working.service import WorkingMemoryView, WorkingSearch, render_inventory


def _view(rv: ToolServices, ctx: ToolContext) -> WorkingMemoryView:
    return rv.working.for_namespace(ctx.working_namespace, agent_id=ctx.agent_id, background=ctx.background)


def _entry_data(entry: WorkingEntry, *, value: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": entry.key,
        "stored_at": iso_z_or_none(entry.stored_at),
        "expires_at": iso_z_or_none(entry.expires_at),
        "category": entry.category,
        "tags": list(entry.tags),
    }
    if value:
        out["value"] = entry.value
    return out


def _header(entry: WorkingEntry, now: datetime) -> str:
    return render_inventory([entry], now)


def save_to_working_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    saved = _view(rv, ctx).save(
        args["key"],
        args["data"],
        ttl_minutes=args.get("ttl_minutes"),
        category=args.get("category"),
        tags=args.get("tags"),
    )
    now = rv.clock.now()
    lines = [f"Stored in working memory:\n{_header(saved.entry, now)}"]
    lines.extend(f"Note: {note}" for note in saved.notes)
    data = {
        **_entry_data(saved.entry, value=False),
        "evicted": [e.key for e in saved.evicted],
        "notes": list(saved.notes),
    }
    return ToolResult("\n".join(lines), data)


def get_from_working_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    entry = _view(rv, ctx).get(args["key"])
    text = f"{_header(entry, rv.clock.now())}\n{entry.value}"
    return ToolResult(text, _entry_data(entry, value=True))


def search_working_memory(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    view = _view(rv, ctx)
    paged = "cursor" in args or "limit" in args
    if paged and (args.get("query") or "").strip():
        raise ValidationError("cursor and limit page the listing: leave query out", field="query")
    where = {"category": args.get("category"), "tags": args.get("tags"), "namespace": args.get("namespace")}
    with _stash_run(rv, ctx):
        if paged:
            found = view.page(cursor=args.get("cursor"), limit=args.get("limit"), **where)
        else:
            found = view.search(args.get("query"), **where)
    data: dict[str, Any] = {
        "query": found.query,
        "resolved_prefix": found.resolved_prefix,
        "capped": found.capped,
        "notes": list(found.notes),
    }
    if found.query is None:
        data["entries"] = [_entry_data(e, value=False) for e in found.entries]
        data["next_cursor"] = found.next_cursor
        lines = _listing(found, rv.clock.now(), paged=paged)
    else:
        data["results"] = [
            {
                **_entry_data(h.entry, value=False),
                "score": round(h.score, 6),
                "matched_by": h.matched_by,
                "preview": h.preview,
            }
            for h in found.hits
        ]
        lines = _hits(found, rv.clock.now())
    lines.extend(f"Note: {note}" for note in found.notes)
    return ToolResult("\n".join(lines), data)


def _listing(found: WorkingSearch, now: datetime, *, paged: bool) -> list[str]:
    """A query-less listing: keys, expiry, category, tags, no content. Empty is a fact, not a failed lookup.
    A page (``paged``) is in key order and ends by naming the cursor of the next one."""
    if found.resolved_prefix is None:
        return []  # the note says no stash is reachable
    if not found.entries:
        return [f"No live working-memory entries under {found.resolved_prefix}."]
    order = "one page, in key order" if paged else "most recently stored first"
    lines = [f"Working memory under {found.resolved_prefix} ({order}; read one by its key):"]
    lines.append(render_inventory(found.entries, now))
    if found.next_cursor is not None:
        lines.append(f"More: call {family.SEARCH_WORKING_MEMORY} again with cursor={found.next_cursor!r}.")
    elif found.capped:
        lines.append(f"To walk every entry, call {family.SEARCH_WORKING_MEMORY} with cursor='' (pages in key order).")
    return lines


def _hits(found: WorkingSearch, now: datetime) -> list[str]:
    query = repr((found.query or "")[:QUERY_CHARS])
    if not found.hits:
        where = f" under {found.resolved_prefix}" if found.resolved_prefix else " (no stash is reachable)"
        return [family.empty_result(family.SEARCH_WORKING_MEMORY, query + where)]
    count = f"{len(found.hits)} working-memory {'entry' if len(found.hits) == 1 else 'entries'}"
    lines = [f"{count} for {query} under {found.resolved_prefix}, best first:"]
    for hit in found.hits:
        lines.append(f"{_header(hit.entry, now)}\n  {hit.preview}")
    return lines


@contextmanager
def _stash_run(rv: ToolServices, ctx: ToolContext) -> Iterator[None]:
    """Bind the stash run of ``ctx.session_id`` unless the caller already bound one (see the module)."""
    if rv.stash.current_prefix() is not None or ctx.session_id is None:
        yield
        return
    try:
        keys.segment(ctx.session_id, field="session_id")
    except ValidationError:
        yield  # a session id that cannot name a stash: none is reachable
        return
    with rv.stash.run(ctx.session_id):
        yield
