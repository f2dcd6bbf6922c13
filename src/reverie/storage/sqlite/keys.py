"""API keys on SQLite: the ``api_keys`` table.

Invariants:
- Only the secret's hash is stored (the service hashes it); nothing here sees a secret.
- Keys are never deleted: ``revoke`` stamps ``revoked_at`` once, and a revoked key stays listed.
- Nothing here reads a clock; the caller passes ``at``.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from reverie.storage.sqlite.database import Database, parse_ts, parse_ts_or_none, ts, ts_or_none
from reverie.types import ApiKey

_COLUMNS = "key_id, name, agent_id, scopes, key_hash, created_at, revoked_at, last_used_at"


def _key(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(
        key_id=row[0],
        name=row[1],
        agent_id=row[2],
        scopes=tuple(json.loads(row[3])),
        key_hash=row[4],
        created_at=parse_ts(row[5]),
        revoked_at=parse_ts_or_none(row[6]),
        last_used_at=parse_ts_or_none(row[7]),
    )


class SqliteKeys:
    """``ApiKeyRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, key: ApiKey) -> None:
        params = (
            key.key_id,
            key.name,
            key.agent_id,
            json.dumps(list(key.scopes)),
            key.key_hash,
            ts(key.created_at),
            ts_or_none(key.revoked_at),
            ts_or_none(key.last_used_at),
        )
        self._db.write(
            lambda c: c.execute(f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", params)
        )

    def get(self, key_id: str) -> ApiKey | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        )
        return None if row is None else _key(row)

    def by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)).fetchone()
        )
        return None if row is None else _key(row)

    def revoke(self, key_id: str, at: datetime) -> bool:
        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", (ts(at), key_id)
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def touch(self, key_id: str, at: datetime) -> None:
        self._db.write(lambda c: c.execute("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?", (ts(at), key_id)))

    def list(self) -> list[ApiKey]:
        rows = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id").fetchall()
        )
        return [_key(r) for r in rows]
