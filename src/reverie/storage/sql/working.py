"""Working memory (``WorkingRepository``), written once for both backends: the ``working_entries`` table.

Invariants:
- Every read filters on ``expires_at > now``; the caller passes ``now``, nothing here reads a clock.
- A prefix matches by characters (``Dialect.starts_with``: ``substr`` on SQLite, ``starts_with`` on
  PostgreSQL), never by ``LIKE`` or a collation-ordered ``>=`` on PostgreSQL, so ``_`` and ``%`` in keys are
  plain text and no locale changes what matches.
- ``seq`` grows with every write (an upsert takes a new one): among entries stored at the same instant the
  later write counts as the more recently stored. On SQLite it is one more than the largest (the write holds
  the file's lock); on PostgreSQL it comes from the ``working_entries_order`` sequence, which needs no lock
  and never hands one number out twice, whichever processes write at once.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import WorkingEntry

_COLUMNS = "agent_id, key, value, category, tags, stored_at, expires_at"


class SqlWorking:
    """``WorkingRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _entry(self, row: Any) -> WorkingEntry:
        d = self._d
        return WorkingEntry(
            agent_id=row[0],
            key=row[1],
            value=row[2],
            category=row[3],
            tags=tuple(d.json_out(row[4])),
            stored_at=d.ts_out(row[5]),
            expires_at=d.ts_out(row[6]),
        )

    def _live_under(self, agent_id: str, prefix: str, now: datetime) -> tuple[str, tuple[Any, ...]]:
        """The condition for a live entry of one agent under a prefix, and its parameters."""
        under, params = self._d.starts_with("key", prefix)
        return f"agent_id = ? AND {under} AND expires_at > ?", (agent_id, *params, self._d.ts(now))

    def put(self, entry: WorkingEntry) -> None:
        d = self._d
        params = (
            entry.agent_id,
            entry.key,
            entry.value,
            entry.category,
            d.json_now(list(entry.tags)),
            d.ts(entry.stored_at),
            d.ts(entry.expires_at),
        )
        seq = (
            "nextval('working_entries_order')"
            if d.postgres
            else "(SELECT coalesce(max(seq), 0) + 1 FROM working_entries)"
        )
        statement = d.sql(
            f"INSERT INTO working_entries ({_COLUMNS}, seq) VALUES (?, ?, ?, ?, ?, ?, ?, {seq})"
            " ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, category = excluded.category,"
            " tags = excluded.tags, stored_at = excluded.stored_at, expires_at = excluded.expires_at,"
            " seq = excluded.seq"
        )
        self._db.write(lambda c: c.execute(statement, params))

    def get(self, agent_id: str, key: str, *, now: datetime) -> WorkingEntry | None:
        statement = self._d.sql(
            f"SELECT {_COLUMNS} FROM working_entries WHERE agent_id = ? AND key = ? AND expires_at > ?"
        )
        params = (agent_id, key, self._d.ts(now))
        row = self._db.read(lambda c: c.execute(statement, params).fetchone())
        return None if row is None else self._entry(row)

    def list(self, agent_id: str, prefix: str, *, now: datetime, limit: int) -> list[WorkingEntry]:
        where, params = self._live_under(agent_id, prefix, now)
        statement = self._d.sql(
            f"SELECT {_COLUMNS} FROM working_entries WHERE {where} ORDER BY stored_at DESC, seq DESC LIMIT ?"
        )
        rows = self._db.read(lambda c: c.execute(statement, (*params, max(limit, 0))).fetchall())
        return [self._entry(r) for r in rows]

    def page(
        self, agent_id: str, prefix: str, *, now: datetime, after: str | None, limit: int
    ) -> builtins.list[WorkingEntry]:
        # Keyset on the key in code-point order (as the graph's entity pages): no write moves a key.
        code_points = self._d.collate_c
        where, params = self._live_under(agent_id, prefix, now)
        if after is not None:
            where, params = f"{where} AND key{code_points} > ?", (*params, after)
        order = f"ORDER BY key{code_points} LIMIT ?"
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM working_entries WHERE {where} {order}")
        rows = self._db.read(lambda c: c.execute(statement, (*params, max(limit, 0))).fetchall())
        return [self._entry(r) for r in rows]

    def count(self, agent_id: str, prefix: str, *, now: datetime) -> int:
        where, params = self._live_under(agent_id, prefix, now)
        statement = self._d.sql(f"SELECT count(*) FROM working_entries WHERE {where}")
        row = self._db.read(lambda c: c.execute(statement, params).fetchone())
        return int(row[0]) if row else 0

    def delete(self, agent_id: str, key: str) -> bool:
        statement = self._d.sql("DELETE FROM working_entries WHERE agent_id = ? AND key = ?")
        return self._db.write(lambda c: bool(c.execute(statement, (agent_id, key)).rowcount > 0))

    def oldest(self, agent_id: str, prefix: str, *, now: datetime) -> WorkingEntry | None:
        where, params = self._live_under(agent_id, prefix, now)
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM working_entries WHERE {where} ORDER BY stored_at, seq LIMIT 1")
        row = self._db.read(lambda c: c.execute(statement, params).fetchone())
        return None if row is None else self._entry(row)

    def sweep(self, now: datetime) -> int:
        statement = self._d.sql("DELETE FROM working_entries WHERE expires_at <= ?")
        params = (self._d.ts(now),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))
