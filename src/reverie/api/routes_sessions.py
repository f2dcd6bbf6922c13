"""Conversation sessions and the per-turn context over HTTP: ``/api/memory/agents/{agent_id}/sessions…``.

Create, list, read, delete and export sessions, append turns, compact, the compaction status, and the
context of the next turn (``POST …/sessions/{session_id}/context``: what ``rv.context.build`` returns).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent, require_user
from reverie.api.errors import COMMON_ERRORS, CONFLICT, NOT_FOUND
from reverie.api.filters import CursorQuery
from reverie.api.schemas import SESSION_ID_PATTERN, Deleted, Flag, RequestModel, UserQuery, ValueOut, Whole

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}", tags=["sessions"], responses=COMMON_ERRORS, route_class=AgentRoute
)
SessionId = Annotated[str, Path(description="the session's id: 1-128 of A-Z a-z 0-9 . _ -", pattern=SESSION_ID_PATTERN)]


class SessionIn(RequestModel):
    session_id: str | None = Field(None, pattern=SESSION_ID_PATTERN, description="default: a new random id")
    name: str | None = None


class SessionOut(ValueOut):
    agent_id: str
    session_id: str
    name: str | None
    created_at: datetime
    last_active_at: datetime
    started_at: datetime
    summary: str | None
    compacted_through: int
    metadata: dict[str, Any]


class SessionInfoOut(ValueOut):
    session: SessionOut
    retained: int
    archived: int
    live: int
    expired: bool
    expires_at: datetime | None
    uncovered: int = Field(description="live turns the summary does not cover")
    needs_compaction: bool
    summary_method: str | None


class TurnIn(RequestModel):
    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(description="may be empty on an assistant turn that carries tool_calls")
    name: str | None = None
    tool_call_id: str | None = Field(None, description="only on a tool turn")
    tool_calls: list[dict[str, Any]] | None = Field(None, description="OpenAI's list; only on an assistant turn")
    create: Flag = Field(False, description="create the session when it does not exist")


class TurnOut(ValueOut):
    agent_id: str
    session_id: str
    index: int
    role: str
    content: str
    at: datetime
    name: str | None
    tool_call_id: str | None
    tool_calls: list[dict[str, Any]] | None
    archived: bool


class ExportOut(BaseModel):
    format: str
    session: SessionOut
    expired: bool
    turns: list[TurnOut]


class CompactionOut(ValueOut):
    session_id: str
    compacted: bool
    method: str | None
    compacted_through: int
    turns_summarised: int
    summary: str | None
    fallback: bool
    reason: str | None


class CompactionStatusOut(ValueOut):
    session_id: str
    live_messages: int
    uncovered: int
    threshold: int
    keep_recent: int
    compacted_through: int
    needs_compaction: bool
    summary_method: str | None
    expired: bool


class ContextIn(RequestModel):
    message: str = Field(description="the incoming message")
    kind: Literal["user", "patrol", "subagent"] = "user"
    namespace: str | None = Field(None, description="the working-memory namespace (required for patrol and subagent)")
    budget_tokens: Whole | None = Field(None, ge=1, description="trim to about this many tokens")
    user_id: str | None = Field(None, description="recall this user's entries too")


class SectionOut(ValueOut):
    name: str
    messages: list[dict[str, Any]]
    tokens: int


class ContextOut(ValueOut):
    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages, in order")
    sections: list[SectionOut]
    tokens: int
    injected: list[str] = Field(description="long-term entry ids given to the model this turn")
    trimmed: list[str] = Field(description="what the budget removed, least relevant first")
    over_budget: bool


@router.post("/sessions", status_code=201, response_model=SessionOut, responses=CONFLICT, summary="Create a session")
def create_session(rv: Engine, agent: WriteAgent, body: SessionIn) -> SessionOut:
    """A new session (a random id unless ``session_id``); 409 when the id is taken."""
    return SessionOut.model_validate(rv.conversation.create(body.session_id, name=body.name, agent_id=agent))


@router.get("/sessions", response_model=list[SessionOut], summary="List sessions")
def list_sessions(
    rv: Engine,
    agent: ReadAgent,
    response: Response,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="page: at most this many sessions")] = None,
    cursor: CursorQuery = None,
) -> list[SessionOut]:
    """The agent's sessions, most recently active first (deleted ones hidden). With ``limit`` or ``cursor``,
    one page, newest first (by creation), and the next page's cursor in the ``X-Next-Cursor`` header (absent
    on the last page); a walk sees every session that existed for the whole walk exactly once."""
    if limit is None and cursor is None:
        return [SessionOut.model_validate(s) for s in rv.conversation.list(agent)]
    page = rv.conversation.page(agent, cursor=cursor, limit=limit)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [SessionOut.model_validate(s) for s in page.items]


@router.get("/sessions/{session_id}", response_model=SessionInfoOut, responses=NOT_FOUND, summary="Session info")
def session_info(rv: Engine, agent: ReadAgent, session_id: SessionId) -> SessionInfoOut:
    """The session with its turn counts, expiry and compaction state."""
    return SessionInfoOut.model_validate(rv.conversation.info(session_id, agent_id=agent))


@router.delete("/sessions/{session_id}", response_model=Deleted, responses=NOT_FOUND, summary="Delete a session")
def delete_session(rv: Engine, agent: WriteAgent, session_id: SessionId) -> Deleted:
    """Mark the session deleted: hidden, its turns no longer read; purged after the retention."""
    rv.conversation.delete(session_id, agent_id=agent)
    rv.context.forget_session(session_id, agent_id=agent)
    return Deleted(deleted=True)


@router.get("/sessions/{session_id}/export", response_model=ExportOut, responses=NOT_FOUND, summary="Export")
def export_session(rv: Engine, agent: ReadAgent, session_id: SessionId) -> ExportOut:
    """The session and every live turn (archive included), in order."""
    session = rv.conversation.get(session_id, agent_id=agent)
    turns = rv.conversation.live(session_id, agent_id=agent)
    return ExportOut(
        format="reverie.session/1",
        session=session,
        expired=rv.conversation.expired(session_id, agent_id=agent),
        turns=list(turns),
    )


@router.post(
    "/sessions/{session_id}/turns",
    status_code=201,
    response_model=TurnOut,
    responses={**NOT_FOUND, **CONFLICT},
    summary="Add a turn",
)
def add_turn(rv: Engine, agent: WriteAgent, session_id: SessionId, body: TurnIn, user_id: UserQuery = None) -> TurnOut:
    """Append a turn; retention, the archive and auto compaction apply. 404 for an unknown session unless
    ``create``. ``user_id``: the user the conversation is with (not stored with the turn; proactive memory's
    ``memorize_on_turn`` files what it learns about the user under it)."""
    turn = rv.conversation.add_turn(
        session_id,
        body.role,
        body.content,
        name=body.name,
        tool_call_id=body.tool_call_id,
        tool_calls=body.tool_calls,
        create=body.create,
        agent_id=agent,
        user_id=user_id,
    )
    return TurnOut.model_validate(turn)


@router.post("/sessions/{session_id}/compact", response_model=CompactionOut, responses=NOT_FOUND, summary="Compact")
def compact_session(
    rv: Engine,
    agent: WriteAgent,
    session_id: SessionId,
    force: Annotated[bool, Query(description="compact even below the threshold")] = False,
) -> CompactionOut:
    """Summarise the older turns, keeping the most recent verbatim: with the LLM when one is configured,
    else extractively (``fallback`` when the LLM failed)."""
    return CompactionOut.model_validate(rv.conversation.compact(session_id, force=force, agent_id=agent))


@router.get("/compaction-status", response_model=list[CompactionStatusOut], summary="Compaction status")
def compaction_status(rv: Engine, agent: ReadAgent) -> list[CompactionStatusOut]:
    """Per session: live messages, how many the summary does not cover, and whether it needs compaction."""
    return [CompactionStatusOut.model_validate(s) for s in rv.conversation.compaction_status(agent)]


@router.post(
    "/sessions/{session_id}/context", response_model=ContextOut, responses=NOT_FOUND, summary="Build the context"
)
def build_context(request: Request, rv: Engine, agent: ReadAgent, session_id: SessionId, body: ContextIn) -> ContextOut:
    """The messages for the agent's next LLM call: recalled entries (each once per session), the
    working-memory inventory, patrol and subagent listings, out-of-window recall, the replayed turns and the
    incoming message, trimmed to ``budget_tokens`` least relevant first. Reads only. ``user_id``: 403 unless
    the key is bound to the user."""
    require_user(request, body.user_id)
    built = rv.context.build(
        session_id,
        body.message,
        agent_id=agent,
        user_id=body.user_id,
        kind=body.kind,
        namespace=body.namespace,
        budget_tokens=body.budget_tokens,
    )
    return ContextOut.model_validate(built)
