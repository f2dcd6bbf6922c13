"""Vectors on PostgreSQL + pgvector, with nearest-neighbour search in the database: what differs from the
shared ``sql.vectors`` (the content check, the change log and its per-agent positions live there).

Vectors arrive and leave as float32 bytes; the column is pgvector's ``vector`` with no fixed dimension, so
one table holds every model's vectors. They are read in binary (numpy arrays) and written as numpy arrays.

The HNSW indexes (``NearestVectors``). Invariants:
- One partial expression index per (model, dim): ``USING hnsw ((vector::vector(DIM)) vector_cosine_ops)
  WHERE model = '<model>' AND dim = DIM`` (``halfvec`` past pgvector's 2,000 dimensions for ``vector``, up
  to 4,000; no index beyond, where searches scan exactly). Its name derives from (model, dim) only, so every
  process finds the same index.
- ``put_many`` makes the index of a (model, dim) it is asked to write before writing, once: in a short
  transaction of its own that holds no other lock (``CREATE INDEX`` waits for every open write to the
  table, so holding entry locks meanwhile could deadlock), under an advisory transaction lock (two
  processes never race on ``CREATE INDEX``). Each process remembers the indexes it saw committed and skips
  the check for them afterwards. A ``put_many`` inside a caller's transaction makes no index (it would wait
  for that very transaction); the next top-level one does, and searches stay exact meanwhile.
- Nothing drops an index: a (model, dim) no longer written keeps an index over no rows, which costs
  nothing to maintain. ``reverie reindex`` to a new model simply makes the new model's index.
- Rows that arrive another way (a copy between stores, a restored backup) are indexed by an index that
  exists; a (model, dim) first seen that way gets its index from ``index_all`` (which the copy and the
  restore call once their transaction has committed) or, failing that, from the first ``nearest`` of it.
- ``nearest`` orders by the index's own expression under its own predicate, with model and dimension as
  literals (a generic plan cannot prove a partial index's predicate from parameters), so the planner can
  use the index; it may as well read the agent's rows through ``fact_vectors_agent_model`` and sort them (a
  small agent), which is exact. Scores are exact cosines of the stored vectors, whatever proposed the rows.
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from psycopg import pq, sql

from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.vectors import INSERT, SqlVectors

# Advisory-lock class (first key of pg_advisory_xact_lock) serialising CREATE INDEX of one (model, dim);
# distinct from the classes in ``database``.
LOCK_INDEX = 7304
# pgvector's HNSW limits: ``vector`` up to 2,000 dimensions, ``halfvec`` up to 4,000.
VECTOR_MAX_DIM = 2000
HALFVEC_MAX_DIM = 4000
# hnsw.ef_search: the candidate list a scan keeps; pgvector's default is 40 and its maximum 1,000.
EF_SEARCH_MIN = 40
EF_SEARCH_MAX = 1000
INDEX_BUILD_MEMORY = "2GB"  # maintenance_work_mem while building an index (one statement)


def _blob(value: Any) -> bytes:
    """float32 bytes of a vector read back from the database (pgvector ``Vector`` or a numpy array)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32).tobytes()


@dataclass(frozen=True, slots=True)
class HnswIndex:
    """The HNSW index of one (model, dim): its name, indexed expression and predicate, and the statements
    that make it and search through it (the search repeats the expression and predicate exactly)."""

    model: str
    dim: int

    @property
    def kind(self) -> str | None:
        """The type the vectors are cast to in the index, or None when no HNSW index can hold them."""
        if self.dim <= VECTOR_MAX_DIM:
            return "vector"
        return "halfvec" if self.dim <= HALFVEC_MAX_DIM else None

    @property
    def name(self) -> str:
        digest = hashlib.sha256(self.model.encode()).hexdigest()[:16]
        return f"fact_vectors_hnsw_{self.dim}_{digest}"

    def _typed(self, value: sql.Composable) -> sql.Composed:
        kind = self.kind or "vector"
        return sql.SQL("({}::{}({}))").format(value, sql.SQL(kind), sql.SQL(str(int(self.dim))))

    @property
    def _predicate(self) -> sql.Composed:
        return sql.SQL("model = {} AND dim = {}").format(sql.Literal(self.model), sql.Literal(int(self.dim)))

    def create(self) -> sql.Composed:
        ops = f"{self.kind}_cosine_ops"
        return sql.SQL("CREATE INDEX IF NOT EXISTS {} ON fact_vectors USING hnsw ({} {}) WHERE {}").format(
            sql.Identifier(self.name), self._typed(sql.SQL("vector")), sql.SQL(ops), self._predicate
        )

    def search(self) -> sql.Composed:
        """Parameters: ``agent``, ``query`` (a float32 array), ``k``. Answers (fact_id, cosine similarity)."""
        order = (
            sql.SQL("vector <=> %(query)s")
            if self.kind is None
            else sql.SQL("{} <=> {}").format(self._typed(sql.SQL("vector")), self._typed(sql.SQL("%(query)s")))
        )
        return sql.SQL(
            "SELECT fact_id, 1 - (vector <=> %(query)s) FROM fact_vectors"
            " WHERE {} AND agent_id = %(agent)s ORDER BY {} LIMIT %(k)s"
        ).format(self._predicate, order)


class PgVectors(SqlVectors):
    """``VectorRepository`` and ``NearestVectors`` on PostgreSQL: pgvector columns, per-agent log
    watermarks (see ``migrations``), and HNSW search in the database (see the module docstring)."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, POSTGRES)
        self._indexed: set[tuple[str, int]] = set()  # (model, dim) whose index this process saw committed
        self._lock = threading.Lock()

    def put_many(self, rows: list[tuple[str, str, bytes]], *, model: str, dim: int, at: datetime) -> int:
        """As the protocol says; the entries are locked while their vectors are written, so an edit racing
        with it either commits first (the row is skipped) or waits and then drops the vector. Raises
        ``ValueError`` for a vector that is not ``dim`` float32 values (the index could not hold it)."""
        for _, _, vector in rows:
            if len(vector) != 4 * dim:
                raise ValueError(f"a vector of {len(vector)} bytes is not {dim} float32 values")
        return super().put_many(rows, model=model, dim=dim, at=at)

    def _prepare(self, rows: list[tuple[str, str, bytes]], model: str, dim: int) -> None:
        self._ensure_index(HnswIndex(model, dim))

    def _vector_in(self, vector: bytes) -> Any:
        return np.frombuffer(vector, dtype=np.float32)

    def _insert(self, c: Conn, rows: list[tuple[Any, ...]]) -> None:
        with c.cursor() as cur:
            cur.executemany(self._d.sql(INSERT), rows)

    def _vectors(self, c: Conn, statement: str, params: list[Any]) -> list[tuple[str, bytes | None]]:
        # Binary: pgvector hands the vectors over as numpy arrays, not text to parse.
        rows = c.execute(self._d.sql(statement), params, binary=True).fetchall()
        return [(str(r[0]), None if r[1] is None else _blob(r[1])) for r in rows]

    def _ensure_index(self, index: HnswIndex) -> None:
        """Make ``index`` unless this process saw it already, in a transaction of its own holding no other
        lock: ``CREATE INDEX`` waits for every open write to ``fact_vectors`` to finish, so a write that held
        entry locks meanwhile could deadlock with them. Inside a caller's transaction (which may hold such
        locks, and could roll the index back) it does nothing: the next top-level write makes the index."""
        key = (index.model, index.dim)
        with self._lock:
            if index.kind is None or key in self._indexed:
                return

        def work(c: Conn) -> bool:
            if c.info.transaction_status != pq.TransactionStatus.IDLE:
                return False  # the caller's transaction connection
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_INDEX, index.name))
                # Checked first: CREATE INDEX IF NOT EXISTS would still wait for the table's writers.
                row = c.execute("SELECT to_regclass(%s) IS NOT NULL", (index.name,)).fetchone()
                if not (row and row[0]):
                    # A graph that fits in maintenance_work_mem builds many times faster (pgvector's advice);
                    # for this one statement only. A million 384-dimension vectors need about 2 GB.
                    c.execute(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'")
                    c.execute(index.create())
            return True

        if self._db.read(work):
            with self._lock:
                self._indexed.add(key)

    def index_all(self) -> None:
        """Make the index of every (model, dim) stored: after vectors arrived in bulk (a copy, a restore)."""
        pairs = self._db.read(lambda c: c.execute("SELECT DISTINCT model, dim FROM fact_vectors").fetchall())
        for model, dim in pairs:
            self._ensure_index(HnswIndex(str(model), int(dim)))

    def nearest(self, agent_id: str, model: str, query: bytes, k: int) -> list[tuple[str, float]]:
        """The ``k`` vectors of ``model`` nearest ``query`` among the agent's, as (fact_id, cosine
        similarity), best first. Candidates only: archived entries included, the caller hydrates."""
        vector = np.frombuffer(query, dtype=np.float32)
        if k <= 0 or vector.size == 0:
            return []
        index = HnswIndex(model, int(vector.size))
        self._ensure_index(index)  # a no-op once this process has seen the index
        # The scan keeps this many candidates (k at least: fewer could not fill the answer); the connection's
        # iterative scan goes on past it when the agent's filter leaves too few. A scan's cost grows with it
        # about linearly (1M vectors: ef 200 took 42 ms, ef 100 21 ms), and hybrid recall already over-fetches
        # twice the candidates it keeps, so k itself is the size.
        ef_search = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, k))

        def work(c: Conn) -> list[tuple[Any, ...]]:
            c.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))  # this transaction only
            return c.execute(index.search(), {"agent": agent_id, "query": vector, "k": k}).fetchall()

        # A transaction (though it writes nothing) so the setting stays local to this search.
        rows = self._db.write(work)
        found = [(str(fact_id), _similarity(score)) for fact_id, score in rows]
        # Iterative scans return rows in relaxed order: sort by the exact score.
        found.sort(key=lambda pair: -pair[1])
        return found


def _similarity(score: Any) -> float:
    """A cosine similarity; a zero vector's (NaN, undefined) counts as 0, as in the in-memory index."""
    value = float(score) if score is not None else 0.0
    return value if math.isfinite(value) else 0.0
