"""One daemon thread per background service (embedding, expansion), started, woken and stopped the same way.

Invariants: at most one thread per service; ``stop`` asks the loop to end between runs (never in the middle
of a write) and waits; a thread still running at interpreter exit is stopped first (``atexit``), because a
daemon thread inside a native library (onnxruntime) when the interpreter tears down aborts the process.
A loop outlives every failure of a run: Reverie's own errors (a full disk, a database that cannot be reached,
a failing LLM) are one warning line each, anything else is logged with its traceback; either way the loop
waits (a doubling, capped ``Backoff``) and tries again, and the work stays queued in the store meanwhile.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable
from typing import Protocol

from reverie.errors import ReverieError

log = logging.getLogger("reverie.runtime.background")


class QueueTiming(Protocol):
    """The waits of an LLM work queue (expansion, graph extraction), read from its frozen config."""

    @property
    def poll_seconds(self) -> float: ...  # look for work this often even unwoken

    @property
    def busy_poll_seconds(self) -> float: ...  # while a user turn holds the LLM

    @property
    def retry_seconds(self) -> float: ...  # first wait after a failure; doubles up to max_retry_seconds

    @property
    def max_retry_seconds(self) -> float: ...


class Backoff:
    """The wait before the next try after a failure: ``first`` seconds, doubling up to ``cap``; ``reset`` after
    a success."""

    def __init__(self, first: float = 1.0, cap: float = 60.0) -> None:
        self.first, self.cap = first, cap
        self.delay = first

    def failed(self) -> float:
        """The wait before the next try (and double the one after it)."""
        delay = self.delay
        self.delay = min(delay * 2, self.cap)
        return delay

    def reset(self) -> None:
        self.delay = self.first


class BackgroundService:
    """Base of a service with a background loop. Subclasses implement ``_loop`` and check ``_stop``."""

    thread_name = "reverie-background"

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None  # the last failure of a queue run (``_serve_queue``); None after a success

    def start(self) -> None:
        """Run ``_loop`` in a daemon thread until ``stop``."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()
            atexit.register(self.stop)

    def notify(self) -> None:
        """There is new work: wake the loop."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the loop to end after its current run and wait up to ``timeout`` seconds (``stop(0)`` only
        asks)."""
        thread = self._thread
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        thread.join(timeout)
        if not thread.is_alive():
            self._thread = None
            self._stop.clear()
            atexit.unregister(self.stop)

    def _loop(self) -> None:
        raise NotImplementedError

    def _serve_queue(self, run: Callable[[], bool], timing: QueueTiming, label: str) -> None:
        """The loop of a durable LLM work queue: ``run`` works through the queue and returns True when it
        stopped because a user turn holds the LLM. A failure (the LLM, the store) leaves the work queued,
        is kept in ``last_error`` and retried with a doubling back-off; a save's ``notify`` during a run makes
        the loop run once more."""
        backoff = Backoff(timing.retry_seconds, timing.max_retry_seconds)
        while not self._stop.is_set():
            self._wake.clear()  # a save notified during the run below sets it again: run once more
            try:
                deferred = run()
            except Exception as exc:
                if self._stop.is_set():
                    break
                self.last_error = str(exc)
                self._stop.wait(report_failure(label, exc, backoff))
                continue
            self.last_error = None
            backoff.reset()
            if deferred:
                self._stop.wait(timing.busy_poll_seconds)  # a user turn holds the LLM: never queue behind it
            else:
                self._wake.wait(timing.poll_seconds)


def report_failure(label: str, exc: Exception, backoff: Backoff, logger: logging.Logger = log) -> float:
    """Log a failed run of a background loop and return how long to wait before the next. Reverie's errors
    (``StorageFull``, ``StoreUnavailable``, ``LLMError``, ...) are expected in operation: one warning line.
    Anything else is a fault: its traceback."""
    delay = backoff.failed()
    if isinstance(exc, ReverieError):
        logger.warning("%s failed, retrying in %.0f s: %s", label, delay, exc)
    else:
        logger.exception("%s failed unexpectedly, retrying in %.0f s", label, delay)
    return delay
