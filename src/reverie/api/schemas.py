"""Pydantic models the routes share: entries, scopes, and the conversions from Reverie's values.

Request models forbid unknown fields (a typo is a 422, never silently ignored), take JSON types strictly
and refuse NaN and infinities. They state types only; the services validate values, so the rules live in one place and a
rejected value is a 422 naming its field either way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, Strict

from reverie.core.validate import CATEGORY_PATTERN as CATEGORY_RE
from reverie.core.validate import MAX_CATEGORY_CHARS
from reverie.types import MemoryEntry, Scope


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# A JSON body's scalars are taken as sent: 0 is not false, "0.5" is not a number, 5.0 is not a whole number.
Flag = Annotated[bool, Strict()]
Number = Annotated[float, Strict()]
Whole = Annotated[int, Strict()]


class EntryOut(BaseModel):
    """A long-term entry (see docs/concepts.md for every field). ``archived``: deleted, restorable."""

    id: str
    content: str
    category: str
    tags: list[str]
    tier: str
    agent_id: str
    user_id: str | None
    session_id: str | None
    created_at: datetime
    last_seen_at: datetime
    updated_at: datetime | None
    reinforcement_count: int
    importance: float
    retention: float
    confidence: float
    pinned: bool
    expires_at: datetime | None
    archived: bool
    archived_at: datetime | None
    superseded_by: str | None
    source: str | None
    metadata: dict[str, Any]


def entry_out(entry: MemoryEntry) -> EntryOut:
    return EntryOut(
        id=entry.id,
        content=entry.content,
        category=entry.category,
        tags=list(entry.tags),
        tier=entry.tier.value,
        agent_id=entry.scope.agent_id,
        user_id=entry.scope.user_id,
        session_id=entry.scope.session_id,
        created_at=entry.created_at,
        last_seen_at=entry.last_seen_at,
        updated_at=entry.updated_at,
        reinforcement_count=entry.reinforcement_count,
        importance=entry.importance,
        retention=entry.retention,
        confidence=entry.confidence,
        pinned=entry.pinned,
        expires_at=entry.expires_at,
        archived=entry.archived,
        archived_at=entry.archived_at,
        superseded_by=entry.superseded_by,
        source=entry.source,
        metadata=entry.metadata,
    )


UserQuery = Annotated[
    str | None, Query(description="narrow the scope to this user (entries of other users stay invisible)")
]
SessionQuery = Annotated[str | None, Query(description="narrow the scope to this session")]


def scope_of(agent_id: str, user_id: str | None, session_id: str | None) -> Scope:
    """The scope a request works in: always the path's agent (authorization checked it)."""
    return Scope(agent_id=agent_id, user_id=user_id, session_id=session_id)


# The services' own rules, stated in the schema too so clients (and schemathesis) can see them.
CATEGORY_PATTERN = CATEGORY_RE.pattern
SESSION_ID_PATTERN = r"^[A-Za-z0-9._-]{1,128}$"


def category_field(description: str = "a path such as 'user-preferences/timezone'") -> Any:
    return Field(None, pattern=CATEGORY_PATTERN, max_length=MAX_CATEGORY_CHARS, description=description)


class Deleted(BaseModel):
    deleted: bool
