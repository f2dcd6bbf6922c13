"""Long-term entries on SQLite: what differs from the shared ``sql.facts`` (scope, visibility, versions, the
change logs and the purge floor live there, with their invariants).

- Full-text search is FTS5 over ``facts_fts`` (content, tags, category, and agent_id as a pre-filter only),
  ranked by bm25() with column weights: content counts most, tags next, the category path least.
- Sequence neighbours and subject times are spelled as their expression indexes (``json_extract``).
- Substring search folds case with ``unicode_lower``, the function ``database`` registers on every
  connection (SQLite's ``lower()`` folds ASCII only).
"""

from __future__ import annotations

import re

from reverie.storage.base import FactFilter
from reverie.storage.sql.dialect import SQLITE
from reverie.storage.sql.fact_rows import COLUMNS, Row, Shape
from reverie.storage.sql.facts import SqlFacts, visible
from reverie.storage.sqlite.database import Database
from reverie.types import MemoryEntry

# Column weights for bm25(): content counts most, tags next, the category path least.
_BM25 = "bm25(facts_fts, 1.0, 0.6, 0.4, 0.0)"  # agent_id is a pre-filter, never a ranking signal
_TOKEN = re.compile(r"[^\W_]", re.UNICODE)


def _scoped_match(match: str, agent_id: str) -> str:
    """``match`` limited to the text columns and, inside FTS5, to the agent's rows (when the agent id has a
    token FTS5 can index; otherwise the SQL filter alone does it)."""
    text_match = "{content tags category} : (" + match + ")"
    if not _TOKEN.search(agent_id):
        return text_match
    return 'agent_id : "' + agent_id.replace('"', '""') + '" AND ' + text_match


class SqliteFacts(SqlFacts):
    """``FactRepository`` on SQLite."""

    subject_day = "substr(json_extract(f.metadata, '$.subjectTime'), 1, 10)"

    def __init__(self, db: Database) -> None:
        super().__init__(db, SQLITE)

    def _fold(self, expression: str) -> str:
        return f"unicode_lower({expression})"

    def _neighbours(self, shape: Shape[Row], keys: list[tuple[str, int]], flt: FactFilter) -> list[Row]:
        where, params = visible(self._d, flt)
        out: list[Row] = []
        for start in range(0, len(keys), 200):
            chunk = keys[start : start + 200]
            pairs = ", ".join("(?, ?)" for _ in chunk)
            statement = (
                f"SELECT {shape.columns} FROM facts f{shape.joins} WHERE {where} AND "
                "(json_extract(f.metadata, '$.thread'), json_extract(f.metadata, '$.position'))"
                f" IN (VALUES {pairs})"
            )
            out.extend(self._read_as(shape, statement, [*params, *(value for pair in chunk for value in pair)]))
        return out

    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        where, params = visible(self._d, flt)
        statement = (
            f"SELECT {COLUMNS}, {_BM25} AS rank FROM facts_fts JOIN facts f ON f.seq = facts_fts.rowid "
            "LEFT JOIN fact_vectors v ON v.fact_id = f.id "
            f"WHERE facts_fts MATCH ? AND {where} ORDER BY rank, f.last_seen_at DESC LIMIT ?"
        )
        scoped = _scoped_match(match, flt.scope.agent_id)
        rows = self._db.read(lambda c: c.execute(statement, [scoped, *params, limit]).fetchall())
        # bm25() is negative, more negative is better; flip it so larger is better.
        return [(self._entry(r), -float(r[-1])) for r in rows]
