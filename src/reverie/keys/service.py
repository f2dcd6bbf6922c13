"""API keys and scopes: who may call the HTTP API and the MCP server, for which agent, to do what.

A key's secret is ``rv_<key_id>_<token>`` with a 256-bit random token. It is shown once, by ``create``;
the store keeps only its SHA-256. A token this long cannot be guessed, so a fast hash is enough, and a
stolen store yields no usable key.

Invariants:
- ``authenticate`` answers None for anything but the secret of a live key: unknown, malformed and revoked
  secrets alike, without saying which. The hash is compared in constant time.
- An admin key carries the ``admin`` scope and no agent; every other key is bound to exactly one agent.
  ``admin`` implies every scope for every agent (``allows``).
- Keys are never deleted, only revoked; a revoked key is refused from the moment it is revoked.
- A key names only the users it is bound to (``ApiKey.users``; ``allows_user``): a new agent key none unless
  given, ``*`` any user, an admin key every user. A key from before the binding (``users`` None) names any user,
  as every key could then. User memory is shared by the user's agents, so naming a user is the deployment's
  grant, never the caller's word.
- An agent key changes (archives) only the user memories its own agent wrote (``may_change``); an admin key
  any. Library calls are in-process and trusted: nothing here is asked on their way.
- ``last_used_at`` is best-effort and written at most once a minute per key, so authenticating is not a
  write per request; a store that refuses that write does not refuse the caller.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from reverie.clock import Clock
from reverie.core import filters, validate
from reverie.core.proactive import writer_of
from reverie.errors import NotFound, StorageError, ValidationError
from reverie.storage.base import Store
from reverie.types import ApiKey, MemoryEntry, Page, is_user_agent
from reverie.types.keys import ADMIN as ADMIN
from reverie.types.keys import AGENT_SCOPES as AGENT_SCOPES
from reverie.types.keys import ANY_USER
from reverie.types.keys import MEMORY_READ as MEMORY_READ
from reverie.types.keys import MEMORY_WRITE as MEMORY_WRITE
from reverie.types.keys import SCOPES as SCOPES
from reverie.views.plain import iso_z, iso_z_or_none

log = logging.getLogger("reverie.keys.service")

# The capability scopes (MEMORY_READ, MEMORY_WRITE, ADMIN, SCOPES, AGENT_SCOPES) are values: reverie.types.keys.
MAX_USERS = 1000  # user ids one key may be bound to; more is a deployment for ``*`` or an admin key
SECRET_PREFIX = "rv_"
TOUCH_INTERVAL = timedelta(minutes=1)
_TOKEN_BYTES = 32
# rv_ + 12 hex digits + _ + the url-safe base64 of 32 bytes (43 characters); anything else is not a secret.
_SECRET = re.compile(r"^rv_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


def hash_secret(secret: str) -> str:
    """The SHA-256 (hex) the store keeps in place of ``secret``."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def public_view(key: ApiKey) -> dict[str, Any]:
    """A key as interfaces show it: everything but its hash (JSON-able, ISO 8601 times)."""
    return {
        "key_id": key.key_id,
        "name": key.name,
        "agent_id": key.agent_id,
        "scopes": list(key.scopes),
        "admin": ADMIN in key.scopes,
        "users": None if key.users is None else list(key.users),
        "created_at": iso_z(key.created_at),
        "revoked_at": iso_z_or_none(key.revoked_at),
        "last_used_at": iso_z_or_none(key.last_used_at),
    }


def _scopes(value: object, *, admin: bool) -> tuple[str, ...]:
    """The requested scopes, checked and put in ``SCOPES`` order, each once."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError("scopes must be a list of scope names", field="scopes")
    unknown = [s for s in value if s not in SCOPES]
    if unknown:
        raise ValidationError(f"unknown scope {unknown[0]!r}; use {', '.join(SCOPES)}", field="scopes")
    chosen = tuple(s for s in SCOPES if s in value)
    if admin and ADMIN not in chosen:
        raise ValidationError("a key for every agent (agent_id None) must carry the admin scope", field="scopes")
    if not admin and ADMIN in chosen:
        raise ValidationError("an admin key is for every agent: give it no agent_id", field="agent_id")
    if not chosen:
        raise ValidationError("a key needs at least one scope", field="scopes")
    return chosen


def _users(value: object, *, admin: bool) -> tuple[str, ...]:
    """The users a key may name, checked: ``("*",)`` for any user (an admin key's, always), else each id once,
    in the order given (``()``: none)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ValidationError("users must be a list of user ids, or ['*'] for any user", field="users")
    if admin:
        if any(u != ANY_USER for u in value):
            raise ValidationError("an admin key reaches every user: give it no users", field="users")
        return (ANY_USER,)
    if ANY_USER in value:
        if any(u != ANY_USER for u in value):
            raise ValidationError("'*' (any user) stands alone: give either '*' or user ids", field="users")
        return (ANY_USER,)
    if len(value) > MAX_USERS:
        raise ValidationError(f"a key may be bound to at most {MAX_USERS} users; use '*' for any", field="users")
    chosen: list[str] = []
    for user in value:
        clean = validate.identifier(user, name="users")
        if clean not in chosen:
            chosen.append(clean)
    return tuple(chosen)


def binding(key: ApiKey) -> str:
    """A key's binding in words: ``every user`` (admin), ``any user``, ``any user (from before user
    binding)``, ``no user`` or ``users u1,u2``."""
    if ADMIN in key.scopes:
        return "every user"
    if key.users is None:
        return "any user (from before user binding)"
    if key.users == (ANY_USER,):
        return "any user"
    return f"users {','.join(key.users)}" if key.users else "no user"


class ApiKeys:
    """Create, authenticate, list and revoke API keys (``rv.keys``)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def create(
        self, name: str, *, agent_id: str | None, scopes: Sequence[str], users: Sequence[str] = ()
    ) -> tuple[ApiKey, str]:
        """A new key and its secret. The secret is returned only here: store it now, it cannot be read back.

        ``agent_id`` None makes an admin key, which must carry ``admin``; a key with an agent must not.
        ``users``: the users requests with the key may name (``user_id``): user ids, ``["*"]`` for any user, or
        none (the default: the key works in its agent's own scopes only). An admin key reaches every user.
        Raises ``ValidationError`` naming the bad argument; nothing is written then.
        """
        clean_name = validate.identifier(name, name="name")
        agent = None if agent_id is None else validate.agent_id(agent_id)  # a reserved id (@user/<id>) is no agent
        chosen = _scopes(scopes, admin=agent is None)
        bound = _users(users, admin=agent is None)
        key_id = secrets.token_hex(6)
        secret = f"{SECRET_PREFIX}{key_id}_{secrets.token_urlsafe(_TOKEN_BYTES)}"
        key = ApiKey(
            key_id=key_id,
            name=clean_name,
            agent_id=agent,
            scopes=chosen,
            key_hash=hash_secret(secret),
            created_at=self._clock.now(),
            users=bound,
        )
        self._store.keys.add(key)
        return key, secret

    def authenticate(self, secret: str) -> ApiKey | None:
        """The live key ``secret`` belongs to, or None (unknown, malformed or revoked: no difference)."""
        if not isinstance(secret, str):
            return None
        found = _SECRET.match(secret)
        if found is None:
            return None
        key = self._store.keys.get(found.group(1))
        if key is None or key.revoked_at is not None:
            return None
        if not hmac.compare_digest(hash_secret(secret), key.key_hash):
            return None
        return self._touched(key)

    def _touched(self, key: ApiKey) -> ApiKey:
        now = self._clock.now()
        if key.last_used_at is not None and now - key.last_used_at < TOUCH_INTERVAL:
            return key
        try:
            self._store.keys.touch(key.key_id, now)
        except StorageError as exc:  # bookkeeping: a busy store must not lock the caller out
            log.warning("could not record the use of key %s: %s", key.key_id, exc)
            return key
        return replace(key, last_used_at=now)

    def get(self, key_id: str) -> ApiKey:
        """The key, revoked or not. Raises ``NotFound``."""
        key = self._store.keys.get(validate.identifier(key_id, name="key_id"))
        if key is None:
            raise NotFound(f"no API key {key_id!r}")
        return key

    def list(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first."""
        return self._store.keys.list()

    def page(self, *, cursor: str | None = None, limit: int | None = None) -> Page[ApiKey]:
        """``list`` a page at a time: at most ``limit`` (1 to 1000, default 100) keys, oldest first, and the
        ``next_cursor`` of the next page (None on the last). Keyset on (created_at, id), which no write moves:
        a walk sees every key that existed for the whole walk exactly once."""
        count = validate.limit(100 if limit is None else limit)

        def read(after: tuple[Any, str] | None, n: int) -> builtins.list[ApiKey]:
            return self._store.keys.page(None if after is None else (_moment(after[0]), after[1]), n)

        return filters.keyset_page(
            read, cursor, count, filters.fingerprint("keys"), lambda k: (k.created_at.isoformat(), k.key_id)
        )

    def revoke(self, key_id: str) -> ApiKey:
        """Refuse the key from now on; returns it as stored. Revoking a revoked key changes nothing.
        Raises ``NotFound``."""
        key = self.get(key_id)
        if key.revoked_at is None:
            self._store.keys.revoke(key.key_id, self._clock.now())
        return self.get(key_id)

    def bind(self, key_id: str, users: Sequence[str]) -> ApiKey:
        """Bind a key to ``users`` in place of what it had (as ``create`` takes them; a key from before the
        binding gets its first one). Takes effect on the key's next request. Raises ``NotFound``, and
        ``ValidationError`` for bad users or an admin key (which reaches every user)."""
        key = self.get(key_id)
        if ADMIN in key.scopes:
            raise ValidationError("an admin key reaches every user: it is not bound", field="users")
        self._store.keys.set_users(key.key_id, _users(users, admin=False))
        return self.get(key_id)

    def has_keys(self) -> bool:
        """Whether any key is live (not revoked): an interface that finds none may run open, on loopback."""
        return any(k.revoked_at is None for k in self._store.keys.list())

    def allows(self, key: ApiKey, scope: str, agent_id: str) -> bool:
        """Whether ``key`` may do ``scope`` for ``agent_id``: ``admin`` may do everything for every agent;
        any other key only what its scopes name, only for its own agent. A revoked key may do nothing.
        Raises ``ValidationError`` for an unknown scope or a bad agent id."""
        if scope not in SCOPES:
            raise ValidationError(f"unknown scope {scope!r}; use {', '.join(SCOPES)}", field="scope")
        agent = validate.identifier(agent_id, name="agent_id")
        if key.revoked_at is not None:
            return False
        if ADMIN in key.scopes:
            return True
        return key.agent_id == agent and scope in key.scopes

    def allows_user(self, key: ApiKey, user_id: str) -> bool:
        """Whether a request with ``key`` may name user ``user_id``: an admin key any user; any other key a
        user it is bound to, or any with ``*`` (or from before the binding). A revoked key none."""
        if key.revoked_at is not None:
            return False
        if ADMIN in key.scopes or key.users is None or ANY_USER in key.users:
            return True
        return user_id in key.users

    def may_change(self, key: ApiKey, entry: MemoryEntry) -> bool:
        """Whether ``key`` may archive or change ``entry``, once it may write its scope: a user memory
        (``@user/<id>``, shared by the user's agents) only when the key's agent wrote it (an admin key, any);
        an entry from before writers were recorded only with an admin key. Any other entry: yes."""
        if key.revoked_at is not None:
            return False
        if ADMIN in key.scopes or not is_user_agent(entry.scope.agent_id):
            return True
        return key.agent_id is not None and writer_of(entry.metadata) == key.agent_id


def _moment(value: object) -> datetime:
    """A cursor's creation time; a token that does not hold one is no cursor of the key listing."""
    found = filters.moment(value, "cursor") if isinstance(value, str) else None
    if found is None:
        raise ValidationError("cursor is not a cursor of this listing", field="cursor")
    return found
