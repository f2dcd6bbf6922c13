"""Temporal phrasing for results (seed 000): a fact seen five times over two years reads differently from
a one-off. Pure: "now" is an argument."""

from __future__ import annotations

from datetime import date, datetime


def _day(value: datetime, today: date) -> str:
    day = value.date()
    if day == today:
        return "today"
    if (today - day).days == 1:
        return "yesterday"
    return day.isoformat()


def seen_phrase(created_at: datetime, last_seen_at: datetime, reinforcement_count: int, now: datetime) -> str:
    """``first seen today`` for a one-off; ``seen 4× from 2024-06 to today`` for a reinforced fact."""
    today = now.date()
    if reinforcement_count <= 1:
        return f"first seen {_day(created_at, today)}"
    start = created_at.strftime("%Y-%m")
    return f"seen {reinforcement_count}× from {start} to {_day(last_seen_at, today)}"
