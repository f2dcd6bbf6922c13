"""``reverie usage`` and ``reverie cost``: LLM calls, tokens and cost per agent and provider/model.

Dates are inclusive days in UTC: ``--from 2025-01-01 --to 2025-01-31`` covers all of January. A full ISO
8601 time (``2025-01-01T12:00:00Z``) is taken as given (no zone: UTC), and ``--to`` is then exclusive.
"""

from __future__ import annotations

import sys
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

import typer

from reverie.cli.common import JsonOption, console, emit_json, engine, fail
from reverie.errors import ValidationError

if TYPE_CHECKING:
    from reverie.types import UsageSummary

FromOption = typer.Option(None, "--from", help="First day (YYYY-MM-DD, UTC) or an ISO 8601 time.")
ToOption = typer.Option(None, "--to", help="Last day, inclusive (YYYY-MM-DD, UTC), or an ISO 8601 time.")
AgentFilter = typer.Option(None, "--agent", "-a", help="Only this agent (default: every agent).")


def parse_bound(value: str | None, *, end: bool, name: str) -> datetime | None:
    """A ``--from``/``--to`` value as an aware datetime: a day's start (``end``: the next day's start, so
    the day is included) or the time given. Raises ``ValidationError`` naming the option."""
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime.combine(day, time(), tzinfo=UTC)
            return start + timedelta(days=1) if end else start
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(
            f"--{name}: {value!r} is not a date (YYYY-MM-DD) or an ISO 8601 time", field=name
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _print_table(summaries: list[UsageSummary]) -> None:
    from reverie.usage import report as usage_report

    if not summaries:
        console.print("no LLM calls in this period", markup=False)
        return
    header = ("agent", "provider/model", "calls", "failed", "prompt", "completion", "cost")
    console.print("{:<16} {:<32} {:>7} {:>6} {:>10} {:>10} {:>10}".format(*header), markup=False)
    for s in [*summaries, usage_report.total(summaries)]:
        label = "total" if s.agent_id == "*" else s.agent_id
        model = "" if s.agent_id == "*" else f"{s.provider}/{s.model}"
        console.print(
            f"{label:<16} {model:<32} {s.calls:>7} {s.failed:>6} {s.prompt_tokens:>10} {s.completion_tokens:>10}"
            f" {s.cost:>10.4f}",
            markup=False,
        )


def usage(
    ctx: typer.Context,
    agent: str | None = AgentFilter,
    from_: str | None = FromOption,
    to: str | None = ToOption,
    as_json: bool = JsonOption,
) -> None:
    """LLM calls, failures, tokens and cost per agent and provider/model (every call when no dates)."""
    from reverie.usage import report as usage_report

    try:
        since, until = parse_bound(from_, end=False, name="from"), parse_bound(to, end=True, name="to")
    except ValidationError as exc:
        fail(exc)
    with engine(ctx) as rv:
        summaries = rv.usage(since, until, agent)
    if as_json:
        emit_json({"summaries": summaries, "total": usage_report.total(summaries)})
    else:
        _print_table(summaries)


def cost(
    ctx: typer.Context,
    from_: str = typer.Option(..., "--from", help="First day (YYYY-MM-DD, UTC) or an ISO 8601 time."),
    to: str = typer.Option(..., "--to", help="Last day, inclusive (YYYY-MM-DD, UTC), or an ISO 8601 time."),
    agent: str | None = AgentFilter,
    as_csv: bool = typer.Option(False, "--csv", help="Write CSV to stdout (per agent and provider/model)."),
    calls: bool = typer.Option(False, "--calls", help="CSV with one line per call (implies --csv)."),
) -> None:
    """Cost over a period per agent and provider/model, as a table or CSV (an export for accounting)."""
    from reverie.usage import report as usage_report

    try:
        since, until = parse_bound(from_, end=False, name="from"), parse_bound(to, end=True, name="to")
    except ValidationError as exc:
        fail(exc)
    with engine(ctx) as rv:
        if calls:
            sys.stdout.write(usage_report.calls_csv(rv.usage_calls(since, until, agent)))
            return
        summaries = rv.usage(since, until, agent)
    if as_csv:
        sys.stdout.write(usage_report.summary_csv(summaries))
    else:
        _print_table(summaries)
