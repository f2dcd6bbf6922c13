"""``memorize_on_turn`` with an LLM: the turns waiting for ``auto_memorize``, memorized on a background thread
(``BackgroundService._serve_queue``, as the expansion and graph-extraction queues are), so recording a turn
never waits for an LLM call.

Invariants:
- Never blocks the caller: ``submit`` only appends to the queue and wakes the thread.
- In-process and bounded: at most ``max_pending`` turns wait (the oldest is dropped past it, logged). The
  queue is not durable, unlike the graph extraction's: a turn recorded just before the process stops may go
  unmemorized. The turn itself is stored; only the memories it would have given are lost, and the next
  turns restate what matters.
- A failing LLM keeps the turn queued (first in line) and the thread backs off; ``memorize_pending`` raises
  the ``LLMError``. A malformed answer is handled by ``auto_memorize`` (nothing saved) and the turn leaves.
- A user turn first: while ``busy()`` (the LLM serves a user's turn) the queue waits.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from reverie.errors import EmbeddingError, LLMError, ReverieError, StorageError
from reverie.runtime.background import BackgroundService
from reverie.types import Scope

log = logging.getLogger("reverie.proactive")


@dataclass(frozen=True, slots=True)
class TurnTiming:
    poll_seconds: float = 60.0
    busy_poll_seconds: float = 5.0
    retry_seconds: float = 5.0
    max_retry_seconds: float = 300.0


@dataclass(frozen=True, slots=True)
class PendingTurn:
    """A user message and the assistant's answer to it, in the scope the turn was recorded in."""

    user_message: str
    assistant_message: str
    scope: Scope


class TurnMemorizer(BackgroundService):
    """The queue of turns waiting for ``auto_memorize``."""

    thread_name = "reverie-proactive"

    def __init__(
        self,
        memorize: Callable[[PendingTurn], object],
        *,
        busy: Callable[[], bool],
        timing: TurnTiming | None = None,
        max_pending: int = 1000,
    ) -> None:
        super().__init__()
        self._memorize = memorize
        self._busy = busy
        self.timing = timing or TurnTiming()
        self._max_pending = max_pending
        self._queue: deque[PendingTurn] = deque()
        self._lock = threading.Lock()
        self._run_lock = threading.Lock()

    def submit(self, turn: PendingTurn) -> None:
        """Queue a turn and wake the thread."""
        with self._lock:
            self._queue.append(turn)
            if len(self._queue) > self._max_pending:
                dropped = self._queue.popleft()
                log.warning(
                    "proactive memory: %d turns wait; the oldest (%s) is dropped", self._max_pending, dropped.scope
                )
        self.notify()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def memorize_pending(self, limit: int | None = None) -> int:
        """Memorize waiting turns now, in this thread, until none are left (or ``limit``); returns how many.
        Stops early while the LLM serves a user's turn. Raises ``LLMError`` when the LLM fails (the turn
        stays first in line)."""
        return self._run(limit)[0]

    def _run(self, limit: int | None) -> tuple[int, bool]:
        with self._run_lock:
            done = 0
            while limit is None or done < limit:
                if self._stop.is_set():
                    break
                if self._busy():
                    return done, True
                with self._lock:
                    if not self._queue:
                        break
                    turn = self._queue.popleft()
                try:
                    self._memorize(turn)
                except (LLMError, StorageError, EmbeddingError):  # passing failures: retried first, after a back-off
                    with self._lock:
                        self._queue.appendleft(turn)
                    raise
                except ReverieError as exc:  # this turn cannot be memorized (refused input): it leaves the queue
                    log.warning("proactive memory: a turn of %s was not memorized: %s", turn.scope, exc)
                done += 1
            return done, False

    def _loop(self) -> None:
        self._serve_queue(lambda: self._run(None)[1], self.timing, "proactive memorize")
