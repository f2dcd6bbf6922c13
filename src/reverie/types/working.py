"""Working-memory values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class WorkingEntry:
    """One working-memory entry (seed 000): scratch text under a full path key, live until ``expires_at``.

    ``key`` is the full path (``session/abc123/emails_inbox``); its first two segments are its namespace.
    Working memory is scratch with a TTL, so expiry is its deletion: nothing here is versioned or archived.
    """

    agent_id: str
    key: str
    value: str
    stored_at: datetime
    expires_at: datetime
    category: str | None = None
    tags: tuple[str, ...] = ()
