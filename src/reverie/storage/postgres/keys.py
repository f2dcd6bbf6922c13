"""API keys on PostgreSQL: the ``api_keys`` table.

Invariants:
- Only the secret's hash is stored (the service hashes it); nothing here sees a secret.
- Keys are never deleted: ``revoke`` stamps ``revoked_at`` once, and a revoked key stays listed.
- Nothing here reads a clock; the caller passes ``at``. Ids order by code point (``COLLATE "C"``), as on SQLite.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.types import ApiKey

_COLUMNS = "key_id, name, agent_id, scopes, key_hash, created_at, revoked_at, last_used_at"


def _key(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(
        key_id=row[0],
        name=row[1],
        agent_id=row[2],
        scopes=tuple(row[3]),
        key_hash=row[4],
        created_at=row[5],
        revoked_at=row[6],
        last_used_at=row[7],
    )


class PgKeys:
    """``ApiKeyRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def add(self, key: ApiKey) -> None:
        params = (
            key.key_id,
            key.name,
            key.agent_id,
            json.dumps(list(key.scopes)),
            key.key_hash,
            key.created_at,
            key.revoked_at,
            key.last_used_at,
        )
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO api_keys ({_COLUMNS}) VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s, %s)", params
            )
        )

    def get(self, key_id: str) -> ApiKey | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_id = %s", (key_id,)).fetchone()
        )
        return None if row is None else _key(row)

    def by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)).fetchone()
        )
        return None if row is None else _key(row)

    def revoke(self, key_id: str, at: datetime) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL", (at, key_id)
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def touch(self, key_id: str, at: datetime) -> None:
        self._db.write(lambda c: c.execute("UPDATE api_keys SET last_used_at = %s WHERE key_id = %s", (at, key_id)))

    def list(self) -> list[ApiKey]:
        rows = self._db.read(
            lambda c: c.execute(f'SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id COLLATE "C"').fetchall()
        )
        return [_key(r) for r in rows]
