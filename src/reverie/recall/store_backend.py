"""A ``VectorSearch`` answered by the store itself (``recall.vector_backend = "store"``, or ``"auto"`` on a
store whose vector repository is ``NearestVectors``: PostgreSQL + pgvector).

The process holds no vectors: every search is one query against the store's vectors as they are at that
moment, so a vector written, replaced or dropped by any process (a save, an edit, a purge, a re-embed) is
seen by the next search here with no cache to invalidate. Results are candidates only, as ``VectorIndex``'s
(archived entries included): hybrid recall hydrates them through the store with the caller's filter.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from reverie.storage.base import NearestVectors


class StoreVectorSearch:
    """Nearest fact ids of one model's vectors, searched in the store. Thread-safe (no state)."""

    def __init__(self, vectors: NearestVectors, model: str, dim: int) -> None:
        self._vectors = vectors
        self.model = model
        self.dim = dim

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest fact ids of the agent with their cosine similarity, best first."""
        if k <= 0:
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dim:
            raise ValueError(f"a query of {vector.shape[0]} dimensions for a {self.dim}-dimension model")
        return self._vectors.nearest(agent_id, self.model, vector.tobytes(), k)

    def close(self) -> None:
        """Nothing to release: the store's connections belong to the store."""
