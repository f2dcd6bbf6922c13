"""A chat client for any OpenAI-compatible ``POST {endpoint}/chat/completions`` API: OpenAI itself, Ollama's
``/v1``, vLLM, the llama.cpp server.

The endpoint is used exactly as given (``endpoint.rstrip("/") + "/chat/completions"``): we never guess
whether ``/v1`` belongs in it. Requests are not streamed.

Retries: a timeout, a connection failure, HTTP 408, 429 or any 5xx is retried up to ``max_retries`` times
(so at most ``max_retries + 1`` requests), waiting ``backoff_seconds * 2**(n-1)`` (halved at random, so
clients that failed together do not retry together) or what the server's ``Retry-After`` /
``retry-after-ms`` header asks, either capped at ``max_backoff_seconds``. Other 4xx answers are the
caller's or the configuration's mistake and are not retried. ``close()`` interrupts a back-off wait.

Every call ends as exactly one record in ``ledger`` (see ``reverie.llm.usage``); a failure surfaces as
``LLMError`` with the last status and the server's own message.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import httpx

from reverie.core.jsonanswer import excerpt
from reverie.errors import LLMError, ValidationError
from reverie.llm.base import DEFAULT_PURPOSE, Answer, BusySignal, Completion, Message, Usage, parse_json_answer
from reverie.llm.usage import Prices, UsageLedger
from reverie.runtime.http import openai_client

Result = TypeVar("Result")

_RETRY_STATUSES = frozenset({408, 429})
_MESSAGE_CHARS = 300


@dataclass(slots=True)
class _Progress:
    """What a call has done so far, for its ledger record whether it ends well or not."""

    attempts: int = 0
    completion: Completion | None = None


class OpenAIChat:
    """``model_id`` is ``openai:<model>``. Thread-safe (one shared ``httpx.Client``); call ``close()``."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        connect_timeout: float = 10.0,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 30.0,
        prices: Prices | None = None,
        ledger: UsageLedger | None = None,
    ) -> None:
        """``timeout`` bounds each read (a whole non-streamed answer) and write; ``connect_timeout`` the
        connection. ``ledger`` lets several clients share one; by default the client has its own."""
        if not endpoint or not model:
            raise ValueError("endpoint and model are required")
        if timeout <= 0 or connect_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if max_retries < 0 or backoff_seconds < 0 or max_backoff_seconds < 0:
            raise ValueError("max_retries and the back-off must not be negative")
        self._url = endpoint.rstrip("/") + "/chat/completions"
        self._model = model
        self._max_retries = max_retries
        self._backoff = backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._prices = prices or Prices()
        self._ledger = ledger or UsageLedger()
        self._busy = BusySignal()
        self._closed = threading.Event()
        self._jitter = random.Random()
        self._client = openai_client(api_key, timeout=timeout, connect_timeout=connect_timeout)

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def ledger(self) -> UsageLedger:
        return self._ledger

    @property
    def busy(self) -> bool:
        """True while any ``foreground()`` scope is open, in any thread (see ``reverie.llm.base``)."""
        return self._busy.busy

    def foreground(self) -> AbstractContextManager[None]:
        """Wrap a user's turn in this: background callers see ``busy`` and back off until it ends."""
        return self._busy.foreground()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        purpose: str = DEFAULT_PURPOSE,
    ) -> Completion:
        """The assistant's answer. Raises ``LLMError`` (after retries) or ``ValidationError`` (bad arguments)."""
        return self._call(self._body(messages, max_tokens, temperature), purpose, lambda completion: completion)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[Answer],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        purpose: str = DEFAULT_PURPOSE,
    ) -> tuple[Answer, Completion]:
        """The answer's JSON object validated into ``schema``, and the completion. A bad answer is not
        retried here (the caller decides whether to ask again); it raises ``LLMError`` and returns nothing."""
        body = self._body(messages, max_tokens, temperature)
        return self._call(body, purpose, lambda completion: (parse_json_answer(completion, schema), completion))

    def close(self) -> None:
        self._closed.set()
        self._client.close()

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- one call ----------------------------------------------------------------------------------------
    def _body(self, messages: Sequence[Message], max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        """The request body; bad arguments are refused before anything is sent or recorded."""
        if not messages or not all(isinstance(message, Message) for message in messages):
            raise ValidationError("messages must be a non-empty sequence of Message", field="messages")
        if max_tokens is not None and max_tokens < 1:
            raise ValidationError("max_tokens must be positive", field="max_tokens")
        if temperature is not None and not 0 <= temperature <= 2:
            raise ValidationError("temperature must be between 0 and 2", field="temperature")
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": message.role, "content": message.content} for message in messages],
            "stream": False,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def _call(self, body: dict[str, Any], purpose: str, interpret: Callable[[Completion], Result]) -> Result:
        """Send, parse, ``interpret`` the completion, and record the call once however it ends."""
        started = time.monotonic()
        progress = _Progress()
        error: str | None = None
        try:
            payload = self._send(body, progress)
            progress.completion = self._completion(payload, progress.attempts, time.monotonic() - started)
            return interpret(progress.completion)
        except BaseException as exc:  # recorded as failed, then re-raised unchanged
            error = str(exc) if isinstance(exc, LLMError) else f"{type(exc).__name__}: {exc}"
            raise
        finally:
            done = progress.completion
            self._ledger.record(
                purpose=purpose,
                model=self._model,
                prompt_tokens=done.usage.prompt_tokens if done else None,
                completion_tokens=done.usage.completion_tokens if done else None,
                cost=done.cost if done else 0.0,
                latency_seconds=time.monotonic() - started,
                attempts=progress.attempts,
                error=error,
            )

    def _send(self, body: dict[str, Any], progress: _Progress) -> Any:
        """The decoded JSON of the first 2xx answer, retrying what is worth retrying (module docstring)."""
        last = LLMError("no request was made", reason="closed")
        retry_after: float | None = None
        for attempt in range(self._max_retries + 1):
            if attempt and self._closed.wait(self._delay(attempt, retry_after)):
                break
            if self._closed.is_set():
                break
            progress.attempts = attempt + 1
            retry_after = None
            try:
                response = self._client.post(self._url, json=body)
            except httpx.TimeoutException as exc:
                last = LLMError(f"request to {self._url} timed out ({type(exc).__name__})", reason="timeout")
                continue
            except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                last = LLMError(f"request to {self._url} failed: {type(exc).__name__}: {exc}", reason="connection")
                continue
            except (httpx.HTTPError, httpx.InvalidURL) as exc:  # a bad URL or protocol: retrying cannot help
                message = f"request to {self._url} failed: {type(exc).__name__}: {exc}"
                raise LLMError(message, reason="connection") from exc
            except RuntimeError:  # httpx refuses a client closed by another thread
                if self._closed.is_set():
                    break
                raise
            if response.is_success:
                return _decode(response, self._url)
            last = LLMError(
                f"{self._url} answered HTTP {response.status_code}: {_server_message(response)}",
                status=response.status_code,
                reason="http",
            )
            if not _retryable(response.status_code):
                raise last
            retry_after = _retry_after(response.headers, now=self._ledger.clock.now().timestamp())
        if self._closed.is_set():
            raise LLMError(f"the client for {self._url} was closed", status=last.status, reason="closed")
        tries = f"{progress.attempts} attempts" if progress.attempts > 1 else "1 attempt"
        raise LLMError(f"{last} (gave up after {tries})", status=last.status, reason=last.reason)

    def _delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self._max_backoff)
        exponential = min(self._backoff * 2.0 ** (retry - 1), self._max_backoff)
        return exponential * self._jitter.uniform(0.5, 1.0)

    def _completion(self, payload: Any, attempts: int, latency: float) -> Completion:
        text, model, usage, finish = _parse_answer(payload, self._model, self._url)
        return Completion(
            text=text,
            model=model,
            usage=usage,
            cost=self._prices.cost(usage.prompt_tokens, usage.completion_tokens),
            latency_seconds=latency,
            attempts=attempts,
            finish_reason=finish,
        )


def _retryable(status: int) -> bool:
    return status in _RETRY_STATUSES or status >= 500


def _decode(response: httpx.Response, url: str) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise LLMError(
            f"{url} answered HTTP {response.status_code} with a body that is not JSON ({exc}): "
            f"{excerpt(response.text, _MESSAGE_CHARS)!r}",
            status=response.status_code,
            reason="response",
        ) from None


def _server_message(response: httpx.Response) -> str:
    """The server's own words: OpenAI's ``error.message``, Ollama's ``error``, FastAPI's ``detail``, or an
    excerpt of the body."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        candidates = [error.get("message") if isinstance(error, dict) else error, payload.get("message")]
        candidates.append(payload.get("detail"))
        for candidate in candidates:
            if isinstance(candidate, str) and candidate.strip():
                return excerpt(candidate, _MESSAGE_CHARS)
    return excerpt(response.text, _MESSAGE_CHARS) or "(empty body)"


def _retry_after(headers: httpx.Headers, *, now: float) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms`` (OpenAI), else ``Retry-After`` in seconds or
    as an HTTP date. None when absent or unreadable."""
    seconds: float | None = None
    try:
        if "retry-after-ms" in headers:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            seconds = float(headers["retry-after"])
    except ValueError:
        when = email.utils.parsedate_tz(headers.get("retry-after", ""))
        seconds = None if when is None else email.utils.mktime_tz(when) - now
    if seconds is None or not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _parse_answer(payload: Any, model: str, url: str) -> tuple[str, str, Usage, str | None]:
    """Text, model, usage and finish reason of a chat completion; ``LLMError`` when it is not one."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(payload, dict) or not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise LLMError(f"{url} answered without choices[0].message: {excerpt(json.dumps(payload))}", reason="response")
    message = first["message"]
    content = message.get("content")
    if not isinstance(content, str):
        refusal = message.get("refusal")
        why = f" (the model refused: {excerpt(refusal)})" if isinstance(refusal, str) else ""
        raise LLMError(f"{url} answered with no text content{why}", reason="response")
    raw_usage = payload.get("usage")
    usage = Usage(_tokens(raw_usage, "prompt_tokens"), _tokens(raw_usage, "completion_tokens"))
    answered_model = payload.get("model")
    finish = first.get("finish_reason")
    return (
        content,
        answered_model if isinstance(answered_model, str) and answered_model else model,
        usage,
        finish if isinstance(finish, str) else None,
    )


def _tokens(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else None
