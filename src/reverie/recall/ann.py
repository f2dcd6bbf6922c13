"""The optional approximate index: an HNSW graph (usearch) over the rows of one agent's vector matrix.

Invariants:
- Keys are matrix rows. A row's vector never changes once written (a changed vector takes a new row), so
  a key always means the vector it was added with; a row that dies is removed from the graph later.
- The graph is derived data, built from the matrix (itself loaded from the store's table) and never
  saved: a new process, or a compacted matrix, builds it again.
- Only the follower thread of ``VectorIndex`` adds or removes; searches run under the same ``lock`` and
  never wait for it (``try_search`` gives up and the caller searches exactly).
- Results are candidate rows only: the caller re-scores them exactly against the matrix, so scores are
  true cosines, and a dead row still in the graph is dropped there.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from reverie.embed.base import Vectors

Rows = npt.NDArray[np.int64]
Mode = Literal["exact", "ann", "missing"]
# HNSW parameters (docs/adr/0007). Vectors are held as float16 in the graph: half the memory of float32
# and a faster build, at no cost in what callers see, because candidates are re-scored in float32.
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 256
GRAPH_DTYPE = "f16"
BUILD_THREADS = max(1, (os.cpu_count() or 1) // 2)


@functools.cache
def installed() -> bool:
    """Whether the ``usearch`` package can be imported (the ``ann`` extra)."""
    return importlib.util.find_spec("usearch") is not None


def mode(live: int, threshold: int, usearch_installed: bool, *, has_graph: bool = False) -> Mode:
    """How a matrix of ``live`` vectors is searched: ``exact`` at or below ``threshold`` (0: never ANN),
    ``ann`` above it, ``missing`` above it without usearch (searched exactly; the caller says so once).

    A matrix that already has a graph keeps it down to half the threshold, so a few purges and saves
    around the threshold do not drop and rebuild it again and again.
    """
    floor = threshold // 2 if has_graph else threshold
    if threshold <= 0 or live <= floor:
        return "exact"
    return "ann" if usearch_installed else "missing"


class Graph:
    """HNSW over matrix rows, cosine on unit vectors (inner product). Not thread-safe by itself: the
    owner serialises calls with ``lock``.

    ``covered``: rows below it were offered to the graph (live ones added); ``removed``: how many entries
    of the matrix's list of dead rows were taken out; ``ready``: the first build reached the matrix's end.
    """

    def __init__(self, dim: int) -> None:
        # usearch's extension carries its own static libstdc++ and publishes its locale ids process-wide;
        # onnxruntime imported after it then crashes the interpreter (SIGSEGV at import, usearch 2.26 /
        # onnxruntime 1.32). Imported first, both work: so onnxruntime (a dependency anyway) goes first.
        import onnxruntime  # noqa: F401
        from usearch.index import Index

        self._index: Any = Index(
            ndim=dim,
            metric="ip",
            dtype=GRAPH_DTYPE,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        self.lock = threading.Lock()
        self.covered = 0
        self.removed = 0
        self.ready = False

    def __len__(self) -> int:
        return len(self._index)

    def add(self, rows: Rows, vectors: Vectors) -> None:
        if len(rows):
            # Half the cores: the build runs beside searches and embedding, which need the others.
            self._index.add(rows.astype(np.uint64), vectors, threads=BUILD_THREADS)

    def remove(self, rows: Rows) -> None:
        if len(rows):
            self._index.remove(rows.astype(np.uint64))

    def try_search(self, query: npt.NDArray[np.float32], count: int) -> Rows | None:
        """Up to ``count`` candidate rows nearest ``query``; None when the follower holds the graph."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            # The beam must be at least as wide as the answer, or the far end of the answer is guesswork.
            if count > self._index.expansion_search:
                self._index.expansion_search = count
            found = self._index.search(query, count, threads=1)
            return np.asarray(found.keys, dtype=np.int64)
        finally:
            self.lock.release()
