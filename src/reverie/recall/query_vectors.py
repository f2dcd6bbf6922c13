"""Query vectors, cached: agents repeat queries, and embedding is the slow part of a search."""

from __future__ import annotations

import threading
from collections import OrderedDict

from reverie.embed.base import Embedder, Vectors, embed_queries
from reverie.runtime.coalesce import Coalescer


class QueryEmbeddings:
    """A small LRU of query vectors: agents repeat queries, and embedding is the slow part of a search.
    Queries missing from it at the same time (concurrent searches) are embedded together, one model run for
    all (``runtime.coalesce``)."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        self._embedder = embedder
        self._embed: Coalescer[str, Vectors] = Coalescer(lambda queries: list(embed_queries(embedder, queries)))
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, query: str) -> Vectors:
        with self._lock:
            hit = self._cache.get(query)
            if hit is not None:
                self._cache.move_to_end(query)
                return hit
        vector: Vectors = self._embed(query)
        with self._lock:
            self._cache[query] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector
