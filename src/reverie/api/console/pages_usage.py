"""The console's usage page (``/console/usage``, admin keys only): LLM tokens and cost per agent and per day as
plots and a table, and the CSV export (the API's ``/api/usage/export.csv``, fetched with the key in a header).

Also the charts' shared shape (``chart``) and the per-day usage series (``daily_usage``) the dream page's
audit plots use.

Invariants:
- The same service and access as the API's ``routes_usage``: ``rv.usage`` (summaries the store adds up in SQL,
  one query per day shown), ``admin_access``; nothing here loads the call log row by row.
- A period is at most ``MAX_DAYS`` days, ending on ``to`` (default: today on the engine's clock).
- A chart spec is ``{"title", "x": [unix seconds], "series": [{"label", "values": [number | None]}]}``; the
  same numbers are rendered as a table under the chart, so the page reads without the plot.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from reverie.api.auth import admin_access
from reverie.api.console.render import fragment
from reverie.api.routes_usage import parse_bound
from reverie.engine.root import Reverie
from reverie.errors import ValidationError
from reverie.types import UsageSummary
from reverie.usage import report as usage_report

router = APIRouter()
DEFAULT_DAYS = 30
MAX_DAYS = 92  # one summary query per day: a quarter at most per page


@dataclass
class Chart:
    """One plot: its spec for console-charts.js, and its rows for the table under it."""

    title: str
    x: list[int]
    series: list[dict[str, Any]]
    labels: list[str] = field(default_factory=list)  # the x values as text, for the table

    @property
    def spec(self) -> dict[str, Any]:
        return {"title": self.title, "x": self.x, "series": self.series}

    @property
    def rows(self) -> list[tuple[str, list[Any]]]:
        return [(label, [s["values"][i] for s in self.series]) for i, label in enumerate(self.labels)]


def chart(title: str, moments: list[datetime], series: dict[str, list[float | int | None]], *, daily: bool) -> Chart:
    """A chart over ``moments`` with one line per ``series`` entry (its label: its values)."""
    labels = [m.strftime("%Y-%m-%d") if daily else m.strftime("%Y-%m-%d %H:%M") for m in moments]
    return Chart(
        title=title,
        x=[int(m.timestamp()) for m in moments],
        series=[{"label": label, "values": values} for label, values in series.items()],
        labels=labels,
    )


@dataclass
class DailyUsage:
    """Tokens and cost per agent and per day over ``days`` (midnight UTC of each)."""

    days: list[datetime]
    tokens: dict[str, list[float | int | None]]
    cost: dict[str, list[float | int | None]]


def period(rv: Reverie, since: str | None, until: str | None) -> tuple[datetime, datetime]:
    """The days shown: ``[start, end)`` at midnight UTC, at most ``MAX_DAYS`` long, default the last 30."""
    today = rv.clock.now().astimezone(UTC).date()
    end = parse_bound(until, "to", end=True) or midnight(today) + timedelta(days=1)
    start = parse_bound(since, "from", end=False) or end - timedelta(days=DEFAULT_DAYS)
    start, end = midnight(start.date()), midnight((end - timedelta(microseconds=1)).date()) + timedelta(days=1)
    if start >= end:
        raise ValidationError("from must be before to", field="from")
    if end - start > timedelta(days=MAX_DAYS):
        raise ValidationError(f"the period may be at most {MAX_DAYS} days long", field="from")
    return start, end


def midnight(day: date) -> datetime:
    """The start of ``day`` in UTC."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def daily_usage(rv: Reverie, start: datetime, end: datetime, agent_id: str | None = None) -> DailyUsage:
    """Per-day usage in ``[start, end)``: one summary query per day; an agent without calls in the period
    has no line; a day without calls is 0 for the agents that have one."""
    days: list[datetime] = []
    per_day: list[dict[str, UsageSummary]] = []
    day = start
    while day < end:
        rows: dict[str, list[UsageSummary]] = defaultdict(list)
        for s in rv.usage(day, day + timedelta(days=1), agent_id):
            rows[s.agent_id].append(s)
        per_day.append({agent: usage_report.total(found) for agent, found in rows.items()})
        days.append(day)
        day += timedelta(days=1)
    agents = sorted({a for found in per_day for a in found})
    tokens: dict[str, list[float | int | None]] = {}
    cost: dict[str, list[float | int | None]] = {}
    for agent in agents:
        tokens[agent] = [_tokens(found.get(agent)) for found in per_day]
        cost[agent] = [round(found[agent].cost, 6) if agent in found else 0.0 for found in per_day]
    return DailyUsage(days, tokens, cost)


def _tokens(summary: UsageSummary | None) -> int:
    return 0 if summary is None else summary.prompt_tokens + summary.completion_tokens


@router.get("/usage", response_class=HTMLResponse, dependencies=[Depends(admin_access)])
def usage_page(
    request: Request,
    since: Annotated[str | None, Query(alias="from")] = None,
    until: Annotated[str | None, Query(alias="to")] = None,
) -> HTMLResponse:
    """Tokens and cost per agent and per day (plots and a table) and the CSV export of the period's calls."""
    rv: Reverie = request.app.state.rv
    start, end = period(rv, since, until)
    daily = daily_usage(rv, start, end)
    summaries = rv.usage(start, end)
    by_agent: dict[str, list[UsageSummary]] = defaultdict(list)
    for s in summaries:
        by_agent[s.agent_id].append(s)
    agents = [(agent, usage_report.total(rows), rows) for agent, rows in sorted(by_agent.items())]
    last_day = (end - timedelta(days=1)).date().isoformat()
    charts = [
        chart("Tokens per day, per agent", daily.days, daily.tokens, daily=True),
        chart("Cost per day, per agent (USD)", daily.days, daily.cost, daily=True),
    ]
    return fragment(
        request,
        "usage/usage.html",
        start=start.date().isoformat(),
        end=last_day,
        charts=charts,
        agents=agents,
        total=usage_report.total(summaries),
        csv_url=f"/api/usage/export.csv?from={start.date().isoformat()}&to={last_day}",
    )
