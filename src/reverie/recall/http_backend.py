"""A ``VectorSearch`` backed by an external vector service over HTTP (``recall.vector_backend = "http"``).

Reverie keeps owning the store, the embeddings and every visibility rule; the service only answers which
fact ids are nearest to a query vector. The base URL (``recall.vector_store_url``) is used verbatim with
a trailing slash stripped, and the paths below are appended to it.

The contract (every call is ``POST`` with a JSON body; any 2xx status is success):

- ``{base}/insert``  ``{"id": str, "embedding": [float, ...], "payload": "", "metadata": {"agent_id": str,
  "model": str}}``. Inserting an id that exists replaces it. ``payload`` is always ``""``: no memory text
  ever leaves Reverie (the embedding does). The answer body is ignored.
- ``{base}/search``  ``{"embedding": [float, ...], "limit": int, "filter": {"agent_id": str, "model": str}}``
  answers ``{"results": [{"id": str, "score": float}, ...]}``, best first; ``score`` is cosine similarity.
  Honouring the filter lets the service prune before it ranks; nothing depends on it.
- ``{base}/delete``  ``{"id": str}``. Deleting an unknown id must succeed. The answer body is ignored.
- ``{base}/get_embeddings``  ``{"ids": [str, ...]}`` answers ``{"embeddings": {id: [float, ...]}}`` (ids the
  service does not hold are left out).

Timeouts: 10 s to connect; each read or write waits at most 30 s, and a response still arriving 30 s after
the request started is abandoned. Response bodies are capped at 64 MiB (read as a stream, refused past
the cap). Redirects are not followed.

Keeping the service in step: before every search the backend replays the store's vector log for that
agent and model after a per-agent watermark (as ``VectorIndex`` does), pushing ``insert`` for each fact
that has a vector and ``delete`` for each whose vector is gone (an edit, a purge, a re-embed). The first
search of an agent pushes the agent's whole snapshot. A failed push leaves the watermark where it was,
so the next search replays it again (both calls are idempotent).

What the service does not decide: every search answer is untrusted. Ids that are not Reverie ids (12
lowercase hex characters) and results without a finite numeric score are dropped with a WARNING; the
rest survive, with scores clamped to [-1, 1]. Unknown ids, ids of other agents or users, archived and
expired entries are dropped afterwards by hybrid recall, which reads candidate ids through
``store.facts.candidates(ids, filter)`` with the caller's own filter, so a service that ignores the filter
cannot widen what a caller sees.

Failures: connection refused, a timeout, a non-2xx status, a body that is not the contract's JSON or is
over the cap raise ``VectorBackendError``. Hybrid recall does not swallow it: ``rv.memory.search`` raises
it (it does not fall back to BM25 alone), so a broken backend is seen rather than silently degrading.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeGuard

import httpx
import numpy as np
import numpy.typing as npt

from reverie.errors import ConfigError, VectorBackendError
from reverie.storage.base import Store

log = logging.getLogger("reverie.recall.http")

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT = 10.0
TOTAL_TIMEOUT = 30.0
_ID = re.compile(r"[0-9a-f]{12}")
_EXCERPT_CHARS = 200
_SHOWN_CHARS = 60
_MAX_WARNINGS = 20  # per answer: a hostile answer cannot flood the log


def valid_id(value: object) -> TypeGuard[str]:
    """True for a Reverie fact id: exactly 12 lowercase hex characters."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def _shown(value: object) -> str:
    """An untrusted value, safe to log: ``repr`` (no raw newlines), cut short."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _score(value: object) -> float | None:
    """A finite number clamped to cosine's range, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    score = float(value)
    return min(1.0, max(-1.0, score)) if math.isfinite(score) else None


def parse_results(payload: Any, k: int) -> list[tuple[str, float]]:
    """The usable ``(id, score)`` pairs of a ``/search`` answer, best first, at most ``k``.

    Raises ``VectorBackendError`` when the answer is not ``{"results": [...]}``. Items with a malformed id
    or a score that is not a finite number are dropped with a WARNING each (the first ``_MAX_WARNINGS``,
    then one count); a repeated id keeps its best score.
    """
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, list):
        raise VectorBackendError("the vector backend's search answer has no 'results' list")
    best: dict[str, float] = {}
    dropped = 0
    for position, item in enumerate(results):
        fact_id = item.get("id") if isinstance(item, dict) else None
        score = _score(item.get("score")) if isinstance(item, dict) else None
        if valid_id(fact_id) and score is not None:
            best[fact_id] = max(score, best.get(fact_id, -1.0))
            continue
        dropped += 1
        if dropped > _MAX_WARNINGS:
            continue
        if not isinstance(item, dict):
            log.warning("vector backend: dropped result %d, not an object: %s", position, _shown(item))
        elif not valid_id(fact_id):
            log.warning("vector backend: dropped result %d with malformed id %s", position, _shown(fact_id))
        else:
            shown = _shown(item.get("score"))
            log.warning("vector backend: dropped id %s, its score %s is not a finite number", fact_id, shown)
    if dropped > _MAX_WARNINGS:
        log.warning("vector backend: dropped %d more malformed results", dropped - _MAX_WARNINGS)
    ranked = sorted(best.items(), key=lambda pair: -pair[1])
    return ranked[: max(0, k)]


def parse_embeddings(payload: Any, wanted: Sequence[str], dim: int) -> dict[str, npt.NDArray[np.float32]]:
    """The usable vectors of a ``/get_embeddings`` answer: requested ids only, ``dim`` finite numbers each.

    Raises ``VectorBackendError`` when the answer is not ``{"embeddings": {...}}``; bad items are dropped
    with a WARNING."""
    embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
    if not isinstance(embeddings, dict):
        raise VectorBackendError("the vector backend's get_embeddings answer has no 'embeddings' object")
    requested = set(wanted)
    out: dict[str, npt.NDArray[np.float32]] = {}
    for fact_id, raw in embeddings.items():
        if fact_id not in requested:
            log.warning("vector backend: dropped an embedding for unrequested id %s", _shown(fact_id))
            continue
        numbers = raw if isinstance(raw, list) and len(raw) == dim else None
        if numbers is None or not all(_finite(x) for x in numbers):
            log.warning("vector backend: dropped a malformed embedding for id %s", fact_id)
            continue
        out[fact_id] = np.asarray(numbers, dtype=np.float32)
    return out


def _finite(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


class HttpVectorBackend:
    """``VectorSearch`` over an external service (see the module docstring for the contract).

    Thread-safe: one shared ``httpx.Client``; pushing the log is serialised by a lock, searches are not.
    Call ``close()`` (the engine does, in ``Reverie.close``).
    """

    def __init__(
        self,
        store: Store,
        url: str,
        model: str,
        dim: int,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = TOTAL_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        if timeout <= 0 or connect_timeout <= 0 or max_response_bytes < 1:
            raise ValueError("timeouts and max_response_bytes must be positive")
        self._store = store
        self.url = url.rstrip("/")
        try:  # messages name the service without any credentials in the URL
            self._shown_url = str(httpx.URL(self.url).copy_with(userinfo=b""))
        except httpx.InvalidURL as exc:
            raise ConfigError(f"the vector store URL is not a valid URL: {exc}") from None
        self.model = model
        self.dim = dim
        self._timeout = timeout
        self._cap = max_response_bytes
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
            headers={"Accept-Encoding": "identity"},  # the cap counts the bytes we keep
            follow_redirects=False,
        )
        self._watermarks: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- VectorSearch ----------------------------------------------------------------------------------
    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        """The service's ``k`` nearest candidate ids of the agent, best first, after bringing it up to date.

        Raises ``VectorBackendError`` on a transport failure or an answer that is not the contract's."""
        self.sync(agent_id)
        if k <= 0:
            return []
        body = {
            "embedding": np.asarray(query, dtype=np.float32).tolist(),
            "limit": k,
            "filter": {"agent_id": agent_id, "model": self.model},
        }
        return parse_results(self._post_json("/search", body), k)

    # -- the rest of the contract ----------------------------------------------------------------------
    def insert(self, fact_id: str, agent_id: str, vector: npt.NDArray[np.float32]) -> None:
        body = {
            "id": fact_id,
            "embedding": np.asarray(vector, dtype=np.float32).tolist(),
            "payload": "",
            "metadata": {"agent_id": agent_id, "model": self.model},
        }
        self._post("/insert", body)

    def delete(self, fact_id: str) -> None:
        self._post("/delete", {"id": fact_id})

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The service's stored vectors of ``ids`` (those it holds), checked like a search answer."""
        wanted = list(ids)
        if not wanted:
            return {}
        return parse_embeddings(self._post_json("/get_embeddings", {"ids": wanted}), wanted, self.dim)

    def sync(self, agent_id: str) -> None:
        """Push the store's vector changes of ``agent_id`` since the last sync (first time: everything)."""
        with self._lock:
            mark = self._watermarks.get(agent_id)
            vectors = self._store.vectors
            snapshot = (
                vectors.snapshot(agent_id, self.model) if mark is None else vectors.changes(agent_id, self.model, mark)
            )
            for fact_id, blob in snapshot.vectors:
                vector = None if blob is None else np.frombuffer(blob, dtype=np.float32)
                if vector is None or vector.shape[0] != self.dim:
                    self.delete(fact_id)  # gone, or of a dimension the service cannot compare
                else:
                    self.insert(fact_id, agent_id, vector)
            self._watermarks[agent_id] = max(mark or 0, snapshot.watermark)

    # -- lifecycle -------------------------------------------------------------------------------------
    def close(self) -> None:
        self._client.close()

    @property
    def closed(self) -> bool:
        return self._client.is_closed

    def __enter__(self) -> HttpVectorBackend:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------------------
    def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        raw = self._post(path, body)
        url = self._shown_url + path
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly nested JSON
            raise VectorBackendError(f"vector backend {url} answered with a body that is not JSON: {exc}") from exc

    def _post(self, path: str, body: dict[str, Any]) -> bytes:
        """The body of a 2xx answer; anything else is a ``VectorBackendError``."""
        url = self._shown_url + path
        deadline = time.monotonic() + self._timeout
        try:
            with self._client.stream("POST", self.url + path, json=body) as response:
                raw = self._read(response, url, deadline)
                status = response.status_code
        except httpx.TimeoutException as exc:
            raise VectorBackendError(f"vector backend request to {url} timed out ({type(exc).__name__})") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise VectorBackendError(f"vector backend request to {url} failed: {type(exc).__name__}: {exc}") from exc
        if not 200 <= status < 300:
            excerpt = " ".join(raw.decode("utf-8", "replace").split())[:_EXCERPT_CHARS]
            raise VectorBackendError(f"vector backend {url} answered HTTP {status}: {excerpt or '(empty body)'}")
        return raw

    def _read(self, response: httpx.Response, url: str, deadline: float) -> bytes:
        """The body, refused past the size cap or the total timeout."""
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > self._cap:
            raise VectorBackendError(f"vector backend {url} answered {declared} bytes, over the {self._cap}-byte cap")
        body = bytearray()
        for chunk in response.iter_bytes():
            body.extend(chunk)
            if len(body) > self._cap:
                raise VectorBackendError(f"vector backend {url} answered more than the {self._cap}-byte cap")
            if time.monotonic() > deadline:
                raise VectorBackendError(f"vector backend request to {url} timed out (over {self._timeout:g} s)")
        return bytes(body)
