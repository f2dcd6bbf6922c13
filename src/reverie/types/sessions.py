"""Conversation values: sessions, turns and their counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One conversation session of one agent (seed 000 conversation memory, seed 004 sessions).

    ``started_at`` is when the live conversation began: a fresh start (the first turn, or the first after the
    session expired) moves it. ``summary`` and ``compacted_through`` are session compaction's: the summary
    covers the live turns with ``index <= compacted_through``. ``deleted_at`` set: hidden, awaiting the purge.
    """

    agent_id: str
    session_id: str
    created_at: datetime
    last_active_at: datetime
    started_at: datetime
    name: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # JSON-able
    summary: str | None = None
    compacted_through: int = 0
    deleted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn of a live conversation. ``index`` is its 1-based position in the live conversation; the
    indexes of a session's stored turns are always contiguous (appends take the next one, and only the
    oldest are ever dropped). ``archived``: evicted past the retained turns, kept for out-of-window recall."""

    agent_id: str
    session_id: str
    index: int
    role: str  # user | assistant | system | tool
    content: str
    at: datetime
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # JSON-able
    archived: bool = False


@dataclass(frozen=True, slots=True)
class TurnCounts:
    """How many turns a session stores, and the index range they span (0 and 0 when none)."""

    retained: int = 0
    archived: int = 0
    first_index: int = 0
    last_index: int = 0
