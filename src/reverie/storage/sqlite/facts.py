"""Long-term entries and their versions on SQLite.

Scope filtering happens in SQL, in ``_visible``: every read goes through it, so no query can forget it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.errors import NotFound
from reverie.storage.base import FactFilter, PurgedRecord, PurgeRule, TextRow, TextSnapshot
from reverie.storage.sqlite.database import Database, parse_ts, parse_ts_or_none, ts, ts_or_none
from reverie.types import CategoryCount, Change, EntryVersion, MemoryEntry, Scope, Tier

_COLUMNS = (
    "f.id, f.agent_id, f.user_id, f.session_id, f.content, f.category, f.tags, f.tier, f.created_at, "
    "f.updated_at, f.last_seen_at, f.reinforcement_count, f.importance, f.retention, f.confidence, "
    "f.pinned, f.expires_at, f.archived_at, f.superseded_by, f.metadata, v.model, f.decayed_through, "
    "f.read_strength, f.read_at, f.fold_pending, f.expand_pending"
)
_FROM = "facts f LEFT JOIN fact_vectors v ON v.fact_id = f.id"
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _row_to_entry(row: sqlite3.Row | tuple[Any, ...]) -> MemoryEntry:
    return MemoryEntry(
        id=row[0],
        scope=Scope(agent_id=row[1], user_id=row[2], session_id=row[3]),
        content=row[4],
        category=row[5],
        tags=tuple(json.loads(row[6])),
        tier=Tier(row[7]),
        created_at=parse_ts(row[8]),
        updated_at=parse_ts_or_none(row[9]),
        last_seen_at=parse_ts(row[10]),
        reinforcement_count=int(row[11]),
        importance=float(row[12]),
        retention=float(row[13]),
        confidence=float(row[14]),
        pinned=bool(row[15]),
        expires_at=parse_ts_or_none(row[16]),
        archived_at=parse_ts_or_none(row[17]),
        superseded_by=row[18],
        metadata=json.loads(row[19]),
        embedding_model=row[20],
        decayed_through=parse_ts_or_none(row[21]),
        read_strength=float(row[22]),
        read_at=parse_ts_or_none(row[23]),
        fold_pending=bool(row[24]),
        expand_pending=bool(row[25]),
    )


def _scope_sql(scope: Scope) -> tuple[str, list[Any]]:
    clauses = ["f.agent_id = ?"]
    params: list[Any] = [scope.agent_id]
    for column, value in (("user_id", scope.user_id), ("session_id", scope.session_id)):
        if value is None:
            clauses.append(f"f.{column} IS NULL")
        else:
            clauses.append(f"(f.{column} IS NULL OR f.{column} = ?)")
            params.append(value)
    return " AND ".join(clauses), params


def _visible(flt: FactFilter, *, with_category: bool = True) -> tuple[str, list[Any]]:
    sql, params = _scope_sql(flt.scope)
    clauses = [sql]
    if not flt.include_archived:
        # Current entries only: an entry a later one contradicted keeps superseded_by without being archived.
        clauses.append("f.archived_at IS NULL AND f.superseded_by IS NULL")
    clauses.append("(f.expires_at IS NULL OR f.expires_at > ?)")
    params.append(ts(flt.now))
    if with_category and flt.category_prefix:
        prefix = flt.category_prefix
        clauses.append("(f.category = ? OR substr(f.category, 1, ?) = ?)")
        params.extend([prefix, len(prefix) + 1, prefix + "/"])
    return " AND ".join(clauses), params


def _entry_params(e: MemoryEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "agent_id": e.scope.agent_id,
        "user_id": e.scope.user_id,
        "session_id": e.scope.session_id,
        "content": e.content,
        "category": e.category,
        "tags": _dumps(list(e.tags)),
        "tier": e.tier.value,
        "created_at": ts(e.created_at),
        "updated_at": ts_or_none(e.updated_at),
        "last_seen_at": ts(e.last_seen_at),
        "reinforcement_count": e.reinforcement_count,
        "importance": e.importance,
        "retention": e.retention,
        "confidence": e.confidence,
        "pinned": int(e.pinned),
        "expires_at": ts_or_none(e.expires_at),
        "archived_at": ts_or_none(e.archived_at),
        "superseded_by": e.superseded_by,
        "metadata": _dumps(e.metadata),
        "decayed_through": ts_or_none(e.decayed_through),
        "read_strength": e.read_strength,
        "read_at": ts_or_none(e.read_at),
        "fold_pending": int(e.fold_pending),
        "expand_pending": int(e.expand_pending),
    }


_FIELD_NAMES = [
    *("id", "agent_id", "user_id", "session_id", "content", "category", "tags", "tier", "created_at"),
    *("updated_at", "last_seen_at", "reinforcement_count", "importance", "retention", "confidence"),
    *("pinned", "expires_at", "archived_at", "superseded_by", "metadata"),
    *("decayed_through", "read_strength", "read_at", "fold_pending", "expand_pending"),
]
_INSERT = f"INSERT INTO facts ({', '.join(_FIELD_NAMES)}) VALUES ({', '.join(':' + n for n in _FIELD_NAMES)})"
_UPDATE = (
    "UPDATE facts SET "
    + ", ".join(f"{n} = :{n}" for n in _FIELD_NAMES if n not in ("id", "agent_id", "user_id", "session_id"))
    + " WHERE id = :id"
)


class SqliteFacts:
    """``FactRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, entry: MemoryEntry, *, at: datetime) -> None:
        def work(c: sqlite3.Connection) -> None:
            c.execute(_INSERT, _entry_params(entry))
            _record_version(c, entry, Change.CREATED, at)

        self._db.write(work)

    def write(self, entry: MemoryEntry, *, change: Change, at: datetime) -> None:
        def work(c: sqlite3.Connection) -> None:
            row = c.execute(
                "SELECT agent_id, user_id, session_id, content, category, tags FROM facts WHERE id = ?",
                (entry.id,),
            ).fetchone()
            if row is None or Scope(row[0], row[1], row[2]) != entry.scope:
                raise NotFound(f"no entry {entry.id!r} in this scope")
            params = _entry_params(entry)
            text_changed = (row[3], row[4], row[5]) != (params["content"], params["category"], params["tags"])
            c.execute(_UPDATE, params)
            if change.versioned or text_changed:
                _record_version(c, entry, change, at)

        self._db.write(work)

    def get(self, entry_id: str, scope: Scope) -> MemoryEntry | None:
        where, params = _scope_sql(scope)
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id = ? AND {where}", [entry_id, *params]
            ).fetchone()
        )
        return None if row is None else _row_to_entry(row)

    def fold_pending(self, entry_ids: list[str]) -> set[str]:
        out: set[str] = set()
        for start in range(0, len(entry_ids), 500):
            chunk = entry_ids[start : start + 500]
            sql = f"SELECT id FROM facts WHERE fold_pending = 1 AND id IN ({', '.join('?' * len(chunk))})"
            rows = self._db.read(lambda c, q=sql, p=chunk: c.execute(q, p).fetchall())  # type: ignore[misc]
            out.update(str(r[0]) for r in rows)
        return out

    def owner(self, entry_id: str) -> Scope | None:
        row = self._db.read(
            lambda c: c.execute("SELECT agent_id, user_id, session_id FROM facts WHERE id = ?", (entry_id,)).fetchone()
        )
        return None if row is None else Scope(agent_id=row[0], user_id=row[1], session_id=row[2])

    def get_many(self, entry_ids: list[str], flt: FactFilter) -> list[MemoryEntry]:
        where, params = _visible(flt)
        # Unary "+" keeps the planner on the id index: with the agent_id index it scanned the agent's
        # every row (15x slower at 10k entries).
        where = where.replace("f.agent_id = ?", "+f.agent_id = ?", 1)
        out: list[MemoryEntry] = []
        for start in range(0, len(entry_ids), 500):  # stay under SQLite's bound-parameter limit
            chunk = entry_ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id IN ({marks}) AND {where}"
            rows = self._db.read(lambda c, q=sql, p=[*chunk, *params]: c.execute(q, p).fetchall())  # type: ignore[misc]
            out.extend(_row_to_entry(r) for r in rows)
        return out

    def neighbours(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[MemoryEntry]:
        where, params = _visible(flt)
        out: list[MemoryEntry] = []
        for start in range(0, len(keys), 200):
            chunk = keys[start : start + 200]
            pairs = ", ".join("(?, ?)" for _ in chunk)
            sql = (
                f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} AND "
                "(json_extract(f.metadata, '$.thread'), json_extract(f.metadata, '$.position'))"
                f" IN (VALUES {pairs})"
            )
            flat = [value for pair in chunk for value in pair]
            rows = self._db.read(lambda c, q=sql, p=[*params, *flat]: c.execute(q, p).fetchall())  # type: ignore[misc]
            out.extend(_row_to_entry(r) for r in rows)
        return out

    def in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[MemoryEntry]:
        where, params = _visible(flt)
        after_last = ts(datetime.fromisoformat(last_day).replace(tzinfo=UTC) + timedelta(days=1))
        saved = f"{where} AND f.created_at >= ? AND f.created_at < ?"
        # Two index ranges (facts_created, facts_subject_time), merged here: an OR would scan the agent. A
        # subject time overlaps the days when it lies, at its own precision, between their prefixes ("2026-03"
        # against 2026-03-14..2026-03-20 compares with "2026-03" on both sides); the year bound uses the index.
        subject = "substr(json_extract(f.metadata, '$.subjectTime'), 1, 10)"
        dated = (
            f"{where} AND {subject} >= ? AND {subject} <= ?"
            f" AND {subject} >= substr(?, 1, length({subject})) AND {subject} <= substr(?, 1, length({subject}))"
        )
        queries = (
            (saved, [*params, ts(datetime.fromisoformat(first_day).replace(tzinfo=UTC)), after_last]),
            (dated, [*params, first_day[:4], last_day, first_day, last_day]),
        )
        found: dict[str, MemoryEntry] = {}
        for clause, values in queries:
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE {clause} ORDER BY f.created_at DESC, f.seq DESC LIMIT ?"
            rows = self._db.read(lambda c, q=sql, p=[*values, limit]: c.execute(q, p).fetchall())  # type: ignore[misc]
            found.update((e.id, e) for e in map(_row_to_entry, rows))
        return sorted(found.values(), key=lambda e: e.created_at, reverse=True)[: max(limit, 0)]

    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        where, params = _visible(flt)
        sql = (
            f"SELECT {_COLUMNS}, {_BM25} AS rank FROM facts_fts JOIN facts f ON f.seq = facts_fts.rowid "
            "LEFT JOIN fact_vectors v ON v.fact_id = f.id "
            f"WHERE facts_fts MATCH ? AND {where} ORDER BY rank, f.last_seen_at DESC LIMIT ?"
        )
        scoped = _scoped_match(match, flt.scope.agent_id)
        rows = self._db.read(lambda c: c.execute(sql, [scoped, *params, limit]).fetchall())
        # bm25() is negative, more negative is better; flip it so larger is better.
        return [(_row_to_entry(r), -float(r[-1])) for r in rows]

    def search_substring(self, needle: str, flt: FactFilter, limit: int, exclude: frozenset[str]) -> list[MemoryEntry]:
        where, params = _visible(flt)
        lowered = needle.lower()
        sql = (
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} AND "
            "(instr(unicode_lower(f.content), ?) > 0 OR instr(f.category, ?) > 0 OR EXISTS ("
            "SELECT 1 FROM json_each(f.tags) t WHERE instr(unicode_lower(t.value), ?) > 0)) "
            "ORDER BY f.last_seen_at DESC LIMIT ?"
        )
        rows = self._db.read(
            lambda c: c.execute(sql, [*params, lowered, lowered, lowered, limit + len(exclude)]).fetchall()
        )
        entries = [_row_to_entry(r) for r in rows]
        return [e for e in entries if e.id not in exclude][:limit]

    def recent(self, flt: FactFilter, limit: int) -> list[MemoryEntry]:
        where, params = _visible(flt)
        sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE {where} ORDER BY f.last_seen_at DESC, f.seq DESC LIMIT ?"
        return [_row_to_entry(r) for r in self._db.read(lambda c: c.execute(sql, [*params, limit]).fetchall())]

    def taxonomy(self, flt: FactFilter) -> list[CategoryCount]:
        where, params = _visible(replace(flt, include_archived=False), with_category=False)
        sql = f"SELECT f.category, count(*) FROM facts f WHERE {where} GROUP BY f.category ORDER BY f.category"
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [CategoryCount(category=r[0], count=int(r[1])) for r in rows]

    def purge(self, rule: PurgeRule) -> tuple[list[str], list[str]]:
        def work(c: sqlite3.Connection) -> tuple[list[str], list[str]]:
            sql = (
                "SELECT id, importance, reinforcement_count, pinned, agent_id FROM facts WHERE archived_at <= ?"
                " AND (json_extract(metadata, '$.forgotten') IS NULL OR ? IS NULL OR archived_at <= ?)"
            )
            tombstones = ts_or_none(rule.tombstones_before)
            params: list[Any] = [ts(rule.archived_before), tombstones, tombstones]
            if rule.agent_id is not None:
                sql += " AND agent_id = ?"
                params.append(rule.agent_id)
            purged: list[str] = []
            protected: list[str] = []
            owners: dict[str, str] = {}
            for fact_id, importance, reinforcement, pinned, agent_id in c.execute(sql, params).fetchall():
                high_value = (
                    importance >= rule.protect_importance or reinforcement >= rule.protect_reinforcement or pinned
                )
                (protected if high_value else purged).append(fact_id)
                owners[fact_id] = agent_id
            purged_at = ts(rule.purged_at if rule.purged_at is not None else rule.archived_before)
            for fact_id in purged:
                c.execute("DELETE FROM fact_versions WHERE fact_id = ?", (fact_id,))
                c.execute("DELETE FROM fact_vectors WHERE fact_id = ?", (fact_id,))
                c.execute("DELETE FROM graph_extraction WHERE fact_id = ?", (fact_id,))
                c.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
                c.execute(
                    "INSERT INTO purge_log (fact_id, agent_id, purged_at) VALUES (?, ?, ?)",
                    (fact_id, owners[fact_id], purged_at),
                )
            return purged, protected

        return self._db.write(work)

    def purge_log(self, since: datetime | None = None, agent_id: str | None = None) -> list[PurgedRecord]:
        sql = "SELECT fact_id, agent_id, purged_at FROM purge_log WHERE 1 = 1"
        params: list[Any] = []
        if since is not None:
            sql += " AND purged_at >= ?"
            params.append(ts(since))
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        rows = self._db.read(lambda c: c.execute(sql + " ORDER BY purged_at, seq", params).fetchall())
        return [PurgedRecord(fact_id=r[0], agent_id=r[1], purged_at=parse_ts(r[2])) for r in rows]

    def agents(self) -> list[str]:
        rows = self._db.read(lambda c: c.execute("SELECT DISTINCT agent_id FROM facts ORDER BY agent_id").fetchall())
        return [str(r[0]) for r in rows]

    def expansion_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT seq, id FROM facts WHERE expand_pending = 1 AND seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()
        )
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def queue_graph_extraction(self, entry_id: str, agent_id: str, *, at: datetime) -> None:
        self._db.write(
            lambda c: c.execute(
                "INSERT INTO graph_extraction (fact_id, agent_id, queued_at) VALUES (?, ?, ?)"
                " ON CONFLICT (fact_id) DO NOTHING",
                (entry_id, agent_id, ts(at)),
            )
        )

    def graph_extraction_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        rows = self._db.read(
            lambda c: c.execute(
                "SELECT seq, fact_id FROM graph_extraction WHERE seq > ? ORDER BY seq LIMIT ?", (after, max(limit, 0))
            ).fetchall()
        )
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def graph_extraction_done(self, entry_id: str) -> bool:
        deleted = self._db.write(
            lambda c: c.execute("DELETE FROM graph_extraction WHERE fact_id = ?", (entry_id,)).rowcount
        )
        return bool(deleted)

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        last = ""
        while True:
            sql = f"SELECT {_COLUMNS} FROM {_FROM} WHERE f.id > ?"
            params: list[Any] = [last]
            if agent_id is not None:
                sql += " AND f.agent_id = ?"
                params.append(agent_id)
            rows = self._db.read(lambda c, q=sql, p=params: c.execute(q + " ORDER BY f.id LIMIT 500", p).fetchall())  # type: ignore[misc]
            if not rows:
                return
            for row in rows:
                yield _row_to_entry(row)
            last = rows[-1][0]

    def text_snapshot(self, agent_id: str) -> TextSnapshot:
        def work(c: sqlite3.Connection) -> TextSnapshot:
            # The watermark is read first: a change committed after it is replayed later, harmlessly.
            (mark,) = c.execute("SELECT coalesce(max(seq), 0) FROM fact_log").fetchone()
            rows = c.execute(f"SELECT {_TEXT_COLUMNS} FROM facts f WHERE f.agent_id = ? ORDER BY f.seq", (agent_id,))
            return TextSnapshot(watermark=int(mark), rows=[(str(r[0]), _text_row(r)) for r in rows])

        return self._db.read(work)

    def text_changes(self, agent_id: str, after: int) -> TextSnapshot:
        def work(c: sqlite3.Connection) -> TextSnapshot:
            (mark,) = c.execute("SELECT coalesce(max(seq), 0) FROM fact_log").fetchone()
            if int(mark) <= after:
                return TextSnapshot(watermark=int(mark), rows=[])
            rows = c.execute(
                f"SELECT l.fact_id, {_TEXT_COLUMNS.replace('f.id, ', '', 1)} FROM (SELECT fact_id, max(seq) AS seq"
                "  FROM fact_log WHERE agent_id = ? AND seq > ? AND seq <= ? GROUP BY fact_id) l"
                " LEFT JOIN facts f ON f.id = l.fact_id AND f.agent_id = ? ORDER BY l.seq",
                (agent_id, after, int(mark), agent_id),
            )
            return TextSnapshot(
                watermark=int(mark), rows=[(str(r[0]), None if r[1] is None else _text_row(r)) for r in rows]
            )

        return self._db.read(work)


# "archived" to an index: not current (archived, or superseded by a contradicting entry).
_TEXT_COLUMNS = (
    "f.id, f.content, f.tags, f.category, f.user_id, f.session_id,"
    " (f.archived_at IS NOT NULL OR f.superseded_by IS NOT NULL)"
)


def _text_row(row: tuple[Any, ...]) -> TextRow:
    return TextRow(
        content=row[1],
        tags=() if row[2] == "[]" else tuple(json.loads(row[2])),  # most entries have no tags: skip the parse
        category=row[3],
        user_id=row[4],
        session_id=row[5],
        archived=bool(row[6]),
    )


def _record_version(c: sqlite3.Connection, e: MemoryEntry, change: Change, at: datetime) -> None:
    (latest,) = c.execute("SELECT coalesce(max(version), 0) FROM fact_versions WHERE fact_id = ?", (e.id,)).fetchone()
    c.execute(
        "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags, importance,"
        " metadata, archived) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.id,
            int(latest) + 1,
            change.value,
            ts(at),
            e.content,
            e.category,
            _dumps(list(e.tags)),
            e.importance,
            _dumps(e.metadata),
            int(e.archived),
        ),
    )


def _row_to_version(row: tuple[Any, ...]) -> EntryVersion:
    return EntryVersion(
        entry_id=row[0],
        version=int(row[1]),
        change=Change(row[2]),
        recorded_at=parse_ts(row[3]),
        content=row[4],
        category=row[5],
        tags=tuple(json.loads(row[6])),
        importance=float(row[7]),
        metadata=json.loads(row[8]),
        archived=bool(row[9]),
    )


class SqliteVersions:
    """``VersionRepository`` on SQLite. Scope is checked through the owning fact."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _query(self, entry_id: str, scope: Scope, extra: str, params: list[Any]) -> list[EntryVersion]:
        where, scope_params = _scope_sql(scope)
        sql = (
            "SELECT x.fact_id, x.version, x.change, x.recorded_at, x.content, x.category, x.tags, x.importance,"
            f" x.metadata, x.archived FROM fact_versions x JOIN facts f ON f.id = x.fact_id"
            f" WHERE x.fact_id = ? AND {where} {extra} ORDER BY x.version"
        )
        rows = self._db.read(lambda c: c.execute(sql, [entry_id, *scope_params, *params]).fetchall())
        return [_row_to_version(r) for r in rows]

    def history(self, entry_id: str, scope: Scope) -> list[EntryVersion]:
        return self._query(entry_id, scope, "", [])

    def get(self, entry_id: str, version: int, scope: Scope) -> EntryVersion | None:
        found = self._query(entry_id, scope, "AND x.version = ?", [version])
        return found[0] if found else None
