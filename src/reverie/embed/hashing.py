"""A deterministic embedder for tests: feature hashing of words. Texts that share words get positive
cosine; identical texts get 1.0. No model, no I/O, stable across processes and platforms."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from reverie.core.text import query_terms
from reverie.embed.base import Vectors, normalise_rows


class HashEmbedder:
    """``model_id`` is ``hash-<dim>``; each word adds +1 or -1 to one of ``dim`` buckets."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        self._dim = dim
        self.calls = 0  # how many batches were embedded (tests check batching and caching with it)

    default_min_similarity = 0.01  # word-hash cosines are small: any shared word counts, none does not

    @property
    def model_id(self) -> str:
        return f"hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in query_terms(text) or [text]:
                digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self._dim] += 1.0 if (value >> 32) & 1 else -1.0
        return normalise_rows(out)
