"""API key values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key as stored: never the secret, only its SHA-256 (``key_hash``).

    ``agent_id`` None is an admin key (every agent); ``scopes`` are names from ``reverie.keys.service.SCOPES``.
    ``revoked_at`` set: refused from then on (a revoked key is kept, for the audit trail).

    ``users``: the users a request with this key may name (``user_id``): user ids, or ``("*",)`` for any user
    (``ANY_USER``; an admin key's, always), or ``()`` for none (a new agent key's default). None: a key
    created before keys were bound to users (the migration ``0021_key_users`` / ``0010_key_users`` leaves the
    column NULL): it may still name any user, as every key could then, and ``reverie keys list`` warns about
    it until it is bound (``reverie keys bind``).
    """

    key_id: str
    name: str
    agent_id: str | None
    scopes: tuple[str, ...]
    key_hash: str
    created_at: datetime
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    users: tuple[str, ...] | None = ()


ANY_USER = "*"  # ApiKey.users: any user

# The capability scopes, the one list of them (seed 004): a key carries some, a tool and a route need one.
# Here, with the values, so the command line can name them without importing the key service.
MEMORY_READ = "memory_read"
MEMORY_WRITE = "memory_write"
ADMIN = "admin"
SCOPES = (MEMORY_READ, MEMORY_WRITE, ADMIN)
AGENT_SCOPES = (MEMORY_READ, MEMORY_WRITE)  # what a key bound to one agent may carry (and gets by default)
