"""Key-value memory per agent (seed 004's ``memory store|get|update|delete|list --prefix``): structured
values an agent files under exact keys such as ``user:preference:theme`` or ``project:version``.

Invariants:
- Every argument is validated before the store is touched: a rejected call is a ``ValidationError`` naming
  the field, and writes nothing.
- Keys are exact (case and spaces matter), 1 to ``MAX_KEY_CHARS`` characters, no control characters, valid
  Unicode. Values are any JSON value (object, array, string, number, boolean, null) of at most
  ``max_value_bytes`` UTF-8 bytes serialised, nested at most ``MAX_DEPTH`` deep, with no NaN, no infinity
  and no NUL character anywhere (PostgreSQL's jsonb cannot hold one: refused on every backend alike).
- A value is stored as it reads back from JSON: tuples become lists, nothing else changes.
- ``update`` never creates: a key that is not live is ``NotFound``, even when a concurrent delete lands
  between the read and the write.
- ``delete`` marks the item (``deleted_at``); a later ``set`` revives the key, its version going on. Marked
  items are hard-deleted ``deleted_retention_days`` later by ``purge_deleted`` (the dream's serve loop runs
  ``purge_job``), never sooner.
- An agent holds at most ``max_keys_per_agent`` live keys: a ``set`` of a new key past it is refused;
  overwriting a live key is always allowed. (SQLite serialises writers, so the limit is exact there; on
  PostgreSQL two concurrent sets of new keys may both pass the check: a guard, not an exact quota.)
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from reverie.clock import Clock
from reverie.core import validate
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.storage.base import Store
from reverie.types import KvItem

log = logging.getLogger("reverie.kv")
MAX_KEY_CHARS = 256
MAX_DEPTH = validate.MAX_JSON_DEPTH  # nesting levels of a value: the one limit of caller JSON
MAX_LIST_LIMIT = 1000
PURGE_EVERY = timedelta(hours=1)
_UPDATE_ATTEMPTS = 5  # an update without expected_version retries a lost compare-and-set this often
# Unicode control characters (category Cc): the C0 and C1 ranges and DEL.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class KvConfig:
    """The knobs of key-value memory; the engine fills them from ``[kv]``."""

    max_value_bytes: int = 65_536
    max_keys_per_agent: int = 10_000
    deleted_retention_days: float = 90.0  # deleted keys are purged this long after (memory's archive retention)

    def __post_init__(self) -> None:
        if self.max_value_bytes < 1 or self.max_keys_per_agent < 1:
            raise ValueError("max_value_bytes and max_keys_per_agent must be at least 1")


def key(value: object, *, name: str = "key", allow_empty: bool = False) -> str:
    """A key (or, with ``allow_empty``, a key prefix): kept exactly as given."""
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string", field=name)
    if not value and not allow_empty:
        raise ValidationError(f"{name} is empty", field=name)
    if len(value) > MAX_KEY_CHARS:
        raise ValidationError(f"{name} is {len(value):,} characters; the maximum is {MAX_KEY_CHARS}", field=name)
    if _CONTROL.search(value):
        raise ValidationError(f"{name} contains a control character", field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} is not valid Unicode text (lone surrogate)", field=name) from None
    return value


def value(raw: object, *, max_bytes: int) -> Any:
    """A JSON value (``validate.json_shape``: the one check of caller JSON) of at most ``max_bytes``
    serialised, as it reads back from JSON."""
    encoded = validate.json_text(raw, field="value")
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise ValidationError(
            f"value is {size:,} bytes as JSON; the maximum is {max_bytes:,} (kv.max_value_bytes)", field="value"
        )
    return json.loads(encoded)


def _expected(raw: object) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ValidationError("expected_version must be a whole number from 0", field="expected_version")
    return raw


class KvMemory:
    """Key-value memory over ``store.kv``. Thread-safe as the store is."""

    def __init__(self, store: Store, clock: Clock, config: KvConfig | None = None) -> None:
        self._store = store
        self._clock = clock
        self.config = config or KvConfig()
        self._last_purge: datetime | None = None

    def get(self, agent_id: str, key_: str) -> KvItem:
        """The live item; ``NotFound`` when the key was never set or is deleted."""
        agent_id, key_ = _agent(agent_id), key(key_)
        item = self._store.kv.get(agent_id, key_)
        if item is None:
            raise NotFound(_missing(agent_id, key_))
        return item

    def set(self, agent_id: str, key_: str, value_: Any, *, expected_version: int | None = None) -> KvItem:
        """Insert, overwrite or revive ``key_``. ``expected_version``: compare-and-set (0: the key must not be
        live); a mismatch is ``Conflict``. A new key past ``max_keys_per_agent`` is a ``ValidationError``."""
        agent_id, key_ = _agent(agent_id), key(key_)
        clean = value(value_, max_bytes=self.config.max_value_bytes)
        expected = _expected(expected_version)
        with self._store.transaction():
            if self._store.kv.get(agent_id, key_) is None:
                self._check_room(agent_id)
            return self._store.kv.put(agent_id, key_, clean, at=self._clock.now(), expected_version=expected)

    def update(self, agent_id: str, key_: str, value_: Any, *, expected_version: int | None = None) -> KvItem:
        """Overwrite a live key; ``NotFound`` when it is not live (update never creates). Without
        ``expected_version`` it writes over whatever version is current; with it, a mismatch is ``Conflict``."""
        agent_id, key_ = _agent(agent_id), key(key_)
        clean = value(value_, max_bytes=self.config.max_value_bytes)
        expected = _expected(expected_version)
        if expected == 0:
            raise NotFound(_missing(agent_id, key_) + " (expected_version 0 means absent; use set to create)")
        for _ in range(_UPDATE_ATTEMPTS):
            current = self._store.kv.get(agent_id, key_)
            if current is None:
                raise NotFound(_missing(agent_id, key_) + "; update never creates a key, set does")
            # Writing with the version just read means a concurrent delete cannot be revived by an update.
            version = current.version if expected is None else expected
            try:
                return self._store.kv.put(agent_id, key_, clean, at=self._clock.now(), expected_version=version)
            except Conflict:
                if expected is not None:
                    raise
        raise Conflict(f"key {key_!r} kept changing under the update; try again")

    def delete(self, agent_id: str, key_: str) -> bool:
        """Mark the key deleted (hidden, revivable by ``set``, hard-deleted only by a purge); False when it
        was not live."""
        agent_id, key_ = _agent(agent_id), key(key_)
        return self._store.kv.delete(agent_id, key_, at=self._clock.now())

    def list(self, agent_id: str, prefix: str = "", limit: int = 100, after: str | None = None) -> list[KvItem]:
        """Live items whose key starts with ``prefix`` (plain characters, no wildcards), in code-point order
        of the key, keys after the cursor ``after`` only, at most ``limit`` (1 to 1000)."""
        agent_id = _agent(agent_id)
        prefix = key(prefix, name="prefix", allow_empty=True)
        limit = validate.limit(limit, maximum=MAX_LIST_LIMIT)
        cursor = None if after is None else key(after, name="after")
        return self._store.kv.list(agent_id, prefix, limit=limit, after=cursor)

    def count(self, agent_id: str, prefix: str = "") -> int:
        """How many live keys start with ``prefix``."""
        return self._store.kv.count(_agent(agent_id), key(prefix, name="prefix", allow_empty=True))

    def purge_deleted(self) -> int:
        """Hard-delete keys (every agent's) deleted longer than ``deleted_retention_days`` ago; returns how
        many. A non-positive retention keeps them forever."""
        days = self.config.deleted_retention_days
        if days <= 0:
            return 0
        return self._store.kv.purge_deleted(self._clock.now() - timedelta(days=days))

    def purge_job(self, now: datetime) -> None:
        """``purge_deleted`` at most once per ``PURGE_EVERY`` of ``now``: a job for the dream's serve loop."""
        if self._last_purge is None or now - self._last_purge >= PURGE_EVERY:
            self._last_purge = now
            purged = self.purge_deleted()
            if purged:
                log.info("purged %d deleted key-value items", purged)

    def _check_room(self, agent_id: str) -> None:
        limit = self.config.max_keys_per_agent
        if self._store.kv.count(agent_id) >= limit:
            raise ValidationError(
                f"agent {agent_id!r} already holds {limit:,} keys, the limit (kv.max_keys_per_agent); "
                "delete some or overwrite an existing key",
                field="key",
            )


def _agent(agent_id: object) -> str:
    return validate.identifier(agent_id, name="agent_id")


def _missing(agent_id: str, key_: str) -> str:
    return f"no key {key_!r} in the key-value memory of agent {agent_id!r}"
