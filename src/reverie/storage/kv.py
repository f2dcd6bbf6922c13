"""The storage contract, part three: key-value memory (seed 004, "Memory Operations"). Same rules as
``storage.base``: scope (the agent) is in every query, time is passed in, a failed write changes nothing, and
nothing is hard-deleted outside a purge (a deleted key is marked, not removed). ``storage.base`` re-exports
every name; ``Store`` exposes ``kv``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from reverie.types.kv import KvItem


class KvRepository(Protocol):
    """Key-value memory per agent. Keys are compared exactly (case and spaces matter); listing is in code-point
    order of the key."""

    def get(self, agent_id: str, key: str) -> KvItem | None:
        """The live item, or None (never set, or deleted)."""
        ...

    def put(self, agent_id: str, key: str, value: Any, *, at: datetime, expected_version: int | None = None) -> KvItem:
        """Set ``key`` (insert, overwrite, or revive a deleted key: its version goes on from the old one).
        ``expected_version``: compare-and-set — the live item's version must equal it (0: the key must not be
        live); otherwise ``Conflict`` and nothing changes. ``created_at`` is kept across overwrites."""
        ...

    def delete(self, agent_id: str, key: str, *, at: datetime) -> bool:
        """Mark the live item deleted (``deleted_at``, version + 1); False when there was none."""
        ...

    def list(self, agent_id: str, prefix: str = "", *, limit: int = 100, after: str | None = None) -> list[KvItem]:
        """Live items whose key starts with ``prefix`` (plain characters: ``%`` and ``_`` are not wildcards),
        in key order, keys greater than ``after`` only (a cursor), at most ``limit``."""
        ...

    def count(self, agent_id: str, prefix: str = "") -> int:
        """Live items whose key starts with ``prefix``."""
        ...

    def purge_deleted(self, before: datetime) -> int:
        """Hard-delete items deleted at or before ``before`` (the purge pass); returns how many."""
        ...
