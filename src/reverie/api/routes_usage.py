"""LLM usage and cost over HTTP (admin keys only), seed 004's usage tracking: ``GET /api/usage`` (per agent,
then per provider and model: calls, tokens, USD) and ``GET /api/usage/export.csv`` (one line per call).

``from`` and ``to`` take ISO 8601 dates or times; the period is half-open (``from <= at < to``), and a bare
date in ``to`` means the end of that day, so ``from=2025-01-01&to=2025-01-31`` is all of January. A time
without a zone is UTC.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field

from reverie.api.auth import Engine, admin_access
from reverie.api.errors import COMMON_ERRORS
from reverie.api.schemas import ValueOut, fields_of
from reverie.errors import ValidationError
from reverie.types import UsageSummary
from reverie.usage import report as usage_report

router = APIRouter(tags=["usage"], responses=COMMON_ERRORS, dependencies=[Depends(admin_access)])
From = Annotated[str | None, Query(alias="from", description="ISO 8601 date or time (inclusive)")]
To = Annotated[str | None, Query(alias="to", description="ISO 8601 date (inclusive) or time (exclusive)")]
Agent = Annotated[str | None, Query(alias="agent", description="only this agent")]


class ModelUsageOut(ValueOut):
    provider: str
    model: str
    calls: int
    failed: int = Field(description="calls that failed (their reported tokens were still spent)")
    prompt_tokens: int
    completion_tokens: int
    cost: float = Field(description="USD, at the configured prices")


class AgentUsageOut(BaseModel):
    agent_id: str
    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    models: list[ModelUsageOut]


class UsageOut(BaseModel):
    since: datetime | None = Field(alias="from")
    until: datetime | None = Field(alias="to")
    agents: list[AgentUsageOut]
    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost: float


def parse_bound(value: str | None, name: str, *, end: bool) -> datetime | None:
    """An ISO 8601 date or time as an aware UTC datetime; a bare date is its day's start (or, for the end
    of a period, the next day's start)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            parsed = datetime.fromisoformat(text)
            parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
        else:
            parsed = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1 if end else 0)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValidationError(f"{name} must be an ISO 8601 date or time, got {text[:40]!r}", field=name) from None


def _agents(summaries: list[UsageSummary]) -> list[AgentUsageOut]:
    by_agent: dict[str, list[UsageSummary]] = defaultdict(list)
    for s in summaries:
        by_agent[s.agent_id].append(s)
    # An agent's row is its models' total (a UsageSummary) under the agent's id, with the models themselves.
    return [
        AgentUsageOut.model_validate(fields_of(usage_report.total(rows), agent_id=agent_id, models=rows))
        for agent_id, rows in sorted(by_agent.items())
    ]


@router.get("/api/usage", response_model=UsageOut, response_model_by_alias=True, summary="Usage and cost")
def usage(rv: Engine, since: From = None, until: To = None, agent: Agent = None) -> UsageOut:
    """LLM calls, failures, tokens and cost in the period, per agent and, within it, per provider and model;
    with the totals."""
    start, end = parse_bound(since, "from", end=False), parse_bound(until, "to", end=True)
    summaries = rv.usage(start, end, agent)
    total = usage_report.total(summaries)
    return UsageOut.model_validate(fields_of(total, **{"from": start, "to": end}, agents=_agents(summaries)))


@router.get(
    "/api/usage/export.csv",
    response_class=Response,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "CSV"}},
    summary="Usage as CSV",
)
def usage_csv(rv: Engine, since: From = None, until: To = None, agent: Agent = None) -> Response:
    """Every LLM call in the period, one line each: at, agent_id, provider, model, purpose, prompt_tokens,
    completion_tokens, cost, ok."""
    start, end = parse_bound(since, "from", end=False), parse_bound(until, "to", end=True)
    text = usage_report.calls_csv(rv.usage_calls(start, end, agent))
    return Response(
        text.encode("utf-8"),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="reverie-usage.csv"'},
    )
