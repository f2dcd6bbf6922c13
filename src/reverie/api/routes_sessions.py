"""Conversation sessions and the per-turn context over HTTP: ``/api/memory/agents/{agent_id}/sessions…``.

Create, list, read, delete and export sessions, append turns, compact, the compaction status, and the
context of the next turn (``POST …/sessions/{session_id}/context``: what ``rv.context.build`` returns).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, CONFLICT, NOT_FOUND
from reverie.api.schemas import SESSION_ID_PATTERN, Deleted, Flag, RequestModel, UserQuery, Whole
from reverie.context.builder import BuiltContext
from reverie.conversation.compaction import CompactionResult, CompactionStatus
from reverie.conversation.service import SessionInfo
from reverie.types import SessionRecord, TurnRecord

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}", tags=["sessions"], responses=COMMON_ERRORS, route_class=AgentRoute
)
SessionId = Annotated[str, Path(description="the session's id: 1-128 of A-Z a-z 0-9 . _ -", pattern=SESSION_ID_PATTERN)]


class SessionIn(RequestModel):
    session_id: str | None = Field(None, pattern=SESSION_ID_PATTERN, description="default: a new random id")
    name: str | None = None


class SessionOut(BaseModel):
    agent_id: str
    session_id: str
    name: str | None
    created_at: datetime
    last_active_at: datetime
    started_at: datetime
    summary: str | None
    compacted_through: int
    metadata: dict[str, Any]


class SessionInfoOut(BaseModel):
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


class TurnOut(BaseModel):
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


class CompactionOut(BaseModel):
    session_id: str
    compacted: bool
    method: str | None
    compacted_through: int
    turns_summarised: int
    summary: str | None
    fallback: bool
    reason: str | None


class CompactionStatusOut(BaseModel):
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


class SectionOut(BaseModel):
    name: str
    messages: list[dict[str, Any]]
    tokens: int


class ContextOut(BaseModel):
    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages, in order")
    sections: list[SectionOut]
    tokens: int
    injected: list[str] = Field(description="long-term entry ids given to the model this turn")
    trimmed: list[str] = Field(description="what the budget removed, least relevant first")
    over_budget: bool


def _session_out(s: SessionRecord) -> SessionOut:
    return SessionOut(
        agent_id=s.agent_id,
        session_id=s.session_id,
        name=s.name,
        created_at=s.created_at,
        last_active_at=s.last_active_at,
        started_at=s.started_at,
        summary=s.summary,
        compacted_through=s.compacted_through,
        metadata=s.metadata,
    )


def _turn_out(t: TurnRecord) -> TurnOut:
    return TurnOut(
        agent_id=t.agent_id,
        session_id=t.session_id,
        index=t.index,
        role=t.role,
        content=t.content,
        at=t.at,
        name=t.name,
        tool_call_id=t.tool_call_id,
        tool_calls=t.tool_calls,
        archived=t.archived,
    )


def _info_out(info: SessionInfo) -> SessionInfoOut:
    return SessionInfoOut(
        session=_session_out(info.session),
        retained=info.retained,
        archived=info.archived,
        live=info.live,
        expired=info.expired,
        expires_at=info.expires_at,
        uncovered=info.uncovered,
        needs_compaction=info.needs_compaction,
        summary_method=info.summary_method,
    )


def _compaction_out(r: CompactionResult) -> CompactionOut:
    return CompactionOut(
        session_id=r.session_id,
        compacted=r.compacted,
        method=r.method,
        compacted_through=r.compacted_through,
        turns_summarised=r.turns_summarised,
        summary=r.summary,
        fallback=r.fallback,
        reason=r.reason,
    )


def _status_out(s: CompactionStatus) -> CompactionStatusOut:
    return CompactionStatusOut(
        session_id=s.session_id,
        live_messages=s.live_messages,
        uncovered=s.uncovered,
        threshold=s.threshold,
        keep_recent=s.keep_recent,
        compacted_through=s.compacted_through,
        needs_compaction=s.needs_compaction,
        summary_method=s.summary_method,
        expired=s.expired,
    )


def _context_out(built: BuiltContext) -> ContextOut:
    return ContextOut(
        messages=built.messages,
        sections=[SectionOut(name=s.name, messages=list(s.messages), tokens=s.tokens) for s in built.sections],
        tokens=built.tokens,
        injected=list(built.injected),
        trimmed=list(built.trimmed),
        over_budget=built.over_budget,
    )


@router.post("/sessions", status_code=201, response_model=SessionOut, responses=CONFLICT, summary="Create a session")
def create_session(rv: Engine, agent: WriteAgent, body: SessionIn) -> SessionOut:
    """A new session (a random id unless ``session_id``); 409 when the id is taken."""
    return _session_out(rv.conversation.create(body.session_id, name=body.name, agent_id=agent))


@router.get("/sessions", response_model=list[SessionOut], summary="List sessions")
def list_sessions(rv: Engine, agent: ReadAgent) -> list[SessionOut]:
    """The agent's sessions, most recently active first (deleted ones hidden)."""
    return [_session_out(s) for s in rv.conversation.list(agent)]


@router.get("/sessions/{session_id}", response_model=SessionInfoOut, responses=NOT_FOUND, summary="Session info")
def session_info(rv: Engine, agent: ReadAgent, session_id: SessionId) -> SessionInfoOut:
    """The session with its turn counts, expiry and compaction state."""
    return _info_out(rv.conversation.info(session_id, agent_id=agent))


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
        session=_session_out(session),
        expired=rv.conversation.expired(session_id, agent_id=agent),
        turns=[_turn_out(t) for t in turns],
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
    return _turn_out(turn)


@router.post("/sessions/{session_id}/compact", response_model=CompactionOut, responses=NOT_FOUND, summary="Compact")
def compact_session(
    rv: Engine,
    agent: WriteAgent,
    session_id: SessionId,
    force: Annotated[bool, Query(description="compact even below the threshold")] = False,
) -> CompactionOut:
    """Summarise the older turns, keeping the most recent verbatim: with the LLM when one is configured,
    else extractively (``fallback`` when the LLM failed)."""
    return _compaction_out(rv.conversation.compact(session_id, force=force, agent_id=agent))


@router.get("/compaction-status", response_model=list[CompactionStatusOut], summary="Compaction status")
def compaction_status(rv: Engine, agent: ReadAgent) -> list[CompactionStatusOut]:
    """Per session: live messages, how many the summary does not cover, and whether it needs compaction."""
    return [_status_out(s) for s in rv.conversation.compaction_status(agent)]


@router.post(
    "/sessions/{session_id}/context", response_model=ContextOut, responses=NOT_FOUND, summary="Build the context"
)
def build_context(rv: Engine, agent: ReadAgent, session_id: SessionId, body: ContextIn) -> ContextOut:
    """The messages for the agent's next LLM call: recalled entries (each once per session), the
    working-memory inventory, patrol and subagent listings, out-of-window recall, the replayed turns and the
    incoming message, trimmed to ``budget_tokens`` least relevant first. Reads only."""
    built = rv.context.build(
        session_id,
        body.message,
        agent_id=agent,
        user_id=body.user_id,
        kind=body.kind,
        namespace=body.namespace,
        budget_tokens=body.budget_tokens,
    )
    return _context_out(built)
