"""clock: SystemClock and FakeClock always give aware UTC; FakeClock only moves when told to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reverie import Clock, FakeClock, SystemClock

START = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)


def _is_utc(value: datetime) -> bool:
    return value.tzinfo is not None and value.utcoffset() == timedelta(0)


def test_system_clock_returns_aware_utc_now() -> None:
    before = datetime.now(UTC)
    now = SystemClock().now()
    after = datetime.now(UTC)
    assert _is_utc(now)
    assert before <= now <= after


def test_fake_clock_default_start() -> None:
    now = FakeClock().now()
    assert now == datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    assert _is_utc(now)


def test_fake_clock_stands_still() -> None:
    clock = FakeClock(START)
    assert clock.now() == START
    assert clock.now() == START


def test_fake_clock_converts_aware_start_to_utc() -> None:
    lisbon_summer = timezone(timedelta(hours=1))
    clock = FakeClock(datetime(2030, 6, 1, 13, 0, tzinfo=lisbon_summer))
    assert clock.now() == START
    assert clock.now().tzinfo is UTC


def test_fake_clock_refuses_naive_start() -> None:
    with pytest.raises(ValueError, match="naive"):
        FakeClock(datetime(2030, 6, 1, 12, 0))


def test_advance_by_timedelta_returns_new_now() -> None:
    clock = FakeClock(START)
    assert clock.advance(timedelta(minutes=5)) == START + timedelta(minutes=5)
    assert clock.now() == START + timedelta(minutes=5)


def test_advance_by_keyword_parts() -> None:
    clock = FakeClock(START)
    assert clock.advance(days=1, hours=2, minutes=30) == START + timedelta(days=1, hours=2, minutes=30)
    assert clock.advance(seconds=0.5) == START + timedelta(days=1, hours=2, minutes=30, seconds=0.5)


def test_advance_accumulates() -> None:
    clock = FakeClock(START)
    for _ in range(10):
        clock.advance(hours=1)
    assert clock.now() == START + timedelta(hours=10)
    assert _is_utc(clock.now())


def test_advance_by_nothing_is_a_no_op() -> None:
    clock = FakeClock(START)
    assert clock.advance() == START
    assert clock.advance(timedelta(0)) == START


@pytest.mark.parametrize(("delta", "parts"), [(timedelta(seconds=-1), {}), (None, {"days": -1})])
def test_advance_refuses_to_go_backwards(delta: timedelta | None, parts: dict[str, float]) -> None:
    clock = FakeClock(START)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(delta, **parts)
    assert clock.now() == START


def test_set_jumps_either_direction() -> None:
    clock = FakeClock(START)
    later = START + timedelta(days=30)
    clock.set(later)
    assert clock.now() == later
    earlier = START - timedelta(days=365)
    clock.set(earlier)
    assert clock.now() == earlier


def test_set_converts_to_utc() -> None:
    clock = FakeClock(START)
    clock.set(datetime(2030, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=-6))))
    assert clock.now() == datetime(2030, 1, 1, 6, 0, tzinfo=UTC)
    assert clock.now().tzinfo is UTC


def test_set_refuses_naive_and_keeps_time() -> None:
    clock = FakeClock(START)
    with pytest.raises(ValueError, match="naive"):
        clock.set(datetime(2031, 1, 1))
    assert clock.now() == START


def test_clocks_satisfy_the_clock_protocol() -> None:
    assert isinstance(SystemClock(), Clock)
    assert isinstance(FakeClock(), Clock)


def test_objects_without_now_are_not_clocks() -> None:
    assert not isinstance(object(), Clock)
    assert not isinstance("now", Clock)


def test_any_object_with_now_satisfies_the_protocol() -> None:
    class Fixed:
        def now(self) -> datetime:
            return START

    assert isinstance(Fixed(), Clock)


def test_fake_clock_refuses_a_timedelta_and_parts_together() -> None:
    clock = FakeClock()
    before = clock.now()
    with pytest.raises(ValueError):
        clock.advance(timedelta(days=1), hours=1)
    assert clock.now() == before
