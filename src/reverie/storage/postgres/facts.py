"""Long-term entries and their versions on PostgreSQL.

Scope filtering happens in SQL, in ``_visible``: every read goes through it, so no query can forget it.
Full-text search runs over the ``search_text`` tsvector the migrations' trigger keeps (GIN index), with the
``reverie_english`` text search configuration (english stemming; accents folded when the server has
``unaccent``). Change-log watermarks are per agent (see ``migrations``).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from reverie.errors import NotFound
from reverie.storage.base import FactFilter, PurgedRecord, PurgeRule, TextRow, TextSnapshot
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.types import CategoryCount, Change, EntryVersion, MemoryEntry, Scope, Tier

_COLUMNS = (
    "f.id, f.agent_id, f.user_id, f.session_id, f.content, f.category, f.tags, f.tier, f.created_at, "
    "f.updated_at, f.last_seen_at, f.reinforcement_count, f.importance, f.retention, f.confidence, "
    "f.pinned, f.expires_at, f.archived_at, f.superseded_by, f.metadata, v.model, f.decayed_through, "
    "f.read_strength, f.read_at, f.fold_pending, f.expand_pending"
)
_FROM = "facts f LEFT JOIN fact_vectors v ON v.fact_id = f.id"
_CONFIG = "'reverie_english'::regconfig"  # made by the migrations: english, plus unaccent where available
# ts_rank weights, in the order {D, C, B, A}: content (A) counts most, tags (B) next, the category path (C)
# least, as the SQLite backend's bm25() column weights. Normalisation 1 divides by 1 + log(length), so a
# long entry does not win by holding more words (BM25's length normalisation plays that part on SQLite).
_RANK_TERM = f"ts_rank('{{0, 0.4, 0.6, 1.0}}'::real[], f.search_text, plainto_tsquery({_CONFIG}, %s), 1)"
IDF_FLOOR = 1e-6  # FTS5's: a term in more than half the documents still counts a little
_TERM = re.compile(r'"((?:[^"]|"")*)"')
# Collations whose lower() folds case over all of Unicode, best first: full case mapping as Python's
# str.lower() (PG 18 builtin, then ICU), then the simple mapping of PG 17's builtin C.UTF-8.
_LOWER_COLLATIONS = ("pg_unicode_fast", "unicode", "und-x-icu", "pg_c_utf8")
_PROBES = ("ÀÉÜ ÇØ", "ΟΔΟΣ İ")
# "archived" to an index: not current (archived, or superseded by a contradicting entry).
_TEXT_COLUMNS = (
    "f.id, f.content, f.tags, f.category, f.user_id, f.session_id,"
    " (f.archived_at IS NOT NULL OR f.superseded_by IS NOT NULL)"
)


def match_terms(match: str) -> list[str]:
    """The quoted terms of an FTS expression made by ``core.text.fts_match`` (``""`` is a quote)."""
    return [m.group(1).replace('""', '"') for m in _TERM.finditer(match)]


def _row_to_entry(row: tuple[Any, ...]) -> MemoryEntry:
    return MemoryEntry(
        id=row[0],
        scope=Scope(agent_id=row[1], user_id=row[2], session_id=row[3]),
        content=row[4],
        category=row[5],
        tags=tuple(row[6]),
        tier=Tier(row[7]),
        created_at=row[8],
        updated_at=row[9],
        last_seen_at=row[10],
        reinforcement_count=int(row[11]),
        importance=float(row[12]),
        retention=float(row[13]),
        confidence=float(row[14]),
        pinned=bool(row[15]),
        expires_at=row[16],
        archived_at=row[17],
        superseded_by=row[18],
        metadata=row[19],
        embedding_model=row[20],
        decayed_through=row[21],
        read_strength=float(row[22]),
        read_at=row[23],
        fold_pending=bool(row[24]),
        expand_pending=bool(row[25]),
    )


def _scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    clauses = ["f.agent_id = %s"]
    params: list[Any] = [scope.agent_id]
    for column, value in (("user_id", scope.user_id), ("session_id", scope.session_id)):
        if value is None:
            clauses.append(f"f.{column} IS NULL")
        else:
            clauses.append(f"(f.{column} IS NULL OR f.{column} = %s)")
            params.append(value)
    return " AND ".join(clauses), params


def _visible(flt: FactFilter, *, with_category: bool = True) -> tuple[str, list[Any]]:
    sql, params = _scope_sql(flt.scope)
    clauses = [sql]
    if not flt.include_archived:
        # Current entries only: an entry a later one contradicted keeps superseded_by without being archived.
        clauses.append("f.archived_at IS NULL AND f.superseded_by IS NULL")
    clauses.append("(f.expires_at IS NULL OR f.expires_at > %s)")
    params.append(flt.now)
    if with_category and flt.category_prefix:
        prefix = flt.category_prefix
        # Whole path segments only: "user" takes "user" and "user/x", never "username".
        clauses.append("(f.category = %s OR starts_with(f.category, %s))")
        params.extend([prefix, prefix + "/"])
    return " AND ".join(clauses), params


_FIELD_NAMES = [
    *("id", "agent_id", "user_id", "session_id", "content", "category", "tags", "tier", "created_at"),
    *("updated_at", "last_seen_at", "reinforcement_count", "importance", "retention", "confidence"),
    *("pinned", "expires_at", "archived_at", "superseded_by", "metadata"),
    *("decayed_through", "read_strength", "read_at", "fold_pending", "expand_pending"),
]
_INSERT = f"INSERT INTO facts ({', '.join(_FIELD_NAMES)}) VALUES ({', '.join(f'%({n})s' for n in _FIELD_NAMES)})"
_UPDATE = (
    "UPDATE facts SET "
    + ", ".join(f"{n} = %({n})s" for n in _FIELD_NAMES if n not in ("id", "agent_id", "user_id", "session_id"))
    + " WHERE id = %(id)s"
)


def _entry_params(e: MemoryEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "agent_id": e.scope.agent_id,
        "user_id": e.scope.user_id,
        "session_id": e.scope.session_id,
        "content": e.content,
        "category": e.category,
        "tags": Jsonb(list(e.tags)),
        "tier": e.tier.value,
        "created_at": e.created_at,
        "updated_at": e.updated_at,
        "last_seen_at": e.last_seen_at,
        "reinforcement_count": e.reinforcement_count,
        "importance": e.importance,
        "retention": e.retention,
        "confidence": e.confidence,
        "pinned": e.pinned,
        "expires_at": e.expires_at,
        "archived_at": e.archived_at,
        "superseded_by": e.superseded_by,
        "metadata": Jsonb(e.metadata),
        "decayed_through": e.decayed_through,
        "read_strength": e.read_strength,
        "read_at": e.read_at,
        "fold_pending": e.fold_pending,
        "expand_pending": e.expand_pending,
    }


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


def _fetch_entries(c: Conn, sql: str, params: list[Any]) -> list[MemoryEntry]:
    return [_row_to_entry(r) for r in c.execute(sql, params).fetchall()]


class PgFacts:
    """``FactRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self._lower: str | None = None
        self._lower_lock = threading.Lock()

    def add(self, entry: MemoryEntry, *, at: datetime) -> None:
        def work(c: Conn) -> None:
            c.execute(_INSERT, _entry_params(entry))
            _record_version(c, entry, Change.CREATED, at)

        self._db.write(work)

    def write(self, entry: MemoryEntry, *, change: Change, at: datetime) -> None:
        def work(c: Conn) -> None:
            # FOR UPDATE: the text compared below is the text this write replaces, whoever else writes.
            row = c.execute(
                "SELECT agent_id, user_id, session_id, content, category, tags FROM facts WHERE id = %s FOR UPDATE",
                (entry.id,),
            ).fetchone()
            if row is None or Scope(row[0], row[1], row[2]) != entry.scope:
                raise NotFound(f"no entry {entry.id!r} in this scope")
            text_changed = (row[3], row[4], list(row[5])) != (entry.content, entry.category, list(entry.tags))
            c.execute(_UPDATE, _entry_params(entry))
            if change.versioned or text_changed:
                _record_version(c, entry, change, at)

        self._db.write(work)

    def get(self, entry_id: str, scope: Scope) -> MemoryEntry | None:
        where, params = _scope_sql(scope)
        sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id = %s AND {where}"
        found = self._db.read(lambda c: _fetch_entries(c, sql, [entry_id, *params]))
        return found[0] if found else None

    def fold_pending(self, entry_ids: list[str]) -> set[str]:
        if not entry_ids:
            return set()
        rows = self._db.read(
            lambda c: c.execute("SELECT id FROM facts WHERE fold_pending AND id = ANY(%s)", (entry_ids,)).fetchall()
        )
        return {str(r[0]) for r in rows}

    def owner(self, entry_id: str) -> Scope | None:
        row = self._db.read(
            lambda c: c.execute("SELECT agent_id, user_id, session_id FROM facts WHERE id = %s", (entry_id,)).fetchone()
        )
        return None if row is None else Scope(agent_id=row[0], user_id=row[1], session_id=row[2])

    def get_many(self, entry_ids: list[str], flt: FactFilter) -> list[MemoryEntry]:
        if not entry_ids:
            return []
        where, params = _visible(flt)
        sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id = ANY(%s) AND {where}"
        return self._db.read(lambda c: _fetch_entries(c, sql, [list(entry_ids), *params]))

    def neighbours(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[MemoryEntry]:
        unique = list(dict.fromkeys((str(thread), int(position)) for thread, position in keys))
        if not unique:
            return []
        where, params = _visible(flt)
        # The key columns compare as text, as the facts_sequence expression index holds them; the type check
        # keeps a position stored as a JSON string from matching, as SQLite's json_extract comparison does.
        sql = (
            f"SELECT {_COLUMNS} FROM unnest(%s::text[], %s::text[]) AS k(thread, position)"
            " JOIN facts f ON f.metadata->>'thread' = k.thread AND f.metadata->>'position' = k.position"
            f" LEFT JOIN fact_vectors v ON v.fact_id = f.id WHERE {where}"
            " AND jsonb_typeof(f.metadata->'position') = 'number'"
        )
        threads = [thread for thread, _ in unique]
        positions = [str(position) for _, position in unique]
        return self._db.read(lambda c: _fetch_entries(c, sql, [threads, positions, *params]))

    def in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[MemoryEntry]:
        where, params = _visible(flt)
        first = datetime.fromisoformat(first_day).replace(tzinfo=UTC)
        after_last = datetime.fromisoformat(last_day).replace(tzinfo=UTC) + timedelta(days=1)
        # Two index ranges (facts_created, facts_subject_time), merged here; see the SQLite twin.
        subject = "left(f.metadata->>'subjectTime', 10)"
        dated = (
            f"{where} AND {subject} >= %s AND {subject} <= %s"
            f" AND {subject} >= left(%s, length({subject})) AND {subject} <= left(%s, length({subject}))"
        )
        queries = (
            (f"{where} AND f.created_at >= %s AND f.created_at < %s", [*params, first, after_last]),
            (dated, [*params, first_day[:4], last_day, first_day, last_day]),
        )
        wanted = max(limit, 0)
        found: dict[str, MemoryEntry] = {}
        for clause, values in queries:
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE {clause} ORDER BY f.created_at DESC, f.seq DESC LIMIT %s"
            entries = self._db.read(lambda c, q=sql, p=[*values, wanted]: _fetch_entries(c, q, p))  # type: ignore[misc]
            found.update((e.id, e) for e in entries)
        return sorted(found.values(), key=lambda e: e.created_at, reverse=True)[:wanted]

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
        where, params = _visible(flt)
        ranks = " + ".join(f"%s * {_RANK_TERM}" for _ in weighted)
        query = " || ".join(f"plainto_tsquery({_CONFIG}, %s)" for _ in weighted)
        sql = (
            f"SELECT {_COLUMNS}, ({ranks}) AS rank FROM {_FROM}"
            f" WHERE f.search_text @@ ({query}) AND {where} ORDER BY rank DESC, f.last_seen_at DESC LIMIT %s"
        )
        rank_params = [value for term, idf in weighted for value in (idf, term)]
        args = [*rank_params, *(term for term, _ in weighted), *params, limit]
        rows = self._db.read(lambda c: c.execute(sql, args).fetchall())
        return [(_row_to_entry(r), float(r[-1])) for r in rows]

    def search_substring(self, needle: str, flt: FactFilter, limit: int, exclude: frozenset[str]) -> list[MemoryEntry]:
        if limit <= 0:
            return []
        where, params = _visible(flt)
        lowered = needle.lower()
        fold = self._lower_sql
        # strpos, not LIKE: the needle's % and _ are plain characters. Tags are searched element by element,
        # so the array's JSON punctuation never matches.
        sql = (
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} AND NOT (f.id = ANY(%s)) AND ("
            f"strpos({fold('f.content')}, %s) > 0 OR strpos(f.category, %s) > 0 OR EXISTS ("
            f"SELECT 1 FROM jsonb_array_elements_text(f.tags) t(value) WHERE strpos({fold('t.value')}, %s) > 0))"
            " ORDER BY f.last_seen_at DESC LIMIT %s"
        )
        args = [*params, sorted(exclude), lowered, lowered, lowered, limit]
        return self._db.read(lambda c: _fetch_entries(c, sql, args))

    def _lower_sql(self, expression: str) -> str:
        """``lower(expression)`` under a collation that folds all of Unicode as ``str.lower`` does (the
        database's default may be the C locale, which folds ASCII only)."""
        if self._lower is None:
            with self._lower_lock:
                if self._lower is None:
                    self._lower = self._db.read(_pick_lower_collation)
        return f"lower({expression})" if not self._lower else f'lower({expression} COLLATE "{self._lower}")'

    def recent(self, flt: FactFilter, limit: int) -> list[MemoryEntry]:
        where, params = _visible(flt)
        sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} ORDER BY f.last_seen_at DESC, f.seq DESC LIMIT %s"
        return self._db.read(lambda c: _fetch_entries(c, sql, [*params, max(limit, 0)]))

    def taxonomy(self, flt: FactFilter) -> list[CategoryCount]:
        where, params = _visible(replace(flt, include_archived=False), with_category=False)
        # COLLATE "C": code-point order, as SQLite's and Python's.
        sql = f"SELECT f.category, count(*) FROM facts f WHERE {where} GROUP BY f.category"
        sql += ' ORDER BY f.category COLLATE "C"'
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [CategoryCount(category=r[0], count=int(r[1])) for r in rows]

    def purge(self, rule: PurgeRule) -> tuple[list[str], list[str]]:
        def work(c: Conn) -> tuple[list[str], list[str]]:
            # FOR UPDATE: an entry restored meanwhile is re-checked against the rule once its writer commits.
            sql = (
                "SELECT id, agent_id, importance >= %s OR reinforcement_count >= %s OR pinned FROM facts"
                " WHERE archived_at <= %s AND (coalesce(jsonb_typeof(metadata->'forgotten'), 'null') = 'null'"
                " OR %s::timestamptz IS NULL OR archived_at <= %s)"
            )
            tombstones = rule.tombstones_before
            params: list[Any] = [rule.protect_importance, rule.protect_reinforcement]
            params += [rule.archived_before, tombstones, tombstones]
            if rule.agent_id is not None:
                sql += " AND agent_id = %s"
                params.append(rule.agent_id)
            rows = c.execute(sql + " ORDER BY seq FOR UPDATE", params).fetchall()
            purged = [str(r[0]) for r in rows if not r[2]]
            protected = [str(r[0]) for r in rows if r[2]]
            if purged:
                owners = [str(r[1]) for r in rows if not r[2]]
                purged_at = rule.purged_at if rule.purged_at is not None else rule.archived_before
                c.execute("DELETE FROM fact_versions WHERE fact_id = ANY(%s)", (purged,))
                c.execute("DELETE FROM fact_vectors WHERE fact_id = ANY(%s)", (purged,))
                c.execute("DELETE FROM graph_extraction WHERE fact_id = ANY(%s)", (purged,))
                c.execute("DELETE FROM facts WHERE id = ANY(%s)", (purged,))
                c.execute(
                    "INSERT INTO purge_log (fact_id, agent_id, purged_at) SELECT p.fact_id, p.agent_id, %s"
                    " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS p(fact_id, agent_id, n) ORDER BY p.n",
                    (purged_at, purged, owners),
                )
            return purged, protected

        return self._db.write(work)

    def purge_log(self, since: datetime | None = None, agent_id: str | None = None) -> list[PurgedRecord]:
        sql = "SELECT fact_id, agent_id, purged_at FROM purge_log WHERE true"
        params: list[Any] = []
        if since is not None:
            sql += " AND purged_at >= %s"
            params.append(since)
        if agent_id is not None:
            sql += " AND agent_id = %s"
            params.append(agent_id)
        rows = self._db.read(lambda c: c.execute(sql + " ORDER BY purged_at, seq", params).fetchall())
        return [PurgedRecord(fact_id=r[0], agent_id=r[1], purged_at=r[2]) for r in rows]

    def agents(self) -> list[str]:
        # COLLATE "C": sorted as Python sorts, whatever the database collation.
        rows = self._db.read(
            lambda c: c.execute('SELECT agent_id FROM facts GROUP BY agent_id ORDER BY agent_id COLLATE "C"').fetchall()
        )
        return [str(r[0]) for r in rows]

    def expansion_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT seq, id FROM facts WHERE expand_pending AND seq > %s ORDER BY seq LIMIT %s",
                (after, max(limit, 0)),
            ).fetchall()
        )
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def queue_graph_extraction(self, entry_id: str, agent_id: str, *, at: datetime) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO graph_extraction (fact_id, agent_id, queued_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (fact_id) DO NOTHING",
                (entry_id, agent_id, at),
            )
        )

    def graph_extraction_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT seq, fact_id FROM graph_extraction WHERE seq > %s ORDER BY seq LIMIT %s",
                (after, max(limit, 0)),
            ).fetchall()
        )
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def graph_extraction_done(self, entry_id: str) -> bool:
        # Inside the caller's transaction the DELETE locks the row: a second worker's DELETE waits for the
        # first to commit, then deletes nothing and knows the entry was taken.
        deleted = self._db.write(
            lambda c: c.execute("DELETE FROM graph_extraction WHERE fact_id = %s", (entry_id,)).rowcount
        )
        return bool(deleted)

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        # Keyset pages, each a short read: no connection is held between pages, so a caller may write while
        # it iterates. The database collation keeps the id index usable; for the store's ids (lowercase hex)
        # its order is code-point order, as SQLite's.
        sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id > %s"
        if agent_id is not None:
            sql += " AND f.agent_id = %s"
        sql += " ORDER BY f.id LIMIT 500"
        last = ""
        while True:
            params: list[Any] = [last] if agent_id is None else [last, agent_id]
            page = self._db.read(lambda c, p=params: _fetch_entries(c, sql, p))  # type: ignore[misc]
            if not page:
                return
            yield from page
            last = page[-1].id

    def text_snapshot(self, agent_id: str) -> TextSnapshot:
        def work(c: Conn) -> TextSnapshot:
            # The watermark is read first: a change committed after it is replayed later, harmlessly.
            mark = _watermark(c, agent_id)
            rows = c.execute(
                f"SELECT {_TEXT_COLUMNS} FROM facts f WHERE f.agent_id = %s ORDER BY f.seq", (agent_id,)
            ).fetchall()
            return TextSnapshot(watermark=mark, rows=[(str(r[0]), _text_row(r)) for r in rows])

        return self._db.read(work)

    def text_changes(self, agent_id: str, after: int) -> TextSnapshot:
        def work(c: Conn) -> TextSnapshot:
            mark = _watermark(c, agent_id)
            if mark <= after:  # below: the log was replaced (a restored backup); the caller reloads
                return TextSnapshot(watermark=mark, rows=[])
            rows = c.execute(
                f"SELECT l.fact_id, {_TEXT_COLUMNS.replace('f.id, ', '', 1)} FROM (SELECT fact_id, max(seq) AS seq"
                "  FROM fact_log WHERE agent_id = %s AND seq > %s AND seq <= %s GROUP BY fact_id) l"
                " LEFT JOIN facts f ON f.id = l.fact_id AND f.agent_id = %s ORDER BY l.seq",
                (agent_id, after, mark, agent_id),
            ).fetchall()
            changed = [(str(r[0]), None if r[1] is None else _text_row(r)) for r in rows]
            return TextSnapshot(watermark=mark, rows=changed)

        return self._db.read(work)


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


def _watermark(c: Conn, agent_id: str) -> int:
    """The agent's change-log position: its last log row (0 when none)."""
    row = c.execute("SELECT coalesce(max(seq), 0) FROM fact_log WHERE agent_id = %s", (agent_id,)).fetchone()
    return int(row[0]) if row is not None else 0


def _text_row(row: tuple[Any, ...]) -> TextRow:
    return TextRow(
        content=row[1],
        tags=tuple(row[2]),
        category=row[3],
        user_id=row[4],
        session_id=row[5],
        archived=bool(row[6]),
    )


def _record_version(c: Conn, e: MemoryEntry, change: Change, at: datetime) -> None:
    # The facts row is locked by this transaction's insert or update, so max + 1 cannot race.
    c.execute(
        "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags, importance,"
        " metadata, archived) SELECT %s, coalesce(max(version), 0) + 1, %s, %s, %s, %s, %s, %s, %s, %s"
        " FROM fact_versions WHERE fact_id = %s",
        (
            e.id,
            change.value,
            at,
            e.content,
            e.category,
            Jsonb(list(e.tags)),
            e.importance,
            Jsonb(e.metadata),
            e.archived,
            e.id,
        ),
    )


def _row_to_version(row: tuple[Any, ...]) -> EntryVersion:
    return EntryVersion(
        entry_id=row[0],
        version=int(row[1]),
        change=Change(row[2]),
        recorded_at=row[3],
        content=row[4],
        category=row[5],
        tags=tuple(row[6]),
        importance=float(row[7]),
        metadata=row[8],
        archived=bool(row[9]),
    )


class PgVersions:
    """``VersionRepository`` on PostgreSQL. Scope is checked through the owning fact."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _query(self, entry_id: str, scope: Scope, extra: str, params: list[Any]) -> list[EntryVersion]:
        where, scope_params = _scope_sql(scope)
        sql = (
            "SELECT x.fact_id, x.version, x.change, x.recorded_at, x.content, x.category, x.tags, x.importance,"
            " x.metadata, x.archived FROM fact_versions x JOIN facts f ON f.id = x.fact_id"
            f" WHERE x.fact_id = %s AND {where} {extra} ORDER BY x.version"
        )
        rows = self._db.read(lambda c: c.execute(sql, [entry_id, *scope_params, *params]).fetchall())
        return [_row_to_version(r) for r in rows]

    def history(self, entry_id: str, scope: Scope) -> list[EntryVersion]:
        return self._query(entry_id, scope, "", [])

    def get(self, entry_id: str, version: int, scope: Scope) -> EntryVersion | None:
        found = self._query(entry_id, scope, "AND x.version = %s", [version])
        return found[0] if found else None
