"""The LLM port: what every chat client offers, and the pieces every client shares.

Invariants every client keeps:
- failures raise ``LLMError`` (never a transport error of its own), after any retries it makes;
- every call, successful or not, is recorded once in the client's ``ledger``;
- ``complete_json`` returns a validated model or raises: there is no partial result to half-apply;
- ``busy`` is true while any ``foreground()`` scope is open on that client.

How the busy signal is meant to be used: an interface answering a user wraps the turn (or just its LLM
calls) in ``with llm.foreground(): ...``. Background work (the dream) checks ``llm.busy`` before each LLM
call and, when it is true, backs off and tries again later, so a user turn never queues behind
consolidation on a small local model. Background calls themselves are made outside ``foreground()``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from reverie.core.jsonanswer import JSONAnswerError, excerpt, extract_json_object
from reverie.errors import LLMError, ValidationError
from reverie.llm.usage import UsageLedger

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")
DEFAULT_PURPOSE = "chat"

Answer = TypeVar("Answer", bound=BaseModel)
# LLMError reasons that describe the answer rather than the endpoint: the model answered, but not usable JSON.
MALFORMED_ANSWER = frozenset({"empty", "unfinished_reasoning", "no_object", "truncated", "invalid", "schema"})


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"message role must be one of {', '.join(ROLES)}; got {self.role!r}", field="role")
        if not isinstance(self.content, str):
            raise ValidationError("message content must be a string", field="content")

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls("user", content)

    @classmethod
    def assistant(cls, content: str) -> Message:
        return cls("assistant", content)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call used, as the server reported them; None when it did not."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


@dataclass(frozen=True, slots=True)
class Completion:
    """A successful call: the assistant's text and what it cost.

    ``latency_seconds`` is the whole call as the caller waited for it, retries and back-off included;
    ``attempts`` counts the requests it took. ``finish_reason`` is the server's (``"length"``: the answer
    hit ``max_tokens`` and is cut off).
    """

    text: str
    model: str
    usage: Usage
    cost: float
    latency_seconds: float
    attempts: int = 1
    finish_reason: str | None = None


@runtime_checkable
class LLM(Protocol):
    """A chat-completions client. Thread-safe; call ``close()`` when done."""

    @property
    def model_id(self) -> str: ...

    @property
    def ledger(self) -> UsageLedger: ...

    @property
    def busy(self) -> bool:
        """True while any ``foreground()`` scope is open (see the module docstring)."""
        ...

    def foreground(self) -> AbstractContextManager[None]:
        """A scope marking the calls inside it as a user's turn: ``busy`` is true while it is open."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        purpose: str = DEFAULT_PURPOSE,
    ) -> Completion:
        """The assistant's answer to ``messages``. ``purpose`` labels the call in the ledger. Raises ``LLMError``."""
        ...

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: type[Answer],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        purpose: str = DEFAULT_PURPOSE,
    ) -> tuple[Answer, Completion]:
        """The answer's JSON object (see ``reverie.core.jsonanswer``) validated into ``schema``, and the
        completion. Raises ``LLMError`` naming what was wrong, with an excerpt of the answer."""
        ...

    def close(self) -> None: ...


class BusySignal:
    """Counts open ``foreground()`` scopes, across threads; ``busy`` while any is open. Scopes nest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = 0

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._open > 0

    @contextmanager
    def foreground(self) -> Iterator[None]:
        with self._lock:
            self._open += 1
        try:
            yield
        finally:
            with self._lock:
                self._open -= 1


def parse_json_answer(completion: Completion, schema: type[Answer]) -> Answer:
    """``completion.text``'s JSON object validated into ``schema``, or ``LLMError`` saying what was wrong
    (no object, a cut-off object, invalid JSON, or the fields that failed) with an excerpt of the answer."""
    cut = " (the answer hit max_tokens)" if completion.finish_reason == "length" else ""
    try:
        found = extract_json_object(completion.text)
    except JSONAnswerError as exc:
        raise LLMError(f"{exc}{cut}; the answer began: {excerpt(completion.text)!r}", reason=exc.reason) from None
    try:
        return schema.model_validate(found)
    except PydanticValidationError as exc:
        problems = "; ".join(f"{_location(err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise LLMError(
            f"the answer's JSON does not fit {schema.__name__}: {problems}{more}{cut}; "
            f"the answer was: {excerpt(completion.text)!r}",
            reason="schema",
        ) from None


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(the object)"
