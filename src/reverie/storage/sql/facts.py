"""Long-term entries and their versions (``FactRepository``, ``VersionRepository``), written once for both
backends over a ``Dialect``. Each backend subclasses ``SqlFacts`` for what truly differs: full-text search
(FTS5 ``MATCH`` and bm25() on SQLite, the ``search_text`` tsvector and ``ts_rank`` on PostgreSQL), the
sequence-neighbour lookup (each spelled as its backend's ``facts_sequence`` index), the subject-time
expression (as its ``facts_subject_time`` index) and Unicode case folding for substring search.

Invariants:
- Scope filtering happens in SQL, in ``visible`` (``_scope_sql`` for reads by id, archived included, and
  for versions): every read goes through it, so no query can forget it; the backends' own queries use it
  too. A scope sees its agent's entries whose user and session are unset or its own.
- Current entries only, unless the filter asks for archived ones (``include_archived``, or an ``EntryFilter``
  with ``archived`` or ``superseded`` True): an entry a later one contradicted keeps ``superseded_by`` without
  being archived, and is not current either.
- ``add`` records version 1 and ``write`` a next version, in the writing transaction, whenever the change
  is versioned or the text (content, category, tags) changed. Versions number from 1 per entry, max + 1:
  the entry's row is locked by the same transaction (PostgreSQL's row lock, SQLite's single writer), so two
  writers never take the same number. Versions are append-only; scope is checked through the owning entry.
- The change logs (``fact_log``, ``vector_log``) are written by triggers. A log position (``log_position``)
  is the log's last seq: on SQLite over the whole log (one writer at a time, so positions follow commit
  order), on PostgreSQL over the agent's rows (the log advisory lock the triggers take makes an agent's
  positions follow commit order; see ``postgres.migrations``). A snapshot reads its position first: a
  change committed after it is replayed later, harmlessly.
- ``purge`` hard-deletes archived entries only, never above the high-value floor (importance,
  reinforcement or pinned), with their versions, vectors and queue rows; each leaves a purge-log row in
  the same transaction, in purge order.
- Recall's candidate reads (``candidates``, ``neighbour_candidates``, ``candidates_in_period``) are the
  entry reads (``get_many``, ``neighbours``, ``in_period``) with other columns: one statement each, built
  from a ``Shape`` (``fact_rows``), so the two can never filter differently.
- Timestamps are stored as the dialect says (fixed-width UTC text, ``timestamptz``); text order is time
  order on SQLite, so every comparison is the same on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from reverie.core.filters import reaches_retired
from reverie.errors import NotFound
from reverie.storage.base import FactCandidate, FactFilter, PurgedRecord, PurgeRule, TextRow, TextSnapshot
from reverie.storage.sql.dialect import Connection, Dialect, SqlDatabase
from reverie.storage.sql.fact_filters import entry_conditions, page_clause
from reverie.storage.sql.fact_rows import CANDIDATE, COLUMNS, ENTRY, FROM, Row, Shape, entry_from_row
from reverie.types import CategoryCount, Change, EntryVersion, MemoryEntry, Scope, Tier

_FIELD_NAMES = [
    *("id", "agent_id", "user_id", "session_id", "content", "category", "tags", "tier", "created_at"),
    *("updated_at", "last_seen_at", "reinforcement_count", "importance", "retention", "confidence"),
    *("pinned", "expires_at", "archived_at", "superseded_by", "metadata"),
    *("decayed_through", "read_strength", "read_at", "fold_pending", "expand_pending"),
]
_INSERT = f"INSERT INTO facts ({', '.join(_FIELD_NAMES)}) VALUES ({', '.join('?' * len(_FIELD_NAMES))})"
# Every field but the id and the scope (the first four), then the id.
_UPDATE = "UPDATE facts SET " + ", ".join(f"{n} = ?" for n in _FIELD_NAMES[4:]) + " WHERE id = ?"
# "archived" to an index: not current (archived, or superseded by a contradicting entry).
_TEXT_COLUMNS = (
    "f.id, f.content, f.tags, f.category, f.user_id, f.session_id,"
    " (f.archived_at IS NOT NULL OR f.superseded_by IS NOT NULL)"
)
_VERSION_COLUMNS = (
    "x.fact_id, x.version, x.change, x.recorded_at, x.content, x.category, x.tags, x.importance, x.metadata, x.archived"
)
_PURGE_LOG_BATCH = 300  # rows per purge-log INSERT: three parameters each, under SQLite's limit of 999


def log_position(c: Connection, d: Dialect, table: str, agent_id: str) -> int:
    """The change-log position of ``table`` (``fact_log``, ``vector_log``) for an agent: its last seq, 0
    when none. The whole log's on SQLite, the agent's rows' on PostgreSQL (see the module docstring)."""
    if d.postgres:
        row = c.execute(d.sql(f"SELECT coalesce(max(seq), 0) FROM {table} WHERE agent_id = ?"), (agent_id,))
    else:
        row = c.execute(f"SELECT coalesce(max(seq), 0) FROM {table}")
    found = row.fetchone()
    return int(found[0]) if found is not None else 0


def _scope_sql(scope: Scope, agent: str = "f.agent_id") -> tuple[str, list[Any]]:
    clauses = [f"{agent} = ?"]
    params: list[Any] = [scope.agent_id]
    for column, value in (("user_id", scope.user_id), ("session_id", scope.session_id)):
        if value is None:
            clauses.append(f"f.{column} IS NULL")
        else:
            clauses.append(f"(f.{column} IS NULL OR f.{column} = ?)")
            params.append(value)
    return " AND ".join(clauses), params


def visible(
    d: Dialect, flt: FactFilter, *, with_category: bool = True, agent: str = "f.agent_id"
) -> tuple[str, list[Any]]:
    """The WHERE condition (over ``facts f``) and its parameters for what ``flt`` lets through."""
    sql, params = _scope_sql(flt.scope, agent)
    clauses = [sql]
    # A filter asking for archived or superseded entries reads them as include_archived would (its own
    # conditions then keep only what it asks for).
    if not flt.include_archived and not reaches_retired(flt.entry):
        # Current entries only: an entry a later one contradicted keeps superseded_by without being archived.
        clauses.append("f.archived_at IS NULL AND f.superseded_by IS NULL")
    clauses.append("(f.expires_at IS NULL OR f.expires_at > ?)")
    params.append(d.ts(flt.now))
    if with_category and flt.category_prefix:
        prefix = flt.category_prefix
        # Whole path segments only: "user" takes "user" and "user/x", never "username".
        below, below_params = d.starts_with("f.category", prefix + "/")
        clauses.append(f"(f.category = ? OR ({below}))")
        params.extend([prefix, *below_params])
    if flt.entry is not None:
        narrowed, narrowed_params = entry_conditions(d, flt.entry)
        clauses.extend(narrowed)
        params.extend(narrowed_params)
    return " AND ".join(clauses), params


def _entry_values(d: Dialect, e: MemoryEntry) -> list[Any]:
    """The parameters of ``_INSERT``, in ``_FIELD_NAMES`` order."""
    return [
        *(e.id, e.scope.agent_id, e.scope.user_id, e.scope.session_id, e.content, e.category),
        d.json(list(e.tags)),
        e.tier.value,
        d.ts(e.created_at),
        d.ts_or_none(e.updated_at),
        d.ts(e.last_seen_at),
        *(e.reinforcement_count, e.importance, e.retention, e.confidence),
        d.flag(e.pinned),
        d.ts_or_none(e.expires_at),
        d.ts_or_none(e.archived_at),
        e.superseded_by,
        d.json(e.metadata),
        d.ts_or_none(e.decayed_through),
        e.read_strength,
        d.ts_or_none(e.read_at),
        d.flag(e.fold_pending),
        d.flag(e.expand_pending),
    ]


class SqlFacts(ABC):
    """``FactRepository`` over either backend. A subclass supplies ``search``, ``_neighbours``, ``_fold``
    and ``subject_day``."""

    #: The first ten characters of ``metadata.subjectTime`` of ``facts f``, spelled exactly as the
    #: ``facts_subject_time`` index spells it (so the planner can use the index).
    subject_day: ClassVar[str]

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- what each backend spells its own way ------------------------------------------------------------
    @abstractmethod
    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        """BM25 full-text search (see ``FactRepository.search``)."""

    @abstractmethod
    def _neighbours(self, shape: Shape[Row], keys: list[tuple[str, int]], flt: FactFilter) -> list[Row]:
        """Entries by ``metadata.thread`` / ``metadata.position`` (see ``FactRepository.neighbours``), read
        as ``shape`` says."""

    @abstractmethod
    def _fold(self, expression: str) -> str:
        """SQL for text ``expression`` case-folded over all of Unicode, as ``str.lower`` folds it."""

    # -- rows ------------------------------------------------------------------------------------------
    def _entry(self, row: Any) -> MemoryEntry:
        return entry_from_row(self._d, row)

    def _entries(self, c: Connection, statement: str, params: list[Any]) -> list[MemoryEntry]:
        """Run ``statement`` (``?`` placeholders, selecting ``COLUMNS`` first) and read its entries."""
        d = self._d
        return [entry_from_row(d, r) for r in c.execute(d.sql(statement), params).fetchall()]

    def _read(self, statement: str, params: list[Any]) -> list[MemoryEntry]:
        return self._db.read(lambda c: self._entries(c, statement, params))

    def _read_as(self, shape: Shape[Row], statement: str, params: list[Any]) -> list[Row]:
        """Run ``statement`` (``?`` placeholders, selecting ``shape.columns``) and read its rows as ``shape``."""
        d = self._d
        return self._db.read(lambda c: [shape.read(d, r) for r in c.execute(d.sql(statement), params).fetchall()])

    # -- writes ----------------------------------------------------------------------------------------
    def add(self, entry: MemoryEntry, *, at: datetime) -> None:
        d = self._d

        def work(c: Connection) -> None:
            c.execute(d.sql(_INSERT), _entry_values(d, entry))
            _record_version(c, d, entry, Change.CREATED, at)

        self._db.write(work)

    def write(self, entry: MemoryEntry, *, change: Change, at: datetime) -> None:
        d = self._d

        def work(c: Connection) -> None:
            # FOR UPDATE: the text compared below is the text this write replaces, whoever else writes.
            row = c.execute(
                d.sql("SELECT agent_id, user_id, session_id, content, category, tags FROM facts WHERE id = ?")
                + d.for_update(),
                (entry.id,),
            ).fetchone()
            if row is None or Scope(row[0], row[1], row[2]) != entry.scope:
                raise NotFound(f"no entry {entry.id!r} in this scope")
            before = (row[3], row[4], tuple(d.json_out(row[5])))
            text_changed = before != (entry.content, entry.category, tuple(entry.tags))
            values = _entry_values(d, entry)
            c.execute(d.sql(_UPDATE), [*values[4:], entry.id])
            if change.versioned or text_changed:
                _record_version(c, d, entry, change, at)

        self._db.write(work)

    def read_states(self, entry_ids: list[str]) -> dict[str, tuple[Tier, float, datetime | None]]:
        d = self._d
        out: dict[str, tuple[Tier, float, datetime | None]] = {}
        for batch in d.batches(sorted(set(entry_ids))):  # sorted: concurrent flushes lock rows in one order
            among, ids = d.any_of("id", batch)
            statement = d.sql(f"SELECT id, tier, read_strength, read_at FROM facts WHERE {among}") + d.for_update()
            rows = self._db.read(lambda c, q=statement, p=ids: c.execute(q, p).fetchall())  # type: ignore[misc]
            out.update((str(r[0]), (Tier(r[1]), float(r[2]), d.ts_out_or_none(r[3]))) for r in rows)
        return out

    def write_reads(self, reads: list[tuple[str, float, datetime]]) -> None:
        if not reads:
            return
        d = self._d
        # Two columns, no trigger's: no version, no change-log row, no full-text or vector upkeep.
        statement = d.sql("UPDATE facts SET read_strength = ?, read_at = ? WHERE id = ?")
        params = [(strength, d.ts(at), entry_id) for entry_id, strength, at in reads]

        def work(c: Any) -> None:
            with closing(c.cursor()) as cursor:
                cursor.executemany(statement, params)

        self._db.write(work)

    # -- reads -----------------------------------------------------------------------------------------
    def get(self, entry_id: str, scope: Scope) -> MemoryEntry | None:
        where, params = _scope_sql(scope)
        found = self._read(f"SELECT {COLUMNS} FROM {FROM} WHERE f.id = ? AND {where}", [entry_id, *params])
        return found[0] if found else None

    def fold_pending(self, entry_ids: list[str]) -> set[str]:
        d = self._d
        out: set[str] = set()
        for batch in d.batches(entry_ids):
            among, ids = d.any_of("id", batch)
            # "= true" on PostgreSQL simplifies to the bare column, so the partial index applies on both.
            statement = d.sql(f"SELECT id FROM facts WHERE fold_pending = {d.true} AND {among}")
            rows = self._db.read(lambda c, q=statement, p=ids: c.execute(q, p).fetchall())  # type: ignore[misc]
            out.update(str(r[0]) for r in rows)
        return out

    def owner(self, entry_id: str) -> Scope | None:
        statement = self._d.sql("SELECT agent_id, user_id, session_id FROM facts WHERE id = ?")
        row = self._db.read(lambda c: c.execute(statement, (entry_id,)).fetchone())
        return None if row is None else Scope(agent_id=row[0], user_id=row[1], session_id=row[2])

    def get_many(self, entry_ids: list[str], flt: FactFilter) -> list[MemoryEntry]:
        return self._by_ids(ENTRY, entry_ids, flt)

    def candidates(self, entry_ids: list[str], flt: FactFilter) -> list[FactCandidate]:
        return self._by_ids(CANDIDATE, entry_ids, flt)

    def _by_ids(self, shape: Shape[Row], entry_ids: list[str], flt: FactFilter) -> list[Row]:
        d = self._d
        # Unary "+" on SQLite keeps the planner on the id index: with the agent_id index it scanned the
        # agent's every row (15x slower at 10k entries).
        where, params = visible(d, flt, agent=d.unindexed("f.agent_id"))
        out: list[Row] = []
        for batch in d.batches(list(entry_ids)):
            among, ids = d.any_of("f.id", batch)
            statement = f"SELECT {shape.columns} FROM facts f{shape.joins} WHERE {among} AND {where}"
            out.extend(self._read_as(shape, statement, [*ids, *params]))
        return out

    def neighbours(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[MemoryEntry]:
        return self._neighbours(ENTRY, keys, flt)

    def neighbour_candidates(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[FactCandidate]:
        return self._neighbours(CANDIDATE, keys, flt)

    def in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[MemoryEntry]:
        return self._in_period(ENTRY, flt, first_day, last_day, limit)

    def candidates_in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[FactCandidate]:
        return self._in_period(CANDIDATE, flt, first_day, last_day, limit)

    def _in_period(self, shape: Shape[Row], flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[Row]:
        d = self._d
        where, params = visible(d, flt)
        first = datetime.fromisoformat(first_day).replace(tzinfo=UTC)
        after_last = datetime.fromisoformat(last_day).replace(tzinfo=UTC) + timedelta(days=1)
        # Two index ranges (facts_created, facts_subject_time), merged here: an OR would scan the agent. A
        # subject time overlaps the days when it lies, at its own precision, between their prefixes ("2026-03"
        # against 2026-03-14..2026-03-20 compares with "2026-03" on both sides); the year bound uses the index.
        subject = self.subject_day
        dated = (
            f"{where} AND {subject} >= ? AND {subject} <= ?"
            f" AND {subject} >= substr(?, 1, length({subject})) AND {subject} <= substr(?, 1, length({subject}))"
        )
        queries = (
            (f"{where} AND f.created_at >= ? AND f.created_at < ?", [*params, d.ts(first), d.ts(after_last)]),
            (dated, [*params, first_day[:4], last_day, first_day, last_day]),
        )
        wanted = max(limit, 0)
        found: dict[str, Row] = {}
        for clause, values in queries:
            statement = (
                f"SELECT {shape.columns} FROM facts f{shape.joins} WHERE {clause}"
                " ORDER BY f.created_at DESC, f.seq DESC LIMIT ?"
            )
            found.update((e.id, e) for e in self._read_as(shape, statement, [*values, wanted]))
        return sorted(found.values(), key=lambda e: e.created_at, reverse=True)[:wanted]

    def search_substring(self, needle: str, flt: FactFilter, limit: int, exclude: frozenset[str]) -> list[MemoryEntry]:
        if limit <= 0:
            return []
        d = self._d
        where, params = visible(d, flt)
        lowered = needle.lower()
        # Character search, never LIKE: the needle's % and _ are plain characters. Tags are searched element
        # by element, so the array's JSON punctuation never matches.
        statement = (
            f"SELECT {COLUMNS} FROM {FROM} WHERE {where} AND ({d.contains(self._fold('f.content'), '?')}"
            f" OR {d.contains('f.category', '?')} OR EXISTS (SELECT 1 FROM {d.json_elements('f.tags', 't')}"
            f" WHERE {d.contains(self._fold('t.value'), '?')})) ORDER BY f.last_seen_at DESC LIMIT ?"
        )
        # The excluded ids (found already) are skipped here: at most that many more rows are read.
        entries = self._read(statement, [*params, lowered, lowered, lowered, limit + len(exclude)])
        return [e for e in entries if e.id not in exclude][:limit]

    def recent(self, flt: FactFilter, limit: int) -> list[MemoryEntry]:
        where, params = visible(self._d, flt)
        statement = f"SELECT {COLUMNS} FROM {FROM} WHERE {where} ORDER BY f.last_seen_at DESC, f.seq DESC LIMIT ?"
        return self._read(statement, [*params, max(limit, 0)])

    def taxonomy(self, flt: FactFilter) -> list[CategoryCount]:
        d = self._d
        where, params = visible(d, replace(flt, include_archived=False), with_category=False)
        # Code-point order (COLLATE "C" on PostgreSQL), as SQLite's and Python's.
        statement = d.sql(
            f"SELECT f.category, count(*) FROM facts f WHERE {where} GROUP BY f.category"
            f" ORDER BY f.category{d.collate_c}"
        )
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [CategoryCount(category=r[0], count=int(r[1])) for r in rows]

    def agents(self) -> list[str]:
        # Code-point order: sorted as Python sorts, whatever the database collation.
        statement = self._d.sql(f"SELECT agent_id FROM facts GROUP BY agent_id ORDER BY agent_id{self._d.collate_c}")
        rows = self._db.read(lambda c: c.execute(statement).fetchall())
        return [str(r[0]) for r in rows]

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        # Keyset pages, each a short read: no connection is held between pages, so a caller may write while
        # it iterates. PostgreSQL's database collation keeps the id index usable; for the store's ids
        # (lowercase hex) its order is code-point order, as SQLite's.
        statement = f"SELECT {COLUMNS} FROM {FROM} WHERE f.id > ?"
        if agent_id is not None:
            statement += " AND f.agent_id = ?"
        statement += " ORDER BY f.id LIMIT 500"
        last = ""
        while True:
            page = self._read(statement, [last] if agent_id is None else [last, agent_id])
            if not page:
                return
            yield from page
            last = page[-1].id

    def page(self, flt: FactFilter, order: str, after: tuple[Any, str] | None, limit: int) -> list[MemoryEntry]:
        where, params = visible(self._d, flt)
        keyset, order_by, keyset_params = page_clause(self._d, order, after)
        statement = f"SELECT {COLUMNS} FROM {FROM} WHERE {where}{' AND ' + keyset if keyset else ''}"
        return self._read(f"{statement} ORDER BY {order_by} LIMIT ?", [*params, *keyset_params, max(limit, 0)])

    # -- purge -----------------------------------------------------------------------------------------
    def purge(self, rule: PurgeRule) -> tuple[list[str], list[str]]:
        d = self._d

        def work(c: Connection) -> tuple[list[str], list[str]]:
            statement = "SELECT id, agent_id, importance, reinforcement_count, pinned FROM facts WHERE archived_at <= ?"
            params: list[Any] = [d.ts(rule.archived_before)]
            if rule.tombstones_before is not None:
                # Tombstones (metadata.forgotten set; a JSON null is unset) go only once archived this long.
                statement += f" AND ({d.json_text('metadata', 'forgotten')} IS NULL OR archived_at <= ?)"
                params.append(d.ts(rule.tombstones_before))
            if rule.agent_id is not None:
                statement += " AND agent_id = ?"
                params.append(rule.agent_id)
            # FOR UPDATE: an entry restored meanwhile is re-checked against the rule once its writer commits.
            rows = c.execute(d.sql(statement + " ORDER BY seq") + d.for_update(), params).fetchall()
            purged: list[str] = []
            owners: list[str] = []
            protected: list[str] = []
            for fact_id, agent_id, importance, reinforcement, pinned in rows:
                # The high-value floor: never purged, whatever the rule's dates.
                if importance >= rule.protect_importance or reinforcement >= rule.protect_reinforcement or pinned:
                    protected.append(str(fact_id))
                else:
                    purged.append(str(fact_id))
                    owners.append(str(agent_id))
            purged_at = rule.purged_at if rule.purged_at is not None else rule.archived_before
            _delete_entries(c, d, purged, owners, purged_at)
            return purged, protected

        return self._db.write(work)

    def purge_log(self, since: datetime | None = None, agent_id: str | None = None) -> list[PurgedRecord]:
        d = self._d
        statement = "SELECT fact_id, agent_id, purged_at FROM purge_log WHERE 1 = 1"
        params: list[Any] = []
        if since is not None:
            statement += " AND purged_at >= ?"
            params.append(d.ts(since))
        if agent_id is not None:
            statement += " AND agent_id = ?"
            params.append(agent_id)
        statement = d.sql(statement + " ORDER BY purged_at, seq")
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [PurgedRecord(fact_id=r[0], agent_id=r[1], purged_at=d.ts_out(r[2])) for r in rows]

    # -- queues ----------------------------------------------------------------------------------------
    def expansion_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        d = self._d
        # "= true" on PostgreSQL simplifies to the bare column, so the partial index applies on both.
        statement = d.sql(f"SELECT seq, id FROM facts WHERE expand_pending = {d.true} AND seq > ? ORDER BY seq LIMIT ?")
        rows = self._db.read(lambda c: c.execute(statement, (after, max(limit, 0))).fetchall())
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def queue_graph_extraction(self, entry_id: str, agent_id: str, *, at: datetime) -> None:
        statement = self._d.sql(
            "INSERT INTO graph_extraction (fact_id, agent_id, queued_at) VALUES (?, ?, ?)"
            " ON CONFLICT (fact_id) DO NOTHING"
        )
        self._db.write(lambda c: c.execute(statement, (entry_id, agent_id, self._d.ts(at))))

    def graph_extraction_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        statement = self._d.sql("SELECT seq, fact_id FROM graph_extraction WHERE seq > ? ORDER BY seq LIMIT ?")
        rows = self._db.read(lambda c: c.execute(statement, (after, max(limit, 0))).fetchall())
        return [(int(position), str(fact_id)) for position, fact_id in rows]

    def graph_extraction_done(self, entry_id: str) -> bool:
        # Inside the caller's transaction the DELETE locks the row (PostgreSQL; SQLite has one writer): a
        # second worker's DELETE waits for the first to commit, then deletes nothing and knows it was taken.
        statement = self._d.sql("DELETE FROM graph_extraction WHERE fact_id = ?")
        return bool(self._db.write(lambda c: c.execute(statement, (entry_id,)).rowcount))

    # -- the text log ----------------------------------------------------------------------------------
    def text_snapshot(self, agent_id: str) -> TextSnapshot:
        d = self._d
        statement = d.sql(f"SELECT {_TEXT_COLUMNS} FROM facts f WHERE f.agent_id = ? ORDER BY f.seq")

        def work(c: Connection) -> TextSnapshot:
            # The watermark is read first: a change committed after it is replayed later, harmlessly.
            mark = log_position(c, d, "fact_log", agent_id)
            rows = c.execute(statement, (agent_id,)).fetchall()
            return TextSnapshot(watermark=mark, rows=[(str(r[0]), _text_row(d, r)) for r in rows])

        return self._db.read(work)

    def log_position(self, agent_id: str) -> int:
        return self._db.read(lambda c: log_position(c, self._d, "fact_log", agent_id))

    def text_changes(self, agent_id: str, after: int) -> TextSnapshot:
        d = self._d
        statement = d.sql(
            f"SELECT l.fact_id, {_TEXT_COLUMNS.replace('f.id, ', '', 1)} FROM (SELECT fact_id, max(seq) AS seq"
            "  FROM fact_log WHERE agent_id = ? AND seq > ? AND seq <= ? GROUP BY fact_id) l"
            " LEFT JOIN facts f ON f.id = l.fact_id AND f.agent_id = ? ORDER BY l.seq"
        )

        def work(c: Connection) -> TextSnapshot:
            mark = log_position(c, d, "fact_log", agent_id)
            if mark <= after:  # below: the log was replaced (a restored backup); the caller reloads
                return TextSnapshot(watermark=mark, rows=[])
            rows = c.execute(statement, (agent_id, after, mark, agent_id)).fetchall()
            changed = [(str(r[0]), None if r[1] is None else _text_row(d, r)) for r in rows]
            return TextSnapshot(watermark=mark, rows=changed)

        return self._db.read(work)


def _text_row(d: Dialect, row: Any) -> TextRow:
    tags = row[2]
    return TextRow(
        content=row[1],
        tags=() if tags == "[]" else tuple(d.json_out(tags)),  # most entries have no tags: skip the parse
        category=row[3],
        user_id=row[4],
        session_id=row[5],
        archived=bool(row[6]),
    )


def _delete_entries(c: Connection, d: Dialect, purged: list[str], owners: list[str], purged_at: datetime) -> None:
    """Hard-delete ``purged`` (with their versions, vectors and extraction-queue rows) and log each, in
    order, with its owner."""
    for batch in d.batches(purged):
        among, ids = d.any_of("fact_id", batch)
        for table in ("fact_versions", "fact_vectors", "graph_extraction"):
            c.execute(d.sql(f"DELETE FROM {table} WHERE {among}"), ids)
        among, ids = d.any_of("id", batch)
        c.execute(d.sql(f"DELETE FROM facts WHERE {among}"), ids)
    stamp = d.ts(purged_at)
    logged = list(zip(purged, owners, strict=True))
    for start in range(0, len(logged), _PURGE_LOG_BATCH):
        # One multi-row VALUES: its rows take their seq in order, so the log keeps the purge order.
        pairs = logged[start : start + _PURGE_LOG_BATCH]
        values = ", ".join("(?, ?, ?)" for _ in pairs)
        params = [value for fact_id, agent_id in pairs for value in (fact_id, agent_id, stamp)]
        c.execute(d.sql(f"INSERT INTO purge_log (fact_id, agent_id, purged_at) VALUES {values}"), params)


def _record_version(c: Connection, d: Dialect, e: MemoryEntry, change: Change, at: datetime) -> None:
    # The facts row is locked by this transaction's insert or update (on SQLite the one writer holds the
    # database), so max + 1 cannot race.
    c.execute(
        d.sql(
            "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags, importance,"
            " metadata, archived) SELECT ?, coalesce(max(version), 0) + 1, ?, ?, ?, ?, ?, ?, ?, ?"
            " FROM fact_versions WHERE fact_id = ?"
        ),
        (
            e.id,
            change.value,
            d.ts(at),
            e.content,
            e.category,
            d.json(list(e.tags)),
            e.importance,
            d.json(e.metadata),
            d.flag(e.archived),
            e.id,
        ),
    )


class SqlVersions:
    """``VersionRepository`` over either backend. Scope is checked through the owning fact."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _query(self, entry_id: str, scope: Scope, extra: str, params: list[Any], tail: str = "") -> list[EntryVersion]:
        d = self._d
        where, scope_params = _scope_sql(scope)
        statement = d.sql(
            f"SELECT {_VERSION_COLUMNS} FROM fact_versions x JOIN facts f ON f.id = x.fact_id"
            f" WHERE x.fact_id = ? AND {where} {extra} ORDER BY x.version{tail}"
        )
        rows = self._db.read(lambda c: c.execute(statement, [entry_id, *scope_params, *params]).fetchall())
        return [
            EntryVersion(
                entry_id=r[0],
                version=int(r[1]),
                change=Change(r[2]),
                recorded_at=d.ts_out(r[3]),
                content=r[4],
                category=r[5],
                tags=tuple(d.json_out(r[6])),
                importance=float(r[7]),
                metadata=d.json_out(r[8]),
                archived=bool(r[9]),
            )
            for r in rows
        ]

    def history(self, entry_id: str, scope: Scope) -> list[EntryVersion]:
        return self._query(entry_id, scope, "", [])

    def page(self, entry_id: str, scope: Scope, after: int | None, limit: int) -> list[EntryVersion]:
        # Keyset on the version number: versions are append-only, so a walk misses and repeats nothing.
        return self._query(entry_id, scope, "AND x.version > ?", [after or 0, max(limit, 0)], " LIMIT ?")

    def get(self, entry_id: str, version: int, scope: Scope) -> EntryVersion | None:
        found = self._query(entry_id, scope, "AND x.version = ?", [version])
        return found[0] if found else None
