"""``Store`` on PostgreSQL + pgvector: repositories, transactions, migrations and maintenance.

Many processes on many hosts may open one database: every repository keeps its state in the database,
log positions follow commit order per agent (``migrations``), and the dream lock is an advisory lock
(``dream``). Backups are portable Reverie backups (an SQLite file, ``storage.backup``), so a backup of
either backend restores into either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.storage import backup as portable_backup
from reverie.storage.base import StoreOptions
from reverie.storage.postgres import migrations
from reverie.storage.postgres import rows as portable_rows
from reverie.storage.postgres.database import Conn, PgDatabase, redact
from reverie.storage.postgres.dream import PgDream
from reverie.storage.postgres.facts import PgFacts
from reverie.storage.postgres.skills import PgSkills
from reverie.storage.postgres.vectors import PgVectors
from reverie.storage.sql.activity import SqlActivityLogs, SqlInjected
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.facts import SqlVersions
from reverie.storage.sql.graph import SqlGraph
from reverie.storage.sql.keys import SqlKeys
from reverie.storage.sql.kv import SqlKv
from reverie.storage.sql.sessions import SqlSessions
from reverie.storage.sql.skills import SqlFeedback
from reverie.storage.sql.usage import SqlUsage
from reverie.storage.sql.vectors import SqlMeta
from reverie.storage.sql.working import SqlWorking
from reverie.types import HealthReport, StoreStats


class PgStore:
    """The scale-out backend. Safe to share between threads; any number of processes may open it."""

    def __init__(self, url: str, *, now: datetime, options: StoreOptions | None = None) -> None:
        options = options or StoreOptions()
        self._url = url
        self._db = PgDatabase(url, pool_size=options.pool_size, lock_wait_seconds=options.lock_wait_seconds)
        migrations.apply(self._db, now)
        self._db.open()
        self._facts = PgFacts(self._db)
        self._versions = SqlVersions(self._db, POSTGRES)
        self._vectors = PgVectors(self._db)
        self._meta = SqlMeta(self._db, POSTGRES)
        self._dream = PgDream(self._db)
        self._sessions = SqlSessions(self._db, POSTGRES)
        self._working = SqlWorking(self._db, POSTGRES)
        self._keys = SqlKeys(self._db, POSTGRES)
        self._usage = SqlUsage(self._db, POSTGRES)
        self._logs = SqlActivityLogs(self._db, POSTGRES)
        self._injected = SqlInjected(self._db, POSTGRES)
        self._kv = SqlKv(self._db, POSTGRES)
        self._graph = SqlGraph(self._db, POSTGRES, self.read_snapshot)
        self._skills = PgSkills(self._db)
        self._feedback = SqlFeedback(self._db, POSTGRES)
        self._now = now

    @property
    def url(self) -> str:
        return redact(self._url)

    @property
    def facts(self) -> PgFacts:
        return self._facts

    @property
    def versions(self) -> SqlVersions:
        return self._versions

    @property
    def vectors(self) -> PgVectors:
        return self._vectors

    @property
    def meta(self) -> SqlMeta:
        return self._meta

    @property
    def dream(self) -> PgDream:
        return self._dream

    @property
    def sessions(self) -> SqlSessions:
        return self._sessions

    @property
    def working(self) -> SqlWorking:
        return self._working

    @property
    def keys(self) -> SqlKeys:
        return self._keys

    @property
    def usage(self) -> SqlUsage:
        return self._usage

    @property
    def logs(self) -> SqlActivityLogs:
        return self._logs

    @property
    def injected(self) -> SqlInjected:
        return self._injected

    @property
    def kv(self) -> SqlKv:
        return self._kv

    @property
    def graph(self) -> SqlGraph:
        return self._graph

    @property
    def skills(self) -> PgSkills:
        return self._skills

    @property
    def feedback(self) -> SqlFeedback:
        return self._feedback

    @property
    def database(self) -> PgDatabase:
        """The connection pool, for tests and tools inside this package that inspect the database itself."""
        return self._db

    def transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    def in_transaction(self) -> bool:
        return self._db.in_transaction()

    def migrations(self) -> list[tuple[str, datetime]]:
        return migrations.applied(self._db)

    # -- maintenance ---------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        def work(c: Conn) -> StoreStats:
            row = c.execute(
                "SELECT count(*) FILTER (WHERE archived_at IS NULL), count(*) FILTER (WHERE archived_at IS NOT NULL),"
                " pg_database_size(current_database()) FROM facts"
            ).fetchone()
            assert row is not None
            by_tier = c.execute("SELECT tier, count(*) FROM facts WHERE archived_at IS NULL GROUP BY tier").fetchall()
            by_category = c.execute(
                "SELECT category, count(*) FROM facts WHERE archived_at IS NULL GROUP BY category ORDER BY category"
            ).fetchall()
            return StoreStats(
                location=self.url,
                size_bytes=int(row[2]),
                live=int(row[0]),
                archived=int(row[1]),
                by_tier={str(k): int(v) for k, v in by_tier},
                by_category={str(k): int(v) for k, v in by_category},
            )

        return self._db.read(work)

    def check(self, *, repair: bool = False) -> HealthReport:
        checks: dict[str, str] = {}
        repaired: list[str] = []
        checks["integrity"] = self._integrity()
        checks["fts"] = self._fts_consistency()
        if repair and checks["fts"] != "ok":
            n = self._db.write(lambda c: c.execute(_FTS_REPAIR).rowcount)
            repaired.append(f"recomputed the full-text vector of {n} entries")
            checks["fts"] = self._fts_consistency()
        checks["versions"] = self._versions_check()
        if repair and checks["versions"] != "ok":
            n = self._db.write(lambda c: c.execute(_VERSIONS_REPAIR).rowcount)
            repaired.append(f"recorded the current state of {n} entries as their first version")
            checks["versions"] = self._versions_check()
        checks["migrations"] = ", ".join(name for name, _ in self.migrations()) or "none"
        ok = all(v == "ok" for k, v in checks.items() if k != "migrations")
        return HealthReport(ok=ok, checks=checks, repaired=tuple(repaired))

    def _integrity(self) -> str:
        def work(c: Conn) -> list[str]:
            problems: list[str] = []
            orphans = c.execute(
                "SELECT count(*) FROM fact_vectors v WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE f.id = v.fact_id)"
            ).fetchone()
            if orphans and orphans[0]:
                problems.append(f"{orphans[0]} vectors belong to no entry")
            invalid = c.execute(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = current_schema() AND NOT i.indisvalid"
            ).fetchone()
            if invalid and invalid[0]:
                problems.append(f"{invalid[0]} indexes are invalid (an interrupted CREATE INDEX CONCURRENTLY?)")
            return problems

        problems = self._db.read(work)
        return "ok" if not problems else "; ".join(problems)

    def _fts_consistency(self) -> str:
        row = self._db.read(lambda c: c.execute(_FTS_STALE).fetchone())
        stale = int(row[0]) if row else 0
        return "ok" if not stale else f"{stale} entries have a full-text vector out of step with their text"

    def _versions_check(self) -> str:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT count(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
            ).fetchone()
        )
        missing = int(row[0]) if row else 0
        return "ok" if not missing else f"{missing} entries have no version row"

    def backup(self, destination: Path) -> None:
        portable_backup.backup(self, destination, now=self._now)

    def restore_backup(self, source: Path) -> None:
        portable_backup.restore(self, source, now=self._now)

    def vacuum(self) -> None:
        # VACUUM cannot run inside a transaction: a pooled connection is in autocommit.
        self._db.read(lambda c: c.execute("VACUUM (ANALYZE)"))

    def close(self) -> None:
        self._dream.close()
        self._db.close()

    # -- portable rows (storage.portable) ------------------------------------------------------------
    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        return portable_rows.export_rows(self._db, table)

    def import_rows(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        return portable_rows.import_rows(self._db, table, rows)

    def count_rows(self, table: str) -> int:
        return portable_rows.count_rows(self._db, table)

    def delete_rows(self, table: str) -> int:
        return portable_rows.delete_rows(self._db, table)

    def read_snapshot(self) -> AbstractContextManager[None]:
        return portable_rows.read_snapshot(self._db)

    def __repr__(self) -> str:
        return f"PgStore({self.url!r})"


_FTS_STALE = (
    "SELECT count(*) FROM facts WHERE search_text IS DISTINCT FROM reverie_search_vector(content, tags, category)"
)
_FTS_REPAIR = (
    "UPDATE facts SET search_text = reverie_search_vector(content, tags, category)"
    " WHERE search_text IS DISTINCT FROM reverie_search_vector(content, tags, category)"
)
_VERSIONS_REPAIR = (
    "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags,"
    " importance, metadata, archived)"
    " SELECT f.id, 1, 'housekeeping', coalesce(f.updated_at, f.created_at), f.content, f.category,"
    " f.tags, f.importance, f.metadata, f.archived_at IS NOT NULL FROM facts f"
    " WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
)
