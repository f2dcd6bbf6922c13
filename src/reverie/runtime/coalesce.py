"""Calls made at the same time from several threads, answered by one call of a batch function.

A server embeds each search's query alone, and under concurrent load many queries wait for the model at
once: one run over eight queries costs about a third of eight runs over one each (the model's fixed cost per
run; docs/benchmarks.md, "Load"). ``Coalescer`` turns those waits into batches without delaying anyone:

- a call that finds nothing running runs at once, a batch of its own item (so an idle server answers as
  before, with no timer and no added latency);
- a call that arrives while a batch runs waits; when that batch ends, the first waiter runs the next one for
  every item waiting (up to ``max_batch``), and each caller gets its own result;
- a batch that raises raises in every caller of that batch, and the next batch runs as usual.

Invariants: every call returns the batch function's answer for exactly its own item, or raises; at most one
batch runs at a time; a waiting call is always picked up by the batch that follows (no call is stranded).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class _Call(Generic[T, R]):
    __slots__ = ("item", "done", "lead", "value", "error", "has_value")

    def __init__(self, item: T) -> None:
        self.item = item
        self.done = threading.Event()  # answered, or chosen to run the next batch (``lead``)
        self.lead = False
        self.value: R | None = None
        self.has_value = False
        self.error: BaseException | None = None

    def answer(self) -> R:
        if self.error is not None:
            raise self.error
        assert self.has_value
        return self.value  # type: ignore[return-value]  # set by the batch (R may itself be optional)


class Coalescer(Generic[T, R]):
    """``coalescer(item)`` is ``run([item])[0]``, with concurrent calls answered together (module docstring).

    ``run`` takes a list of items and returns a sequence of results in the same order and of the same length.
    ``batches`` and ``calls`` count what ran (for tests and reports)."""

    def __init__(self, run: Callable[[list[T]], Sequence[R]], *, max_batch: int = 32) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run = run
        self._max = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Call[T, R]] = []
        self._running = False  # a batch runs (or is about to): a new call waits
        self.batches = 0
        self.calls = 0

    @property
    def waiting(self) -> int:
        """Calls waiting for the next batch."""
        with self._lock:
            return len(self._waiting) if self._running else 0

    def __call__(self, item: T) -> R:
        call: _Call[T, R] = _Call(item)
        with self._lock:
            self.calls += 1
            self._waiting.append(call)
            lead = not self._running
            self._running = True
        if not lead:
            call.done.wait()
            if not call.lead:
                return call.answer()
        self._run_batch()
        return call.answer()

    def _run_batch(self) -> None:
        """Run one batch of the waiting calls (this caller's among them: it is the first waiting), then hand
        the next batch to the first call still waiting, if any."""
        with self._lock:
            batch, self._waiting = self._waiting[: self._max], self._waiting[self._max :]
            self.batches += 1
        try:
            results = self._run([c.item for c in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} items was answered with {len(results)} results")
            for c, result in zip(batch, results, strict=True):
                c.value, c.has_value = result, True
        except BaseException as exc:  # every caller of this batch raises it, the leader included
            for c in batch:
                c.error = exc
        finally:
            with self._lock:
                if self._waiting:
                    successor = self._waiting[0]
                    successor.lead = True
                    successor.done.set()
                else:
                    self._running = False
            for c in batch[1:]:
                c.done.set()
