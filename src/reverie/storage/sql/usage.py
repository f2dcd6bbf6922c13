"""The LLM usage log (``UsageRepository``), written once for both backends: the ``llm_usage`` table, one row per
call.

Invariants:
- Append-only: rows are added, never changed (a cost report for a past period does not move).
- A period is half-open, ``since <= at < until``; rows at one instant keep the order they were added in
  (``seq``). SQLite's fixed-width UTC text compares in time order, PostgreSQL's ``timestamptz`` as instants.
- Summaries sort agent, provider and model by code point on both backends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import UsageRow, UsageSummary

_COLUMNS = "at, agent_id, provider, model, purpose, prompt_tokens, completion_tokens, cost, ok"


class SqlUsage:
    """``UsageRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _period(self, since: datetime | None, until: datetime | None, agent_id: str | None) -> tuple[str, list[Any]]:
        """The WHERE clause (possibly empty) and its parameters for a period and an optional agent."""
        clauses: list[str] = []
        params: list[Any] = []
        if since is not None:
            clauses.append("at >= ?")
            params.append(self._d.ts(since))
        if until is not None:
            clauses.append("at < ?")
            params.append(self._d.ts(until))
        if agent_id is not None:
            clauses.append("agent_id = ?")
            params.append(agent_id)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def add(self, row: UsageRow) -> None:
        d = self._d
        params = (
            d.ts(row.at),
            row.agent_id,
            row.provider,
            row.model,
            row.purpose,
            row.prompt_tokens,
            row.completion_tokens,
            row.cost,
            d.flag(row.ok),
        )
        statement = d.sql(f"INSERT INTO llm_usage ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        self._db.write(lambda c: c.execute(statement, params))

    def rows(self, since: datetime | None, until: datetime | None, agent_id: str | None = None) -> list[UsageRow]:
        where, params = self._period(since, until, agent_id)
        statement = self._d.sql(f"SELECT {_COLUMNS} FROM llm_usage{where} ORDER BY at, seq")
        found = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [self._row(r) for r in found]

    def summary(
        self, since: datetime | None, until: datetime | None, agent_id: str | None = None
    ) -> list[UsageSummary]:
        where, params = self._period(since, until, agent_id)
        d = self._d
        statement = d.sql(
            f"SELECT agent_id, provider, model, count(*), count(*) FILTER (WHERE ok = {d.false}), sum(prompt_tokens),"
            f" sum(completion_tokens), sum(cost) FROM llm_usage{where} GROUP BY agent_id, provider, model"
            f" ORDER BY agent_id{d.collate_c}, provider{d.collate_c}, model{d.collate_c}"
        )
        found = self._db.read(lambda c: c.execute(statement, params).fetchall())
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

    def _row(self, row: tuple[Any, ...]) -> UsageRow:
        return UsageRow(
            at=self._d.ts_out(row[0]),
            agent_id=row[1],
            provider=row[2],
            model=row[3],
            purpose=row[4],
            prompt_tokens=int(row[5]),
            completion_tokens=int(row[6]),
            cost=float(row[7]),
            ok=bool(row[8]),
        )
