"""API key values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as stored: never the secret, only its SHA-256 (``key_hash``).

    ``agent_id`` None is an admin key (every agent); ``scopes`` are names from ``reverie.keys.service.SCOPES``.
    ``revoked_at`` set: refused from then on (a revoked key is kept, for the audit trail).
    """

    key_id: str
    name: str
    agent_id: str | None
    scopes: tuple[str, ...]
    key_hash: str
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
