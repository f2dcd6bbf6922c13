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


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Seasons: meteorological, northern hemisphere; a bare one is the latest begun by now.
        ("what did we do in the summer", (date(2026, 6, 1), date(2026, 9, 1))),
        ("What state did Joanna visit in summer 2021?", (date(2021, 6, 1), date(2021, 9, 1))),
        ("in the spring of 2025", (date(2025, 3, 1), date(2025, 6, 1))),
        ("winter 2021", (date(2021, 12, 1), date(2022, 3, 1))),
        ("over the winter", (date(2026, 12, 1), date(2027, 3, 1))),  # we are in it
        ("last winter", (date(2025, 12, 1), date(2026, 3, 1))),
        ("last summer", (date(2026, 6, 1), date(2026, 9, 1))),  # the one that ended
        ("next summer", (date(2027, 6, 1), date(2027, 9, 1))),
        ("this spring", (date(2027, 3, 1), date(2027, 6, 1))),
        # Weekends and named weekdays (NOW is Wednesday 2026-12-02).
        ("what did I do at the weekend", (date(2026, 11, 28), date(2026, 11, 30))),
        ("last weekend", (date(2026, 11, 28), date(2026, 11, 30))),
        ("this weekend", (date(2026, 12, 5), date(2026, 12, 7))),
        ("next weekend", (date(2026, 12, 12), date(2026, 12, 14))),
        ("last Friday", (date(2026, 11, 27), date(2026, 11, 28))),
        ("last Wednesday", (date(2026, 11, 25), date(2026, 11, 26))),
        ("next Wednesday", (date(2026, 12, 9), date(2026, 12, 10))),
        ("this Monday", (date(2026, 11, 30), date(2026, 12, 1))),
        ("tomorrow", (date(2026, 12, 3), date(2026, 12, 4))),
        ("what did I say last night", (date(2026, 12, 1), date(2026, 12, 2))),
        # Quarters.
        ("revenue in Q3", (date(2026, 7, 1), date(2026, 10, 1))),
        ("Q1 2025", (date(2025, 1, 1), date(2025, 4, 1))),
        ("last quarter", (date(2026, 7, 1), date(2026, 10, 1))),
        ("next quarter", (date(2027, 1, 1), date(2027, 4, 1))),
        # Parts of a period are read with it but do not narrow it (subject times are often when a thing was said).
        ("what is changing at the end of the year?", (date(2026, 1, 1), date(2027, 1, 1))),
        ("the tournament in the beginning of November 2022", (date(2022, 11, 1), date(2022, 12, 1))),
        ("in early 2025", (date(2025, 1, 1), date(2026, 1, 1))),
        ("during mid-2024", (date(2024, 1, 1), date(2025, 1, 1))),
        ("late May 2023", (date(2023, 5, 1), date(2023, 6, 1))),
        ("after the start of May 2023", (date(2023, 5, 1), None)),
        ("before the start of 2025", (None, date(2025, 1, 1))),
        ("since the start of the year", (date(2026, 1, 1), None)),
        ("until the end of next month", (None, date(2027, 2, 1))),  # up to its end
        ("after the end of May 2023", (date(2023, 6, 1), None)),
    ],
)
def test_seasons_weekends_weekdays_quarters_and_parts(query: str, expected: tuple[date | None, date | None]) -> None:
    assert days(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "the fall of Rome",
        "I fall asleep early",
        "spring boot config",
        "What aspect of autumn does Andrew find beautiful?",  # "of" does not make a season a time
        "payments arrive on Friday",
        "a Q&A session",
    ],
)
def test_seasons_and_weekdays_need_a_word_that_makes_them_a_time(query: str) -> None:
    assert timeq.find_period(query, NOW) is None


def test_a_season_stays_in_the_words_searched_other_times_leave() -> None:
    summer = "What are Caroline's plans for the summer?"
    period = timeq.find_period(summer, NOW)
    assert period is not None and timeq.without(summer, period) == summer
    weekend = "what did Dan do at the weekend?"
    period = timeq.find_period(weekend, NOW)
    assert period is not None and timeq.without(weekend, period).split() == ["what", "did", "Dan", "do", "?"]
    late = "payouts were late on 2025-06-30"  # "late" is not "late June" here
    period = timeq.find_period(late, NOW)
    assert period is not None and period.text == "2025-06-30"
    start = "What did Evan start one year ago?"  # "start" names a part only with "of"
    period = timeq.find_period(start, NOW)
    assert period is not None and period.text == "one year ago"
    ending = "what is changing at the end of the year?"
    period = timeq.find_period(ending, NOW)
    assert period is not None and timeq.without(ending, period).split() == ["what", "is", "changing", "at", "?"]


def test_times_a_text_names_count_from_when_it_was_saved() -> None:
    saved = datetime(2025, 10, 10, 9, 0, tzinfo=UTC)
    found = timeq.written_times("Kenji and Inês went hiking in the Azores in June 2025.", saved)
    assert [(a.date(), b.date()) for a, b in found] == [(date(2025, 6, 1), date(2025, 6, 30))]
    both = timeq.written_times("The staging database was wiped on 3 November 2025; restored last week.", saved)
    assert [(a.date(), b.date()) for a, b in both] == [
        (date(2025, 11, 3), date(2025, 11, 3)),
        (date(2025, 9, 29), date(2025, 10, 5)),  # the week before the one of 2025-10-10
    ]
    # An open stretch says when something was not; a bare month or year with no preposition is no time.
    assert timeq.written_times("We lived in Osaka until 2024.", saved) == []
    assert timeq.written_times("May is the best month; 2025 people came.", saved) == []
    # A bare month or season may recur every year; "last May" is one.
    assert timeq.written_times("Dan gets hay fever from May to July and in summer.", saved) == []
    last_may = timeq.written_times("We met last May.", saved)
    assert [(a.date(), b.date()) for a, b in last_may] == [(date(2025, 5, 1), date(2025, 5, 31))]


def test_a_time_the_text_names_stands_in_for_a_subject_time() -> None:
    september = timeq.find_period("in September 2025", NOW)
    assert september is not None
    saved_in_september = datetime(2025, 9, 1, tzinfo=UTC)
    moved = timeq.written_times("Kenji moved to Lisbon from Osaka in March 2024.", saved_in_september)
    # Saved in September, but about March 2024: the text's time wins over the save time...
    assert timeq.entry_closeness({}, saved_in_september, september, saved=False, written=moved) < 0.01
    assert not timeq.inside({}, NOW, september, moved)
    # ...unless the query asks what was said then, and a subject time the caller gave wins over the text.
    assert timeq.entry_closeness({}, saved_in_september, september, saved=True, written=moved) == 1.0
    given = {"subjectTime": "2025-09-20"}
    assert timeq.entry_closeness(given, saved_in_september, september, saved=False, written=moved) == 1.0
    talk = timeq.written_times("Kenji gave a talk at the Go meetup in September 2025.", NOW)
    assert timeq.entry_closeness({}, NOW, september, saved=False, written=talk) == 1.0
    assert timeq.inside({}, NOW, september, talk)
    assert not timeq.has_subject_time({}) and timeq.has_subject_time(given)
    # A year the text names holds September 2025 but says little about it: the weight of a save time.
    year = timeq.written_times("Biscuit turned six in 2025.", NOW)
    assert timeq.entry_closeness({}, NOW, september, saved=False, written=year) == timeq.SAVED_SHARE
    assert not timeq.inside({}, NOW, september, year)
    in_2025 = timeq.find_period("in 2025", NOW)
    assert in_2025 is not None and timeq.entry_closeness({}, NOW, in_2025, saved=False, written=talk) == 1.0


def test_a_text_is_read_only_for_the_kinds_of_time_it_has_the_words_of() -> None:
    # Every kind of pattern has its needed words; a text with none of them names no time.
    assert set(timeq._NEEDS) == {kind for kind, _ in timeq._PATTERNS}
    saved = datetime(2025, 10, 10, tzinfo=UTC)
    assert timeq.written_times("Dan writes code in Neovim with the LazyVim setup.", saved) == []
    for text, first in (
        ("Released on 2025-11-30.", date(2025, 11, 30)),
        ("It broke three days ago.", date(2025, 10, 7)),
        ("We spoke yesterday.", date(2025, 10, 9)),
        ("Sales fell in Q2 2025.", date(2025, 4, 1)),
        ("Planned for the end of the month.", date(2025, 10, 1)),
        ("Met last Friday at the office.", date(2025, 10, 3)),
    ):
        found = timeq.written_times(text, saved)
        assert [a.date() for a, _ in found] == [first], text
