"""The values every agent tool shares: who is calling (``ToolContext``), what a tool is (``ToolSpec``), what a
call answers (``ToolResult``), and the plain-JSON views of entries the tools return (``entry_data``: the tool
view of ``reverie.views.entry``, a documented subset of an entry's full view).

Invariants:
- A ``ToolResult`` is all a caller gets: ``text`` for the model, ``data`` for programs (plain JSON: strings,
  numbers, booleans, None, lists and string-keyed objects only).
- ``ToolError`` is how a handler refuses a call; the registry turns it (and every ``ReverieError``) into an
  error result. A handler raises before it writes, or inside one store transaction, so a refused call
  leaves the store as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reverie.core.temporal import seen_phrase
from reverie.core.text import preview
from reverie.types import Contradiction, MemoryEntry, Scope
from reverie.views.entry import contradiction_view, tool_entry_view

DEFAULT_AGENT = "default"
ENTRY_CHARS = 1000  # an entry's text in a result line; ``data`` always carries it whole


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who calls a tool. Every tool reads inside ``scope`` (agent, user, session): ids of another agent,
    user or session behave exactly like unknown ids. save_memory writes in ``durable_scope`` (agent, user):
    long-term memory is the knowledge an agent keeps across sessions, so a session id given for working
    memory and the stash must not make every saved fact private to that session.

    ``namespace`` is the caller's own working-memory namespace (``session/{id}``, ``patrol/{task}``,
    ``subagent/{task}``); None means ``session/{session_id}`` (``session/default`` without a session).
    ``background``: a subagent or worker, whose working-memory writes live at least the background floor.
    """

    agent_id: str = DEFAULT_AGENT
    user_id: str | None = None
    session_id: str | None = None
    namespace: str | None = None
    background: bool = False

    @property
    def scope(self) -> Scope:
        return Scope(self.agent_id, self.user_id, self.session_id)

    @property
    def durable_scope(self) -> Scope:
        return Scope(self.agent_id, self.user_id)

    @property
    def working_namespace(self) -> str:
        if self.namespace is not None:
            return self.namespace
        return f"session/{self.session_id or 'default'}"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as a model sees it: its name, its description (the first line is its headline), the JSON
    Schema (Draft 2020-12) of its arguments, and the capability ``scope`` a caller needs to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    scope: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call answered: ``text`` for the model, ``data`` (plain JSON) for programs. ``is_error``: the
    call was refused or failed and wrote nothing; ``data["error"]`` then holds ``kind`` and ``message``."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False


class ToolError(Exception):
    """A handler's refusal: ``kind`` is a short machine-readable reason (``validation``, ``not_found``,
    ``needs_llm``, ``llm``, …)."""

    def __init__(self, message: str, *, kind: str = "validation", field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field


def error_result(message: str, *, kind: str, field: str | None = None) -> ToolResult:
    error: dict[str, Any] = {"kind": kind, "message": message}
    if field is not None:
        error["field"] = field
    return ToolResult(text=f"Error: {message}", data={"error": error}, is_error=True)


def entry_data(entry: MemoryEntry) -> dict[str, Any]:
    """An entry as plain JSON: what a caller may need, none of the engine's bookkeeping (the tool view,
    ``reverie.views.entry.TOOL_ENTRY_FIELDS``)."""
    return tool_entry_view(entry)


def contradiction_data(found: Contradiction) -> dict[str, Any]:
    """What a save that contradicted an entry reports (``reverie.views.entry.contradiction_view``)."""
    return contradiction_view(found)


def entry_line(entry: MemoryEntry, now: datetime, *, label: str | None = None) -> str:
    """``- [id] (category) text — seen 4× from 2024-06 to today, source=user`` as recall shows an entry,
    plus ``archived`` / ``superseded by X`` and an optional label (``pinned``, ``superseded``)."""
    extras = [seen_phrase(entry.created_at, entry.last_seen_at, entry.reinforcement_count, now)]
    if entry.source:
        extras.append(f"source={entry.source}")
    if entry.superseded_by is not None:
        extras.append(f"superseded by {entry.superseded_by}")
    elif entry.archived:
        extras.append("archived")
    head = f"- [{entry.id}]" + (f" {label}" if label else "")
    return f"{head} ({entry.category}) {preview(entry.content, ENTRY_CHARS)} — {', '.join(extras)}"
