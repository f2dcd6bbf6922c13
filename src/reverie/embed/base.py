"""The embedder port.

Invariants every provider keeps:
- ``embed`` returns a float32 array of shape ``(len(texts), dim)`` whose rows have unit L2 norm (so a dot
  product is a cosine), in the order of ``texts``;
- ``model_id`` names the model and everything that changes its vectors (a stored vector is only ever
  compared with vectors of the same ``model_id``);
- failures raise ``EmbeddingError`` (never a transport or runtime error of their own).
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


def normalise_rows(matrix: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (an all-zero row stays zero)."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    result: Vectors = (out / norms).astype(np.float32, copy=False)
    return result
