"""When dreams are due: an initial delay after start, then a fixed interval or a cron expression (seed 001)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cronsim import CronSim, CronSimError


def check_cron(expression: str) -> str:
    """``expression`` if it is a valid five-field cron expression, else ``ValueError`` saying why."""
    try:
        CronSim(expression, datetime(2026, 1, 1))
    except CronSimError as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None
    return expression


@dataclass(frozen=True, slots=True)
class Schedule:
    """``initial_delay`` after the scheduler starts, then every ``interval``, or at each time ``cron`` names
    (evaluated in UTC)."""

    initial_delay: timedelta = timedelta(minutes=5)
    interval: timedelta = timedelta(hours=4)
    cron: str | None = None

    def __post_init__(self) -> None:
        if self.initial_delay < timedelta(0):
            raise ValueError("initial_delay must not be negative")
        if self.cron is None and self.interval <= timedelta(0):
            raise ValueError("interval must be positive")
        if self.cron is not None:
            check_cron(self.cron)

    def first(self, started: datetime) -> datetime:
        """When the first dream is due after the scheduler started at ``started``."""
        return started + self.initial_delay

    def next_after(self, when: datetime) -> datetime:
        """The next due time strictly after ``when``."""
        if self.cron is None:
            return when + self.interval
        # The expression names UTC times: read ``when`` in UTC whatever zone it carries.
        naive = when.astimezone(UTC).replace(tzinfo=None)
        due = next(iter(CronSim(self.cron, naive)))
        return due.replace(tzinfo=UTC)
