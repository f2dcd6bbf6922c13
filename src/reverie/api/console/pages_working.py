"""The console's working-memory page: an agent's live working-memory entries, namespace by namespace, each
with its value, category, tags, stored time and a TTL the browser counts down.

- ``GET /agents/{agent_id}/working``: without ``namespace``, the first page of each root (``session``,
  ``patrol``, ``subagent``, ``stash``); with ``namespace`` (a root or any prefix, ``session/standup-1``), that
  listing a page at a time (``cursor``). ``category`` filters by path segment, as the API's listing does.
- ``GET /agents/{agent_id}/working/entry?key=…``: one entry's whole value.
- The sessions pages and the context preview live in ``pages_sessions``; this router includes them.

Invariants:
- Reads only, through ``rv.working`` as the API's ``routes_working`` reads: paged listings (keyset, at most
  ``limit`` entries per root), never the whole table; an expired entry is never shown.
- A value is shown escaped and cut to ``VALUE_CHARS`` in a listing; its page shows all of it.
- Every countdown gets the server's ``now`` (``data-now``) with its ``data-expires``: the script counts from
  the server's clock (a ``FakeClock`` in tests), adding only the time elapsed in the browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from reverie.api.auth import read_access
from reverie.api.console import pages_sessions
from reverie.api.console.render import fragment
from reverie.api.filters import CursorQuery
from reverie.core import working_keys
from reverie.types import WorkingEntry
from reverie.working.service import WorkingMemoryView

router = APIRouter()
router.include_router(pages_sessions.router)

VALUE_CHARS = 300  # a listing's cut of a value: the entry's page shows the rest
DEFAULT_LIMIT = 50
# Reads may name any namespace's full key; a view needs an own namespace, and this one is never written.
READER_NAMESPACE = "session/console"


def iso(moment: datetime) -> str:
    """A time for the browser's ``Date.parse``: UTC, milliseconds, ``Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class EntryRow:
    """One entry as the page shows it."""

    entry: WorkingEntry
    name: str  # the key inside its namespace
    shown: str  # the value, cut to VALUE_CHARS
    cut: bool
    expires_iso: str
    remaining: str  # the server's text for the time left (the script replaces it every second)


@dataclass(frozen=True, slots=True)
class NamespaceGroup:
    namespace: str
    rows: tuple[EntryRow, ...]


@dataclass(frozen=True, slots=True)
class Listing:
    """One root's (or one namespace's) page of entries, grouped by namespace, and the next page's cursor."""

    prefix: str
    groups: tuple[NamespaceGroup, ...]
    count: int
    next_cursor: str | None
    notes: tuple[str, ...]


def _row(entry: WorkingEntry, now: datetime) -> EntryRow:
    namespace = working_keys.namespace_of(entry.key)
    return EntryRow(
        entry=entry,
        name=entry.key[len(namespace) + 1 :],
        shown=entry.value[:VALUE_CHARS],
        cut=len(entry.value) > VALUE_CHARS,
        expires_iso=iso(entry.expires_at),
        remaining=working_keys.remaining((entry.expires_at - now).total_seconds()),
    )


def _listing(
    view: WorkingMemoryView, prefix: str, category: str | None, cursor: str | None, limit: int, now: datetime
) -> Listing:
    """A page of the entries under ``prefix`` in key order, so each namespace's entries come together."""
    # With its slash: the bare word ``stash`` would name the current run's stash, and the console runs none.
    found = view.page(namespace=prefix + "/", category=category, cursor=cursor, limit=limit)
    rows = [_row(e, now) for e in found.entries]
    groups = tuple(
        NamespaceGroup(ns, tuple(members))
        for ns, members in groupby(rows, key=lambda r: working_keys.namespace_of(r.entry.key))
    )
    return Listing(prefix, groups, len(rows), found.next_cursor, found.notes)


@router.get("/agents/{agent_id}/working", response_class=HTMLResponse)
def working(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    namespace: Annotated[str | None, Query(max_length=512)] = None,
    category: Annotated[str | None, Query(max_length=200)] = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, Query(ge=1, le=200)] = DEFAULT_LIMIT,
) -> HTMLResponse:
    """The live working memory, by root (or one namespace prefix, paged), with counting-down TTLs."""
    rv = request.app.state.rv
    view = rv.working.for_namespace(READER_NAMESPACE, agent_id=agent_id)
    now = rv.clock.now()
    clean_namespace = namespace.strip().strip("/") if namespace and namespace.strip() else None
    clean_category = category.strip() if category and category.strip() else None
    if clean_namespace is None:
        listings = [_listing(view, root, clean_category, None, limit, now) for root in working_keys.ROOTS]
    else:
        listings = [_listing(view, clean_namespace, clean_category, cursor, limit, now)]
    return fragment(
        request,
        "working/working.html",
        agent_id=agent_id,
        listings=listings,
        namespace=clean_namespace,
        category=clean_category,
        cursor=cursor,
        limit=limit,
        default_limit=DEFAULT_LIMIT,
        now_iso=iso(now),
        roots=working_keys.ROOTS,
    )


@router.get("/agents/{agent_id}/working/entry", response_class=HTMLResponse)
def working_entry(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    key: Annotated[str, Query(max_length=512, description="the entry's full key")],
) -> HTMLResponse:
    """One live entry with its whole value (404 once it expired or was deleted)."""
    rv = request.app.state.rv
    entry = rv.working.for_namespace(READER_NAMESPACE, agent_id=agent_id).get(key)
    now = rv.clock.now()
    return fragment(
        request,
        "working/entry.html",
        agent_id=agent_id,
        row=_row(entry, now),
        namespace=working_keys.namespace_of(entry.key),
        now_iso=iso(now),
    )
