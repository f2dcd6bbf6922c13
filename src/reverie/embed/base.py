"""The embedder port.

Invariants every provider keeps:
- ``embed`` returns a float32 array of shape ``(len(texts), dim)`` whose rows have unit L2 norm (so a dot
  product is a cosine), in the order of ``texts``;
- ``model_id`` names the model and everything that changes its vectors (a stored vector is only ever
  compared with vectors of the same ``model_id``);
- failures raise ``EmbeddingError`` (never a transport or runtime error of their own).

Queries and stored texts: ``embed`` embeds what is stored (and what is compared with stored texts as their
peer). A model trained to embed a search query differently (e5's ``"query: "`` and ``"passage: "``
prefixes), or an embedder that runs a query differently for speed (the bundled MiniLM: on a session tuned
for one text's latency, giving the same vectors), also has ``embed_queries`` (``QueryEmbedder``); callers
embedding a *search query* go through ``embed_queries(embedder, texts)``, which is ``embed`` for every other
model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch. Raises ``EmbeddingError``."""
        ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder that embeds search queries differently from the texts searched: by its model (asymmetric
    retrieval, e5) or only by how it runs them (MiniLM's low-latency query session). Only this method is
    checked at run time: ``isinstance`` on a protocol with properties would
    evaluate them (``OpenAIEmbedder.dim`` probes its server)."""

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed search queries, with the same invariants as ``Embedder.embed``. Raises ``EmbeddingError``."""
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Vectors for search queries, comparable with the vectors ``embedder.embed`` made of stored texts:
    the model's ``embed_queries`` when it has one, else ``embed``. Raises ``EmbeddingError``."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


def embed_query_and_texts(embedder: Embedder, query: str, texts: Sequence[str]) -> tuple[Vectors, Vectors]:
    """A query's vector and its candidates' (embedded on the fly): one batch when the model embeds queries as
    it embeds stored texts, a query call and a batch when it does not. Raises ``EmbeddingError``."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries([query])[0], embedder.embed(texts)
    vectors = embedder.embed([query, *texts])
    return vectors[0], vectors[1:]


def normalise_rows(matrix: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (an all-zero row stays zero)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (out / norms).astype(np.float32, copy=False)
    return result
