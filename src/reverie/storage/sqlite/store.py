"""``Store`` on one SQLite file: repositories, transactions, migrations and maintenance."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, closing
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.errors import StorageError
from reverie.storage.base import StoreOptions
from reverie.storage.sql.activity import SqlActivityLogs, SqlInjected
from reverie.storage.sql.dialect import SQLITE
from reverie.storage.sql.dream import SqlDream
from reverie.storage.sql.facts import SqlVersions
from reverie.storage.sql.graph import SqlGraph
from reverie.storage.sql.keys import SqlKeys
from reverie.storage.sql.kv import SqlKv
from reverie.storage.sql.sessions import SqlSessions
from reverie.storage.sql.skills import SqlFeedback, SqlSkills
from reverie.storage.sql.usage import SqlUsage
from reverie.storage.sql.vectors import SqlMeta, SqlVectors
from reverie.storage.sql.working import SqlWorking
from reverie.storage.sqlite import migrations
from reverie.storage.sqlite import rows as portable_rows
from reverie.storage.sqlite.database import Database
from reverie.storage.sqlite.facts import SqliteFacts
from reverie.types import HealthReport, StoreStats


class SqliteStore:
    """The embedded backend. Safe to share between threads; any number of processes may open the file."""

    def __init__(self, path: Path, *, now: datetime, options: StoreOptions | None = None) -> None:
        options = options or StoreOptions()
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = Database(
            path,
            busy_timeout_ms=options.busy_timeout_ms,
            lock_wait_seconds=options.lock_wait_seconds,
            synchronous=options.synchronous,
        )
        self._facts = SqliteFacts(self._db)
        self._versions = SqlVersions(self._db, SQLITE)
        self._vectors = SqlVectors(self._db, SQLITE)
        self._meta = SqlMeta(self._db, SQLITE)
        self._dream = SqlDream(self._db, SQLITE)
        self._sessions = SqlSessions(self._db, SQLITE)
        self._working = SqlWorking(self._db, SQLITE)
        self._keys = SqlKeys(self._db, SQLITE)
        self._usage = SqlUsage(self._db, SQLITE)
        self._logs = SqlActivityLogs(self._db, SQLITE)
        self._injected = SqlInjected(self._db, SQLITE)
        self._kv = SqlKv(self._db, SQLITE)
        self._graph = SqlGraph(self._db, SQLITE, self.read_snapshot)
        self._skills = SqlSkills(self._db, SQLITE)
        self._feedback = SqlFeedback(self._db, SQLITE)
        try:
            migrations.apply(self._db, now)
        except BaseException:
            self._db.close()
            raise
        self._now = now

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path.resolve()}"

    @property
    def facts(self) -> SqliteFacts:
        return self._facts

    @property
    def versions(self) -> SqlVersions:
        return self._versions

    @property
    def vectors(self) -> SqlVectors:
        return self._vectors

    @property
    def meta(self) -> SqlMeta:
        return self._meta

    @property
    def dream(self) -> SqlDream:
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
    def skills(self) -> SqlSkills:
        return self._skills

    @property
    def feedback(self) -> SqlFeedback:
        return self._feedback

    def transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    def in_transaction(self) -> bool:
        return self._db.in_transaction()

    def migrations(self) -> list[tuple[str, datetime]]:
        return migrations.applied(self._db)

    # -- maintenance ---------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        def work(c: sqlite3.Connection) -> StoreStats:
            live, archived = c.execute(
                "SELECT count(*) FILTER (WHERE archived_at IS NULL), count(*) FILTER (WHERE archived_at IS NOT NULL)"
                " FROM facts"
            ).fetchone()
            by_tier = dict(c.execute("SELECT tier, count(*) FROM facts WHERE archived_at IS NULL GROUP BY tier"))
            by_category = dict(
                c.execute(
                    "SELECT category, count(*) FROM facts WHERE archived_at IS NULL GROUP BY category ORDER BY category"
                )
            )
            return StoreStats(
                location=str(self.path),
                size_bytes=self._size(),
                live=int(live),
                archived=int(archived),
                by_tier={str(k): int(v) for k, v in by_tier.items()},
                by_category={str(k): int(v) for k, v in by_category.items()},
            )

        return self._db.read(work)

    def _size(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(str(self.path) + suffix)
            if candidate.exists():
                total += candidate.stat().st_size
        return total

    def check(self, *, repair: bool = False) -> HealthReport:
        checks: dict[str, str] = {}
        repaired: list[str] = []
        checks["integrity"] = self._integrity()
        checks["fts"] = self._fts_consistency()
        if repair and checks["fts"] != "ok":
            self._db.write(lambda c: c.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')"))
            repaired.append("rebuilt the full-text index from the facts table")
            checks["fts"] = self._fts_consistency()
        checks["versions"] = self._versions_check()
        if repair and checks["versions"] != "ok":
            repaired.append(self._repair_versions())
            checks["versions"] = self._versions_check()
        checks["migrations"] = ", ".join(name for name, _ in self.migrations()) or "none"
        ok = all(v == "ok" for k, v in checks.items() if k != "migrations")
        return HealthReport(ok=ok, checks=checks, repaired=tuple(repaired))

    def _integrity(self) -> str:
        rows = self._db.read(lambda c: c.execute("PRAGMA integrity_check").fetchall())
        messages = [str(r[0]) for r in rows]
        return "ok" if messages == ["ok"] else "; ".join(messages[:10])

    def _fts_consistency(self) -> str:
        try:
            self._db.write(lambda c: c.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)"))
        except StorageError as exc:
            return f"full-text index out of step with the facts table ({exc})"
        return "ok"

    def _versions_check(self) -> str:
        (missing,) = self._db.read(
            lambda c: c.execute(
                "SELECT count(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
            ).fetchone()
        )
        return "ok" if not missing else f"{missing} entries have no version row"

    def _repair_versions(self) -> str:
        def work(c: sqlite3.Connection) -> int:
            cur = c.execute(
                "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags,"
                " importance, metadata, archived)"
                " SELECT f.id, 1, 'housekeeping', coalesce(f.updated_at, f.created_at), f.content, f.category,"
                " f.tags, f.importance, f.metadata, f.archived_at IS NOT NULL FROM facts f"
                " WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
            )
            return int(cur.rowcount)

        return f"recorded the current state of {self._db.write(work)} entries as their first version"

    def backup(self, destination: Path) -> None:
        destination = destination.expanduser().resolve()
        if destination == self.path.resolve():
            raise StorageError("a backup cannot overwrite the store it copies")
        destination.parent.mkdir(parents=True, exist_ok=True)
        partial = destination.with_name(destination.name + ".partial")
        partial.unlink(missing_ok=True)
        try:
            with closing(sqlite3.connect(partial)) as target:
                # The online backup API copies a consistent snapshot; in WAL, writers go on meanwhile.
                self._db.read(lambda c: c.backup(target))
                target.execute("PRAGMA journal_mode = DELETE")
            os.replace(partial, destination)
        except sqlite3.Error as exc:
            raise StorageError(f"backup to {destination} failed: {exc}") from exc
        finally:
            partial.unlink(missing_ok=True)

    def restore_backup(self, source: Path) -> None:
        source = source.expanduser().resolve()
        if not source.is_file():
            raise StorageError(f"no backup file at {source}")
        try:
            with closing(sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)) as backup:
                verify_backup(backup, source)
                # Copy into the live file through the backup API: one step, under the write lock, so other
                # processes see either the old store or the restored one, never a mix.
                self._db.write(lambda c: None)  # fail early (StoreBusy) if a writer holds the lock too long
                backup.backup(self._db.connection())
        except sqlite3.Error as exc:
            raise StorageError(f"restore from {source} failed: {exc}") from exc
        migrations.apply(self._db, self._now)

    def vacuum(self) -> None:
        self._db.write(lambda c: c.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')"))
        self._db.read(lambda c: c.execute("VACUUM"))
        self._db.read(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))

    def close(self) -> None:
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


def verify_backup(conn: sqlite3.Connection, source: Path) -> None:
    """Raise ``StorageError`` unless ``conn`` (opened read-only) is a sound Reverie SQLite store."""
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        has_schema = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"{source} is not a Reverie backup: {exc}") from exc
    if result != "ok":
        raise StorageError(f"{source} fails its integrity check: {result}")
    if not has_schema:
        raise StorageError(f"{source} is an SQLite file but not a Reverie store")
