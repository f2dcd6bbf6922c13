"""One daemon thread per background service (embedding, expansion), started, woken and stopped the same way.

Invariants: at most one thread per service; ``stop`` asks the loop to end between runs (never in the middle
of a write) and waits; a thread still running at interpreter exit is stopped first (``atexit``), because a
daemon thread inside a native library (onnxruntime) when the interpreter tears down aborts the process.
"""

from __future__ import annotations

import atexit
import threading


class BackgroundService:
    """Base of a service with a background loop. Subclasses implement ``_loop`` and check ``_stop``."""

    thread_name = "reverie-background"

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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
