"""Long-term entries on PostgreSQL: what differs from the shared ``sql.facts`` (scope, visibility, versions,
the change logs and the purge floor live there, with their invariants; change-log positions are per agent,
see ``migrations``).

- Full-text search runs over the ``search_text`` tsvector the migrations' trigger keeps (GIN index), with the
  ``reverie_english`` text search configuration (english stemming; accents folded when the server has
  ``unaccent``), ranked BM25-like: ``ts_rank`` per term weighted by the term's idf (see ``search``).
- Sequence neighbours and subject times are spelled as their expression indexes (``->>``, compared as text).
- Substring search folds case under a collation that folds all of Unicode as ``str.lower`` does, picked
  once per store by probing the server (``_pick_lower_collation``).
"""

from __future__ import annotations

import math
import re
import threading

import psycopg

from reverie.storage.base import FactFilter
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.fact_rows import COLUMNS, FROM, Row, Shape
from reverie.storage.sql.facts import SqlFacts, visible
from reverie.types import MemoryEntry

_CONFIG = "'reverie_english'::regconfig"  # made by the migrations: english, plus unaccent where available
# ts_rank weights, in the order {D, C, B, A}: content (A) counts most, tags (B) next, the category path (C)
# least, as the SQLite backend's bm25() column weights. Normalisation 1 divides by 1 + log(length), so a
# long entry does not win by holding more words (BM25's length normalisation plays that part on SQLite).
_RANK_TERM = f"ts_rank('{{0, 0.4, 0.6, 1.0}}'::real[], f.search_text, plainto_tsquery({_CONFIG}, ?), 1)"
IDF_FLOOR = 1e-6  # FTS5's: a term in more than half the documents still counts a little
_TERM = re.compile(r'"((?:[^"]|"")*)"')
# Collations whose lower() folds case over all of Unicode, best first: full case mapping as Python's
# str.lower() (PG 18 builtin, then ICU), then the simple mapping of PG 17's builtin C.UTF-8.
_LOWER_COLLATIONS = ("pg_unicode_fast", "unicode", "und-x-icu", "pg_c_utf8")
_PROBES = ("ÀÉÜ ÇØ", "ΟΔΟΣ İ")


def match_terms(match: str) -> list[str]:
    """The quoted terms of an FTS expression made by ``core.text.fts_match`` (``""`` is a quote)."""
    return [m.group(1).replace('""', '"') for m in _TERM.finditer(match)]


def _term_idf(c: Conn, terms: list[str], agent_id: str) -> list[tuple[str, float]]:
    """``(term, idf)`` of the terms that make a query (not stopwords) and occur in the agent's live entries;
    idf is BM25's ln((N - df + 0.5) / (df + 0.5)), floored as FTS5 floors it."""
    rows = c.execute(
        "SELECT t.term, (SELECT count(*) FROM facts f WHERE f.agent_id = %(agent)s AND f.archived_at IS NULL"
        "  AND f.superseded_by IS NULL"
        "  AND f.search_text @@ t.query)"
        f" FROM (SELECT x.term, plainto_tsquery({_CONFIG}, x.term) AS query FROM unnest(%(terms)s::text[]) x(term)) t"
        " WHERE numnode(t.query) > 0",
        {"agent": agent_id, "terms": terms},
    ).fetchall()
    found = [(str(term), int(df)) for term, df in rows if df]
    if not found:
        return []
    total_row = c.execute(
        "SELECT count(*) FROM facts WHERE agent_id = %s AND archived_at IS NULL AND superseded_by IS NULL",
        (agent_id,),
    ).fetchone()
    total = int(total_row[0]) if total_row else 0
    return [(term, max(math.log((total - df + 0.5) / (df + 0.5)), IDF_FLOOR)) for term, df in found]


class PgFacts(SqlFacts):
    """``FactRepository`` on PostgreSQL."""

    subject_day = "left(f.metadata->>'subjectTime', 10)"

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, POSTGRES)
        self._lower: str | None = None
        self._lower_lock = threading.Lock()

    def _neighbours(self, shape: Shape[Row], keys: list[tuple[str, int]], flt: FactFilter) -> list[Row]:
        unique = list(dict.fromkeys((str(thread), int(position)) for thread, position in keys))
        if not unique:
            return []
        where, params = visible(self._d, flt)
        # The key columns compare as text, as the facts_sequence expression index holds them; the type check
        # keeps a position stored as a JSON string from matching, as SQLite's json_extract comparison does.
        statement = (
            f"SELECT {shape.columns} FROM unnest(?::text[], ?::text[]) AS k(thread, position)"
            " JOIN facts f ON f.metadata->>'thread' = k.thread AND f.metadata->>'position' = k.position"
            f"{shape.joins} WHERE {where}"
            " AND jsonb_typeof(f.metadata->'position') = 'number'"
        )
        threads = [thread for thread, _ in unique]
        positions = [str(position) for _, position in unique]
        return self._read_as(shape, statement, [threads, positions, *params])

    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        """BM25-like ranking on ``tsvector``: each term's ``ts_rank`` (term frequency under the column weights,
        divided by 1 + log(length)) weighted by the term's inverse document frequency among the agent's live
        entries, as FTS5's bm25() and the in-memory index weigh a rare term over a common one (``ts_rank``
        alone has no idf: it cost 4 points of recall@10 on LoCoMo)."""
        terms = list(dict.fromkeys(t for t in match_terms(match) if t.strip()))
        if not terms or limit <= 0:
            return []
        weighted = self._db.read(lambda c: _term_idf(c, terms, flt.scope.agent_id))
        if not weighted:
            return []  # only stopwords, or no live entry holds any term
        where, params = visible(self._d, flt)
        ranks = " + ".join(f"? * {_RANK_TERM}" for _ in weighted)
        query = " || ".join(f"plainto_tsquery({_CONFIG}, ?)" for _ in weighted)
        statement = self._d.sql(
            f"SELECT {COLUMNS}, ({ranks}) AS rank FROM {FROM}"
            f" WHERE f.search_text @@ ({query}) AND {where} ORDER BY rank DESC, f.last_seen_at DESC LIMIT ?"
        )
        rank_params = [value for term, idf in weighted for value in (idf, term)]
        args = [*rank_params, *(term for term, _ in weighted), *params, limit]
        rows = self._db.read(lambda c: c.execute(statement, args).fetchall())
        return [(self._entry(r), float(r[-1])) for r in rows]

    def _fold(self, expression: str) -> str:
        """``lower(expression)`` under a collation that folds all of Unicode as ``str.lower`` does (the
        database's default may be the C locale, which folds ASCII only)."""
        if self._lower is None:
            with self._lower_lock:
                if self._lower is None:
                    self._lower = self._db.read(_pick_lower_collation)
        return f"lower({expression})" if not self._lower else f'lower({expression} COLLATE "{self._lower}")'


def _pick_lower_collation(c: Conn) -> str:
    """The collation of ``_LOWER_COLLATIONS`` whose lower() folds as ``str.lower`` does on this server: the
    first that agrees on every probe (final sigma, dotted I), else the first that folds non-ASCII capitals at
    all, else "" (the database default). A catalog entry is not enough: an ICU collation is listed even by
    servers built without ICU, and fails when used."""
    folding = ""
    for name in _LOWER_COLLATIONS:
        try:
            with c.transaction():  # a failed probe rolls back alone, even inside a caller's transaction
                row = c.execute(f'SELECT lower(%s COLLATE "{name}"), lower(%s COLLATE "{name}")', _PROBES).fetchone()
        except psycopg.Error:
            continue
        if row is not None and row[0] == _PROBES[0].lower():
            if row[1] == _PROBES[1].lower():
                return name
            folding = folding or name
    return folding
