"""An ``EntryFilter`` as SQL over ``facts f``, and keyset pages of entries, written once for both backends.

Invariants:
- ``entry_conditions`` is applied by ``facts.visible``, so every read that takes a ``FactFilter`` (search
  candidates, full-text search, substring search, recent, period and neighbour reads, pages) filters the same
  way, in SQL. Where the two databases differ (JSON arrays and keys) the ``Dialect`` spells it.
- ``page`` is keyset paging on (order key, id), both in the order's direction, never ``OFFSET``: a page
  starts strictly after the last row of the one before, so rows added or removed elsewhere never shift it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.core.filters import ORDERS
from reverie.errors import ValidationError
from reverie.storage.sql.dialect import Dialect
from reverie.types import EntryFilter

# The SQL of each order's key over ``facts f`` (an entry never rewritten sorts by its creation under "updated").
_KEYS = {
    "created_at": "f.created_at",
    "last_seen_at": "f.last_seen_at",
    "updated_at": "coalesce(f.updated_at, f.created_at)",
    "importance": "f.importance",
    "reinforcement_count": "f.reinforcement_count",
}


def entry_conditions(d: Dialect, flt: EntryFilter) -> tuple[list[str], list[Any]]:
    """The conditions (over ``facts f``, each to be ANDed) and their parameters for a checked filter."""
    clauses: list[str] = []
    params: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        params.extend(values)

    if flt.tags_any:
        add(d.json_has_any("f.tags"), d.text_list(flt.tags_any))
    if flt.tags_all:
        add(d.json_has_all("f.tags"), d.text_list(flt.tags_all))
    if flt.source is not None:
        add(f"{d.json_text('f.metadata', 'source')} = ?", flt.source)
    if flt.tier is not None:
        add("f.tier = ?", flt.tier.value)
    # Importance is inclusive at both ends; times are [from, to).
    ranges: list[tuple[str, Any, Any, str]] = [("f.importance", flt.importance_min, flt.importance_max, "<=")]
    for column, low, high in (
        ("f.created_at", flt.created_from, flt.created_to),
        ("coalesce(f.updated_at, f.created_at)", flt.updated_from, flt.updated_to),
    ):
        ranges.append((column, d.ts_or_none(low), d.ts_or_none(high), "<"))
    for column, low, high, below in ranges:
        if low is not None:
            add(f"{column} >= ?", low)
        if high is not None:
            add(f"{column} {below} ?", high)
    _states(d, flt, add)
    _subject(d, flt, add)
    for key, value in sorted(flt.metadata.items()):
        clause, values = d.json_key_equals("f.metadata", key, value)
        add(f"({clause})", *values)
    return clauses, params


def _states(d: Dialect, flt: EntryFilter, add: Any) -> None:
    """The flags: pinned, archived (``archived_at`` set), superseded (``superseded_by`` set). These only narrow:
    ``facts.visible`` lets archived and superseded entries into the read when either of the last two is True."""
    if flt.pinned is not None:
        add(f"f.pinned = {d.true if flt.pinned else d.false}")
    if flt.archived is not None:
        add(f"f.archived_at IS {'NOT ' if flt.archived else ''}NULL")
    if flt.superseded is not None:
        add(f"f.superseded_by IS {'NOT ' if flt.superseded else ''}NULL")


def _subject(d: Dialect, flt: EntryFilter, add: Any) -> None:
    """The subject-time overlap: the entry's subject span [lo, hi] (``subjectTime``, else
    ``subjectTimeStart`` / ``subjectTimeEnd``, either open) meets [from, to], each pair compared at the
    coarser of its two precisions ("2026-03" meets "2026-03-14")."""
    if flt.subject_from is None and flt.subject_to is None:
        return
    point = d.json_text("f.metadata", "subjectTime")
    lo = f"substr(coalesce({point}, {d.json_text('f.metadata', 'subjectTimeStart')}), 1, 10)"
    hi = f"substr(coalesce({point}, {d.json_text('f.metadata', 'subjectTimeEnd')}), 1, 10)"
    add(f"({lo} IS NOT NULL OR {hi} IS NOT NULL)")
    if flt.subject_to is not None:
        width = len(flt.subject_to)
        add(f"({lo} IS NULL OR substr({lo}, 1, {width}) <= substr(CAST(? AS TEXT), 1, length({lo})))", flt.subject_to)
    if flt.subject_from is not None:
        width = len(flt.subject_from)
        add(f"({hi} IS NULL OR substr({hi}, 1, {width}) >= substr(CAST(? AS TEXT), 1, length({hi})))", flt.subject_from)


def page_clause(d: Dialect, order: str, after: tuple[Any, str] | None) -> tuple[str, str, list[Any]]:
    """For listing order ``order``: the keyset condition after ``after`` (empty on the first page), the
    ORDER BY, and the condition's parameters."""
    column, descending = ORDERS[order]
    key = _KEYS[column]
    direction, past = ("DESC", "<") if descending else ("ASC", ">")
    order_by = f"{key} {direction}, f.id {direction}"
    if after is None:
        return "", order_by, []
    value, last_id = after
    bound = _bound(d, column, value)
    return f"({key} {past} ? OR ({key} = ? AND f.id {past} ?))", order_by, [bound, bound, last_id]


def _bound(d: Dialect, column: str, value: Any) -> Any:
    """A cursor's order key as the column compares it. The key came from a client's token: a value of the
    wrong kind is refused as a bad cursor, never passed to the database."""
    try:
        if column == "importance":
            return float(value)
        if column == "reinforcement_count":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(value)
            return value
        return d.ts(datetime.fromisoformat(str(value)))
    except (TypeError, ValueError):
        raise ValidationError("cursor is not a token from an earlier page's next_cursor", field="cursor") from None
