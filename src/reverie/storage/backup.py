"""Backups of any store as one portable SQLite file, and restores from one (PostgreSQL's ``backup`` and
``restore_backup``; SQLite's own use its online-backup API, ``sqlite/store.py``).

Invariants: a backup file appears whole or not at all (written beside, then renamed); the source of a restore
is checked first and never modified; a restore replaces every portable table in one transaction
(``portable.replace_contents``), so it applies fully or not at all.

This is not in ``portable.py`` because it builds a ``SqliteStore``, and the SQLite backend reads
``portable``'s catalog: keeping them apart keeps the package free of import cycles.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from contextlib import closing
from datetime import datetime
from pathlib import Path

from reverie.errors import StorageError
from reverie.storage.base import Store
from reverie.storage.portable import copy, replace_contents
from reverie.storage.sqlite import SqliteStore
from reverie.storage.sqlite.database import full_disk
from reverie.storage.sqlite.store import verify_backup


def _sidecars(path: Path) -> list[Path]:
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]


def backup(store: Store, destination: Path, *, now: datetime) -> None:
    """Write a portable backup of ``store`` to ``destination``: a Reverie SQLite store file holding one
    consistent state of it (reads only: safe while other processes write). The file appears whole or not
    at all (written to ``<name>.partial``, then renamed). ``now`` stamps the new file's migrations."""
    destination = destination.expanduser().resolve()
    if store.url == f"sqlite:///{destination}":
        raise StorageError("a backup cannot overwrite the store it copies")
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".partial")
    for leftover in _sidecars(partial):
        leftover.unlink(missing_ok=True)
    try:
        target = SqliteStore(partial, now=now)
        try:
            copy(store, target)
        finally:
            target.close()
        # One self-contained file: fold the write-ahead log in and leave WAL mode.
        with closing(sqlite3.connect(partial)) as conn:
            conn.execute("PRAGMA journal_mode = DELETE")
        os.replace(partial, destination)
    except sqlite3.Error as exc:
        raise full_disk(exc, destination) or StorageError(f"backup to {destination} failed: {exc}") from exc
    finally:
        for leftover in _sidecars(partial):
            leftover.unlink(missing_ok=True)


def restore(store: Store, source: Path, *, now: datetime) -> None:
    """Replace every portable table of ``store`` with the contents of the backup file ``source``, in one
    transaction. ``source`` is checked first (a readable Reverie SQLite store, opened read-only and never
    modified); anything else raises ``StorageError`` and changes nothing. An older backup is migrated in
    a temporary copy (``now`` stamps those migrations). Deleting the old rows fires the change-log triggers,
    so the in-memory indexes of other processes replay the restore."""
    source = source.expanduser().resolve()
    if not source.is_file():
        raise StorageError(f"no backup file at {source}")
    with tempfile.TemporaryDirectory(prefix="reverie-restore-") as scratch:
        staged = Path(scratch) / "backup.db"
        try:
            with closing(sqlite3.connect(f"{source.as_uri()}?mode=ro", uri=True)) as conn:
                verify_backup(conn, source)
                with closing(sqlite3.connect(staged)) as target:
                    conn.backup(target)
        except sqlite3.Error as exc:
            raise StorageError(f"restore from {source} failed: {exc}") from exc
        backup_store = SqliteStore(staged, now=now)
        try:
            replace_contents(store, backup_store)
        finally:
            backup_store.close()
