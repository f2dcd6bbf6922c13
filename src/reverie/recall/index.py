"""An in-memory vector index per (agent, model), kept in step with the store: exact by default, through
an optional HNSW graph (``recall.ann``) for agents with many vectors.

Invariants:
- Rows are unit vectors, so ``matrix @ query`` is cosine similarity.
- Before every search the index replays the store's vector log after its watermark, so a vector written
  or dropped by any process (a save, an edit, a purge, a reindex) is seen by the next search here.
- A row never changes once written: a changed vector kills its row and takes a new one, so the graph
  (keyed by row) can follow the matrix with adds and removals only.
- Scores are always exact cosines from the matrix; the graph only proposes candidate rows, and rows the
  graph has not reached yet are scanned exactly, so a search never misses a vector for being new.
- The index holds archived entries too: the caller hydrates candidate ids through the store with its
  filter (scope, archived, expiry, category), so the index never decides visibility.
"""

from __future__ import annotations

import atexit
import logging
import threading
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from reverie.embed.base import Vectors
from reverie.recall import ann
from reverie.storage.base import Store, VectorSnapshot

log = logging.getLogger("reverie.recall")
# Graph candidates fetched per result: re-scoring exactly and dropping dead rows needs some slack.
ANN_OVERFETCH = 2
# Rows the follower adds per turn: how long it holds the graph (searches then go exact, never wait) and
# how long closing the index may wait for it.
FOLLOW_CHUNK = 1024
_warned_missing = False


@dataclass
class _Matrix:
    dim: int
    watermark: int = 0
    ids: list[str | None] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    data: Vectors = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    died: list[int] = field(default_factory=list)  # dead rows, in the order they died (the graph follows)
    graph: ann.Graph | None = None

    @property
    def dead(self) -> int:
        return len(self.died)

    def apply(self, snapshot: VectorSnapshot) -> None:
        for fact_id, blob in snapshot.vectors:
            row = self.rows.get(fact_id)
            vector = None if blob is None else np.frombuffer(blob, dtype=np.float32)
            if vector is not None and vector.shape[0] != self.dim:
                vector = None  # another dimension under the same model id cannot be compared; reindex fixes it
            if row is not None:
                if vector is not None and np.array_equal(self.data[row], vector):
                    continue  # replayed twice (a snapshot overlaps the log), or re-embedded to the same vector
                self._kill(fact_id, row)
            if vector is not None:
                row = self._append(fact_id)  # first: it may replace self.data with a larger array
                self.data[row] = vector
        self.watermark = max(self.watermark, snapshot.watermark)

    def _kill(self, fact_id: str, row: int) -> None:
        self.data[row] = 0.0
        self.ids[row] = None
        del self.rows[fact_id]
        self.died.append(row)

    def _append(self, fact_id: str) -> int:
        row = len(self.ids)
        if row >= self.data.shape[0]:
            # A new array, never a resize in place: the follower may still be reading the old one.
            grown = np.zeros((max(64, row * 2), self.dim), dtype=np.float32)
            if row:
                grown[:row] = self.data[:row]
            self.data = grown
        self.ids.append(fact_id)
        self.rows[fact_id] = row
        return row

    def top(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The exact ``k`` best live rows."""
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        return self._best(np.arange(n), self.data[:n] @ query, k)

    def top_many(self, queries: npt.NDArray[np.float32], k: int) -> list[list[tuple[str, float]]]:
        """``top`` for each row of ``queries``: a matrix product per chunk of queries, not a scan per query
        (the matrix is read once per chunk; a chunk's scores stay under ~16 MiB)."""
        n = len(self.ids)
        if n == 0 or k <= 0:
            return [[] for _ in range(len(queries))]
        rows = np.arange(n)
        chunk = max(1, 4_000_000 // n)
        out: list[list[tuple[str, float]]] = []
        for start in range(0, len(queries), chunk):
            scores = queries[start : start + chunk] @ self.data[:n].T
            out.extend(self._best(rows, sims, k) for sims in scores)
        return out

    def top_among(
        self, candidates: npt.NDArray[np.int64], query: npt.NDArray[np.float32], k: int
    ) -> list[tuple[str, float]]:
        """The ``k`` best live rows among ``candidates``, scored exactly."""
        if len(candidates) == 0 or k <= 0:
            return []
        return self._best(candidates, self.data[candidates] @ query, k)

    def _best(self, rows: npt.NDArray[np.int64], sims: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        k = min(k, len(rows))
        best = np.argpartition(-sims, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
        out = []
        for i in best[np.argsort(-sims[best], kind="stable")]:
            fact_id = self.ids[int(rows[i])]
            if fact_id is not None:
                out.append((fact_id, float(sims[i])))
        return out


class VectorSearch(Protocol):
    """What hybrid recall needs from a vector backend: nearest fact ids of one agent, best first.

    Results are candidates only: the caller hydrates them through the store with its own filter, so a
    backend can never widen what a caller sees.
    """

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]: ...


class VectorIndex:
    """Cosine search over one model's vectors, one matrix per agent, thread-safe (the default, in-process
    ``VectorSearch``).

    An agent with more than ``ann_threshold`` vectors (0: never) is searched through an HNSW graph when
    usearch is installed. One follower thread builds and extends the graphs in the background; until an
    agent's graph has caught up once, its searches stay exact.
    """

    def __init__(self, store: Store, model: str, dim: int, *, ann_threshold: int = 0) -> None:
        self._store = store
        self.model = model
        self.dim = dim
        self.ann_threshold = ann_threshold
        self._matrices: dict[str, _Matrix] = {}
        self._lock = threading.Lock()
        self._due: set[str] = set()  # agents whose graph is behind their matrix
        self._follower: threading.Thread | None = None
        self._closing = threading.Event()
        self._at_exit = False
        self._graph_failed = False  # a graph failed to build: exact search from then on

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest fact ids of the agent with their cosine similarity, best first."""
        vector = np.asarray(query, dtype=np.float32)
        with self._lock:
            matrix = self._current(agent_id)
            graph = self._graph(agent_id, matrix)
            if graph is None or not graph.ready or k <= 0:
                return matrix.top(vector, k)
            found = graph.try_search(vector, min(k * ANN_OVERFETCH, len(matrix.ids)))
            if found is None:
                return matrix.top(vector, k)  # the follower holds the graph: never wait for it
            tail = np.arange(graph.covered, len(matrix.ids), dtype=np.int64)
            return matrix.top_among(np.concatenate([found, tail]), vector, k)

    def search_many(self, agent_id: str, queries: npt.NDArray[np.float32], k: int) -> list[list[tuple[str, float]]]:
        """``search`` for each row of ``queries`` (the fold after embedding checks a batch of new entries):
        one matrix product for them all while the agent is searched exactly, instead of a scan of every
        vector per query; through the graph, one query at a time, once the graph serves."""
        vectors = np.asarray(queries, dtype=np.float32)
        with self._lock:
            matrix = self._current(agent_id)
            graph = self._graph(agent_id, matrix)
            if graph is None or not graph.ready:
                return matrix.top_many(vectors, k)
        return [self.search(agent_id, vector, k) for vector in vectors]

    def size(self, agent_id: str) -> int:
        with self._lock:
            return len(self._current(agent_id).rows)

    def searched_by_graph(self, agent_id: str) -> bool:
        """Whether the agent's searches go through its graph now (its graph has caught up once)."""
        with self._lock:
            matrix = self._matrices.get(agent_id)
            return matrix is not None and matrix.graph is not None and matrix.graph.ready

    def close(self) -> None:
        """Stop the follower (after its current turn). Searches still work and stay complete: rows the graph
        no longer reaches are scanned exactly, and dead rows it still holds are dropped when re-scored."""
        self._closing.set()
        follower = self._follower
        if follower is not None:
            follower.join()
        atexit.unregister(self.close)

    def _current(self, agent_id: str) -> _Matrix:
        matrix = self._matrices.get(agent_id)
        if matrix is None or matrix.dead > max(1024, len(matrix.ids) // 4):
            # First use, or many dead rows: load afresh (also compacts; the graph is rebuilt).
            matrix = _Matrix(dim=self.dim)
            matrix.apply(self._store.vectors.snapshot(agent_id, self.model))
            self._matrices[agent_id] = matrix
        else:
            matrix.apply(self._store.vectors.changes(agent_id, self.model, matrix.watermark))
        return matrix

    # -- the graph (called with self._lock held) -------------------------------------------------------
    def _graph(self, agent_id: str, matrix: _Matrix) -> ann.Graph | None:
        """The agent's graph when it should have one, created (empty) and handed to the follower."""
        global _warned_missing
        threshold = 0 if self._graph_failed else self.ann_threshold
        how = ann.mode(len(matrix.rows), threshold, ann.installed(), has_graph=matrix.graph is not None)
        if how == "missing" and not _warned_missing:
            _warned_missing = True
            log.warning(
                "agent %r has %d vectors (recall.ann_threshold = %d) but usearch is not installed: searching "
                "exactly; pip install 'reverie[ann]' for the approximate index",
                agent_id, len(matrix.rows), self.ann_threshold,
            )  # fmt: skip
        if how != "ann":
            matrix.graph = None
            return None
        if matrix.graph is None:
            matrix.graph = ann.Graph(self.dim)
        graph = matrix.graph
        if (graph.covered < len(matrix.ids) or graph.removed < matrix.dead) and not self._closing.is_set():
            self._due.add(agent_id)
            if self._follower is None:
                self._follower = threading.Thread(target=self._follow, name="reverie-ann", daemon=True)
                self._follower.start()
                if not self._at_exit:
                    # A daemon thread still inside usearch at interpreter teardown may crash it: stop first.
                    atexit.register(self.close)
                    self._at_exit = True
        return graph

    def _follow(self) -> None:
        """The follower: one turn at a time (removals, then up to FOLLOW_CHUNK new rows) for each agent
        whose graph is behind, until none is. Reads the matrix under the index lock, writes the graph
        under the graph's lock, so searches and saves never wait for a build."""
        while not self._closing.is_set():
            with self._lock:
                turn = self._next_turn()
                if turn is None:
                    self._follower = None
                    return
            matrix, graph, gone, rows, vectors, covered, removed = turn
            try:
                with graph.lock:
                    graph.remove(gone)
                    graph.add(rows, vectors)
            except Exception:  # usearch's own errors (memory, a broken build): never fail a search over it
                log.exception("the approximate vector index failed; searching exactly from now on")
                with self._lock:
                    self._graph_failed = True
                    self._follower = None
                return
            with self._lock:
                graph.covered, graph.removed = covered, removed
                graph.ready = graph.ready or covered >= len(matrix.ids)

    def _next_turn(
        self,
    ) -> tuple[_Matrix, ann.Graph, npt.NDArray[np.int64], npt.NDArray[np.int64], Vectors, int, int] | None:
        while self._due:
            agent_id = self._due.pop()
            matrix = self._matrices.get(agent_id)
            graph = None if matrix is None else matrix.graph
            if matrix is None or graph is None:
                continue  # compacted or dropped meanwhile: its graph is gone with it
            # Rows not yet offered never entered the graph, so only older dead rows need removing.
            gone = np.array([r for r in matrix.died[graph.removed :] if r < graph.covered], dtype=np.int64)
            end = min(len(matrix.ids), graph.covered + FOLLOW_CHUNK)
            rows = np.array([r for r in range(graph.covered, end) if matrix.ids[r] is not None], dtype=np.int64)
            if end < len(matrix.ids):
                self._due.add(agent_id)  # more next turn; other agents get theirs in between
            # Fancy indexing copies: the graph gets the vectors as they are now, even if a row dies later.
            return matrix, graph, gone, rows, matrix.data[rows], end, matrix.dead
        return None
