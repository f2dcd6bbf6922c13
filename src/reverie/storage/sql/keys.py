"""API keys (``ApiKeyRepository``), written once for both backends: the ``api_keys`` table.

Invariants:
- Only the secret's hash is stored (the service hashes it); nothing here sees a secret.
- Keys are never deleted: ``revoke`` stamps ``revoked_at`` once, and a revoked key stays listed.
- ``users`` is a JSON array of user ids (``["*"]``: any user) or NULL: a key from before the column
  (migration ``0021_key_users`` / ``0010_key_users``), read back as None.
- Nothing here reads a clock; the caller passes ``at``. Ids order by code point on both backends (SQLite's
  binary order, ``COLLATE "C"`` on PostgreSQL).
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import ApiKey

_COLUMNS = "key_id, name, agent_id, scopes, key_hash, created_at, revoked_at, last_used_at, users"


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
            users=_users(d.json_out(row[8])),
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
            None if key.users is None else d.json_now(list(key.users)),
        )
        statement = d.sql(f"INSERT INTO api_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
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

    def set_users(self, key_id: str, users: tuple[str, ...]) -> bool:
        statement = self._d.sql("UPDATE api_keys SET users = ? WHERE key_id = ?")
        params = (self._d.json_now(list(users)), key_id)
        return self._db.write(lambda c: bool(c.execute(statement, params).rowcount > 0))

    def touch(self, key_id: str, at: datetime) -> None:
        statement = self._d.sql("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?")
        params = (self._d.ts(at), key_id)
        self._db.write(lambda c: c.execute(statement, params))

    def list(self) -> list[ApiKey]:
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, key_id{self._d.collate_c}")
        rows = self._db.read(lambda c: c.execute(statement).fetchall())
        return [self._key(r) for r in rows]

    def page(self, after: tuple[datetime, str] | None, limit: int) -> builtins.list[ApiKey]:
        # Keyset on (created_at, key_id), oldest first: no write moves either (revoking and binding keep
        # both), so a walk is exact.
        d = self._d
        keyset, params = "", []
        if after is not None:
            keyset = f" WHERE created_at > ? OR (created_at = ? AND key_id{d.collate_c} > ?)"
            params = [d.ts(after[0]), d.ts(after[0]), after[1]]
        statement = d.sql(f"SELECT {_COLUMNS} FROM api_keys{keyset} ORDER BY created_at, key_id{d.collate_c} LIMIT ?")
        rows = self._db.read(lambda c: c.execute(statement, [*params, max(limit, 0)]).fetchall())
        return [self._key(r) for r in rows]


def _users(value: Any) -> tuple[str, ...] | None:
    """The stored ``users`` (None: NULL, a key from before the column; a value of another shape: none)."""
    if value is None:
        return None
    return tuple(u for u in value if isinstance(u, str)) if isinstance(value, list) else ()
