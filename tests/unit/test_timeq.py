"""core.timeq: the times a query names, and how close an entry's time is to them."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from reverie.core import timeq

NOW = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)  # a Wednesday


def days(query: str, now: datetime = NOW) -> tuple[date | None, date | None] | None:
    period = timeq.find_period(query, now)
    if period is None:
        return None
    return (period.start.date() if period.start else None, period.end.date() if period.end else None)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what happened on 2026-03-14?", (date(2026, 3, 14), date(2026, 3, 15))),
        ("notes from 2026-03", (date(2026, 3, 1), date(2026, 4, 1))),
        ("what did we do on 14 March 2026", (date(2026, 3, 14), date(2026, 3, 15))),
        ("March 14th, 2026", (date(2026, 3, 14), date(2026, 3, 15))),
        ("what happened in May 2023", (date(2023, 5, 1), date(2023, 6, 1))),
        ("Did Andrew have a dog during Sept 2023?", (date(2023, 9, 1), date(2023, 10, 1))),
        ("incidents in 2025", (date(2025, 1, 1), date(2026, 1, 1))),
        ("what did I tell you last week?", (date(2026, 11, 23), date(2026, 11, 30))),
        ("what happened last month", (date(2026, 11, 1), date(2026, 12, 1))),
        ("what changed last year", (date(2025, 1, 1), date(2026, 1, 1))),
        ("what's planned this year", (date(2026, 1, 1), date(2027, 1, 1))),
        ("what is coming up next month", (date(2027, 1, 1), date(2027, 2, 1))),
        ("yesterday", (date(2026, 12, 1), date(2026, 12, 2))),
        ("what did I say today", (date(2026, 12, 2), date(2026, 12, 3))),
        ("3 days ago", (date(2026, 11, 29), date(2026, 11, 30))),
        ("outages in the last six months", (date(2026, 6, 5), date(2026, 12, 3))),
        ("the past 2 weeks", (date(2026, 11, 18), date(2026, 12, 3))),
        ("in May", (date(2026, 5, 1), date(2026, 6, 1))),  # the latest May not after now
        ("in December", (date(2026, 12, 1), date(2027, 1, 1))),
        ("next March", (date(2027, 3, 1), date(2027, 4, 1))),
    ],
)
def test_a_named_time_is_a_period(query: str, expected: tuple[date, date]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("before May 2023", (None, date(2023, 5, 1))),
        ("until June 2026", (None, date(2026, 6, 1))),
        ("since 2024", (date(2024, 1, 1), None)),
        ("after 2025-03-14", (date(2025, 3, 15), None)),
    ],
)
def test_before_after_and_since_open_one_side(query: str, expected: tuple[date | None, date | None]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "may I ask what Dan likes",  # "may" is a verb
        "what is 17% of 240",
        "convert 30 degrees Celsius",
        "Harbor deploys on Tuesdays",  # weekdays recur
        "when did Melanie paint a sunrise?",
        "2025 incidents",  # a year needs a preposition
        "what happened on 2026-02-30",  # no such day
    ],
)
def test_no_time_named(query: str) -> None:
    assert timeq.find_period(query, NOW) is None


def test_without_blanks_the_words_that_named_the_time() -> None:
    query = "what did I note about Harbor in October 2026?"
    period = timeq.find_period(query, NOW)
    assert period is not None and period.text == "October 2026"
    assert timeq.without(query, period).split() == ["what", "did", "I", "note", "about", "Harbor", "in", "?"]


def test_closeness_is_one_inside_at_most_half_outside_and_decays() -> None:
    period = timeq.find_period("in March 2026", NOW)
    assert period is not None
    inside = datetime(2026, 3, 20, tzinfo=UTC)
    near = datetime(2026, 4, 3, tzinfo=UTC)
    far = datetime(2025, 3, 20, tzinfo=UTC)
    assert timeq.closeness([(inside, inside)], period) == 1.0
    assert 0.25 < timeq.closeness([(near, near)], period) < 0.5
    assert timeq.closeness([(far, far)], period) < timeq.closeness([(near, near)], period)
    assert timeq.closeness([], period) == 0.0


def test_subject_time_wins_over_the_save_time_unless_the_query_asks_what_was_said() -> None:
    period = timeq.find_period("in 2025", NOW)
    assert period is not None
    saved_in_2025 = datetime(2025, 6, 1, tzinfo=UTC)
    dated_2026 = {"subjectTime": "2026-03"}
    assert timeq.entry_closeness(dated_2026, saved_in_2025, period, saved=False) < 0.5
    assert timeq.entry_closeness(dated_2026, saved_in_2025, period, saved=True) == 1.0
    assert timeq.entry_closeness({}, saved_in_2025, period, saved=False) == timeq.SAVED_SHARE
    assert timeq.entry_closeness({"subjectTime": "2025"}, saved_in_2025, period, saved=False) == 1.0
    ranged = {"subjectTimeStart": "2024-11", "subjectTimeEnd": "2025-02"}
    assert timeq.entry_closeness(ranged, NOW, period, saved=False) == 1.0
    assert timeq.about_saving("what did I tell you last week?")
    assert not timeq.about_saving("what happened last week?")


def test_this_may_is_a_verb_but_this_May_a_month() -> None:
    assert timeq.find_period("this may take a while", NOW) is None
    assert days("what is planned for this May") == (date(2026, 5, 1), date(2026, 6, 1))
