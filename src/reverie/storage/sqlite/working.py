"""Working memory on SQLite: the ``working_entries`` table.

Invariants:
- Every read filters on ``expires_at > now``; the caller passes ``now``, nothing here reads a clock.
- A prefix matches by characters (``substr``), never by ``LIKE``, so ``_`` and ``%`` in keys are plain text.
- ``seq`` grows with every write (an upsert takes a new one): among entries stored at the same instant the
  later write counts as the more recently stored.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from reverie.storage.sqlite.database import Database, parse_ts, ts
from reverie.types import WorkingEntry

_COLUMNS = "agent_id, key, value, category, tags, stored_at, expires_at"
# A live entry of one agent under a prefix; parameters: agent_id, prefix, len(prefix), prefix, now.
_LIVE_UNDER = "agent_id = ? AND key >= ? AND substr(key, 1, ?) = ? AND expires_at > ?"


def _entry(row: tuple[Any, ...]) -> WorkingEntry:
    return WorkingEntry(
        agent_id=row[0],
        key=row[1],
        value=row[2],
        category=row[3],
        tags=tuple(json.loads(row[4])),
        stored_at=parse_ts(row[5]),
        expires_at=parse_ts(row[6]),
    )


def _under(agent_id: str, prefix: str, now: datetime) -> tuple[Any, ...]:
    return (agent_id, prefix, len(prefix), prefix, ts(now))


class SqliteWorking:
    """``WorkingRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, entry: WorkingEntry) -> None:
        params = (
            entry.agent_id,
            entry.key,
            entry.value,
            entry.category,
            json.dumps(list(entry.tags), ensure_ascii=False),
            ts(entry.stored_at),
            ts(entry.expires_at),
        )
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO working_entries ({_COLUMNS}, seq)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM working_entries))"
                " ON CONFLICT (agent_id, key) DO UPDATE SET value = excluded.value, category = excluded.category,"
                " tags = excluded.tags, stored_at = excluded.stored_at, expires_at = excluded.expires_at,"
                " seq = excluded.seq",
                params,
            )
        )

    def get(self, agent_id: str, key: str, *, now: datetime) -> WorkingEntry | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE agent_id = ? AND key = ? AND expires_at > ?",
                (agent_id, key, ts(now)),
            ).fetchone()
        )
        return None if row is None else _entry(row)

    def list(self, agent_id: str, prefix: str, *, now: datetime, limit: int) -> list[WorkingEntry]:
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE {_LIVE_UNDER} ORDER BY stored_at DESC, seq DESC LIMIT ?",
                (*_under(agent_id, prefix, now), max(limit, 0)),
            ).fetchall()
        )
        return [_entry(r) for r in rows]

    def count(self, agent_id: str, prefix: str, *, now: datetime) -> int:
        (found,) = self._db.read(
            lambda c: c.execute(
                f"SELECT count(*) FROM working_entries WHERE {_LIVE_UNDER}", _under(agent_id, prefix, now)
            ).fetchone()
        )
        return int(found)

    def delete(self, agent_id: str, key: str) -> bool:
        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute("DELETE FROM working_entries WHERE agent_id = ? AND key = ?", (agent_id, key))
            return cur.rowcount > 0

        return self._db.write(work)

    def oldest(self, agent_id: str, prefix: str, *, now: datetime) -> WorkingEntry | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM working_entries WHERE {_LIVE_UNDER} ORDER BY stored_at, seq LIMIT 1",
                _under(agent_id, prefix, now),
            ).fetchone()
        )
        return None if row is None else _entry(row)

    def sweep(self, now: datetime) -> int:
        def work(c: sqlite3.Connection) -> int:
            return int(c.execute("DELETE FROM working_entries WHERE expires_at <= ?", (ts(now),)).rowcount)

        return self._db.write(work)
