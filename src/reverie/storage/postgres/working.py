"""Working memory on PostgreSQL: the ``working_entries`` table.

Invariants:
- Every read filters on ``expires_at > now``; the caller passes ``now``, nothing here reads a clock.
- A prefix matches by characters (``starts_with``), never by ``LIKE`` or a collation-ordered ``>=``, so
  ``_`` and ``%`` in keys are plain text and no locale changes what matches.
- ``seq`` comes from the ``working_entries_order`` sequence on every write (an upsert takes a new one): among
  entries stored at the same instant the later write counts as the more recently stored. A sequence needs
  no lock and never hands one number out twice, whichever processes write at once.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.types import WorkingEntry

_COLUMNS = "agent_id, key, value, category, tags, stored_at, expires_at"
# A live entry of one agent under a prefix; parameters: agent_id, prefix, now.
_LIVE_UNDER = "agent_id = %s AND starts_with(key, %s) AND expires_at > %s"


def _entry(row: tuple[Any, ...]) -> WorkingEntry:
    return WorkingEntry(
        agent_id=row[0],
        key=row[1],
        value=row[2],
        category=row[3],
        tags=tuple(row[4]),
        stored_at=row[5],
        expires_at=row[6],
    )


class PgWorking:
    """``WorkingRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def put(self, entry: WorkingEntry) -> None:
        params = (
            entry.agent_id,
            entry.key,
            entry.value,
            entry.category,
            json.dumps(list(entry.tags), ensure_ascii=False),
            entry.stored_at,
            entry.expires_at,
        )
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO working_entries ({_COLUMNS}, seq)"
                " VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s, nextval('working_entries_order'))"
                " ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, category = excluded.category,"
                " tags = excluded.tags, stored_at = excluded.stored_at, expires_at = excluded.expires_at,"
                " seq = excluded.seq",
                params,
            )
        )

    def get(self, agent_id: str, key: str, *, now: datetime) -> WorkingEntry | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE agent_id = %s AND key = %s AND expires_at > %s",
                (agent_id, key, now),
            ).fetchone()
        )
        return None if row is None else _entry(row)

    def list(self, agent_id: str, prefix: str, *, now: datetime, limit: int) -> list[WorkingEntry]:
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE {_LIVE_UNDER}"
                " ORDER BY stored_at DESC, seq DESC LIMIT %s",
                (agent_id, prefix, now, max(limit, 0)),
            ).fetchall()
        )
        return [_entry(r) for r in rows]

    def count(self, agent_id: str, prefix: str, *, now: datetime) -> int:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT count(*) FROM working_entries WHERE {_LIVE_UNDER}", (agent_id, prefix, now)
            ).fetchone()
        )
        return int(row[0]) if row else 0

    def delete(self, agent_id: str, key: str) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute("DELETE FROM working_entries WHERE agent_id = %s AND key = %s", (agent_id, key))
            return cur.rowcount > 0

        return self._db.write(work)

    def oldest(self, agent_id: str, prefix: str, *, now: datetime) -> WorkingEntry | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE {_LIVE_UNDER} ORDER BY stored_at, seq LIMIT 1",
                (agent_id, prefix, now),
            ).fetchone()
        )
        return None if row is None else _entry(row)

    def sweep(self, now: datetime) -> int:
        def work(c: Conn) -> int:
            return int(c.execute("DELETE FROM working_entries WHERE expires_at <= %s", (now,)).rowcount)

        return self._db.write(work)
