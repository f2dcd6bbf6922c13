"""Subject-time metadata (seed 000): when the thing a fact is about happened, as opposed to when the agent
learned it. A convention on ``metadata``, not typed fields:

- ``subjectTime``: a point, ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (the most specific form the source
  justifies), or an ISO 8601 date and time (``2023-05-08T13:56:00+00:00``, ``2023-05-08T13:56Z``,
  ``2023-05-08T13:56``), which means its day as written (day precision; the text is kept as it is);
- ``subjectTimeStart`` / ``subjectTimeEnd``: range bounds in the same forms; either may be omitted if open.

A save checks these keys (``subject_time_problem``); merging never raises and ignores what it cannot read.

Merging (when consolidation folds entries together) follows these rules, independent of source order:
- A value that is not one of the three forms, or not a real date (``2019-02-30``), is ignored.
- A point keeps the most specific value (day > month > year; a date and time counts as its day); between
  equally specific points that disagree, the earliest wins. Between values that mean the same day, one with a
  time of day wins over a bare date, then the lesser text: the result never depends on source order.
- A range widens: the earliest start and the latest end. A start is compared by the first day it can mean
  (``2019`` → 2019-01-01), an end by the last (``2019`` → 2019-12-31); on a tie the more specific value wins.
- An open bound is unbounded, not unknown: a source with a valid start and no end key is open-ended
  ("since 2015"), so the merged range has no end either (and likewise for a missing start). A *malformed*
  bound is unknown instead: it contributes nothing and does not open the range.
- A source contributes to the range only with at least one valid bound; an inverted range (start after end)
  is malformed and ignored whole. Sources with no range leave the merged range alone, and when no source
  has one the merged metadata has neither key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

SUBJECT_TIME = "subjectTime"
SUBJECT_TIME_START = "subjectTimeStart"
SUBJECT_TIME_END = "subjectTimeEnd"
SUBJECT_TIME_KEYS = (SUBJECT_TIME, SUBJECT_TIME_START, SUBJECT_TIME_END)

_FORM = re.compile(r"(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
# An ISO 8601 date and time in the extended format: a time of day to the minute at least, an optional
# fraction of a second, and an optional offset (Z or ±HH:MM). datetime.fromisoformat then checks the values.
_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?")


@dataclass(frozen=True, slots=True)
class _When:
    """A parsed value: the first and last day it can mean, its precision (1 year, 2 month, 3 day), and whether
    it names a time of day too (a date and time: day precision)."""

    value: str
    first: date
    last: date
    precision: int
    timed: bool = False

    @property
    def tie(self) -> tuple[bool, str]:
        """The last key of every choice between values: with a time of day first, then the lesser text."""
        return not self.timed, self.value


def _parse(value: object) -> _When | None:
    if not isinstance(value, str):
        return None
    match = _FORM.fullmatch(value)
    if match is None:
        return _parse_datetime(value)
    year = int(match.group(1))
    month, day = (int(part) if part else None for part in match.group(2, 3))
    try:
        if month is None:
            return _When(value, date(year, 1, 1), date(year, 12, 31), 1)
        if day is None:
            first = date(year, month, 1)
            following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
            return _When(value, first, following - timedelta(days=1), 2)
        point = date(year, month, day)
        return _When(value, point, point, 3)
    except ValueError:  # month 13, day 31 of a 30-day month, year 0, year 9999 + 1
        return None


def _parse_datetime(value: str) -> _When | None:
    """A date and time (``_DATETIME``) as the day it names, as written: the offset does not move the day."""
    if _DATETIME.fullmatch(value) is None:
        return None
    try:
        day = datetime.fromisoformat(value).date()
    except ValueError:  # hour 24, minute 60, offset beyond a day, a day the month lacks
        return None
    return _When(value, day, day, 3, timed=True)


def valid_subject_time(value: object) -> bool:
    """True for ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` naming a real calendar date, or an ISO 8601 date and
    time on such a date (``2023-05-08T13:56:00+00:00``; offset optional): no whitespace, years 0001–9999."""
    return _parse(value) is not None


def subject_time_problem(metadata: Mapping[str, Any]) -> tuple[str, str] | None:
    """What is wrong with ``metadata``'s subject-time keys, as ``(key, message)``, or None when they are
    absent or valid: a value in none of the forms, or a start after its end."""
    for key in SUBJECT_TIME_KEYS:
        value = metadata.get(key)
        if value is not None and _parse(value) is None:
            return key, (
                f"metadata.{key} must be a string YYYY, YYYY-MM, YYYY-MM-DD or an ISO 8601 date and time "
                f"(2023-05-08T13:56:00+00:00), got {repr(value)[:60]}"
            )
    start, end = _parse(metadata.get(SUBJECT_TIME_START)), _parse(metadata.get(SUBJECT_TIME_END))
    if start is not None and end is not None and start.first > end.last:
        return SUBJECT_TIME_START, (
            f"metadata.{SUBJECT_TIME_START} ({start.value}) is after metadata.{SUBJECT_TIME_END} ({end.value})"
        )
    return None


def _merged_point(metadatas: Sequence[Mapping[str, Any]]) -> str | None:
    points = [p for p in (_parse(m.get(SUBJECT_TIME)) for m in metadatas) if p is not None]
    if not points:
        return None
    return min(points, key=lambda p: (-p.precision, p.first, p.tie)).value


def _source_range(metadata: Mapping[str, Any]) -> tuple[_When | None, _When | None, bool, bool] | None:
    """(start, end, start_open, end_open) of one source, or None when it says nothing usable."""
    raw_start, raw_end = metadata.get(SUBJECT_TIME_START), metadata.get(SUBJECT_TIME_END)
    start, end = _parse(raw_start), _parse(raw_end)
    if start is None and end is None:
        return None
    if start is not None and end is not None and start.first > end.last:
        return None
    return start, end, raw_start is None, raw_end is None


def _merged_range(metadatas: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    starts: list[_When] = []
    ends: list[_When] = []
    start_open = end_open = False
    for metadata in metadatas:
        found = _source_range(metadata)
        if found is None:
            continue
        start, end, opens_start, opens_end = found
        starts += [start] if start is not None else []
        ends += [end] if end is not None else []
        start_open |= opens_start
        end_open |= opens_end
    merged: dict[str, str] = {}
    if starts and not start_open:
        merged[SUBJECT_TIME_START] = min(starts, key=lambda w: (w.first, -w.precision, w.tie)).value
    if ends and not end_open:
        merged[SUBJECT_TIME_END] = min(ends, key=lambda w: (-w.last.toordinal(), -w.precision, w.tie)).value
    return merged


def merge_subject_time(metadatas: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The subject-time keys of the merged entry (only those that have a value), by the module's rules."""
    merged = _merged_range(metadatas)
    point = _merged_point(metadatas)
    if point is not None:
        merged[SUBJECT_TIME] = point
    return merged


def day_bounds(value: object) -> tuple[datetime, datetime] | None:
    """The stretch of time a subject-time value means, in UTC: from the start of its first day to the end
    of its last (``2026-03`` -> 2026-03-01 00:00 to 2026-03-31 23:59:59.999999); None when malformed."""
    when = _parse(value)
    if when is None:
        return None
    first = datetime(when.first.year, when.first.month, when.first.day, tzinfo=UTC)
    last = datetime(when.last.year, when.last.month, when.last.day, tzinfo=UTC)
    return first, last + timedelta(days=1) - timedelta(microseconds=1)
