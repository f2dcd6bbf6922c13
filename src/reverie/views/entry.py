"""The views of a long-term entry: which fields of a ``MemoryEntry`` the faces show, and how each is read off
the value. One place, so the API, the tools and anything new show an entry alike.

- ``entry_view``: the full view, every field a caller may read: identity and text, the scope flat
  (``agent_id``, ``user_id``, ``session_id``), times, counters, salience, state (``archived``,
  ``superseded_by``, ``valid_to``), provenance (``source``) and ``metadata``. Values stay Python's (datetimes,
  not text). The HTTP API's ``EntryOut`` is validated from it and declares every field but ``valid_to``
  (its ``metadata`` carries it as ``validTo``).
- ``tool_entry_view``: the subset the agent tools return (``TOOL_ENTRY_FIELDS``, in that order): what a model
  may need, none of the engine's bookkeeping (the scope is the caller's own; retention, confidence, expiry and
  metadata stay out). Plain JSON: times by ``plain.iso_z``.
- ``contradiction_view``: what a save that contradicted an entry reports, for the tools and the API alike.

The CLI's ``--json`` prints any value through ``plain.to_jsonable`` with ``FACE_VIEWS``: an entry anywhere in
it (a hit, a save's result, a list) shows as ``entry_view``, the same fields as the API's.

Invariants: the tool view's keys are a subset of the full view's, with the same values (made plain); the
engine's bookkeeping fields (``embedding_model``, ``decayed_through``, ``read_*``, ``*_pending``) are in no view.
"""

from __future__ import annotations

from typing import Any

from reverie.types import Contradiction, MemoryEntry
from reverie.views.plain import to_jsonable

TOOL_ENTRY_FIELDS = (
    "id",
    "content",
    "category",
    "tags",
    "tier",
    "importance",
    "pinned",
    "source",
    "created_at",
    "last_seen_at",
    "updated_at",
    "reinforcement_count",
    "archived",
    "superseded_by",
    "valid_to",
)


def entry_view(entry: MemoryEntry) -> dict[str, Any]:
    """The full view of ``entry`` (Python values; ``to_jsonable`` makes it JSON)."""
    scope = entry.scope
    return {
        "id": entry.id,
        "content": entry.content,
        "category": entry.category,
        "tags": list(entry.tags),
        "tier": entry.tier.value,
        "agent_id": scope.agent_id,
        "user_id": scope.user_id,
        "session_id": scope.session_id,
        "created_at": entry.created_at,
        "last_seen_at": entry.last_seen_at,
        "updated_at": entry.updated_at,
        "reinforcement_count": entry.reinforcement_count,
        "importance": entry.importance,
        "retention": entry.retention,
        "confidence": entry.confidence,
        "pinned": entry.pinned,
        "expires_at": entry.expires_at,
        "archived": entry.archived,
        "archived_at": entry.archived_at,
        "superseded_by": entry.superseded_by,
        "source": entry.source,
        "valid_to": entry.valid_to,
        "metadata": entry.metadata,
    }


def tool_entry_view(entry: MemoryEntry) -> dict[str, Any]:
    """The tools' view of ``entry``: the full view's ``TOOL_ENTRY_FIELDS``, as plain JSON."""
    full = entry_view(entry)
    return {name: to_jsonable(full[name]) for name in TOOL_ENTRY_FIELDS}


def contradiction_view(found: Contradiction) -> dict[str, Any]:
    """What a save that contradicted an entry reports: that entry's id and text, how the stances differ,
    whether it is now superseded, and the sentence the caller is told."""
    return {
        "id": found.entry_id,
        "content": found.content,
        "kind": found.kind,
        "earlier_words": list(found.earlier_words),
        "new_words": list(found.new_words),
        "superseded": found.superseded,
        "message": found.message(),
    }


#: The views the faces show a value through wherever it appears (``plain.to_jsonable(value, FACE_VIEWS)``).
FACE_VIEWS: dict[type, Any] = {MemoryEntry: entry_view}


def face_json(value: Any) -> Any:
    """``value`` as plain JSON for a face: entries (anywhere inside it) as ``entry_view``, the rest field by field."""
    return to_jsonable(value, FACE_VIEWS)
