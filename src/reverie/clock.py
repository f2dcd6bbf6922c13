"""Time. Services never read the wall clock themselves: they are handed a ``Clock``.

Invariant: every datetime a Clock returns is timezone-aware UTC.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Where a service gets "now" from."""

    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...


class SystemClock:
    """The real wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that only moves when told to; tests and the long-run benchmark drive it.

    Thread-safe, so a background worker and a test can share one.
    """

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
        self._now = _as_utc(start)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | None = None, **parts: float) -> datetime:
        """Move forward by ``delta`` or by ``timedelta(**parts)``; returns the new now."""
        if delta is not None and parts:
            raise ValueError("pass either a timedelta or keyword parts, not both")
        step = delta if delta is not None else timedelta(**parts)
        if step < timedelta(0):
            raise ValueError("a FakeClock never moves backwards; use set() to jump")
        with self._lock:
            self._now += step
            return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (either direction)."""
        with self._lock:
            self._now = _as_utc(when)


def _as_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetimes are ambiguous; pass a timezone-aware datetime")
    return value.astimezone(UTC)
