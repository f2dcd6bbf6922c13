"""When dreams are due (seed 001 "Scheduling"): an initial delay after start, then a fixed interval or a cron
expression evaluated in UTC; a bad cron expression is refused when the settings are read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from reverie.dream.schedule import Schedule, check_cron
from reverie.errors import ConfigError
from reverie.settings import load_settings

START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def test_defaults_first_due_after_five_minutes_then_every_four_hours() -> None:
    schedule = Schedule()
    first = schedule.first(START)
    assert first == START + timedelta(minutes=5)
    second = schedule.next_after(first)
    assert second == first + timedelta(hours=4)
    assert schedule.next_after(second) == START + timedelta(minutes=5, hours=8)


def test_the_interval_counts_from_when_the_cycle_ended() -> None:
    schedule = Schedule(initial_delay=timedelta(seconds=30), interval=timedelta(hours=2))
    assert schedule.first(START) == START + timedelta(seconds=30)
    finished = START + timedelta(minutes=17)  # a cycle that took a while
    assert schedule.next_after(finished) == finished + timedelta(hours=2)


def test_no_initial_delay_is_due_at_start() -> None:
    assert Schedule(initial_delay=timedelta(0)).first(START) == START


@pytest.mark.parametrize(
    ("now", "due"),
    [
        (START, datetime(2026, 1, 2, 3, 0, tzinfo=UTC)),  # 09:00: today's 03:00 has passed
        (datetime(2026, 1, 1, 2, 59, tzinfo=UTC), datetime(2026, 1, 1, 3, 0, tzinfo=UTC)),
        (datetime(2026, 1, 1, 3, 0, tzinfo=UTC), datetime(2026, 1, 2, 3, 0, tzinfo=UTC)),  # strictly after
        (datetime(2026, 12, 31, 23, 0, tzinfo=UTC), datetime(2027, 1, 1, 3, 0, tzinfo=UTC)),
    ],
)
def test_cron_gives_the_next_0300_utc(now: datetime, due: datetime) -> None:
    schedule = Schedule(cron="0 3 * * *")
    got = schedule.next_after(now)
    assert got == due
    assert got.utcoffset() == timedelta(0)


def test_cron_reads_a_time_in_another_zone_as_utc() -> None:
    """04:00 at UTC+2 is 02:00 UTC: the next "0 3 * * *" is one hour later, 03:00 UTC the same day."""
    plus_two = timezone(timedelta(hours=2))
    got = Schedule(cron="0 3 * * *").next_after(datetime(2026, 1, 1, 4, 0, tzinfo=plus_two))
    assert got == datetime(2026, 1, 1, 3, 0, tzinfo=UTC)


def test_cron_replaces_the_interval_but_keeps_the_initial_delay() -> None:
    schedule = Schedule(cron="*/15 * * * *", interval=timedelta(hours=4))
    assert schedule.first(START) == START + timedelta(minutes=5)
    assert schedule.next_after(START + timedelta(minutes=5)) == START + timedelta(minutes=15)


def test_schedule_refuses_impossible_values() -> None:
    with pytest.raises(ValueError, match="initial_delay"):
        Schedule(initial_delay=timedelta(seconds=-1))
    with pytest.raises(ValueError, match="interval"):
        Schedule(interval=timedelta(0))
    with pytest.raises(ValueError, match="invalid cron"):
        Schedule(cron="0 25 * * *")
    Schedule(interval=timedelta(0), cron="0 3 * * *")  # with cron the interval is not used


@pytest.mark.parametrize("expression", ["0 3 * *", "61 3 * * *", "0 3 * * mondays", "every day"])
def test_check_cron_says_why(expression: str) -> None:
    with pytest.raises(ValueError, match="invalid cron expression"):
        check_cron(expression)


def test_check_cron_returns_a_good_expression() -> None:
    assert check_cron("0 3 * * *") == "0 3 * * *"


def test_settings_refuse_a_bad_cron_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dream\.cron") as caught:
        load_settings(tmp_path, {"dream": {"cron": "61 3 * * *"}})
    assert "61 3 * * *" in str(caught.value)


def test_settings_refuse_a_bad_cron_from_the_toml_file(tmp_path: Path) -> None:
    (tmp_path / "reverie.toml").write_text('[dream]\ncron = "0 3 * *"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"dream\.cron"):
        load_settings(tmp_path)


def test_settings_accept_a_good_cron_and_default_to_none(tmp_path: Path) -> None:
    assert load_settings(tmp_path).dream.cron is None
    settings = load_settings(tmp_path, {"dream": {"cron": "0 3 * * *"}})
    assert settings.dream.cron == "0 3 * * *"
    assert settings.dream.initial_delay_minutes == 5.0 and settings.dream.interval_hours == 4.0
