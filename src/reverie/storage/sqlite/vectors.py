"""Vectors and store metadata on SQLite."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from reverie.storage.base import VectorSnapshot
from reverie.storage.sqlite.database import Database, ts


class SqliteVectors:
    """``VectorRepository`` on SQLite: float32 BLOBs; the in-memory index reads ``changes``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def put_many(self, rows: list[tuple[str, str, bytes]], *, model: str, dim: int, at: datetime) -> int:
        stamp = ts(at)

        def work(c: sqlite3.Connection) -> int:
            written = 0
            for fact_id, text, vector in rows:
                # Delete + insert (not an in-place update) so the log triggers record the change for every
                # process's index. The content check makes a stale embedding a no-op.
                found = c.execute("SELECT agent_id FROM facts WHERE id = ? AND content = ?", (fact_id, text)).fetchone()
                if found is None:
                    continue
                c.execute("DELETE FROM fact_vectors WHERE fact_id = ?", (fact_id,))
                c.execute(
                    "INSERT INTO fact_vectors (fact_id, agent_id, model, dim, vector, embedded_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (fact_id, found[0], model, dim, vector, stamp),
                )
                written += 1
            return written

        return self._db.write(work)

    def pending(self, model: str, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        sql = (
            "SELECT f.seq, f.id, f.content FROM facts f"
            " WHERE f.seq > ? AND NOT EXISTS (SELECT 1 FROM fact_vectors v WHERE v.fact_id = f.id AND v.model = ?)"
            " ORDER BY f.seq LIMIT ?"
        )
        rows = self._db.read(lambda c: c.execute(sql, (after, model, limit)).fetchall())
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def snapshot(self, agent_id: str, model: str) -> VectorSnapshot:
        def work(c: sqlite3.Connection) -> VectorSnapshot:
            # The watermark is read first: a change committed after it is replayed later, harmlessly.
            (mark,) = c.execute("SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()
            rows = c.execute(
                "SELECT fact_id, vector FROM fact_vectors WHERE agent_id = ? AND model = ?", (agent_id, model)
            ).fetchall()
            return VectorSnapshot(watermark=int(mark), vectors=[(str(r[0]), bytes(r[1])) for r in rows])

        return self._db.read(work)

    def changes(self, agent_id: str, model: str, after: int) -> VectorSnapshot:
        def work(c: sqlite3.Connection) -> VectorSnapshot:
            (mark,) = c.execute("SELECT coalesce(max(seq), 0) FROM vector_log").fetchone()
            if int(mark) <= after:
                return VectorSnapshot(watermark=after, vectors=[])
            rows = c.execute(
                "SELECT l.fact_id, v.vector FROM (SELECT DISTINCT fact_id FROM vector_log"
                "  WHERE agent_id = ? AND model = ? AND seq > ? AND seq <= ?) l"
                " LEFT JOIN fact_vectors v ON v.fact_id = l.fact_id AND v.model = ?",
                (agent_id, model, after, int(mark), model),
            ).fetchall()
            return VectorSnapshot(
                watermark=int(mark), vectors=[(str(r[0]), None if r[1] is None else bytes(r[1])) for r in rows]
            )

        return self._db.read(work)

    def counts(self) -> dict[str, int]:
        rows = self._db.read(lambda c: c.execute("SELECT model, count(*) FROM fact_vectors GROUP BY model").fetchall())
        return {str(model): int(n) for model, n in rows}


class SqliteMeta:
    """``MetaRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        row = self._db.read(lambda c: c.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone())
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )
