"""Long-term memory over HTTP: ``/api/memory/agents/{agent_id}/…``.

Save (one fact or a batch), read, edit, delete (= archive), restore, importance, history and version restore,
search and browse.
Every call works in the path agent's scope, narrowed by the optional ``user_id`` and ``session_id`` query
parameters exactly as ``reverie.Scope`` narrows a library call.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response
from pydantic import AliasChoices, BaseModel, Field, model_validator

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND
from reverie.api.filters import CursorQuery, FilterQuery, OrderQuery
from reverie.api.schemas import (
    EntryOut,
    Flag,
    Number,
    RequestModel,
    SessionQuery,
    UserQuery,
    ValueOut,
    category_field,
    scope_of,
)
from reverie.core.validate import MAX_QUERY_CHARS
from reverie.recall.hybrid import MODES
from reverie.types import Contradiction, SaveRejection, SaveResult, Tier
from reverie.views.entry import contradiction_view

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}", tags=["memory"], responses=COMMON_ERRORS, route_class=AgentRoute
)
EntryId = Annotated[str, Path(description="the entry's id", max_length=200)]
Limit = Annotated[int | None, Query(ge=1, le=1000, description="at most this many results")]
Category = Annotated[str | None, Query(description="only this category and those under it, e.g. 'project'")]
OBSERVED_AT = (
    "when the fact was observed, for importing dated history: an ISO 8601 time with an offset "
    "(2023-05-08T13:56:00+00:00), not in the future; the entry's created_at (default: now)"
)


def observed_at_field() -> Any:
    return Field(None, description=OBSERVED_AT, examples=["2023-05-08T13:56:00+00:00"])


class SaveIn(RequestModel):
    content: str = Field(description="the fact, as text")
    category: str | None = category_field()
    tags: list[str] | None = None
    source: str | None = Field(None, description="provenance: 'user', 'tool:<name>' or 'inferred'")
    importance: Number | None = Field(None, ge=0, le=1)
    tier: Tier | None = None
    metadata: dict[str, Any] | None = None
    pinned: Flag = False
    dedup: Flag = Field(True, description="fold a fact an entry already states into that entry")
    observed_at: str | None = observed_at_field()


class BatchItemIn(RequestModel):
    """One fact of a batch: the fields of a single save but ``dedup``, as JSON types only. Their values are
    checked by the service, item by item: with ``on_error: "skip"`` a bad value rejects its item only."""

    content: str = Field(description="the fact, as text")
    category: str | None = Field(None, description="a path such as 'user-preferences/timezone'")
    tags: list[str] | None = None
    source: str | None = Field(None, description="provenance: 'user', 'tool:<name>' or 'inferred'")
    importance: Number | None = Field(None, description="0 to 1")
    tier: str | None = Field(None, description="episodic, semantic or procedural")
    metadata: dict[str, Any] | None = None
    pinned: Flag = False
    observed_at: str | None = observed_at_field()


class BatchIn(RequestModel):
    items: list[BatchItemIn] = Field(description="the facts, saved in one transaction")
    dedup: Flag = Field(True, description="fold a fact an entry already states into that entry")
    on_error: Literal["raise", "skip"] = Field(
        "raise", description="raise: one bad item is a 422 and nothing is saved; skip: bad items are reported"
    )
    observed_at: str | None = Field(None, description="the default of every item's observed_at")


class ContradictionOut(BaseModel):
    id: str = Field(description="the earlier entry the save contradicts")
    content: str
    kind: str = Field(description="negation, antonym, order or time")
    earlier_words: list[str] = Field(description="the words that carry the earlier entry's stance (may be none)")
    new_words: list[str] = Field(description="the words that carry the new text's stance (may be none)")
    superseded: bool = Field(description="the earlier entry is now superseded by the new one")
    message: str

    @model_validator(mode="before")
    @classmethod
    def _view(cls, value: Any) -> Any:
        return contradiction_view(value) if isinstance(value, Contradiction) else value


class SaveOut(ValueOut):
    outcome: str = Field(description="created, reinforced, extended or superseded")
    entry: EntryOut
    notes: list[str]
    contradicts: ContradictionOut | None = Field(
        None,
        validation_alias=AliasChoices("contradicts", "contradiction"),
        description="the entry this save contradicts, if any",
    )


class BatchItemOut(BaseModel):
    position: int = Field(description="the item's position in the request, from 0")
    outcome: str = Field(description="created, reinforced, extended, superseded, or rejected (on_error skip)")
    entry: EntryOut | None = Field(description="where the fact lives; null when rejected")
    notes: list[str]
    contradicts: ContradictionOut | None = Field(None, description="the entry this save contradicts, if any")
    error: str | None = Field(None, description="why the item was rejected")
    field: str | None = Field(None, description="the item's field at fault, when rejected")


class BatchOut(BaseModel):
    saved: int = Field(description="items saved (any outcome but rejected)")
    rejected: int
    results: list[BatchItemOut] = Field(description="one per item, in the request's order")


class EditIn(RequestModel):
    content: str | None = None
    category: str | None = category_field()
    tags: list[str] | None = None


class ImportanceIn(RequestModel):
    importance: Number = Field(ge=0, le=1)


class PinnedIn(RequestModel):
    pinned: Flag


class VersionOut(ValueOut):
    entry_id: str
    version: int
    change: str
    recorded_at: datetime
    content: str
    category: str
    tags: list[str]
    importance: float
    metadata: dict[str, Any]
    archived: bool


class EvidenceOut(ValueOut):
    """Why a hit ranked where it did (docs/concepts.md, "Reading a hit's score")."""

    bm25: float | None = Field(description="the raw BM25 score; null when BM25 did not find the entry")
    similarity: float | None = Field(description="the raw cosine similarity; null when the vector search did not")
    lexical: float = Field(description="BM25 as evidence, 0-1")
    semantic: float = Field(description="similarity as evidence, 0-1 (0 at or below the floor)")
    own: float = Field(description="the hit's own evidence: the mode's mix of lexical and semantic")
    context: float = Field(description="what its thread and sequence neighbours lent it")
    time: float = Field(description="the boost for matching a time the query names")
    asked_as: str | None = Field(
        None, description="matched_by introduction: the query as asked again by name; null otherwise"
    )
    succeeds: str | None = Field(
        None,
        description="the id of an older hit this one was ranked just above because it says it changed what that "
        "one says (its gain is in context); null otherwise",
    )


class HitOut(ValueOut):
    entry: EntryOut
    score: float = Field(description="own + context + time; 1 is full evidence of its own")
    matched_by: str = Field(
        description="bm25, vector, bm25+vector, time, neighbour, thread, introduction, substring, recent, pinned or "
        "superseded"
    )
    evidence: EvidenceOut | None = Field(None, description="the score's parts; null for fill-ins")


class SearchOut(BaseModel):
    mode: str
    notes: list[str]
    hits: list[HitOut]


class PageOut(BaseModel):
    items: list[EntryOut]
    next_cursor: str | None = Field(description="pass as cursor for the next page; null on the last page")


class CategoryCountOut(ValueOut):
    category: str
    count: int


class BrowseOut(ValueOut):
    entries: list[EntryOut]
    taxonomy: list[CategoryCountOut]
    category: str | None


def _batch_item_out(position: int, result: SaveResult | SaveRejection) -> BatchItemOut:
    if isinstance(result, SaveRejection):
        return BatchItemOut(
            position=position, outcome=result.outcome, entry=None, notes=[], error=result.error, field=result.field
        )
    return BatchItemOut(position=position, **dict(SaveOut.model_validate(result)))


@router.post("/entries", status_code=201, response_model=SaveOut, summary="Save a fact")
def save_entry(
    rv: Engine, agent: WriteAgent, body: SaveIn, user_id: UserQuery = None, session_id: SessionQuery = None
) -> SaveOut:
    """Save a fact in the agent's memory (scoped to ``user_id`` / ``session_id`` when given). Save-time
    deduplication may fold it into an entry that already says it: ``outcome`` says which, and ``entry`` is
    where the fact now lives. A save that contradicts an entry is ``superseded``: a new entry, the current
    belief, with the earlier one (kept, superseded) in ``contradicts``."""
    saved = rv.memory.save(
        body.content,
        category=body.category,
        tags=body.tags,
        source=body.source,
        importance=body.importance,
        tier=body.tier,
        metadata=body.metadata,
        pinned=body.pinned,
        scope=scope_of(agent, user_id, session_id),
        dedup=body.dedup,
        observed_at=body.observed_at,
    )
    return SaveOut.model_validate(saved)


@router.post("/entries/batch", status_code=201, response_model=BatchOut, summary="Save many facts")
def save_batch(
    rv: Engine, agent: WriteAgent, body: BatchIn, user_id: UserQuery = None, session_id: SessionQuery = None
) -> BatchOut:
    """Save many facts in one transaction (ingestion), with deduplication as for one save (items see each
    other). ``on_error: "raise"`` (the default): one item the service rejects (empty or over-long content, a bad
    category, tier, importance, metadata or observed_at) is a 422 naming it (``item N: …``) and nothing is
    saved. ``on_error: "skip"``: the good items are saved and every item gets its result, a rejected one with
    ``error`` and ``field``. A body that does not match the schema is a 422 either way."""
    items = [item.model_dump(exclude_unset=True) for item in body.items]
    results = rv.memory.save_many(
        items,
        scope=scope_of(agent, user_id, session_id),
        dedup=body.dedup,
        on_error=body.on_error,
        observed_at=body.observed_at,
    )
    out = [_batch_item_out(position, result) for position, result in enumerate(results)]
    rejected = sum(1 for item in out if item.outcome == "rejected")
    return BatchOut(saved=len(out) - rejected, rejected=rejected, results=out)


@router.get("/entries", response_model=BrowseOut, summary="Browse: recent entries and the taxonomy")
def browse_entries(
    rv: Engine,
    agent: ReadAgent,
    category: Category = None,
    limit: Limit = None,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> BrowseOut:
    """The query-less look: the most recently reinforced live entries, then the scope's whole category
    taxonomy (which ignores the category filter, so an empty result still shows what exists)."""
    found = rv.memory.browse(category=category, limit=limit, scope=scope_of(agent, user_id, session_id))
    return BrowseOut.model_validate(found)


@router.get("/search", response_model=SearchOut, summary="Search")
def search_entries(
    rv: Engine,
    agent: ReadAgent,
    query: Annotated[str, Query(max_length=MAX_QUERY_CHARS, description="plain text; empty browses")] = "",
    category: Category = None,
    mode: Annotated[str, Query(description=f"one of {', '.join(MODES)}")] = "auto",
    limit: Limit = None,
    pin_first: bool = False,
    include_superseded: bool = False,
    include_archived: bool = False,
    min_similarity: Annotated[float | None, Query(ge=0, le=1)] = None,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
    flt: FilterQuery = None,
) -> SearchOut:
    """Hybrid recall, best first (BM25 without an embedder); ``notes`` say when recall was degraded.
    ``pin_first`` puts up to ten pinned entries first; ``include_superseded`` appends matching entries that
    were folded into another. The filter parameters (``tags_any``, ``source``, ``importance_min``, ``archived``,
    ``superseded``, ...) keep only the entries they match, applied to every candidate, so they never hide a
    match."""
    results = rv.memory.search(
        query,
        category=category,
        limit=limit,
        include_archived=include_archived,
        mode=mode,
        min_similarity=min_similarity,
        scope=scope_of(agent, user_id, session_id),
        pin_first=pin_first,
        include_superseded=include_superseded,
        filter=flt,
    )
    # SearchResults is the list of hits itself (with mode and notes): each hit is read as a HitOut.
    return SearchOut(mode=results.mode, notes=list(results.notes), hits=list(results))


@router.get("/entries/list", response_model=PageOut, summary="List entries, a page at a time")
def list_entries(
    rv: Engine,
    agent: ReadAgent,
    order: OrderQuery = "newest",
    cursor: CursorQuery = None,
    category: Category = None,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="entries per page (default 100)")] = None,
    include_archived: bool = False,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
    flt: FilterQuery = None,
) -> PageOut:
    """The scope's entries the filter keeps, one page at a time, in ``order`` (newest, oldest, recent,
    updated, importance, reinforced, cold). ``archived=true`` / ``superseded=true`` list only archived / only
    replaced entries (no ``include_archived`` needed). Pass ``next_cursor`` back as ``cursor`` for the next
    page; it is null on the last.
    Keyset paging: in the newest and oldest orders a walk sees every entry that exists for the whole walk
    exactly once, whatever is written meanwhile; there is no cap on how far a walk goes."""
    page = rv.memory.list(
        filter=flt,
        order=order,
        cursor=cursor,
        limit=limit,
        category=category,
        include_archived=include_archived,
        scope=scope_of(agent, user_id, session_id),
    )
    return PageOut(items=[EntryOut.model_validate(e) for e in page.items], next_cursor=page.next_cursor)


@router.get("/entries/{entry_id}", response_model=EntryOut, responses=NOT_FOUND, summary="Read one entry")
def get_entry(
    rv: Engine, agent: ReadAgent, entry_id: EntryId, user_id: UserQuery = None, session_id: SessionQuery = None
) -> EntryOut:
    """The entry, archived or not."""
    return EntryOut.model_validate(rv.memory.get(entry_id, scope=scope_of(agent, user_id, session_id)))


@router.patch("/entries/{entry_id}", response_model=EntryOut, responses=NOT_FOUND, summary="Edit an entry")
def edit_entry(
    rv: Engine,
    agent: WriteAgent,
    entry_id: EntryId,
    body: EditIn,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntryOut:
    """Rewrite the text, category or tags (fields left out stay); the old text stays in the history."""
    scope = scope_of(agent, user_id, session_id)
    changed = rv.memory.edit(entry_id, content=body.content, category=body.category, tags=body.tags, scope=scope)
    return EntryOut.model_validate(changed)


@router.delete("/entries/{entry_id}", response_model=EntryOut, responses=NOT_FOUND, summary="Delete (archive)")
def delete_entry(
    rv: Engine, agent: WriteAgent, entry_id: EntryId, user_id: UserQuery = None, session_id: SessionQuery = None
) -> EntryOut:
    """Delete **archives**: the entry leaves search and browse, stays readable by id, and can be restored
    until the purge pass (which never removes a high-value entry). Returns the archived entry."""
    return EntryOut.model_validate(rv.memory.archive(entry_id, scope=scope_of(agent, user_id, session_id)))


@router.post("/entries/{entry_id}/restore", response_model=EntryOut, responses=NOT_FOUND, summary="Restore")
def restore_entry(
    rv: Engine, agent: WriteAgent, entry_id: EntryId, user_id: UserQuery = None, session_id: SessionQuery = None
) -> EntryOut:
    """Bring an archived entry back into search (a live entry is returned as it is)."""
    return EntryOut.model_validate(rv.memory.restore(entry_id, scope=scope_of(agent, user_id, session_id)))


@router.put("/entries/{entry_id}/pinned", response_model=EntryOut, responses=NOT_FOUND, summary="Pin or unpin")
def set_pinned(
    rv: Engine,
    agent: WriteAgent,
    entry_id: EntryId,
    body: PinnedIn,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntryOut:
    """Pin (``true``) or unpin (``false``) the entry: a pinned entry never decays, is never forgotten or pruned,
    and comes first with ``pin_first``. The change is a ``pinned`` version; the text is left alone."""
    scope = scope_of(agent, user_id, session_id)
    return EntryOut.model_validate(rv.memory.set_pinned(entry_id, body.pinned, scope=scope))


@router.put("/entries/{entry_id}/importance", response_model=EntryOut, responses=NOT_FOUND, summary="Re-score")
def set_importance(
    rv: Engine,
    agent: WriteAgent,
    entry_id: EntryId,
    body: ImportanceIn,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntryOut:
    """Set the entry's importance (0 to 1); its text and ``updated_at`` are left alone."""
    scope = scope_of(agent, user_id, session_id)
    return EntryOut.model_validate(rv.memory.set_importance(entry_id, body.importance, scope=scope))


@router.get("/entries/{entry_id}/history", response_model=list[VersionOut], responses=NOT_FOUND, summary="Versions")
def entry_history(
    rv: Engine,
    agent: ReadAgent,
    entry_id: EntryId,
    response: Response,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="page: at most this many versions")] = None,
    cursor: CursorQuery = None,
) -> list[VersionOut]:
    """Every version of the entry, oldest first. With ``limit`` or ``cursor``: one page, the next page's
    cursor in the ``X-Next-Cursor`` header (absent on the last page)."""
    scope = scope_of(agent, user_id, session_id)
    if limit is None and cursor is None:
        return [VersionOut.model_validate(v) for v in rv.memory.history(entry_id, scope=scope)]
    page = rv.memory.history_page(entry_id, cursor=cursor, limit=limit, scope=scope)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [VersionOut.model_validate(v) for v in page.items]


@router.post(
    "/entries/{entry_id}/versions/{version}/restore",
    response_model=EntryOut,
    responses=NOT_FOUND,
    summary="Restore a version",
)
def restore_version(
    rv: Engine,
    agent: WriteAgent,
    entry_id: EntryId,
    version: Annotated[int, Path(ge=1, le=2**31)],
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntryOut:
    """Make version ``version``'s text, category and tags current again (recorded as a new version)."""
    scope = scope_of(agent, user_id, session_id)
    return EntryOut.model_validate(rv.memory.restore_version(entry_id, version, scope=scope))
