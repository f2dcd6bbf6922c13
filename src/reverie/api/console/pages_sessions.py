"""The console's sessions pages and the context preview (``pages_working`` includes this router).

- ``GET /agents/{agent_id}/sessions``: the agent's sessions a page at a time (newest first, by creation), each
  with its live turn count, last activity, expiry and whether it has a compaction summary.
- ``GET /agents/{agent_id}/sessions/{session_id}``: the session, its compaction summary, and its live turns a
  window at a time (``before``: the turns before that index; default the latest), in order.
- ``GET /agents/{agent_id}/context``: the context preview's form (``session_id`` and ``message`` prefill it;
  a GET never builds anything). ``POST /agents/{agent_id}/context`` (form fields ``session_id``, ``message``,
  ``budget_tokens``) builds it with ``rv.context.build`` exactly as the API's ``POST …/sessions/{id}/context``
  does and answers the sections, each with its token estimate and text.

Invariants:
- The GETs read only. The preview is a POST (the CSRF guard covers it) because building a context records
  what it gives, as a real turn does: the long-term entries it injects join the session's delta filter (the
  session's next turn will not be given them again), and their reads count toward aging. The library offers
  no dry run; the page says so above the button.
- Turns are read through ``rv.conversation`` (an expired session shows none, as it replays none), a window of
  ``TURN_PAGE`` at a time; sessions through its keyset ``page``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse

from reverie.api.auth import read_access
from reverie.api.console.render import fragment
from reverie.api.filters import CursorQuery
from reverie.api.schemas import SESSION_ID_PATTERN
from reverie.context.builder import BuiltContext
from reverie.conversation.service import MAX_WINDOW, SessionInfo
from reverie.errors import ValidationError
from reverie.types import TurnRecord

router = APIRouter()
SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN)]
SESSION_PAGE = 25
TURN_PAGE = 50
PICKER_SESSIONS = 100  # the context form's choice of sessions: the most recently created
SECTION_LABELS = {
    "recall": "Recalled from long-term memory",
    "proactive": "Proactive memory",
    "working": "Working memory (own namespace: keys, never values)",
    "patrol": "Patrol findings",
    "subagents": "Subagent indexes",
    "out_of_window": "Out-of-window recall (and the compaction summary)",
    "turns": "Replayed turns",
    "message": "The incoming message",
}


@dataclass(frozen=True, slots=True)
class TurnWindow:
    """A window of a session's live turns, in order, and the ``before`` values of its neighbours."""

    turns: tuple[TurnRecord, ...]
    earlier: int | None  # ``before`` of the window before this one (None: this one starts the conversation)
    later: int | None  # ``before`` of the window after (None: this one ends it; 0: the latest, no parameter)
    first_index: int
    last_index: int


def _window(rv: Any, agent_id: str, session_id: str, info: SessionInfo, before: int | None) -> TurnWindow:
    """The ``TURN_PAGE`` live turns before index ``before`` (None: the latest). Indexes are contiguous, so the
    newest index and the live count place every window without reading the turns after it."""
    if info.live == 0:
        return TurnWindow((), None, None, 0, 0)
    newest = rv.conversation.window(session_id, 1, agent_id=agent_id)
    if not newest:  # expired between the two reads
        return TurnWindow((), None, None, 0, 0)
    last = newest[-1].index
    first = last - info.live + 1
    upto = last if before is None or before > last else max(before - 1, first - 1)
    need = min(last - upto + TURN_PAGE, MAX_WINDOW)
    turns = tuple(t for t in rv.conversation.window(session_id, need, agent_id=agent_id) if t.index <= upto)
    turns = turns[-TURN_PAGE:]
    if not turns:  # ``before`` at or below the first live turn: offer the latest
        return TurnWindow((), None, 0, first, last)
    earlier = turns[0].index if turns[0].index > first else None
    later_upto = upto + TURN_PAGE
    later = None if upto >= last else (0 if later_upto >= last else later_upto + 1)
    return TurnWindow(turns, earlier, later, first, last)


@router.get("/agents/{agent_id}/sessions", response_class=HTMLResponse)
def sessions(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    cursor: CursorQuery = None,
    limit: Annotated[int, Query(ge=1, le=200)] = SESSION_PAGE,
) -> HTMLResponse:
    """The agent's sessions, a page at a time, with their turn counts and last activity."""
    rv = request.app.state.rv
    page = rv.conversation.page(agent_id, cursor=cursor, limit=limit)
    infos = [rv.conversation.info(s.session_id, agent_id=agent_id) for s in page.items]
    return fragment(
        request,
        "sessions/list.html",
        agent_id=agent_id,
        infos=infos,
        next_cursor=page.next_cursor,
        cursor=cursor,
        limit=limit,
        default_limit=SESSION_PAGE,
    )


@router.get("/agents/{agent_id}/sessions/{session_id}", response_class=HTMLResponse)
def session(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    session_id: SessionId,
    before: Annotated[int | None, Query(ge=1, description="show the turns before this index")] = None,
) -> HTMLResponse:
    """One session: its state, its compaction summary, and a window of its live turns in order."""
    rv = request.app.state.rv
    info = rv.conversation.info(session_id, agent_id=agent_id)
    return fragment(
        request,
        "sessions/session.html",
        agent_id=agent_id,
        info=info,
        s=info.session,
        window=_window(rv, agent_id, session_id, info, before),
        now=rv.clock.now(),
    )


def _picker(rv: Any, agent_id: str, chosen: str | None) -> list[str]:
    """The session ids the context form offers: the most recently created, and ``chosen`` when given."""
    ids = [s.session_id for s in rv.conversation.page(agent_id, limit=PICKER_SESSIONS).items]
    if chosen and chosen not in ids:
        ids.insert(0, rv.conversation.get(chosen, agent_id=agent_id).session_id)
    return ids


@router.get("/agents/{agent_id}/context", response_class=HTMLResponse)
def context_form(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    session_id: Annotated[str | None, Query(pattern=SESSION_ID_PATTERN)] = None,
    message: Annotated[str, Query(max_length=4000)] = "",
) -> HTMLResponse:
    """The preview's form (prefilled from the query); the preview itself is ``context/preview``."""
    rv = request.app.state.rv
    return fragment(
        request,
        "sessions/context.html",
        agent_id=agent_id,
        session_ids=_picker(rv, agent_id, session_id),
        session_id=session_id,
        message=message,
    )


def _budget(value: str) -> int | None:
    if not value.strip():
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise ValidationError("budget_tokens must be a positive whole number", field="budget_tokens")
    return int(value)


@dataclass(frozen=True, slots=True)
class SectionView:
    name: str
    label: str
    tokens: int
    messages: tuple[dict[str, Any], ...]


@router.get("/agents/{agent_id}/context/preview", response_class=HTMLResponse)
def context_preview(
    request: Request,
    agent_id: Annotated[str, Depends(read_access)],
    session_id: Annotated[str, Query(pattern=SESSION_ID_PATTERN)],
    message: Annotated[str, Query(max_length=4000)] = "",
    budget_tokens: Annotated[str, Query(max_length=12)] = "",
) -> HTMLResponse:
    """What the context builder would give the agent for ``message`` in ``session_id``, built as a preview
    (``ContextBuilder.build(preview=True)``: nothing is recorded or counted), with each section's tokens."""
    rv = request.app.state.rv
    built: BuiltContext = rv.context.build(
        session_id, message, agent_id=agent_id, budget_tokens=_budget(budget_tokens), preview=True
    )
    views = [SectionView(s.name, SECTION_LABELS.get(s.name, s.name), s.tokens, s.messages) for s in built.sections]
    return fragment(
        request,
        "sessions/_preview.html",
        agent_id=agent_id,
        session_id=session_id,
        built=built,
        sections=views,
    )
