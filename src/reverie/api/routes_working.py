"""Working memory over HTTP: ``/api/memory/agents/{agent_id}/working…``.

Every call names the caller's own namespace (``namespace=session/{id}``, ``patrol/{task}`` or
``subagent/{task}``), as ``rv.working.for_namespace`` does: writes go only there, reads may name any key of
the same agent by its full path.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND
from reverie.api.filters import CursorQuery
from reverie.api.schemas import Deleted, Flag, Number, RequestModel, ValueOut, category_field
from reverie.errors import ValidationError

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}/working",
    tags=["working memory"],
    responses=COMMON_ERRORS,
    route_class=AgentRoute,
)
Namespace = Annotated[
    str, Query(description="the caller's own namespace: session/{id}, patrol/{task} or subagent/{task}")
]
Key = Annotated[str, Path(description="a plain key (in the own namespace) or a full key path")]


class WorkingSaveIn(RequestModel):
    value: str
    ttl_minutes: Number | None = Field(None, gt=0, description="default: working.default_ttl_minutes")
    category: str | None = category_field("a path such as 'email/inbox'")
    tags: list[str] | None = None
    background: Flag = Field(False, description="a subagent or worker: the write lives at least the background floor")


class WorkingEntryOut(ValueOut):
    agent_id: str
    key: str
    value: str
    stored_at: datetime
    expires_at: datetime
    category: str | None
    tags: list[str]


class WorkingSaveOut(ValueOut):
    entry: WorkingEntryOut
    evicted: list[WorkingEntryOut] = Field(description="entries the namespace cap evicted to make room")
    notes: list[str]


class WorkingHitOut(ValueOut):
    entry: WorkingEntryOut
    score: float
    matched_by: str
    preview: str


class WorkingSearchOut(ValueOut):
    query: str | None
    resolved_prefix: str | None
    hits: list[WorkingHitOut] = Field(description="with a query: the matches, best first")
    entries: list[WorkingEntryOut] = Field(description="without one: the listing, most recent first")
    capped: bool
    notes: list[str]
    next_cursor: str | None = Field(None, description="with limit or cursor: the next page's cursor (none: the last)")


@router.get("", response_model=WorkingSearchOut, summary="Search or list working memory")
def search_working(
    rv: Engine,
    agent: ReadAgent,
    namespace: Namespace,
    query: Annotated[str | None, Query(description="without one: the listing")] = None,
    prefix: Annotated[str | None, Query(description="where to look (default: the own namespace)")] = None,
    category: str | None = None,
    tags: Annotated[list[str] | None, Query(description="every one must be present")] = None,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="without query: a page of this many")] = None,
    cursor: CursorQuery = None,
) -> WorkingSearchOut:
    """With ``query``: the best matches under ``prefix`` (any namespace path, e.g. ``patrol``), with
    previews. Without: the live entries, most recently stored first; with ``limit`` or ``cursor``, one page
    in key order (stable) and the next page's cursor in ``next_cursor`` (none on the last page)."""
    view = rv.working.for_namespace(namespace, agent_id=agent)
    if limit is None and cursor is None:
        return WorkingSearchOut.model_validate(view.search(query, category=category, tags=tags, namespace=prefix))
    if query is not None and query.strip():
        raise ValidationError("limit and cursor page the listing: leave query out", field="query")
    found = view.page(cursor=cursor, limit=limit, category=category, tags=tags, namespace=prefix)
    return WorkingSearchOut.model_validate(found)


@router.put("/{key:path}", response_model=WorkingSaveOut, summary="Store a working-memory entry")
def save_working(rv: Engine, agent: WriteAgent, key: Key, namespace: Namespace, body: WorkingSaveIn) -> WorkingSaveOut:
    """Store (or overwrite) ``value`` at ``key`` in the own namespace for ``ttl_minutes``. A full namespace
    evicts its least recently stored entries, and says so."""
    view = rv.working.for_namespace(namespace, agent_id=agent, background=body.background)
    saved = view.save(key, body.value, ttl_minutes=body.ttl_minutes, category=body.category, tags=body.tags)
    return WorkingSaveOut.model_validate(saved)


@router.get("/{key:path}", response_model=WorkingEntryOut, responses=NOT_FOUND, summary="Read a working-memory entry")
def get_working(rv: Engine, agent: ReadAgent, key: Key, namespace: Namespace) -> WorkingEntryOut:
    """The live entry at ``key`` (404 once it expired or was deleted)."""
    return WorkingEntryOut.model_validate(rv.working.for_namespace(namespace, agent_id=agent).get(key))


@router.delete("/{key:path}", response_model=Deleted, summary="Delete a working-memory entry")
def delete_working(rv: Engine, agent: WriteAgent, key: Key, namespace: Namespace) -> Deleted:
    """Remove an entry of the own namespace now; ``deleted`` is false when there was none."""
    return Deleted(deleted=rv.working.for_namespace(namespace, agent_id=agent).delete(key))
