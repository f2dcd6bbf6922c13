"""Pydantic models the routes share: entries, scopes, and how an answer is built from Reverie's values.

Request models forbid unknown fields (a typo is a 422, never silently ignored), take JSON types strictly
and refuse NaN and infinities. They state types only; the services validate values, so the rules live in one place and a
rejected value is a 422 naming its field either way.

Answer models (``*Out``) are built from the values the services return, never by copying fields one by one in
a route: a ``ValueOut`` reads each field off the value's attribute of that name (pydantic's ``from_attributes``;
a ``validation_alias`` names the attribute where the answer's field is named otherwise), and nested answers read
nested values the same way. A value with its own plain view is read through it (``EntryOut``: the entry view of
``reverie.views.entry``). An answer's JSON field names are its model's field names: aliases only say where a
value is read from.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from reverie.core.validate import CATEGORY_PATTERN as CATEGORY_RE
from reverie.core.validate import MAX_CATEGORY_CHARS
from reverie.types import MemoryEntry, Scope
from reverie.views.entry import entry_view


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# A JSON body's scalars are taken as sent: 0 is not false, "0.5" is not a number, 5.0 is not a whole number.
Flag = Annotated[bool, Strict()]
Number = Annotated[float, Strict()]
Whole = Annotated[int, Strict()]


class ValueOut(BaseModel):
    # Built from a Reverie value: every field is read off the value's attribute of its name (or alias).
    model_config = ConfigDict(from_attributes=True)


def fields_of(value: Any, **derived: Any) -> dict[str, Any]:
    """A dataclass value's fields by name, shallow (nested values stay values, for their own answer models to
    read), with ``derived``: what an answer shows that the value holds in no field of that name."""
    return {**{f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, **derived}


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

    @model_validator(mode="before")
    @classmethod
    def _entry_view(cls, value: Any) -> Any:
        # An entry is shown through its one full view; the view's valid_to stays out (metadata has validTo).
        return entry_view(value) if isinstance(value, MemoryEntry) else value


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
