"""Token usage and cost, per LLM call: the ``UsageLedger`` every client records into.

Invariants:
- every call a client makes is recorded exactly once, when it ends, whether it succeeded or failed
  (a failed call still records the tokens the server reported, because they were spent);
- totals count every call since the ledger was made; only the most recent ``max_records`` records are
  kept one by one, so a long-running process holds bounded memory;
- the ledger is thread-safe, and listeners run outside its lock, in the recording thread;
- ``current_agent()`` is the agent the calling code works for (``agent_context``), so a listener in the
  recording thread can attribute the call; a new thread starts at ``default`` until it enters a context.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime

from reverie.clock import Clock, SystemClock
from reverie.core import validate

log = logging.getLogger(__name__)

_PER = 1_000_000
DEFAULT_AGENT = "default"
_AGENT: ContextVar[str] = ContextVar("reverie_usage_agent", default=DEFAULT_AGENT)


def current_agent() -> str:
    """The agent the current code works for: the innermost ``agent_context``, else ``default``."""
    return _AGENT.get()


@contextmanager
def agent_context(agent_id: str) -> Iterator[str]:
    """Attribute the LLM calls made inside the block (in this thread or async task) to ``agent_id``.
    Contexts nest; leaving one restores the outer agent. Raises ``ValidationError`` for a bad id."""
    agent = validate.identifier(agent_id, name="agent_id")
    token = _AGENT.set(agent)
    try:
        yield agent
    finally:
        _AGENT.reset(token)


@dataclass(frozen=True, slots=True)
class Prices:
    """What a model costs, per million tokens (any currency; the ledger only adds it up)."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def __post_init__(self) -> None:
        if self.input_per_mtok < 0 or self.output_per_mtok < 0:
            raise ValueError("prices must not be negative")

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float:
        """The cost of one call. Tokens the server did not report count as zero."""
        return ((prompt_tokens or 0) * self.input_per_mtok + (completion_tokens or 0) * self.output_per_mtok) / _PER


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One LLM call as it ended. Token counts are None when the server did not report them."""

    at: datetime
    purpose: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float
    latency_seconds: float
    attempts: int
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Sums over every recorded call; ``by_purpose`` maps a purpose to its own totals (not nested)."""

    calls: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    by_purpose: dict[str, UsageTotals] = field(default_factory=dict)

    def plus(self, record: UsageRecord) -> UsageTotals:
        """These totals with ``record`` added (``by_purpose`` is left to the ledger)."""
        return UsageTotals(
            calls=self.calls + 1,
            failed=self.failed + (not record.ok),
            prompt_tokens=self.prompt_tokens + (record.prompt_tokens or 0),
            completion_tokens=self.completion_tokens + (record.completion_tokens or 0),
            cost=self.cost + record.cost,
        )


Listener = Callable[[UsageRecord], None]


class UsageLedger:
    """Thread-safe record of LLM calls with running totals. ``add_listener`` lets a status page or the
    API see each call as it is recorded; a listener that raises is logged and does not fail the call."""

    def __init__(self, *, clock: Clock | None = None, max_records: int = 1000) -> None:
        if max_records < 0:
            raise ValueError("max_records must not be negative")
        self._clock: Clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._records: deque[UsageRecord] = deque(maxlen=max_records)
        self._totals = UsageTotals()
        self._by_purpose: dict[str, UsageTotals] = {}
        self._listeners: list[Listener] = []

    @property
    def clock(self) -> Clock:
        """The clock the ledger stamps records with (the engine's)."""
        return self._clock

    def record(
        self,
        *,
        purpose: str,
        model: str,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        cost: float,
        latency_seconds: float,
        attempts: int,
        error: str | None = None,
    ) -> UsageRecord:
        """Record one call that just ended (``error`` None means it succeeded) and tell the listeners."""
        entry = UsageRecord(
            at=self._clock.now(),
            purpose=purpose,
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=cost,
            latency_seconds=latency_seconds,
            attempts=attempts,
            ok=error is None,
            error=error,
        )
        with self._lock:
            self._records.append(entry)
            self._totals = self._totals.plus(entry)
            self._by_purpose[purpose] = self._by_purpose.get(purpose, UsageTotals()).plus(entry)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(entry)
            except Exception:  # a broken status page must not turn a good LLM call into a failure
                log.exception("usage listener %r failed", listener)
        return entry

    def records(self) -> list[UsageRecord]:
        """The most recent records (at most ``max_records``), oldest first."""
        with self._lock:
            return list(self._records)

    def totals(self) -> UsageTotals:
        """Totals over every call recorded so far, with per-purpose totals."""
        with self._lock:
            totals, by_purpose = self._totals, dict(self._by_purpose)
        return UsageTotals(
            calls=totals.calls,
            failed=totals.failed,
            prompt_tokens=totals.prompt_tokens,
            completion_tokens=totals.completion_tokens,
            cost=totals.cost,
            by_purpose=by_purpose,
        )

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling ``listener``; unknown listeners are ignored."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
