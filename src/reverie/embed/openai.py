"""An embedder for any OpenAI-compatible ``POST {endpoint}/embeddings`` API: OpenAI itself, Ollama's
``/v1``, vLLM, the llama.cpp server.

The endpoint is used exactly as given (``endpoint.rstrip("/") + "/embeddings"``): we never guess whether
``/v1`` belongs in it. Inputs longer than ``max_input_chars`` are truncated, not refused. Responses are
checked strictly (count, indices, numbers, dimensions) and every failure is an ``EmbeddingError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from reverie.embed.base import Vectors, normalise_rows
from reverie.errors import EmbeddingError
from reverie.runtime.http import openai_client

PROBE_TEXT = "dimension probe"
_EXCERPT_CHARS = 200


class OpenAIEmbedder:
    """``model_id`` is ``openai:<model>``. Thread-safe (one shared ``httpx.Client``); call ``close()``."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_input_chars: int = 30_000,
        batch_size: int = 64,
    ) -> None:
        if dim is not None and dim < 1:
            raise ValueError("dim must be positive")
        if max_input_chars < 1 or batch_size < 1:
            raise ValueError("max_input_chars and batch_size must be positive")
        self._url = endpoint.rstrip("/") + "/embeddings"
        self._model = model
        self._dim = dim
        self._max_input_chars = max_input_chars
        self._batch_size = batch_size
        self._client = openai_client(api_key, timeout=timeout, connect_timeout=connect_timeout)

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        """The configured dimension, or the one the server answers (one probe embedding, then cached)."""
        if self._dim is None:
            self._dim = int(self.embed([PROBE_TEXT]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        inputs = [text[: self._max_input_chars] for text in texts]
        batches = [
            self._embed_batch(inputs[start : start + self._batch_size])
            for start in range(0, len(inputs), self._batch_size)
        ]
        return normalise_rows(np.vstack(batches))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _embed_batch(self, batch: list[str]) -> npt.NDArray[np.float64]:
        payload = self._post({"model": self._model, "input": batch})
        rows = _parse_rows(payload, len(batch))
        width = rows.shape[1]
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise EmbeddingError(f"{self._url} returned {width}-dimensional embeddings; expected {self._dim}")
        return rows

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            response = self._client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise EmbeddingError(f"embedding request to {self._url} timed out ({type(exc).__name__})") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise EmbeddingError(f"embedding request to {self._url} failed: {type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            excerpt = " ".join(response.text.split())[:_EXCERPT_CHARS]
            raise EmbeddingError(f"{self._url} answered HTTP {response.status_code}: {excerpt or '(empty body)'}")
        try:
            return response.json()
        except ValueError as exc:
            raise EmbeddingError(f"{self._url} answered with a body that is not JSON: {exc}") from exc


def _parse_rows(payload: Any, expected: int) -> npt.NDArray[np.float64]:
    """The embeddings of an OpenAI-shaped response, ordered by ``data[i].index``, checked strictly."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbeddingError("embedding response has no 'data' list")
    if len(data) != expected:
        raise EmbeddingError(f"embedding response has {len(data)} embeddings for {expected} inputs")
    by_index: dict[int, list[float]] = {}
    for position, item in enumerate(data):
        index = item.get("index") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < expected or index in by_index:
            raise EmbeddingError(f"embedding response item {position} has a missing, repeated or bad index")
        by_index[index] = _vector(item.get("embedding"), index)
    widths = {len(vector) for vector in by_index.values()}
    if len(widths) > 1:
        raise EmbeddingError(f"embedding response mixes dimensions {sorted(widths)}")
    rows = np.array([by_index[i] for i in range(expected)], dtype=np.float64)
    if not np.isfinite(rows).all():
        raise EmbeddingError("embedding response contains non-finite numbers")
    zero = np.flatnonzero(~rows.any(axis=1))
    if zero.size:
        raise EmbeddingError(f"embedding {int(zero[0])} is all zeros (it cannot be normalised)")
    return rows


def _vector(value: Any, index: int) -> list[float]:
    if not isinstance(value, list) or not value:
        raise EmbeddingError(f"embedding {index} is missing or not a non-empty list")
    if not all(type(number) is float or type(number) is int for number in value):
        raise EmbeddingError(f"embedding {index} contains non-numeric values")
    return value
