"""Times named in a query ("last week", "in May 2023", "since 2024", "2026-03-14"), as a period. Pure.

Recall uses the period two ways: entries whose time falls in it rank higher (``closeness``), and the
words that named it are left out of the BM25 query ("what happened last month?" should not match every
entry holding "month"). An entry's time is its subject time (``metadata.subjectTime`` or the
``subjectTimeStart``/``subjectTimeEnd`` range) — without one, the times its text names (``written_times``) —
and the time it was saved: either may match.

Invariants:
- Only expressions that name a time are read: a bare year, month or season needs a preposition ("in 2025",
  "during May", "over the summer"), since "May" is also a verb, "fall" a verb and "2025" also a count. A bare
  weekday is not read (facts use them for what recurs: "deploys on Tuesdays"); "last Friday" is.
- Seasons are the northern hemisphere's meteorological ones (spring is March to May; winter starts in
  December). A season's words stay in the BM25 query: "plans for the summer" is also about summer.
- "the start / beginning / end / middle of" and "early / late" / "mid-" are read with the period they
  precede but do not narrow it ("the end of the year" is the year; see ``_sided``).
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
from functools import lru_cache
from typing import Any

from reverie.core.subject_time import SUBJECT_TIME, SUBJECT_TIME_END, SUBJECT_TIME_START, day_bounds

MONTHS: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july", "august")
MONTHS += ("september", "october", "november", "december")
_MONTH_NUMBER = (
    {name: i for i, name in enumerate(MONTHS, start=1)}
    | {name[:3]: i for i, name in enumerate(MONTHS, start=1) if name != "may"}
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
_NAMED_DAYS = (
    "today",
    "yesterday",
    "tomorrow",
    "tonight",
    "last night",
    "this morning",
    "this afternoon",
    "this evening",
)
_NAMED_OFFSET = {"yesterday": -1, "last night": -1, "tomorrow": 1}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month; three months each
# Not "of": "what aspect of autumn" is no time.
_SEASON_PREP = r"(?P<prep>in|during|over|through|for|from|since|before|after|until|till|by)"
_SEASON = r"(?P<season>" + "|".join(_SEASON_START) + r")"
# "the end of", "early" ... just before a period: read with it (``_sided``), with a before/after/since ahead.
_PART_BEFORE = re.compile(
    r"\b(?:(?P<lead>before|until|till|prior to|after|since)\s+)?(?:the\s+)?"
    r"(?:(?P<part>start|beginning|end|middle)\s+of|(?P<adverb>early|late))(?:\s+the)?\s*$",
    re.IGNORECASE,
)
_PART = r"(?:(?P<part>early|late|mid)[\s-]+)?"  # "in early May", "during mid-2024"
_BEFORE = ("before", "until", "till", "prior to")
_OPENING = ("start", "beginning", "early")  # "after the start of May" opens at May's start, "until the end" at its end

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
        ("named_day", rf"\b(?P<named>{'|'.join(_NAMED_DAYS)})\b"),
        ("season_year", rf"\b(?:{_SEASON_PREP}\s+)?(?:the\s+)?{_SEASON}\s+(?:of\s+)?(?P<year>(?:19|20)\d{{2}})\b"),
        ("season", rf"\b(?:(?P<which>last|this|next|past)\s+|{_SEASON_PREP}\s+(?:the\s+)?){_SEASON}\b"),
        ("weekend", r"\b(?:(?P<which>last|this|next|past)\s+|(?:at|over|on|during)\s+the\s+)weekend\b"),
        ("weekday", rf"\b(?P<which>last|this|next|past)\s+(?P<weekday>{'|'.join(WEEKDAYS)})\b"),
        ("quarter", r"\b(?:(?P<which>last|this|next)\s+quarter|Q(?P<q>[1-4])(?:\s+(?P<year>(?:19|20)\d{2}))?)\b"),
        ("part_unit", r"\b(?:the\s+)?(?P<part>start|beginning|end|middle)\s+of\s+the\s+(?P<unit>week|month|year)\b"),
        ("month", rf"\b(?:{_PREP}\s+){_PART}(?:(?P<which>last|this|next)\s+)?{_MONTH}\b"),
        ("which_month", rf"\b(?P<which>last|this|next)\s+{_MONTH}\b"),
        ("year", rf"\b(?:{_PREP}\s+){_PART}(?:the\s+year\s+)?(?P<year>(?:19|20)\d{{2}})\b"),
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
            start, end, first = _sided(query, match, bounds)
            # A season's words stay in the BM25 query ("plans for the summer" is also about summer).
            spans = () if kind.startswith("season") else ((first, match.end()),)
            return Period(start, end, spans, query[first : match.end()])
        taken.extend(m.span() for m in pattern.finditer(query))
    return None


_RECURRING = ("month", "season")  # kinds whose bare form ("in May") a memory may say of every year
# The words without which a kind of pattern cannot match a text (and whether it needs a digit): a memory's text
# is matched only against the kinds it holds the words of, one set lookup each (most texts name no time).
_MONTH_WORDS = frozenset(_MONTH_NUMBER)
_SEASON_WORDS = frozenset(_SEASON_START)
_SIDES = frozenset({"last", "this", "next", "past"})
_NEEDS: dict[str, tuple[bool, frozenset[str] | None]] = {
    "iso_day": (True, None),
    "iso_month": (True, None),
    "day_month_year": (True, _MONTH_WORDS),
    "month_day_year": (True, _MONTH_WORDS),
    "month_year": (True, _MONTH_WORDS),
    "ago": (False, frozenset({"ago"})),
    "past": (False, frozenset({"past", "last"})),
    "relative": (False, _SIDES),
    "named_day": (
        False,
        frozenset({"today", "yesterday", "tomorrow", "tonight", "night", "morning", "afternoon", "evening"}),
    ),
    "season_year": (True, _SEASON_WORDS),
    "season": (False, _SEASON_WORDS),
    "weekend": (False, frozenset({"weekend"})),
    "weekday": (False, frozenset(WEEKDAYS)),
    "quarter": (False, frozenset({"quarter", "q1", "q2", "q3", "q4"})),
    "part_unit": (False, frozenset({"start", "beginning", "end", "middle"})),
    "month": (False, _MONTH_WORDS),
    "which_month": (False, _MONTH_WORDS),
    "year": (True, None),
}
_TOKENS = re.compile(r"[a-z0-9]+")


def written_times(text: str, anchor: datetime) -> list[tuple[datetime, datetime]]:
    """The closed stretches of time ``text`` names ("in June 2025", "on 3 November 2025", "last week"), each as
    ``(first, last)`` inclusive; relative ones count from ``anchor`` (when the text was saved). Left out: a
    stretch opened by before/after/since (it says when something was not), and a month or season without a
    year or a "last"/"next" (in a memory it often recurs: "hay fever from May to July", "in summer")."""
    return list(_written(text, anchor))


@lru_cache(maxsize=4096)
def _written(text: str, anchor: datetime) -> tuple[tuple[datetime, datetime], ...]:
    out: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []
    words = set(_TOKENS.findall(text.lower()))
    digit = any(ch.isdigit() for ch in text)
    for kind, pattern in _PATTERNS:
        needs_digit, any_of = _NEEDS[kind]
        if (needs_digit and not digit) or (any_of is not None and words.isdisjoint(any_of)):
            continue
        for match in pattern.finditer(text):
            if kind in _RECURRING and not match.groupdict().get("which"):
                taken.append(match.span())
                continue
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append(match.span())
            bounds = _bounds(kind, match, anchor.astimezone(UTC))
            if bounds is None or _lead_word(match).lower() in (*_BEFORE, "after", "since"):
                continue
            out.append((bounds[0], bounds[1] - timedelta(microseconds=1)))
    return tuple(out)


def _sided(
    query: str, match: re.Match[str], bounds: tuple[datetime, datetime]
) -> tuple[datetime | None, datetime | None, int]:
    """``bounds`` opened by a leading before/after/since, with where the words naming the period start.

    A part word in or just before the match ("the end of", "early") joins those words but does not narrow
    the period: an entry's subject time is often when it was said rather than when it happened (LoCoMo's
    "working on in the beginning of January" was said on the 23rd), so a third of a month is too fine. With
    a lead it picks the side: "until the end of May" runs to May's end, "since the start of the year" from
    its start."""
    part, lead, first = match.groupdict().get("part"), _lead_word(match), match.start()
    # "the start of 2025": the year's pattern took "of" as its preposition.
    said = query[:first] + ("of" if match.group(0).lower().startswith("of ") else "")
    before = _PART_BEFORE.search(said) if part is None else None
    if before is not None:
        part, lead, first = before.group("part") or before.group("adverb"), before.group("lead") or lead, before.start()
    start, end = bounds
    if part is not None and lead.lower() in _BEFORE and part.lower() not in _OPENING:
        start = end  # "before the end of May": up to May's end
    elif part is not None and lead.lower() in ("after", "since") and part.lower() in _OPENING:
        end = start  # "after the start of May": from May's start
    return (*_lead(lead, start, end), first)


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


def entry_closeness(
    metadata: Mapping[str, Any],
    created_at: datetime,
    period: Period,
    *,
    saved: bool,
    written: list[tuple[datetime, datetime]] | None = None,
) -> float:
    """How well an entry's time matches ``period``, in [0, 1]. Its subject time (point or range) says when
    what it is about happened; without one, the times its text names (``written``: "went hiking in the
    Azores in June 2025") do. The time it was saved counts only when it has neither, at ``SAVED_SHARE``
    (learning of a thing then is weaker evidence than its happening then), or in full when the query is
    ``about_saving``."""
    subject = _subject_stretches(metadata)
    created = closeness([(created_at, created_at)], period)
    if not subject and written:
        text = _written_closeness(written, period)
        return max(created, text) if saved else text
    if saved:
        return max(created, closeness(subject, period)) if subject else created
    return closeness(subject, period) if subject else SAVED_SHARE * created


def _written_closeness(written: list[tuple[datetime, datetime]], period: Period) -> float:
    """``closeness`` of the times a text names, except that one longer than ``period`` that holds it counts at
    ``SAVED_SHARE``: "he turned six in 2025" says little about November 2025."""
    best = 0.0
    for first, last in written:
        near = closeness([(first, last)], period)
        if near == 1.0 and (last - first).total_seconds() / 86400 > period.days + 1:
            near = SAVED_SHARE
        best = max(best, near)
    return best


def inside(
    metadata: Mapping[str, Any],
    created_at: datetime,
    period: Period,
    written: list[tuple[datetime, datetime]] | None = None,
) -> bool:
    """Whether the entry was saved, or its subject time (else a time its text names, ``written``) lies, in
    ``period``: evidence that it answers a query naming only a time, whatever weight ranking gives it."""
    subject = _subject_stretches(metadata)
    if not subject and written and _written_closeness(written, period) == 1.0:
        return True
    return closeness([(created_at, created_at), *subject], period) == 1.0


def has_subject_time(metadata: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` holds a well-formed subject time (point or range)."""
    return bool(_subject_stretches(metadata))


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
    if kind in _AROUND_TODAY:
        return _AROUND_TODAY[kind](groups, today)
    if kind == "named_day":
        first = today + timedelta(days=_NAMED_OFFSET.get(" ".join(groups["named"].lower().split()), 0))
        return first, first + timedelta(days=1)
    if kind in ("ago", "past"):
        unit = _UNIT_DAYS[groups["unit"].lower()]
        days = _count(groups["count"]) * unit
        if kind == "past":
            return today - timedelta(days=days), today + timedelta(days=1)
        centre = today - timedelta(days=days)  # "two weeks ago": the week around that day
        return centre - timedelta(days=unit // 2), centre + timedelta(days=unit - unit // 2 or 1)
    return _relative(groups["which"].lower(), groups["unit"].lower(), today)


def _season(groups: dict[str, Any], today: datetime) -> tuple[datetime, datetime]:
    """A season with a year ("summer 2021": June to August; "winter 2021": December 2021 to February 2022), or
    placed by "last/this/next" or, bare, as the latest one begun by now (in a season: that one)."""
    first = _SEASON_START[groups["season"].lower()]
    if groups.get("year"):
        year = int(groups["year"])
    else:
        # The latest start of this season not after today, then stepped by "last" / "next".
        year = today.year if _month_start(today.year, first) <= today else today.year - 1
        which = (groups.get("which") or "").lower()
        current = today < _month_start(year, first + 3)
        if which in ("last", "past") and current:
            year -= 1
        elif which == "next" or (which == "this" and not current and first != 12):
            year += 1
    return _month_start(year, first), _month_start(year, first + 3)


def _weekend(groups: dict[str, Any], today: datetime) -> tuple[datetime, datetime]:
    """Saturday and Sunday: "this weekend" of this week (Monday first), "last" the one before it, "next" the
    one after; "at the weekend" the latest one begun by now."""
    saturday = today - timedelta(days=today.weekday()) + timedelta(days=5)
    which = (groups.get("which") or "").lower()
    if which in ("last", "past") or (not which and saturday > today):
        saturday -= timedelta(weeks=1)
    elif which == "next":
        saturday += timedelta(weeks=1)
    return saturday, saturday + timedelta(days=2)


def _weekday(groups: dict[str, Any], today: datetime) -> tuple[datetime, datetime]:
    """ "last Friday": the latest Friday before today; "next Friday": the first after today; "this Friday": the
    one of this week (Monday first)."""
    wanted = WEEKDAYS.index(groups["weekday"].lower())
    which = groups["which"].lower()
    if which == "this":
        day = today - timedelta(days=today.weekday() - wanted)
    elif which == "next":
        day = today + timedelta(days=(wanted - today.weekday() - 1) % 7 + 1)
    else:
        day = today - timedelta(days=(today.weekday() - wanted - 1) % 7 + 1)
    return day, day + timedelta(days=1)


def _quarter(groups: dict[str, Any], today: datetime) -> tuple[datetime, datetime]:
    """Q1-Q4 of a year (without one: the latest begun by now), or "last/this/next quarter"."""
    current = (today.month - 1) // 3
    if groups.get("which"):
        index = today.year * 4 + current + {"last": -1, "this": 0, "next": 1}[groups["which"].lower()]
    else:
        number = int(groups["q"]) - 1
        year = int(groups["year"]) if groups.get("year") else today.year - (number > current)
        index = year * 4 + number
    start = _month_start(index // 4, index % 4 * 3 + 1)
    return start, _month_start(start.year, start.month + 3)


def _part_unit(groups: dict[str, Any], today: datetime) -> tuple[datetime, datetime]:
    """ "the end of the year": this year (the part word picks a side only beside before/after: ``_sided``)."""
    return _relative("this", groups["unit"].lower(), today)


_AROUND_TODAY = {
    "season": _season,
    "season_year": _season,
    "weekend": _weekend,
    "weekday": _weekday,
    "quarter": _quarter,
    "part_unit": _part_unit,
}


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


def _lead_word(m: re.Match[str]) -> str:
    groups = m.groupdict()
    return groups.get("lead") or groups.get("prep") or ""


def _lead(lead: str, start: datetime, end: datetime) -> tuple[datetime | None, datetime | None]:
    lead = lead.lower()
    if lead in _BEFORE:
        return None, start
    if lead == "after":
        return end, None
    if lead == "since":
        return start, None
    return start, end
