"""A real OpenAI-compatible HTTP server on loopback, for tests: embeddings and scripted chat answers.

    with ScriptedOpenAIServer(dim=64) as server:
        server.script_chat(["first answer", "second answer"])
        embedder = OpenAIEmbedder(server.url, "test-model")   # server.url == "http://127.0.0.1:<port>/v1"

``POST /v1/embeddings`` answers deterministic vectors from ``HashEmbedder(dim)`` (times ``scale``);
``POST /v1/chat/completions`` answers the scripted answers in order; once the script is empty, the handler
set with ``answer_chat_with`` (called with the request body, in the request thread; its result is answered
like a scripted answer, and an exception it raises answers HTTP 500 with its message), or HTTP 500 when
there is none. A scripted answer is the assistant's text, or a ``ChatReply`` for anything else: a status
with headers (a 429 with ``Retry-After``), a raw body (garbage, a cut-off chat completion), a delay (a
client timeout), chosen ``usage`` or none, a ``finish_reason``. Every request is recorded in ``server.requests``.
``fail_next``, ``delay_next`` and ``malform_next`` inject one failure each into the next request(s) of any
path. Token counts in ``usage`` are whitespace-separated words, not real tokens, unless a ``ChatReply``
says otherwise. Standard library only; serves HTTP/1.0 (one request per connection) so shutdown never
waits on an idle keep-alive connection.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal, NamedTuple

from reverie.embed.hashing import HashEmbedder
from reverie.testing._loopback import LoopbackServer, RecordedRequest

__all__ = ["ChatReply", "RecordedRequest", "ScriptedOpenAIServer"]

MalformKind = Literal["count", "dim", "json"]
_MALFORM_KINDS = ("count", "dim", "json")


@dataclass(frozen=True, slots=True)
class ChatReply:
    """One scripted ``/v1/chat/completions`` answer, when the assistant's text alone is not enough.

    Attributes:
        content: the assistant's text (None: ``"content": null``).
        status: the HTTP status. Not 200 and no ``body``: an OpenAI-shaped error naming the status.
        headers: extra response headers, e.g. ``{"Retry-After": "1"}``.
        body: sent verbatim instead of a chat completion (garbage, a cut-off body); str is UTF-8 encoded.
        usage: ``"words"``: word counts; None: no ``usage`` at all; a dict: sent as given.
        finish_reason: the choice's ``finish_reason`` (``"length"``: the answer hit ``max_tokens``).
        delay: seconds to wait before answering (cut short when the server stops).
    """

    content: str | None = ""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | str | None = None
    usage: Mapping[str, Any] | Literal["words"] | None = "words"
    finish_reason: str = "stop"
    delay: float = 0.0


# Answers chat requests once the script is empty: the request body in, a scripted answer out.
ChatHandler = Callable[[dict[str, Any]], str | ChatReply]


class Reply(NamedTuple):
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Reply:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Reply(status, json.dumps(payload).encode())


def _words(value: Any) -> int:
    """A stand-in token count: words in a string, or in the string contents of chat messages."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(item.get("content") if isinstance(item, dict) else item) for item in value)
    return 0


class ScriptedOpenAIServer(LoopbackServer):
    """A context manager: binds 127.0.0.1 on a free port on enter, stops and joins its threads on exit."""

    def __init__(self, *, dim: int = 64, scale: float = 1.0, reverse_data: bool = False) -> None:
        """``scale`` multiplies every vector (so clients must normalise); ``reverse_data`` lists ``data``
        in reverse order with correct ``index`` fields (so clients must sort by index)."""
        super().__init__()
        self._embedder = HashEmbedder(dim)
        self._scale = scale
        self._reverse = reverse_data
        self._chat: deque[str | ChatReply] = deque()
        self._chat_handler: ChatHandler | None = None
        self._delays: deque[float] = deque()
        self._faults: deque[Reply] = deque()
        self._malforms: deque[MalformKind] = deque()

    thread_name = "scripted-openai"

    @property
    def url(self) -> str:
        """The base URL, ending in ``/v1`` (what OpenAI clients call ``base_url``)."""
        return self.origin + "/v1"

    # -- scripting and inspection ------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        return self._embedder.dim

    def script_chat(self, answers: list[str | ChatReply]) -> None:
        """Queue answers for ``/v1/chat/completions``, answered in order: the assistant's text, or a
        ``ChatReply``."""
        with self._lock:
            self._chat.extend(answers)

    def answer_chat_with(self, handler: ChatHandler | None) -> None:
        """Answer ``/v1/chat/completions`` with ``handler(request_body)`` once the script is empty (queued
        answers still come first); None removes the handler. It runs in the request thread; its result is
        answered like a scripted answer, and an exception it raises answers HTTP 500 with its message."""
        with self._lock:
            self._chat_handler = handler

    def fail_next(
        self,
        status: int,
        body: str = '{"error": {"message": "injected failure"}}',
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """The next request (of any path) answers ``status`` with ``body`` and ``headers``. Calls queue up."""
        with self._lock:
            self._faults.append(Reply(status, body.encode(), tuple((headers or {}).items())))

    def delay_next(self, seconds: float) -> None:
        """The next request waits ``seconds`` before answering (cut short when the server stops)."""
        with self._lock:
            self._delays.append(seconds)

    def malform_next(self, kind: MalformKind) -> None:
        """The next embeddings request answers 200 with one embedding too many (``"count"``), a last vector
        one component longer than the others (``"dim"``) or a body that is not JSON (``"json"``)."""
        if kind not in _MALFORM_KINDS:
            raise ValueError(f"kind must be one of {_MALFORM_KINDS}")
        with self._lock:
            self._malforms.append(kind)

    # -- answering (called from request threads) ---------------------------------------------------------
    def _write(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        """A ``Reply`` with its extra headers (JSON unless they name another Content-Type)."""
        handler.send_response(reply.status)
        if not any(name.lower() == "content-type" for name, _ in reply.headers):
            handler.send_header("Content-Type", "application/json")
        for name, value in reply.headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(reply.body)))
        handler.end_headers()
        handler.wfile.write(reply.body)

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._requests.append(RecordedRequest(path, headers, body))
            delay = self._delays.popleft() if self._delays else 0.0
            fault = self._faults.popleft() if self._faults else None
        if delay > 0:
            self._closing.wait(delay)
        if fault is not None:
            return fault
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        if path == "/v1/embeddings":
            return self._embeddings(body)
        if path == "/v1/chat/completions":
            return self._chat_completion(body)
        return _error(404, f"no route for POST {path}")

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        inputs = [body["input"]] if isinstance(body.get("input"), str) else body.get("input")
        if not isinstance(body.get("model"), str) or not isinstance(inputs, list):
            return _error(400, "'model' must be a string and 'input' a string or a list of strings")
        if not all(isinstance(text, str) for text in inputs):
            return _error(400, "'input' must be a string or a list of strings")
        with self._lock:
            malform = self._malforms.popleft() if self._malforms else None
        if malform == "json":
            return Reply(200, b'{"object": "list", "data": [')
        vectors = (self._embedder.embed(inputs) * self._scale).tolist() if inputs else []
        data = [{"object": "embedding", "index": i, "embedding": vector} for i, vector in enumerate(vectors)]
        if malform == "count":
            data.append({"object": "embedding", "index": len(data), "embedding": [1.0] * self.dim})
        elif malform == "dim" and data:
            data[-1]["embedding"] = [*data[-1]["embedding"], 1.0]
        if self._reverse:
            data.reverse()
        usage = {"prompt_tokens": _words(inputs), "total_tokens": _words(inputs)}
        payload = {"object": "list", "data": data, "model": body["model"], "usage": usage}
        return Reply(200, json.dumps(payload).encode())

    def _chat_completion(self, body: dict[str, Any]) -> Reply:
        if body.get("stream"):
            return _error(400, "the scripted server does not stream")
        with self._lock:
            scripted = self._chat.popleft() if self._chat else None
            handler = self._chat_handler
        if scripted is None and handler is not None:
            try:
                scripted = handler(body)
            except Exception as exc:  # the handler is test code: its failure is the answer, not a crash
                return _error(500, f"the chat handler failed: {exc}", "server_error")
        if scripted is None:
            return _error(500, "the chat script is empty", "server_error")
        answer = scripted if isinstance(scripted, ChatReply) else ChatReply(scripted)
        if answer.delay > 0:
            self._closing.wait(answer.delay)
        headers = tuple(answer.headers.items())
        if answer.body is not None:
            raw = answer.body.encode() if isinstance(answer.body, str) else answer.body
            return Reply(answer.status, raw, headers)
        if answer.status != 200:
            failed = _error(answer.status, f"scripted HTTP {answer.status}", "server_error")
            return failed._replace(headers=headers)
        return Reply(200, json.dumps(self._completion(body, answer)).encode(), headers)

    def _completion(self, body: dict[str, Any], answer: ChatReply) -> dict[str, Any]:
        message = {"role": "assistant", "content": answer.content}
        payload: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
        }
        if answer.usage == "words":
            prompt, completion = _words(body.get("messages")), _words(answer.content or "")
            payload["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        elif answer.usage is not None:
            payload["usage"] = dict(answer.usage)
        return payload
