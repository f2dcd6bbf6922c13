"""``Store`` on one SQLite file: its connections, migrations and maintenance (the rest: ``sql.store``).

What differs from PostgreSQL: the store is a file (``-wal`` and ``-shm`` beside it count in its size), the
integrity check is SQLite's own, the full-text index is FTS5 (rebuilt from the facts table on repair), and a
backup is the file itself, copied through the online-backup API.

Invariants:
- Only a missing file becomes a new store, and it appears whole: it is built (migrated) under a temporary
  name beside the final one and linked into place, so no process ever sees a half-made or empty file.
- An existing file that is empty, not SQLite, or SQLite without ``schema_migrations`` (``recover.inspect``)
  is refused with ``StorageError`` before anything is written to it: it is never turned into a store.
- Read-only (``OpenMode`` "ro", or "read" on a file this process cannot write): no migration runs (pending
  ones are refused), and every write raises ``StorageError``.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.errors import StorageError, StorageFull
from reverie.storage.base import OpenMode, StoreOptions
from reverie.storage.sql.dialect import SQLITE
from reverie.storage.sql.dream import SqlDream
from reverie.storage.sql.skills import SqlSkills
from reverie.storage.sql.store import SqlStore
from reverie.storage.sql.vectors import SqlVectors
from reverie.storage.sqlite import migrations, recover
from reverie.storage.sqlite.database import Database, full_disk
from reverie.storage.sqlite.facts import SqliteFacts
from reverie.storage.sqlite.rows import SqliteRows
from reverie.storage.sqlite.schema import MIGRATIONS


class SqliteStore(SqlStore[Database, SqliteFacts, SqlVectors, SqlDream, SqlSkills]):
    """The embedded backend. Safe to share between threads; any number of processes may open the file."""

    def __init__(
        self, path: Path, *, now: datetime, options: StoreOptions | None = None, mode: OpenMode = "rw"
    ) -> None:
        options = options or StoreOptions()
        self.path = path
        if not path.exists():
            if mode != "rw":
                raise StorageError(
                    f"no store at {path}; nothing was created (check --home, REVERIE_HOME and store.url; "
                    "a command that writes creates a new store)"
                )
            _create(path, now, options)
        refusal = recover.inspect(path)
        if refusal is not None:
            raise StorageError(refusal.message)
        read_only = mode == "ro" or (mode == "read" and not writable(path))
        if mode == "rw" and not writable(path):
            raise StorageError(
                f"the store at {path} is read-only (this process may not write the file or its directory): "
                "writes are off; commands that only read still work"
            )
        db = _database(path, options, read_only=read_only)
        try:
            if read_only:
                _refuse_pending(db)
            else:
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

    @property
    def read_only(self) -> bool:
        return self._db.read_only

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
        return self._pragma_check("integrity_check")

    def _quick_integrity(self) -> str:
        return self._pragma_check("quick_check")

    def _pragma_check(self, pragma: str) -> str:
        try:
            rows = self._db.read(lambda c: c.execute(f"PRAGMA {pragma}").fetchall())
        except StorageError as exc:  # the check itself cannot read the file: that is its finding
            return str(exc)
        messages = [str(r[0]) for r in rows]
        return "ok" if messages == ["ok"] else "; ".join(messages[:10])

    def _fts_consistency(self) -> str:
        if self.read_only:
            return self._fts_coverage()
        try:
            self._db.write(lambda c: c.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)"))
        except StorageError as exc:
            return f"full-text index out of step with the facts table ({exc})"
        return "ok"

    def _fts_coverage(self) -> str:
        """The check a read-only store can run (FTS5's own check is an INSERT): every entry indexed, and
        nothing indexed that is no entry; the tokens themselves are not compared."""
        missing, extra = self._db.read(
            lambda c: c.execute(
                "SELECT (SELECT count(*) FROM facts f WHERE NOT EXISTS"
                " (SELECT 1 FROM facts_fts_docsize d WHERE d.id = f.seq)),"
                " (SELECT count(*) FROM facts_fts_docsize d WHERE NOT EXISTS"
                " (SELECT 1 FROM facts f WHERE f.seq = d.id))"
            ).fetchone()
        )
        if missing or extra:
            return f"full-text index out of step with the facts table ({missing} entries missing, {extra} extra)"
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
        except StorageFull as exc:  # the copy is what grows: name its file, not the store's
            raise StorageFull.at(destination, exc.__cause__) from exc
        except (sqlite3.Error, OSError) as exc:
            raise full_disk(exc, destination) or StorageError(f"backup to {destination} failed: {exc}") from exc
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
            raise full_disk(exc, self.path) or StorageError(f"restore from {source} failed: {exc}") from exc
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


def writable(path: Path) -> bool:
    """Whether this process may write the store at ``path``: the file, and its directory (where SQLite keeps
    the ``-wal`` and ``-shm`` files beside it) unless both of those exist and are writable."""
    if not os.access(path, os.W_OK):
        return False
    if os.access(path.parent, os.W_OK | os.X_OK):
        return True
    beside = [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")]
    return all(p.exists() and os.access(p, os.W_OK) for p in beside)


def _database(path: Path, options: StoreOptions, *, read_only: bool) -> Database:
    return Database(
        path,
        busy_timeout_ms=options.busy_timeout_ms,
        lock_wait_seconds=options.lock_wait_seconds,
        synchronous=options.synchronous,
        read_only=read_only,
    )


def _create(path: Path, now: datetime, options: StoreOptions) -> None:
    """A new store at the missing ``path``: migrated under a temporary name beside it, then hard-linked into
    place, which fails if another process got there first (then its store is the one, and this one goes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    try:
        db = _database(draft, options, read_only=False)
        try:
            migrations.apply(db, now)
            db.read(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))  # every page in the file itself
        finally:
            db.close()
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: a rename, unless the store appeared meanwhile
            if not path.exists():
                os.replace(draft, path)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{draft}{suffix}").unlink(missing_ok=True)


def _refuse_pending(db: Database) -> None:
    """A read-only store must already have every migration: it cannot apply them."""
    applied = {name for name, _ in migrations.applied(db)}
    pending = [name for name, _ in MIGRATIONS if name not in applied]
    if pending:
        raise StorageError(
            f"the store at {db.path} is read-only but needs the migrations {', '.join(pending)} (written by an "
            "older Reverie); open it once where it can be written (`reverie migrate`), then read it read-only"
        )
