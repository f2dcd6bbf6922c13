"""``Store`` on PostgreSQL + pgvector: repositories, transactions, migrations and maintenance.

Many processes on many hosts may open one database: every repository keeps its state in the database,
log positions follow commit order per agent (``migrations``), and the dream lock is an advisory lock
(``dream``). Backups are portable Reverie backups (an SQLite file, ``storage.backup``), so a backup of
either backend restores into either.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from reverie.storage import backup as portable_backup
from reverie.storage.base import StoreOptions
from reverie.storage.postgres import migrations
from reverie.storage.postgres.database import Conn, PgDatabase, redact
from reverie.storage.postgres.dream import PgDream
from reverie.storage.postgres.facts import PgFacts
from reverie.storage.postgres.rows import PgRows
from reverie.storage.postgres.skills import PgSkills
from reverie.storage.postgres.vectors import PgVectors
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.store import SqlStore


class PgStore(SqlStore[PgDatabase, PgFacts, PgVectors, PgDream, PgSkills]):
    """The scale-out backend. Safe to share between threads; any number of processes may open it."""

    def __init__(self, url: str, *, now: datetime, options: StoreOptions | None = None) -> None:
        options = options or StoreOptions()
        self._url = url
        db = PgDatabase(
            url,
            pool_size=options.pool_size,
            lock_wait_seconds=options.lock_wait_seconds,
            connect_timeout_seconds=options.connect_timeout_seconds,
        )
        migrations.apply(db, now)
        db.open()
        super().__init__(
            db,
            POSTGRES,
            facts=PgFacts(db),
            vectors=PgVectors(db),
            dream=PgDream(db),
            skills=PgSkills(db),
            rows=PgRows(db),
            migrations=migrations,
        )
        self._now = now

    @property
    def url(self) -> str:
        return redact(self._url)

    @property
    def database(self) -> PgDatabase:
        """The connection pool, for tests and tools inside this package that inspect the database itself."""
        return self._db

    # -- maintenance ---------------------------------------------------------------------------------
    def _location(self) -> str:
        return self.url

    def _size(self, c: Conn) -> int:
        row = c.execute("SELECT pg_database_size(current_database())").fetchone()
        assert row is not None
        return int(row[0])

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

    def _repair_fts(self) -> str:
        n = self._db.write(lambda c: c.execute(_FTS_REPAIR).rowcount)
        return f"recomputed the full-text vector of {n} entries"

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

    def __repr__(self) -> str:
        return f"PgStore({self.url!r})"


_FTS_STALE = (
    "SELECT count(*) FROM facts WHERE search_text IS DISTINCT FROM reverie_search_vector(content, tags, category)"
)
_FTS_REPAIR = (
    "UPDATE facts SET search_text = reverie_search_vector(content, tags, category)"
    " WHERE search_text IS DISTINCT FROM reverie_search_vector(content, tags, category)"
)
