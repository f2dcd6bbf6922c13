"""Times named in a query ("last week", "in May 2023", "since 2024", "2026-03-14"), as a period. Pure.

Recall uses the period two ways: entries whose time falls in it rank higher (``closeness``), and the
words that named it are left out of the BM25 query ("what happened last month?" should not match every
entry holding "month"). An entry's time is its subject time (``metadata.subjectTime`` or the
``subjectTimeStart``/``subjectTimeEnd`` range) and the time it was saved: either may match.

Invariants:
- Only expressions that name a time are read: a bare year or month name needs a preposition ("in 2025",
  "during May"), since "May" is also a verb and "2025" also a count. Weekdays are not read: facts use them
  for what recurs ("deploys on Tuesdays").
- Relative expressions count from ``now`` (the caller's clock), in UTC: "last week" is the seven days
  before the start of this week (Monday), "last month" the calendar month before this one, "N days ago"
  that day.
- ``before``/``until``/``prior to`` open the period's start, ``after``/``since`` its end; the period is
  half-open, ``[start, end)``, None for an open side.
- English only; a query naming no time gives None and recall is unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.core.subject_time import SUBJECT_TIME, SUBJECT_TIME_END, SUBJECT_TIME_START, day_bounds

_MONTHS: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july", "august")
_MONTHS += ("september", "october", "november", "december")
_MONTH_NUMBER = (
    {name: i for i, name in enumerate(_MONTHS, start=1)}
    | {name[:3]: i for i, name in enumerate(_MONTHS, start=1) if name != "may"}
    | {"sept": 9}
)
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a couple of": 2}
_COUNT = r"(?P<count>\d{1,3}|a couple of|an?|one|two|three|four|five|six)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_PREP = r"(?P<prep>in|during|on|from|of|for|since|before|after|until|till|by)"
_LEAD = r"(?P<lead>before|until|till|prior to|after|since)\s+"
_SAYING = re.compile(
    r"\b(?:tell|told|said|say|mention(?:ed)?|note[ds]?|noted|wrote|write|written|saved?|record(?:ed)?|learn(?:ed|t)?)\b",
    re.IGNORECASE,
)
SAVED_SHARE = 0.5

# Most specific first: the first pattern to match a stretch of the query claims it.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rf"(?:{_LEAD})?{body}", re.IGNORECASE))
    for kind, body in (
        ("iso_day", r"\b(?P<year>\d{4})-(?P<m>\d{2})-(?P<day>\d{2})\b"),
        ("iso_month", r"\b(?P<year>\d{4})-(?P<m>\d{2})\b"),
        ("day_month_year", rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(?P<year>\d{{4}})\b"),
        ("month_day_year", rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b"),
        ("month_year", rf"\b{_MONTH},?\s+(?P<year>\d{{4}})\b"),
        ("ago", rf"\b{_COUNT}\s+{_UNIT}\s+ago\b"),
        ("past", rf"\b(?:the\s+)?(?:past|last)\s+{_COUNT}\s+{_UNIT}\b"),
        ("relative", r"\b(?P<which>last|this|next|past)\s+(?P<unit>week|month|year)\b"),
        ("named_day", r"\b(?P<named>today|yesterday|tonight|this morning|this afternoon|this evening)\b"),
        ("month", rf"\b(?:{_PREP}\s+)(?:(?P<which>last|this|next)\s+)?{_MONTH}\b"),
        ("which_month", rf"\b(?P<which>last|this|next)\s+{_MONTH}\b"),
        ("year", rf"\b(?:{_PREP}\s+)(?:the\s+year\s+)?(?P<year>(?:19|20)\d{{2}})\b"),
    )
)


@dataclass(frozen=True, slots=True)
class Period:
    """A time a query names: ``[start, end)`` in UTC (None: open on that side), the character ``spans``
    of the words that named it, and ``text`` as written."""

    start: datetime | None
    end: datetime | None
    spans: tuple[tuple[int, int], ...]
    text: str

    @property
    def days(self) -> float:
        """The period's length in days (an open period counts as a year: it only sets the decay scale)."""
        if self.start is None or self.end is None:
            return 365.0
        return max((self.end - self.start).total_seconds() / 86400, 1.0)


def find_period(query: str, now: datetime) -> Period | None:
    """The first time ``query`` names, or None. ``now`` anchors relative expressions."""
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            bounds = _bounds(kind, match, now.astimezone(UTC))
            if bounds is None:
                continue
            start, end = _lead(match, *bounds)
            return Period(start, end, (match.span(),), match.group(0))
        taken.extend(m.span() for m in pattern.finditer(query))
    return None


def without(query: str, period: Period) -> str:
    """``query`` with the words that named ``period`` blanked out (for the BM25 terms)."""
    out = query
    for start, end in sorted(period.spans, reverse=True):
        out = out[:start] + " " * (end - start) + out[end:]
    return out


def about_saving(query: str) -> bool:
    """Whether the query asks about what was said or saved then ("what did I tell you last week?"), not
    about what happened then: the time an entry was saved then counts in full."""
    return _SAYING.search(query) is not None


def entry_closeness(metadata: Mapping[str, Any], created_at: datetime, period: Period, *, saved: bool) -> float:
    """How well an entry's time matches ``period``, in [0, 1]. Its subject time (point or range) says when
    what it is about happened; the time it was saved counts only when it has none, at ``SAVED_SHARE``
    (learning of a thing then is weaker evidence than its happening then), or in full when the query is
    ``about_saving``."""
    subject = _subject_stretches(metadata)
    created = closeness([(created_at, created_at)], period)
    if saved:
        return max(created, closeness(subject, period)) if subject else created
    return closeness(subject, period) if subject else SAVED_SHARE * created


def inside(metadata: Mapping[str, Any], created_at: datetime, period: Period) -> bool:
    """Whether the entry was saved, or its subject time lies, in ``period``: evidence that it answers a
    query naming only a time, whatever weight ranking gives it."""
    return closeness([(created_at, created_at), *_subject_stretches(metadata)], period) == 1.0


def closeness(times: list[tuple[datetime, datetime]], period: Period) -> float:
    """1 when one of ``times`` overlaps ``period``; outside it at most a half, halving again every period
    length (at least a week), so "March 2026" still prefers late February to last year. 0 for no times."""
    best = 0.0
    scale = max(period.days, 7.0)
    for first, last in times:
        if period.end is not None and first >= period.end:
            gap = (first - period.end).total_seconds() / 86400
        elif period.start is not None and last < period.start:
            gap = (period.start - last).total_seconds() / 86400
        else:
            return 1.0
        best = max(best, 0.5 * math.pow(0.5, gap / scale))
    return best


def _subject_stretches(metadata: Mapping[str, Any]) -> list[tuple[datetime, datetime]]:
    """The stretches of time an entry's well-formed subject-time keys name."""
    out = []
    point = day_bounds(metadata.get(SUBJECT_TIME))
    if point is not None:
        out.append(point)
    start, end = day_bounds(metadata.get(SUBJECT_TIME_START)), day_bounds(metadata.get(SUBJECT_TIME_END))
    if start is not None or end is not None:
        low = start[0] if start is not None else datetime.min.replace(tzinfo=UTC)
        high = end[1] if end is not None else datetime.max.replace(tzinfo=UTC)
        if low <= high:
            out.append((low, high))
    return out


# -- reading the matches ---------------------------------------------------------------------------------
def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _month_start(year: int, month: int) -> datetime:
    return datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=UTC)


def _bounds(kind: str, m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    groups = m.groupdict()
    if kind in _CALENDAR:
        return _calendar(kind, groups, now)
    if kind == "year":
        year = int(groups["year"])
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if kind == "named_day":
        first = today - timedelta(days=1) if groups["named"].lower() == "yesterday" else today
        return first, first + timedelta(days=1)
    if kind in ("ago", "past"):
        unit = _UNIT_DAYS[groups["unit"].lower()]
        days = _count(groups["count"]) * unit
        if kind == "past":
            return today - timedelta(days=days), today + timedelta(days=1)
        centre = today - timedelta(days=days)  # "two weeks ago": the week around that day
        return centre - timedelta(days=unit // 2), centre + timedelta(days=unit - unit // 2 or 1)
    return _relative(groups["which"].lower(), groups["unit"].lower(), today)


_CALENDAR = ("iso_day", "iso_month", "day_month_year", "month_day_year", "month_year", "month", "which_month")


def _calendar(kind: str, groups: dict[str, Any], now: datetime) -> tuple[datetime, datetime] | None:
    """A day or a month named by the calendar; a month without a year is placed by ``_year_of_month``."""
    if kind == "which_month" and groups["month"] == "may":
        return None  # "this may help": only "this May" names the month
    month = int(groups["m"]) if groups.get("m") else _MONTH_NUMBER[groups["month"].lower()]
    if not 1 <= month <= 12:
        return None
    named = kind in ("month", "which_month")
    year = _year_of_month(month, groups.get("which"), now) if named else int(groups["year"])
    if groups.get("day"):
        first = _day(year, month, int(groups["day"]))
        return None if first is None else (first, first + timedelta(days=1))
    return _month_start(year, month), _month_start(year, month + 1)


def _relative(which: str, unit: str, today: datetime) -> tuple[datetime, datetime]:
    """The period "last/this/next/past week|month|year" names around ``today``."""
    if which == "past":
        return today - timedelta(days=_UNIT_DAYS[unit]), today + timedelta(days=1)
    step = {"last": -1, "this": 0, "next": 1}[which]
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=step)
        return monday, monday + timedelta(weeks=1)
    if unit == "month":
        first = _month_start(today.year, today.month + step)
        return first, _month_start(first.year, first.month + 1)
    year = today.year + step
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def _year_of_month(month: int, which: str | None, now: datetime) -> int:
    """A month named without a year: "this"/"next" as said; otherwise its latest occurrence not after now
    ("in May", asked in March, means last May)."""
    if which and which.lower() == "next":
        return now.year if month > now.month else now.year + 1
    if which and which.lower() == "this":
        return now.year
    return now.year if month <= now.month else now.year - 1


def _count(text: str) -> int:
    lowered = " ".join(text.lower().split())
    return int(lowered) if lowered.isdigit() else _NUMBERS.get(lowered, 1)


def _lead(m: re.Match[str], start: datetime, end: datetime) -> tuple[datetime | None, datetime | None]:
    groups = m.groupdict()
    lead = (groups.get("lead") or groups.get("prep") or "").lower()
    if lead in ("before", "until", "till", "prior to"):
        return None, start
    if lead == "after":
        return end, None
    if lead == "since":
        return start, None
    return start, end
