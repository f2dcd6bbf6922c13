"""The console's memory browser: ``/console/agents/{agent_id}/memory``.

One page, two views of an agent's long-term memory, beside the category taxonomy as a tree with counts:
- without ``q``: one page of ``memory.list`` in an order (``core.filters.ORDERS``), through the filters, with
  the next page's cursor in the "Next page" link;
- with ``q``: ``memory.search`` as the API's search route runs it, each hit with why it ranked (the fused
  score, what matched it, the evidence's BM25 and vector parts, the similarity floor, the query's terms found
  in it, highlighted).

Invariants:
- Access is the API's: ``read_access`` on the path's agent; the filters are built by ``core.filters.from_text``
  (the API's and the CLI's parser), so a bad value is the same 422 naming its field. The "only archived" and
  "only superseded" switches are the filter's ``archived=True`` / ``superseded=True``, in the list and in a
  search alike: they read those entries without ``include_archived`` (``core.filters.reaches_retired``).
- One page per request (a keyset page or one search), plus the scope's taxonomy (one GROUP BY): never a
  whole table, whatever the store holds.
- Stored text reaches the HTML only through autoescaping or ``markupsafe.escape``: ``highlight`` builds its
  ``<mark>`` markup from escaped pieces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from reverie.api.auth import ReadAgent
from reverie.api.console.render import fragment
from reverie.api.filters import CursorQuery
from reverie.api.schemas import scope_of
from reverie.core.filters import from_text
from reverie.core.text import query_terms
from reverie.core.tokens import tokens, word
from reverie.core.validate import MAX_QUERY_CHARS
from reverie.types import CategoryCount, EntryFilter, MemoryEntry, SearchHit

router = APIRouter()

# The list's orders as the page names them (a test checks every name of core.filters.ORDERS has one).
ORDER_LABELS = {
    "newest": "Newest first",
    "oldest": "Oldest first",
    "recent": "Recently seen",
    "updated": "Recently rewritten",
    "importance": "Most important",
    "reinforced": "Most reinforced",
    "cold": "Cold first (least recently seen)",
}
TIERS = ("episodic", "semantic", "procedural")
LIST_PAGE = 25
SEARCH_PAGE = 20
SHOWN_CHARS = 600  # a search hit's content is cut here before highlighting
# core.tokens' token rule (unicode61's): runs of letters and digits, "_" splits.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

Text = Annotated[str | None, Query(max_length=200)]


@dataclass
class CategoryNode:
    """One path of the taxonomy: ``own`` entries filed exactly here, ``total`` here and below."""

    path: str
    name: str
    own: int = 0
    total: int = 0
    children: list[CategoryNode] = field(default_factory=list)


def category_tree(counts: Iterable[CategoryCount]) -> list[CategoryNode]:
    """The taxonomy as a tree: ``a/b/c`` under ``a/b`` under ``a`` (a parent with no entries of its own
    exists with ``own`` 0); each node's ``total`` sums its own count and its descendants'. Children keep
    the taxonomy's (code-point) order."""
    nodes: dict[str, CategoryNode] = {}
    roots: list[CategoryNode] = []
    for item in counts:
        parts = item.category.split("/")
        for depth in range(1, len(parts) + 1):
            path = "/".join(parts[:depth])
            node = nodes.get(path)
            if node is None:
                node = nodes[path] = CategoryNode(path=path, name=parts[depth - 1])
                (roots if depth == 1 else nodes["/".join(parts[: depth - 1])].children).append(node)
            node.total += item.count
        nodes[item.category].own += item.count
    return roots


def highlight(text: str, stems: frozenset[str]) -> Markup:
    """``text`` escaped, with each token whose index word is in ``stems`` wrapped in ``<mark>``: the markup
    is built from escaped pieces, so nothing in ``text`` can become markup."""
    pieces: list[Markup] = []
    last = 0
    for match in _TOKEN.finditer(text):
        if word(match.group(0)) in stems:
            pieces.append(escape(text[last : match.start()]))
            pieces.append(Markup("<mark>{}</mark>").format(match.group(0)))
            last = match.end()
    pieces.append(escape(text[last:]))
    return Markup("").join(pieces)


def matched_terms(terms: list[str], entry: MemoryEntry) -> list[str]:
    """The query's terms (as typed, lower-cased) whose index word occurs in the entry's content, tags or
    category: what BM25 could have matched (the same tokenizer and stemmer as recall's index)."""
    words = set(tokens(" ".join([entry.content, *entry.tags, entry.category.replace("/", " ")])))
    return [term for term in terms if word(term) in words]


@dataclass
class HitView:
    """A search hit as the page shows it."""

    hit: SearchHit
    matched: list[str]
    content: Markup
    cut: bool


def hit_views(hits: Iterable[SearchHit], q: str) -> list[HitView]:
    terms = query_terms(q)
    stems = frozenset(word(t) for t in terms)
    views = []
    for hit in hits:
        text = hit.entry.content
        views.append(
            HitView(hit, matched_terms(terms, hit.entry), highlight(text[:SHOWN_CHARS], stems), len(text) > SHOWN_CHARS)
        )
    return views


def _href(agent_id: str, params: dict[str, Any], **changes: Any) -> str:
    """The page's address with ``params`` changed by ``changes`` (None or empty drops a parameter)."""
    merged = {**params, **changes}
    kept = {k: ("true" if v is True else v) for k, v in merged.items() if v not in (None, "", False)}
    query = urlencode(kept)
    return f"/console/agents/{agent_id}/memory" + (f"?{query}" if query else "")


@router.get("/agents/{agent_id}/memory", response_class=HTMLResponse)
def memory_page(
    request: Request,
    agent_id: ReadAgent,
    q: Annotated[str | None, Query(max_length=MAX_QUERY_CHARS)] = None,
    order: Annotated[str, Query(max_length=40)] = "newest",
    cursor: CursorQuery = None,
    category: Text = None,
    tier: Text = None,
    source: Text = None,
    tag: Text = None,
    pinned: bool | None = None,
    superseded: bool = False,
    archived: bool = False,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
) -> HTMLResponse:
    """The taxonomy, the filters, and either one page of the list or the search's hits with their evidence."""
    rv = request.app.state.rv
    scope = scope_of(agent_id, None, None)
    # The two switches are the filter's "only archived" / "only superseded" (True or unset, never False).
    flt = from_text(
        tags_any=[tag] if tag else (),
        source=source,
        tier=tier,
        pinned=pinned,
        archived=archived or None,
        superseded=superseded or None,
    )
    params: dict[str, Any] = {
        "q": q,
        "order": order,
        "category": category,
        "tier": tier,
        "source": source,
        "tag": tag,
        "pinned": None if pinned is None else str(pinned).lower(),
        "superseded": superseded,
        "archived": archived,
        "limit": limit,
    }
    taxonomy = rv.memory.browse(limit=1, scope=scope).taxonomy
    context: dict[str, Any] = {
        "agent_id": agent_id,
        "params": params,
        "tree": category_tree(taxonomy),
        "total": sum(c.count for c in taxonomy),
        "orders": ORDER_LABELS,
        "tiers": TIERS,
        "here": lambda **changes: _href(agent_id, params, cursor=None, **changes),
    }
    if q and q.strip():
        return _search(request, context, q, flt)
    page = rv.memory.list(
        filter=flt,
        order=order,
        cursor=cursor,
        limit=limit or LIST_PAGE,
        category=category,
        scope=scope,
    )
    following = None if page.next_cursor is None else _href(agent_id, params, cursor=page.next_cursor)
    context.update(page=page, next_href=following, first_href=_href(agent_id, params) if cursor else None)
    return fragment(request, "memory/list.html", **context)


def _search(request: Request, context: dict[str, Any], q: str, flt: EntryFilter | None) -> HTMLResponse:
    """The search view: ``memory.search`` as the API's search route calls it (as a ``peek``), and the floor
    recall judged similarities by (None when the mode run had no vector signal: BM25 alone has no floor)."""
    rv = request.app.state.rv
    agent_id, params = context["agent_id"], context["params"]
    results = rv.memory.search(
        q,
        category=params["category"],
        limit=params["limit"] or SEARCH_PAGE,
        scope=scope_of(agent_id, None, None),
        filter=flt,
        peek=True,  # looking at memory in the console is not a recall: no read counted toward aging
    )
    # Recall judges with "no floor" as 0.0 (recall.hybrid.HybridSearch.search): show what it used.
    floor = (rv.recall.floor(agent_id, None) or 0.0) if results.mode in ("hybrid", "vector") else None
    context.update(results=results, hits=hit_views(results, q), floor=floor, terms=query_terms(q))
    return fragment(request, "memory/search.html", **context)
