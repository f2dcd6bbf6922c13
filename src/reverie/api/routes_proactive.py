"""Proactive memory over HTTP (seed 004's proactive-memory endpoints).

Per agent, under ``/api/memory/agents/{agent_id}``: ``POST …/memorize`` (auto_memorize a turn, or save
memories the caller extracted), ``POST …/retrieve`` (auto_retrieve before a turn), ``GET …/proactive`` (the
proactive memories the scope sees), ``DELETE …/proactive/{entry_id}`` (forget one: archive),
``POST …/proactive/sweep`` (the decay sweep now) and ``POST …/consolidate`` (merge duplicates, the whole history
by default). The optional ``user_id`` and ``session_id`` query parameters narrow the scope as everywhere else.

Per user: ``GET /api/memory/users/{user_id}/memories``, the user's user-level memory, which every agent
serving that user shares. A live key that may read memory (``memory_read``, or an admin key) and is bound to
the user (``auth.user_access``, as for the ``user_id`` parameter of every route) may read it. A key bound to the
user may write it too, but archive only the entries its own agent wrote (``auth.require_change``; an admin key
any). Everything else is the path agent's alone: another agent's ids are 404.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import STATE_KEY, Engine, ReadAgent, WriteAgent, require_change
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND, Forbidden
from reverie.api.schemas import (
    EntryOut,
    Flag,
    Number,
    RequestModel,
    SessionQuery,
    UserQuery,
    ValueOut,
    Whole,
    scope_of,
)
from reverie.core.proactive import MAX_MEMORY_CHARS, kind_of
from reverie.core.validate import MAX_ID_CHARS, MAX_QUERY_CHARS
from reverie.errors import ValidationError
from reverie.keys.service import ADMIN, MEMORY_READ
from reverie.proactive.service import MAX_LIST, MAX_MESSAGE_CHARS
from reverie.types import ApiKey, SearchResults

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}",
    tags=["proactive memory"],
    responses=COMMON_ERRORS,
    route_class=AgentRoute,
)
users_router = APIRouter(prefix="/api/memory/users/{user_id}", tags=["proactive memory"], responses=COMMON_ERRORS)
EntryId = Annotated[str, Path(description="the entry's id", max_length=MAX_ID_CHARS)]
UserPath = Annotated[str, Path(description="the user whose user-level memory this is", max_length=MAX_ID_CHARS)]
Category = Annotated[str | None, Query(description="only this category (and those under it)")]
Limit = Annotated[int, Query(ge=1, le=MAX_LIST, description="at most this many")]


class MemoryIn(RequestModel):
    content: str = Field(max_length=MAX_MEMORY_CHARS, description="one short fact, in the third person")
    category: str = Field(description="one of [proactive] categories, e.g. preference")
    scope: Literal["user", "agent", "session"] = Field(
        "user", description="user: shared by the user's agents; agent: this agent's; session: expires with the TTL"
    )
    confidence: Number = Field(0.7, ge=0, le=1)


class MemorizeIn(RequestModel):
    user_message: str | None = Field(
        None, max_length=MAX_MESSAGE_CHARS, description="the user's message: memories are extracted from it"
    )
    assistant_message: str | None = Field(None, max_length=MAX_MESSAGE_CHARS, description="the agent's answer")
    memories: list[MemoryIn] | None = Field(
        None, max_length=100, description="instead of a message: memories the caller extracted itself"
    )


class RememberedOut(ValueOut):
    id: str
    content: str
    category: str
    scope: str = Field(validation_alias="kind", description="user, agent or session")
    outcome: str = Field(description="created, reinforced, extended or superseded (the save pipeline's deduplication)")
    confidence: float
    kv: bool = Field(description="copied to the agent's key-value memory as memory:{id} (agent-wide only)")
    graph: bool = Field(description="queued for the knowledge graph's extraction (agent-wide only)")
    entry: EntryOut


class MergeOut(ValueOut):
    keep: str
    archived: list[str]
    rungs: list[str] = Field(description="per archived entry: substring, cosine or jaccard")


class ConsolidationOut(ValueOut):
    agent_id: str
    user_id: str | None
    full: bool
    examined: int
    merges: list[MergeOut]


class MemorizeOut(ValueOut):
    method: str = Field(description="llm, rules or given")
    saved: list[RememberedOut]
    dropped: int = Field(description="proposed memories refused (unknown category, bad shape)")
    error: str | None = Field(description="why nothing was saved (a malformed LLM answer)")
    evicted: list[str] = Field(description="ids the per-agent (or per-user) cap archived")
    consolidation: ConsolidationOut | None = Field(description="the auto-consolidation this call triggered")


class RetrieveIn(RequestModel):
    query: str = Field("", max_length=MAX_QUERY_CHARS, description="the incoming message; empty: the most recent")
    limit: Whole | None = Field(None, ge=1, le=100)
    min_similarity: Number | None = Field(None, ge=0, le=1, description="floor on cosine (inert without an embedder)")


class ProactiveHitOut(BaseModel):
    entry: EntryOut
    score: float = Field(description="reciprocal-rank fusion of the agent's and the user's recall")
    matched_by: str
    scope: str = Field(description="user, agent or session")


class RetrieveOut(BaseModel):
    hits: list[ProactiveHitOut]


class EntriesOut(BaseModel):
    entries: list[EntryOut]


class ConsolidateIn(RequestModel):
    full: Flag = Field(True, description="scan the whole history (false: the most recent consolidate_window)")


class SweepOut(ValueOut):
    agent_id: str
    ran: bool
    examined: int
    decayed: list[str]
    copies_removed: int


def _retrieve_out(results: SearchResults) -> RetrieveOut:
    return RetrieveOut(
        hits=[
            ProactiveHitOut(entry=h.entry, score=h.score, matched_by=h.matched_by, scope=kind_of(h.entry.metadata))
            for h in results
        ]
    )


@router.post("/memorize", response_model=MemorizeOut, summary="Memorize a turn (proactive memory)")
def memorize(
    rv: Engine, agent: WriteAgent, body: MemorizeIn, user_id: UserQuery = None, session_id: SessionQuery = None
) -> MemorizeOut:
    """auto_memorize: extract what is worth remembering from ``user_message`` (and ``assistant_message``) —
    with the LLM when one is configured, else by rules — or save the given ``memories``. Give one or the
    other. User memories need ``user_id`` (else they are the agent's); session memories need ``session_id``."""
    scope = scope_of(agent, user_id, session_id)
    if (body.memories is None) == (body.user_message is None):
        raise ValidationError("give either user_message or memories", field="user_message")
    if body.memories is not None:
        given = [m.model_dump() for m in body.memories]
        return MemorizeOut.model_validate(rv.proactive.remember(given, scope=scope))
    assert body.user_message is not None
    return MemorizeOut.model_validate(
        rv.proactive.auto_memorize(body.user_message, body.assistant_message, scope=scope)
    )


@router.post("/retrieve", response_model=RetrieveOut, summary="Retrieve proactive memories for a message")
def retrieve(
    rv: Engine, agent: ReadAgent, body: RetrieveIn, user_id: UserQuery = None, session_id: SessionQuery = None
) -> RetrieveOut:
    """auto_retrieve: the agent's proactive memories this scope sees and the user's user-level memory, ranked
    together for ``query``. Counts an access of each memory returned (its confidence is recomputed)."""
    scope = scope_of(agent, user_id, session_id)
    found = rv.proactive.auto_retrieve(body.query, scope=scope, limit=body.limit, min_similarity=body.min_similarity)
    return _retrieve_out(found)


@router.get("/proactive", response_model=EntriesOut, summary="List proactive memories")
def list_proactive(
    rv: Engine,
    agent: ReadAgent,
    category: Category = None,
    limit: Limit = 100,
    include_user: bool = True,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntriesOut:
    """The live proactive memories the scope sees, newest first, with the user's user-level memory when
    ``user_id`` is given (and ``include_user``)."""
    scope = scope_of(agent, user_id, session_id)
    found = rv.proactive.list(scope=scope, category=category, limit=limit, include_user=include_user)
    return EntriesOut(entries=list(found))


@router.delete(
    "/proactive/{entry_id}", response_model=EntryOut, responses=NOT_FOUND, summary="Forget a proactive memory"
)
def forget_proactive(
    request: Request,
    rv: Engine,
    agent: WriteAgent,
    entry_id: EntryId,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> EntryOut:
    """Archive a proactive memory the scope sees (a user-level one when ``user_id`` is its user) and mark its
    key-value copy deleted. 404 for any other id; 403 for a user-level one another agent wrote (unless the key
    is an admin key)."""
    scope = scope_of(agent, user_id, session_id)
    require_change(request, rv.proactive.find(entry_id, scope=scope))  # its writer never changes: checked once
    return EntryOut.model_validate(rv.proactive.forget(entry_id, scope=scope))


@router.post("/proactive/sweep", response_model=SweepOut, summary="Run the confidence decay sweep")
def sweep_proactive(rv: Engine, agent: WriteAgent) -> SweepOut:
    """Recompute the decayed confidence of the agent's proactive memories now (the dream's maintenance runs it at
    most once per ``decay_sweep_minutes``; a context build never does)."""
    return SweepOut.model_validate(rv.proactive.sweep(agent))


@router.post("/consolidate", response_model=ConsolidationOut, summary="Consolidate proactive memories")
def consolidate(rv: Engine, agent: WriteAgent, body: ConsolidateIn, user_id: UserQuery = None) -> ConsolidationOut:
    """Merge duplicate proactive memories of the agent (and of ``user_id``'s user-level memory): each cluster
    keeps its newest member, the others are archived as superseded by it. The whole history by default."""
    return ConsolidationOut.model_validate(rv.proactive.consolidate(agent, user_id=user_id, full=body.full))


async def user_read_access(request: Request, user_id: UserPath) -> str:
    """The path's user, once the caller holds a live key that may read memory (or the API runs without keys);
    the app's ``user_access`` has checked that the key is bound to the user."""
    key = request.scope.get("state", {}).get(STATE_KEY)
    if isinstance(key, ApiKey) and (key.revoked_at is not None or not {MEMORY_READ, ADMIN} & set(key.scopes)):
        raise Forbidden("this key may not read memory")
    return user_id


UserReader = Annotated[str, Depends(user_read_access)]


@users_router.get("/memories", response_model=EntriesOut, summary="A user's user-level memory")
def user_memories(rv: Engine, user: UserReader, category: Category = None, limit: Limit = 100) -> EntriesOut:
    """The user's live user-level memories (proactive memory's user_memory, shared by every agent serving the
    user), newest first."""
    found = rv.proactive.user_memories(user, category=category, limit=limit)
    return EntriesOut(entries=list(found))
