"""An exact in-memory vector index per (agent, model), kept in step with the store.

Invariants:
- Rows are unit vectors, so ``matrix @ query`` is cosine similarity.
- Before every search the index replays the store's vector log after its watermark, so a vector written
  or dropped by any process (a save, an edit, a purge, a reindex) is seen by the next search here.
- The index holds archived entries too: the caller hydrates candidate ids through the store with its
  filter (scope, archived, expiry, category), so the index never decides visibility.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from reverie.embed.base import Vectors
from reverie.storage.base import Store, VectorSnapshot


@dataclass
class _Matrix:
    dim: int
    watermark: int = 0
    ids: list[str | None] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    data: Vectors = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    dead: int = 0

    def apply(self, snapshot: VectorSnapshot) -> None:
        for fact_id, blob in snapshot.vectors:
            row = self.rows.get(fact_id)
            if blob is None:
                if row is not None:
                    self.data[row] = 0.0
                    self.ids[row] = None
                    del self.rows[fact_id]
                    self.dead += 1
                continue
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] != self.dim:
                continue  # another dimension under the same model id cannot be compared; reindex fixes it
            if row is None:
                row = self._append(fact_id)
            self.data[row] = vector
        self.watermark = max(self.watermark, snapshot.watermark)

    def _append(self, fact_id: str) -> int:
        row = len(self.ids)
        if row >= self.data.shape[0]:
            grown = np.zeros((max(64, row * 2), self.dim), dtype=np.float32)
            if row:
                grown[:row] = self.data[:row]
            self.data = grown
        self.ids.append(fact_id)
        self.rows[fact_id] = row
        return row

    def top(self, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        n = len(self.ids)
        if n == 0 or k <= 0:
            return []
        sims = self.data[:n] @ query
        k = min(k, n)
        best = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        order = best[np.argsort(-sims[best], kind="stable")]
        out = []
        for i in order:
            fact_id = self.ids[int(i)]
            if fact_id is not None:
                out.append((fact_id, float(sims[int(i)])))
        return out


class VectorSearch(Protocol):
    """What hybrid recall needs from a vector backend: nearest fact ids of one agent, best first.

    Results are candidates only: the caller hydrates them through the store with its own filter, so a
    backend can never widen what a caller sees.
    """

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]: ...


class VectorIndex:
    """Exact cosine search over one model's vectors, one matrix per agent, thread-safe (the default,
    in-process ``VectorSearch``)."""

    def __init__(self, store: Store, model: str, dim: int) -> None:
        self._store = store
        self.model = model
        self.dim = dim
        self._matrices: dict[str, _Matrix] = {}
        self._lock = threading.Lock()

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest fact ids of the agent with their cosine similarity, best first."""
        with self._lock:
            matrix = self._current(agent_id)
            return matrix.top(np.asarray(query, dtype=np.float32), k)

    def size(self, agent_id: str) -> int:
        with self._lock:
            return len(self._current(agent_id).rows)

    def _current(self, agent_id: str) -> _Matrix:
        matrix = self._matrices.get(agent_id)
        if matrix is None or matrix.dead > max(1024, len(matrix.ids) // 4):
            # First use, or many dead rows: load afresh (also compacts).
            matrix = _Matrix(dim=self.dim)
            matrix.apply(self._store.vectors.snapshot(agent_id, self.model))
            self._matrices[agent_id] = matrix
        else:
            matrix.apply(self._store.vectors.changes(agent_id, self.model, matrix.watermark))
        return matrix
