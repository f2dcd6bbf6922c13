"""Vectors (``VectorRepository``) and store metadata (``MetaRepository``), written once for both backends over a
``Dialect``. ``SqlVectors`` stores vectors as float32 BLOBs (SQLite's column; the in-memory index reads
``changes``); PostgreSQL's subclass (``postgres.vectors``) keeps them in pgvector's ``vector`` type and adds
nearest-neighbour search in the database.

Invariants:
- A vector always matches its entry's current text: ``put_many`` writes a row only when the entry's content
  is still the text the vector was computed from (a stale embedding is a no-op), reading that content under
  the entry's row lock (PostgreSQL ``FOR NO KEY UPDATE``, in id order so two writers cannot deadlock; SQLite's
  one writer), and rewrites by delete + insert (never in place) so the log triggers record every change for
  every process's index. A rewrite of the entry's text drops its vector (a trigger).
- ``snapshot`` reads its log position first (``sql.facts.log_position``: the whole log's on SQLite, the
  agent's on PostgreSQL): a change committed after it is replayed later, harmlessly.
- ``changes`` lists each changed fact once, in the order of its last change, with its current vector or
  None (dropped); at or below ``after`` it answers no rows and ``after`` itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.base import VectorSnapshot
from reverie.storage.sql.dialect import Connection, Dialect, SqlDatabase
from reverie.storage.sql.facts import log_position

INSERT = "INSERT INTO fact_vectors (fact_id, agent_id, model, dim, vector, embedded_at) VALUES (?, ?, ?, ?, ?, ?)"


class SqlVectors:
    """``VectorRepository`` over either backend; a subclass changes how vectors travel (``_vector_in``,
    ``_insert``, ``_vectors``) and what a write prepares first (``_prepare``)."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- what a backend may change ---------------------------------------------------------------------
    def _prepare(self, rows: list[tuple[str, str, bytes]], model: str, dim: int) -> None:
        """Checks and structures a ``put_many`` of ``rows`` needs before its transaction (none here)."""

    def _vector_in(self, vector: bytes) -> Any:
        """A vector parameter: the float32 bytes themselves (a BLOB)."""
        return vector

    def _insert(self, c: Any, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``fact_vectors`` rows (the parameters of ``INSERT``) through connection ``c``."""
        statement = self._d.sql(INSERT)
        for row in rows:
            c.execute(statement, row)

    def _vectors(self, c: Any, statement: str, params: list[Any]) -> list[tuple[str, bytes | None]]:
        """Run ``statement`` (``?`` placeholders; fact id, vector) on connection ``c`` and read
        ``(fact_id, float32 bytes or None)``."""
        rows = c.execute(self._d.sql(statement), params).fetchall()
        return [(str(r[0]), None if r[1] is None else bytes(r[1])) for r in rows]

    # -- the repository --------------------------------------------------------------------------------
    def put_many(self, rows: list[tuple[str, str, bytes]], *, model: str, dim: int, at: datetime) -> int:
        if not rows:
            return 0
        self._prepare(rows, model, dim)
        d = self._d
        stamp = d.ts(at)

        def work(c: Connection) -> int:
            # Lock the entries first (PostgreSQL, in id order, so two writers cannot deadlock): an edit
            # committed meanwhile is seen by the content check, and an edit after waits for this commit and
            # then drops the vector written here. The content check makes a stale embedding a no-op.
            current: dict[str, tuple[str, str]] = {}
            for batch in d.batches(sorted({fid for fid, _, _ in rows})):
                among, ids = d.any_of("id", batch)
                statement = d.sql(f"SELECT id, agent_id, content FROM facts WHERE {among} ORDER BY id")
                found = c.execute(statement + d.for_update("NO KEY UPDATE"), ids).fetchall()
                current.update((str(fid), (str(agent), str(content))) for fid, agent, content in found)
            # Row by row, as one write after another: every row of current text counts, the last one stays.
            kept: dict[str, tuple[str, bytes]] = {}
            written = 0
            for fid, text, vector in rows:
                if fid in current and current[fid][1] == text:
                    kept[fid] = (current[fid][0], vector)
                    written += 1
            if not kept:
                return 0
            # Delete + insert (not an in-place update) so the log triggers record the change for every
            # process's index.
            for batch in d.batches(list(kept)):
                among, ids = d.any_of("fact_id", batch)
                c.execute(d.sql(f"DELETE FROM fact_vectors WHERE {among}"), ids)
            new = [(fid, agent, model, dim, self._vector_in(vector), stamp) for fid, (agent, vector) in kept.items()]
            self._insert(c, new)
            return written

        return self._db.write(work)

    def pending(self, model: str, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        statement = self._d.sql(
            "SELECT f.seq, f.id, f.content FROM facts f"
            " WHERE f.seq > ? AND NOT EXISTS (SELECT 1 FROM fact_vectors v WHERE v.fact_id = f.id AND v.model = ?)"
            " ORDER BY f.seq LIMIT ?"
        )
        rows = self._db.read(lambda c: c.execute(statement, (after, model, limit)).fetchall())
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def snapshot(self, agent_id: str, model: str) -> VectorSnapshot:
        def work(c: Connection) -> VectorSnapshot:
            # The watermark is read first: a change committed after it is replayed later, harmlessly.
            mark = log_position(c, self._d, "vector_log", agent_id)
            statement = "SELECT fact_id, vector FROM fact_vectors WHERE agent_id = ? AND model = ? ORDER BY seq"
            return VectorSnapshot(watermark=mark, vectors=self._vectors(c, statement, [agent_id, model]))

        return self._db.read(work)

    def changes(self, agent_id: str, model: str, after: int) -> VectorSnapshot:
        def work(c: Connection) -> VectorSnapshot:
            mark = log_position(c, self._d, "vector_log", agent_id)
            if mark <= after:
                return VectorSnapshot(watermark=after, vectors=[])
            statement = (
                "SELECT l.fact_id, v.vector FROM (SELECT fact_id, max(seq) AS last FROM vector_log"
                "  WHERE agent_id = ? AND model = ? AND seq > ? AND seq <= ? GROUP BY fact_id) l"
                " LEFT JOIN fact_vectors v ON v.fact_id = l.fact_id AND v.model = ? ORDER BY l.last"
            )
            return VectorSnapshot(
                watermark=mark, vectors=self._vectors(c, statement, [agent_id, model, after, mark, model])
            )

        return self._db.read(work)

    def counts(self) -> dict[str, int]:
        rows = self._db.read(lambda c: c.execute("SELECT model, count(*) FROM fact_vectors GROUP BY model").fetchall())
        return {str(model): int(n) for model, n in rows}


class SqlMeta:
    """``MetaRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def get(self, key: str) -> str | None:
        statement = self._d.sql("SELECT value FROM store_meta WHERE key = ?")
        row = self._db.read(lambda c: c.execute(statement, (key,)).fetchone())
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        statement = self._d.sql(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
        self._db.write(lambda c: c.execute(statement, (key, value)))
