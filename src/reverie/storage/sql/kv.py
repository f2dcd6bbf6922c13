"""Key-value memory (``KvRepository``, ``storage.kv``), written once for both backends: the ``kv_items`` table.

Invariants:
- Every query names the agent: one agent never reads or changes another's keys.
- Every write is one ``Database.write`` transaction (joining the caller's ``Store.transaction()``). A put
  of a new key goes in with ``ON CONFLICT DO NOTHING``; otherwise it reads the key's row, locked
  (``FOR UPDATE`` on PostgreSQL; SQLite takes the write lock up front), before it compares versions. So a
  compare-and-set reads and writes one state, and two writers of one key at once serialise: the second
  sees the first's version (a compare-and-set of the same version fails; a plain put overwrites) and never
  errors.
- Keys order and compare by code point (SQLite's BINARY collation on UTF-8; the column is ``COLLATE "C"`` on
  PostgreSQL); a prefix matches by characters (``Dialect.starts_with``), never by ``LIKE``, so ``%`` and
  ``_`` are plain text.
- JSON is encoded by ``kv_codec.dumps`` with one set of rules (refused before any statement when it cannot
  be stored on both backends); a value of JSON null is SQL NULL. Timestamps go in and come out in UTC.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from reverie.errors import Conflict
from reverie.storage.kv_codec import cas_refusal, dumps
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import KvItem

_COLUMNS = "agent_id, key, value, created_at, updated_at, version, deleted_at"


class SqlKv:
    """``KvRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _item(self, row: tuple[Any, ...]) -> KvItem:
        d = self._d
        return KvItem(
            agent_id=row[0],
            key=row[1],
            value=d.json_out(row[2]),
            created_at=d.ts_out(row[3]),
            updated_at=d.ts_out(row[4]),
            version=int(row[5]),
            deleted_at=d.ts_out_or_none(row[6]),
        )

    def _live_under(self, agent_id: str, prefix: str) -> tuple[str, builtins.list[Any]]:
        """The condition of a live item of one agent under a prefix, and its parameters."""
        starts, params = self._d.starts_with("key", prefix)
        return f"agent_id = ? AND {starts} AND deleted_at IS NULL", [agent_id, *params]

    def get(self, agent_id: str, key: str) -> KvItem | None:
        statement = self._d.sql(
            f"SELECT {_COLUMNS} FROM kv_items WHERE agent_id = ? AND key = ? AND deleted_at IS NULL"
        )
        row = self._db.read(lambda c: c.execute(statement, (agent_id, key)).fetchone())
        return None if row is None else self._item(row)

    def put(self, agent_id: str, key: str, value: Any, *, at: datetime, expected_version: int | None = None) -> KvItem:
        d = self._d
        encoded = d.json_encoded(None if value is None else dumps(value, field="value"))  # refused before any write
        stamp = d.ts(at)
        insert = d.sql(
            f"INSERT INTO kv_items ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, 1, NULL) ON CONFLICT (agent_id, key) DO NOTHING"
        )
        select = d.sql(
            f"SELECT created_at, version, deleted_at FROM kv_items WHERE agent_id = ? AND key = ?{d.for_update()}"
        )
        update = d.sql(
            "UPDATE kv_items SET value = ?, created_at = ?, updated_at = ?, version = ?, deleted_at = NULL"
            " WHERE agent_id = ? AND key = ?"
        )

        def work(c: Any) -> KvItem:
            if expected_version in (None, 0) and c.execute(insert, (agent_id, key, encoded, stamp, stamp)).rowcount:
                return KvItem(agent_id, key, value, at, at, 1)
            row = c.execute(select, (agent_id, key)).fetchone()
            live = None if row is None or row[2] is not None else int(row[1])
            refusal = cas_refusal(key, live, expected_version)
            if refusal is not None:
                raise Conflict(refusal)
            if row is None:  # PostgreSQL: purged between the insert and the lock; nothing to overwrite any more
                raise Conflict(f"key {key!r} changed while it was being written; try again")
            # An overwrite keeps created_at; a revived key starts a new life at ``at``, its version goes on.
            created = d.ts_out(row[0]) if live is not None else at
            version = int(row[1]) + 1
            c.execute(update, (encoded, d.ts(created), stamp, version, agent_id, key))
            return KvItem(agent_id, key, value, created, at, version)

        return self._db.write(work)

    def delete(self, agent_id: str, key: str, *, at: datetime) -> bool:
        stamp = self._d.ts(at)
        statement = self._d.sql(
            "UPDATE kv_items SET deleted_at = ?, updated_at = ?, version = version + 1"
            " WHERE agent_id = ? AND key = ? AND deleted_at IS NULL"
        )
        return self._db.write(lambda c: bool(c.execute(statement, (stamp, stamp, agent_id, key)).rowcount > 0))

    def list(
        self, agent_id: str, prefix: str = "", *, limit: int = 100, after: str | None = None
    ) -> builtins.list[KvItem]:
        where, params = self._live_under(agent_id, prefix)
        if after is not None:
            where += " AND key > ?"
            params.append(after)
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM kv_items WHERE {where} ORDER BY key LIMIT ?")
        params.append(max(limit, 0))
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [self._item(r) for r in rows]

    def count(self, agent_id: str, prefix: str = "") -> int:
        where, params = self._live_under(agent_id, prefix)
        statement = self._d.sql(f"SELECT count(*) FROM kv_items WHERE {where}")
        row = self._db.read(lambda c: c.execute(statement, params).fetchone())
        return int(row[0]) if row else 0

    def purge_deleted(self, before: datetime) -> int:
        statement = self._d.sql("DELETE FROM kv_items WHERE deleted_at IS NOT NULL AND deleted_at <= ?")
        params = (self._d.ts(before),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))
