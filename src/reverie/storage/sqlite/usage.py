"""The LLM usage log on SQLite: the ``llm_usage`` table, one row per call.

Invariants:
- Append-only: rows are added, never changed (a cost report for a past period does not move).
- A period is half-open, ``since <= at < until``; timestamps are fixed-width UTC text, so text order is
  time order and the bounds compare as strings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.base import UsageRow, UsageSummary
from reverie.storage.sqlite.database import Database, parse_ts, ts

_COLUMNS = "at, agent_id, provider, model, purpose, prompt_tokens, completion_tokens, cost, ok"


def _period(since: datetime | None, until: datetime | None, agent_id: str | None) -> tuple[str, list[Any]]:
    """The WHERE clause (possibly empty) and its parameters for a period and an optional agent."""
    clauses: list[str] = []
    params: list[Any] = []
    if since is not None:
        clauses.append("at >= ?")
        params.append(ts(since))
    if until is not None:
        clauses.append("at < ?")
        params.append(ts(until))
    if agent_id is not None:
        clauses.append("agent_id = ?")
        params.append(agent_id)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _row(row: tuple[Any, ...]) -> UsageRow:
    return UsageRow(
        at=parse_ts(row[0]),
        agent_id=row[1],
        provider=row[2],
        model=row[3],
        purpose=row[4],
        prompt_tokens=int(row[5]),
        completion_tokens=int(row[6]),
        cost=float(row[7]),
        ok=bool(row[8]),
    )


class SqliteUsage:
    """``UsageRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, row: UsageRow) -> None:
        params = (
            ts(row.at),
            row.agent_id,
            row.provider,
            row.model,
            row.purpose,
            row.prompt_tokens,
            row.completion_tokens,
            row.cost,
            int(row.ok),
        )
        self._db.write(
            lambda c: c.execute(f"INSERT INTO llm_usage ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", params)
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
                "SELECT agent_id, provider, model, count(*), count(*) FILTER (WHERE ok = 0), sum(prompt_tokens),"
                f" sum(completion_tokens), sum(cost) FROM llm_usage{where}"
                " GROUP BY agent_id, provider, model ORDER BY agent_id, provider, model",
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
