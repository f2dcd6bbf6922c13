"""``Store`` on one SQLite file: its connections, migrations and maintenance (the rest: ``sql.store``).

What differs from PostgreSQL: the store is a file (``-wal`` and ``-shm`` beside it count in its size), the
integrity check is SQLite's own, the full-text index is FTS5 (rebuilt from the facts table on repair), and a
backup is the file itself, copied through the online-backup API.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.errors import StorageError
from reverie.storage.base import StoreOptions
from reverie.storage.sql.dialect import SQLITE
from reverie.storage.sql.dream import SqlDream
from reverie.storage.sql.skills import SqlSkills
from reverie.storage.sql.store import SqlStore
from reverie.storage.sql.vectors import SqlVectors
from reverie.storage.sqlite import migrations
from reverie.storage.sqlite.database import Database
from reverie.storage.sqlite.facts import SqliteFacts
from reverie.storage.sqlite.rows import SqliteRows


class SqliteStore(SqlStore[Database, SqliteFacts, SqlVectors, SqlDream, SqlSkills]):
    """The embedded backend. Safe to share between threads; any number of processes may open the file."""

    def __init__(self, path: Path, *, now: datetime, options: StoreOptions | None = None) -> None:
        options = options or StoreOptions()
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        db = Database(
            path,
            busy_timeout_ms=options.busy_timeout_ms,
            lock_wait_seconds=options.lock_wait_seconds,
            synchronous=options.synchronous,
        )
        try:
            migrations.apply(db, now)
        except BaseException:
            db.close()
            raise
        super().__init__(
            db,
            SQLITE,
            facts=SqliteFacts(db),
            vectors=SqlVectors(db, SQLITE),
            dream=SqlDream(db, SQLITE),
            skills=SqlSkills(db, SQLITE),
            rows=SqliteRows(db),
            migrations=migrations,
        )
        self._now = now

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path.resolve()}"

    # -- maintenance ---------------------------------------------------------------------------------
    def _location(self) -> str:
        return str(self.path)

    def _size(self, c: Any) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            candidate = Path(str(self.path) + suffix)
            if candidate.exists():
                total += candidate.stat().st_size
        return total

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

    def _repair_fts(self) -> str:
        self._db.write(lambda c: c.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')"))
        return "rebuilt the full-text index from the facts table"

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
