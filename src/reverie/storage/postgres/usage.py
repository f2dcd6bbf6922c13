"""The LLM usage log on PostgreSQL: the ``llm_usage`` table, one row per call.

Invariants:
- Append-only: rows are added, never changed (a cost report for a past period does not move).
- A period is half-open, ``since <= at < until``, compared as ``timestamptz`` (instants, so the session's
  zone plays no part); rows at one instant keep the order they were added in (``seq``).
- Summaries sort agent, provider and model by code point (``COLLATE "C"``), as SQLite's binary order does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.base import UsageRow, UsageSummary
from reverie.storage.postgres.database import PgDatabase

_COLUMNS = "at, agent_id, provider, model, purpose, prompt_tokens, completion_tokens, cost, ok"


def _period(since: datetime | None, until: datetime | None, agent_id: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause (possibly empty) and its parameters for a period and an optional agent."""
    clauses: list[str] = []
    params: list[Any] = []
    if since is not None:
        clauses.append("at >= %s")
        params.append(since)
    if until is not None:
        clauses.append("at < %s")
        params.append(until)
    if agent_id is not None:
        clauses.append("agent_id = %s")
        params.append(agent_id)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _row(row: tuple[Any, ...]) -> UsageRow:
    return UsageRow(
        at=row[0],
        agent_id=row[1],
        provider=row[2],
        model=row[3],
        purpose=row[4],
        prompt_tokens=int(row[5]),
        completion_tokens=int(row[6]),
        cost=float(row[7]),
        ok=bool(row[8]),
    )


class PgUsage:
    """``UsageRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def add(self, row: UsageRow) -> None:
        params = (
            row.at,
            row.agent_id,
            row.provider,
            row.model,
            row.purpose,
            row.prompt_tokens,
            row.completion_tokens,
            row.cost,
            row.ok,
        )
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO llm_usage ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", params
            )
        )

    def rows(self, since: datetime | None, until: datetime | None, agent_id: str | None = None) -> list[UsageRow]:
        where, params = _period(since, until, agent_id)
        found = self._db.read(
            lambda c: c.execute(f"SELECT {_COLUMNS} FROM llm_usage{where} ORDER BY at, seq", params).fetchall()
        )
        return [_row(r) for r in found]

    def summary(
        self, since: datetime | None, until: datetime | None, agent_id: str | None = None
    ) -> list[UsageSummary]:
        where, params = _period(since, until, agent_id)
        found = self._db.read(
            lambda c: c.execute(
                "SELECT agent_id, provider, model, count(*), count(*) FILTER (WHERE NOT ok), sum(prompt_tokens),"
                f" sum(completion_tokens), sum(cost) FROM llm_usage{where}"
                ' GROUP BY agent_id, provider, model ORDER BY agent_id COLLATE "C", provider COLLATE "C",'
                ' model COLLATE "C"',
                params,
            ).fetchall()
        )
        return [
            UsageSummary(
                agent_id=r[0],
                provider=r[1],
                model=r[2],
                calls=int(r[3]),
                failed=int(r[4]),
                prompt_tokens=int(r[5]),
                completion_tokens=int(r[6]),
                cost=float(r[7]),
            )
            for r in found
        ]
