"""Key-value memory values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class KvItem:
    """One key of an agent's key-value memory. ``value`` is any JSON value. ``version`` starts at 1 and grows
    by one at every write (a compare-and-set handle); ``deleted_at`` set: hidden, awaiting the purge."""

    agent_id: str
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    version: int = 1
    deleted_at: datetime | None = None
