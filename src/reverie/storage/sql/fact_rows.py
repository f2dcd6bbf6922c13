"""How the fact repository reads rows of ``facts f``: the columns of a whole entry (``COLUMNS``, with the
vector's model through ``VECTOR_JOIN``) and of a recall candidate (``CANDIDATE_COLUMNS``, no join), and the
``Shape`` that pairs columns with the function turning a row into a value. A read written once over a
``Shape`` (``SqlFacts._by_ids``, ``_in_period``, the backends' ``_neighbours``) returns whole entries or
candidate rows from the same statement, so the two can never filter differently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from reverie.storage.base import FactCandidate
from reverie.storage.sql.dialect import Dialect
from reverie.types import MemoryEntry, Scope, Tier

COLUMNS = (
    "f.id, f.agent_id, f.user_id, f.session_id, f.content, f.category, f.tags, f.tier, f.created_at, "
    "f.updated_at, f.last_seen_at, f.reinforcement_count, f.importance, f.retention, f.confidence, "
    "f.pinned, f.expires_at, f.archived_at, f.superseded_by, f.metadata, v.model, f.decayed_through, "
    "f.read_strength, f.read_at, f.fold_pending, f.expand_pending"
)
VECTOR_JOIN = " LEFT JOIN fact_vectors v ON v.fact_id = f.id"  # for COLUMNS' v.model
FROM = "facts f" + VECTOR_JOIN
# A FactCandidate's columns: no join (the vector rows are wide; reading them cost half of a full read).
CANDIDATE_COLUMNS = "f.id, f.created_at, f.last_seen_at, f.metadata"


def entry_from_row(d: Dialect, row: Any) -> MemoryEntry:
    """A ``MemoryEntry`` from a row of ``COLUMNS`` (extra columns after them are ignored)."""
    return MemoryEntry(
        id=row[0],
        scope=Scope(agent_id=row[1], user_id=row[2], session_id=row[3]),
        content=row[4],
        category=row[5],
        tags=tuple(d.json_out(row[6])),
        tier=Tier(row[7]),
        created_at=d.ts_out(row[8]),
        updated_at=d.ts_out_or_none(row[9]),
        last_seen_at=d.ts_out(row[10]),
        reinforcement_count=int(row[11]),
        importance=float(row[12]),
        retention=float(row[13]),
        confidence=float(row[14]),
        pinned=bool(row[15]),
        expires_at=d.ts_out_or_none(row[16]),
        archived_at=d.ts_out_or_none(row[17]),
        superseded_by=row[18],
        metadata=d.json_out(row[19]),
        embedding_model=row[20],
        decayed_through=d.ts_out_or_none(row[21]),
        read_strength=float(row[22]),
        read_at=d.ts_out_or_none(row[23]),
        fold_pending=bool(row[24]),
        expand_pending=bool(row[25]),
    )


def candidate_from_row(d: Dialect, row: Any) -> FactCandidate:
    """A ``FactCandidate`` from a row of ``CANDIDATE_COLUMNS``."""
    metadata = row[3]
    return FactCandidate(
        id=row[0],
        created_at=d.ts_out(row[1]),
        last_seen_at=d.ts_out(row[2]),
        metadata={} if metadata == "{}" else d.json_out(metadata),  # most entries have none: skip the parse
    )


class _Dated(Protocol):
    """What the shared reads use of a row's value: its id and its creation time (``in_period``'s order)."""

    @property
    def id(self) -> str: ...

    @property
    def created_at(self) -> datetime: ...


Row = TypeVar("Row", bound=_Dated)  # MemoryEntry or FactCandidate


@dataclass(frozen=True, slots=True)
class Shape(Generic[Row]):
    """What a read of entries selects: its columns over ``facts f``, the joins they need after ``facts f``,
    and how a row becomes a value."""

    columns: str
    joins: str
    read: Callable[[Dialect, Any], Row]


ENTRY = Shape(COLUMNS, VECTOR_JOIN, entry_from_row)
CANDIDATE = Shape(CANDIDATE_COLUMNS, "", candidate_from_row)
