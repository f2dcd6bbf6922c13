"""API keys (``ApiKeyRepository``), written once for both backends: the ``api_keys`` table.

Invariants:
- Only the secret's hash is stored (the service hashes it); nothing here sees a secret.
- Keys are never deleted: ``revoke`` stamps ``revoked_at`` once, and a revoked key stays listed.
- Nothing here reads a clock; the caller passes ``at``. Ids order by code point on both backends (SQLite's
  binary order, ``COLLATE "C"`` on PostgreSQL).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import ApiKey

_COLUMNS = "key_id, name, agent_id, scopes, key_hash, created_at, revoked_at, last_used_at"


class SqlKeys:
    """``ApiKeyRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _key(self, row: Any) -> ApiKey:
        d = self._d
        return ApiKey(
            key_id=row[0],
            name=row[1],
            agent_id=row[2],
            scopes=tuple(d.json_out(row[3])),
            key_hash=row[4],
            created_at=d.ts_out(row[5]),
            revoked_at=d.ts_out_or_none(row[6]),
            last_used_at=d.ts_out_or_none(row[7]),
        )

    def add(self, key: ApiKey) -> None:
        d = self._d
        params = (
            key.key_id,
            key.name,
            key.agent_id,
            d.json_now(list(key.scopes)),
            key.key_hash,
            d.ts(key.created_at),
            d.ts_or_none(key.revoked_at),
            d.ts_or_none(key.last_used_at),
        )
        statement = d.sql(f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        self._db.write(lambda c: c.execute(statement, params))

    def get(self, key_id: str) -> ApiKey | None:
        return self._one("key_id", key_id)

    def by_hash(self, key_hash: str) -> ApiKey | None:
        return self._one("key_hash", key_hash)

    def _one(self, column: str, value: str) -> ApiKey | None:
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM api_keys WHERE {column} = ?")
        row = self._db.read(lambda c: c.execute(statement, (value,)).fetchone())
        return None if row is None else self._key(row)

    def revoke(self, key_id: str, at: datetime) -> bool:
        statement = self._d.sql("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL")
        params = (self._d.ts(at), key_id)
        return self._db.write(lambda c: bool(c.execute(statement, params).rowcount > 0))

    def touch(self, key_id: str, at: datetime) -> None:
        statement = self._d.sql("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?")
        params = (self._d.ts(at), key_id)
        self._db.write(lambda c: c.execute(statement, params))

    def list(self) -> list[ApiKey]:
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id{self._d.collate_c}")
        rows = self._db.read(lambda c: c.execute(statement).fetchall())
        return [self._key(r) for r in rows]
