"""LLM usage and cost reports (seed 004's ``usage`` and ``cost``) over the store's usage log.

Every LLM call the engine makes is one ``UsageRow`` (written by the engine's ledger listener, attributed to
``reverie.llm.usage.current_agent()``). This module reads that log: validated queries, totals, and CSV.

Invariants:
- A period is half-open, ``since <= at < until``; either bound may be None (unbounded). Bounds must be
  timezone-aware, and ``since`` may not be after ``until``.
- Reading never writes; the rows of a closed period never change, so a report can be reproduced.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import datetime

from reverie.core import validate
from reverie.errors import ValidationError
from reverie.storage.base import Store
from reverie.types import UsageRow, UsageSummary
from reverie.views.plain import iso_z

ROW_FIELDS = (
    "at",
    "agent_id",
    "provider",
    "model",
    "purpose",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "ok",
)
SUMMARY_FIELDS = (
    "agent_id",
    "provider",
    "model",
    "calls",
    "failed",
    "prompt_tokens",
    "completion_tokens",
    "cost",
)


def _bound(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValidationError(f"{name} must be a timezone-aware datetime (or None)", field=name)
    return value


def _query(since: object, until: object, agent_id: object) -> tuple[datetime | None, datetime | None, str | None]:
    start, end = _bound(since, "since"), _bound(until, "until")
    if start is not None and end is not None and start > end:
        raise ValidationError("since is after until", field="since")
    agent = None if agent_id is None else validate.identifier(agent_id, name="agent_id")
    return start, end, agent


def summary(
    store: Store, since: datetime | None = None, until: datetime | None = None, agent_id: str | None = None
) -> list[UsageSummary]:
    """Calls, failures, tokens and cost per agent, provider and model in the period, sorted by those."""
    return store.usage.summary(*_query(since, until, agent_id))


def calls(
    store: Store, since: datetime | None = None, until: datetime | None = None, agent_id: str | None = None
) -> list[UsageRow]:
    """Every call in the period, oldest first."""
    return store.usage.rows(*_query(since, until, agent_id))


def total(summaries: Sequence[UsageSummary]) -> UsageSummary:
    """The summaries added up (agent, provider and model ``*``)."""
    return UsageSummary(
        agent_id="*",
        provider="*",
        model="*",
        calls=sum(s.calls for s in summaries),
        failed=sum(s.failed for s in summaries),
        prompt_tokens=sum(s.prompt_tokens for s in summaries),
        completion_tokens=sum(s.completion_tokens for s in summaries),
        cost=sum(s.cost for s in summaries),
    )


def _csv(header: Sequence[str], lines: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(lines)
    return buffer.getvalue()


def calls_csv(rows: Sequence[UsageRow]) -> str:
    """One line per call under a ``ROW_FIELDS`` header. Times are ISO 8601 UTC, ``ok`` is ``true`` or
    ``false``, and cost is written in full (the float's ``repr``), so the column adds up as the store does."""
    return _csv(
        ROW_FIELDS,
        [
            [
                iso_z(r.at),
                r.agent_id,
                r.provider,
                r.model,
                r.purpose,
                r.prompt_tokens,
                r.completion_tokens,
                repr(r.cost),
                "true" if r.ok else "false",
            ]
            for r in rows
        ],
    )


def summary_csv(summaries: Sequence[UsageSummary]) -> str:
    """One line per agent, provider and model under a ``SUMMARY_FIELDS`` header (cost in full)."""
    return _csv(
        SUMMARY_FIELDS,
        [
            [s.agent_id, s.provider, s.model, s.calls, s.failed, s.prompt_tokens, s.completion_tokens, repr(s.cost)]
            for s in summaries
        ],
    )
