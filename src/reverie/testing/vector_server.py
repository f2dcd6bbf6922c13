"""A real vector service on loopback speaking ``HttpVectorBackend``'s contract, for tests.

    with LoopbackVectorServer() as server:
        rv = reverie.open(home, recall={"vector_backend": "http", "vector_store_url": server.url})

``server.url`` is ``http://127.0.0.1:<port>/collections/memories`` (a path prefix, so clients must append
to the base URL verbatim). ``POST {url}/insert``, ``/search``, ``/delete`` and ``/get_embeddings`` keep
vectors in memory and search them by exact cosine similarity, honouring the ``agent_id`` / ``model``
filter. Every request is recorded in ``server.requests`` (path relative to the base URL).

Misbehaviour for tests: ``ignore_filter`` (search across every agent and model), ``inject_ids`` (extra
results appended to every search answer: an id string gets score 0.99, a dict is appended as given),
``fail_next``, ``delay_next`` and ``oversize_next`` (one each, optionally for one endpoint only).
Standard library only; serves HTTP/1.0 (one request per connection) so shutdown never waits on an idle
keep-alive connection.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from reverie.testing._loopback import LoopbackServer, RecordedRequest

BASE_PATH = "/collections/memories"
ENDPOINTS = ("insert", "search", "delete", "get_embeddings")
INJECTED_SCORE = 0.99
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class StoredVector:
    """What ``/insert`` received for one id."""

    embedding: tuple[float, ...]
    payload: str
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    body: bytes = b""
    oversize: int = 0  # > 0: stream this many bytes of a valid JSON body instead
    declare_length: bool = True


@dataclass(frozen=True, slots=True)
class _Scripted:
    endpoint: str | None
    reply: _Reply | None = None
    delay: float = 0.0


def _json(status: int, payload: Any) -> _Reply:
    return _Reply(status, json.dumps(payload).encode())


def _numbers(value: Any) -> list[float] | None:
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in value):
        return None
    return [float(x) for x in value]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return -1.0
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return 0.0 if na == 0 or nb == 0 else sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


class LoopbackVectorServer(LoopbackServer):
    """A context manager: binds 127.0.0.1 on a free port on enter, stops and joins its threads on exit."""

    def __init__(self, *, ignore_filter: bool = False, inject_ids: Sequence[str | dict[str, Any]] = ()) -> None:
        super().__init__()
        self.ignore_filter = ignore_filter
        self.inject_ids: list[str | dict[str, Any]] = list(inject_ids)
        self._vectors: dict[str, StoredVector] = {}
        self._scripted: deque[_Scripted] = deque()

    thread_name = "loopback-vectors"

    def _write(self, handler: BaseHTTPRequestHandler, reply: _Reply) -> None:
        if not reply.oversize:
            super()._write(handler, reply)
            return
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        head, tail = b'{"results": [], "pad": "', b'"}'
        if reply.declare_length:
            handler.send_header("Content-Length", str(reply.oversize))
        handler.end_headers()
        handler.wfile.write(head)
        left = reply.oversize - len(head) - len(tail)
        while left > 0:
            step = min(left, _CHUNK)
            handler.wfile.write(b"x" * step)
            left -= step
        handler.wfile.write(tail)

    @property
    def url(self) -> str:
        """The base URL clients append ``/insert`` etc. to."""
        return self.origin + BASE_PATH

    # -- scripting and inspection ------------------------------------------------------------------------
    def calls(self, endpoint: str) -> list[Any]:
        """The JSON bodies of the requests to one endpoint (``"insert"``, ``"search"``, ...), in order."""
        return [r.body for r in self.requests if r.path == f"/{endpoint}"]

    @property
    def vectors(self) -> dict[str, StoredVector]:
        """What the server holds now, by id (a copy)."""
        with self._lock:
            return dict(self._vectors)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def fail_next(
        self, status: int, body: str = '{"error": "injected failure"}', *, endpoint: str | None = None
    ) -> None:
        """The next request (to ``endpoint``, or any) answers ``status`` with ``body``. Calls queue up."""
        self._script(_Scripted(_endpoint(endpoint), reply=_Reply(status, body.encode())))

    def delay_next(self, seconds: float, *, endpoint: str | None = None) -> None:
        """The next request (to ``endpoint``, or any) waits ``seconds`` before being answered (cut short when
        the server stops). Calls queue up."""
        self._script(_Scripted(_endpoint(endpoint), delay=seconds))

    def oversize_next(self, nbytes: int, *, declare_length: bool = True, endpoint: str | None = None) -> None:
        """The next request (to ``endpoint``, or any) answers 200 with a valid JSON object of ``nbytes`` bytes
        (``{"results": [], "pad": "xxx..."}``), with a ``Content-Length`` header or, with ``declare_length``
        False, without one (the body then ends when the connection closes)."""
        if nbytes < 32:
            raise ValueError("nbytes must be at least 32")
        self._script(_Scripted(_endpoint(endpoint), reply=_Reply(200, oversize=nbytes, declare_length=declare_length)))

    def _script(self, item: _Scripted) -> None:
        with self._lock:
            self._scripted.append(item)

    # -- answering (called from request threads) ---------------------------------------------------------
    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> _Reply:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        relative = path[len(BASE_PATH) :] if path.startswith(BASE_PATH + "/") else path
        endpoint = relative[1:]
        with self._lock:
            self._requests.append(RecordedRequest(relative, headers, body))
            scripted = self._take(endpoint)
        if scripted is not None and scripted.delay > 0:
            self._closing.wait(scripted.delay)
        if scripted is not None and scripted.reply is not None:
            return scripted.reply
        if not path.startswith(BASE_PATH + "/") or endpoint not in ENDPOINTS:
            return _json(404, {"error": f"no route for POST {path}"})
        if not isinstance(body, dict):
            return _json(400, {"error": "the request body must be a JSON object"})
        handler = {
            "insert": self._insert,
            "search": self._search,
            "delete": self._delete,
            "get_embeddings": self._get_embeddings,
        }[endpoint]
        return handler(body)

    def _take(self, endpoint: str) -> _Scripted | None:
        """The first scripted misbehaviour for this endpoint (called with the lock held)."""
        for item in self._scripted:
            if item.endpoint in (None, endpoint):
                self._scripted.remove(item)
                return item
        return None

    def _insert(self, body: dict[str, Any]) -> _Reply:
        fact_id, embedding, metadata = body.get("id"), _numbers(body.get("embedding")), body.get("metadata")
        payload = body.get("payload")
        if not isinstance(fact_id, str) or embedding is None or not isinstance(payload, str):
            return _json(400, {"error": "insert needs 'id', a non-empty numeric 'embedding' and a 'payload' string"})
        if not isinstance(metadata, dict):
            return _json(400, {"error": "insert needs a 'metadata' object"})
        with self._lock:
            self._vectors[fact_id] = StoredVector(tuple(embedding), payload, dict(metadata))
        return _json(200, {"ok": True})

    def _delete(self, body: dict[str, Any]) -> _Reply:
        fact_id = body.get("id")
        if not isinstance(fact_id, str):
            return _json(400, {"error": "delete needs an 'id' string"})
        with self._lock:
            self._vectors.pop(fact_id, None)
        return _json(200, {"ok": True})

    def _search(self, body: dict[str, Any]) -> _Reply:
        query, limit, flt = _numbers(body.get("embedding")), body.get("limit"), body.get("filter")
        if query is None or isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            return _json(400, {"error": "search needs a numeric 'embedding' and a 'limit' >= 0"})
        wanted = flt if isinstance(flt, dict) else {}
        with self._lock:
            candidates = list(self._vectors.items())
            extra = list(self.inject_ids)
            ignore = self.ignore_filter
        scored = [
            (fact_id, _cosine(query, stored.embedding))
            for fact_id, stored in candidates
            if ignore or all(stored.metadata.get(key) == value for key, value in wanted.items())
        ]
        scored.sort(key=lambda pair: -pair[1])
        results: list[Any] = [{"id": fact_id, "score": score} for fact_id, score in scored[:limit]]
        results.extend(item if isinstance(item, dict) else {"id": item, "score": INJECTED_SCORE} for item in extra)
        return _json(200, {"results": results})

    def _get_embeddings(self, body: dict[str, Any]) -> _Reply:
        ids = body.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return _json(400, {"error": "get_embeddings needs an 'ids' list of strings"})
        with self._lock:
            found = {i: list(self._vectors[i].embedding) for i in ids if i in self._vectors}
        return _json(200, {"embeddings": found})


def _endpoint(endpoint: str | None) -> str | None:
    if endpoint is not None and endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {ENDPOINTS}")
    return endpoint
