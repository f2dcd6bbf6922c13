"""The one place that maps a store URL to a backend. Nothing above ``storage/`` names a backend.

Besides opening (``open_store``, in an ``OpenMode``), it offers what a user needs when an SQLite file is not
a sound store: ``file_problem`` (why the file is refused or damaged, without opening it as a store) and
``recover_store`` (what can still be read, into a new file beside it).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from reverie.errors import ConfigError, StorageError
from reverie.storage.base import OpenMode, Store, StoreOptions

if TYPE_CHECKING:
    from reverie.storage.sqlite.recover import Recovery as Recovery

SQLITE_FILE = "reverie.db"


def store_url(target: str | Path) -> str:
    """Normalise what a user typed: a URL stays; a directory means ``<dir>/reverie.db``; a path ending in
    ``.db``/``.sqlite``/``.sqlite3`` (or an existing file) is the database file itself."""
    text = str(target)
    if is_url(text):
        return text
    path = Path(text).expanduser()
    if is_database_file(path):
        return f"sqlite:///{path.resolve()}"
    return f"sqlite:///{(path / SQLITE_FILE).resolve()}"


def is_url(target: str | Path) -> bool:
    return "://" in str(target)


def is_database_file(path: Path) -> bool:
    """A path that names the SQLite file itself rather than a data directory."""
    return path.suffix in (".db", ".sqlite", ".sqlite3") or path.is_file()


def open_store(url: str, *, now: datetime, options: StoreOptions | None = None, mode: OpenMode = "rw") -> Store:
    """Open (and, unless read-only, migrate) the store at ``url``. ``mode``: see ``OpenMode``; an SQLite file
    that exists but is not a store (empty, not SQLite, another program's database) is refused in every mode.
    Read-only opening is for SQLite files: on PostgreSQL, "ro" is a ``ConfigError`` (use a role without
    write grants) and "read" opens as "rw"."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        from reverie.storage.sqlite import SqliteStore

        return SqliteStore(_sqlite_path(url), now=now, options=options, mode=mode)
    if parsed.scheme in ("postgresql", "postgres"):
        if mode == "ro":
            raise ConfigError("a PostgreSQL store is not opened read-only here: connect as a role without write grants")
        try:
            from reverie.storage.postgres import PgStore
        except ImportError as exc:
            raise _no_driver(exc) from exc
        return PgStore(url, now=now, options=options)
    raise ConfigError(f"unknown store URL scheme {parsed.scheme!r} in {url!r}; use sqlite:/// or postgresql://")


def _no_driver(exc: ImportError) -> ConfigError:
    return ConfigError(
        f"the PostgreSQL backend needs its driver ({exc.name} is not installed): pip install 'reverie[postgres]'"
    )


def _sqlite_path(url: str) -> Path:
    # SQLAlchemy's convention: sqlite:///relative.db and sqlite:////absolute/path.db
    parsed = urlparse(url)
    path = unquote(parsed.path)[1:]
    if parsed.netloc:
        raise ConfigError(f"{url!r}: write sqlite URLs as sqlite:////absolute/path.db")
    if not path or path.endswith("/"):
        raise ConfigError(f"{url!r} names no database file")
    return Path(path)


def store_exists(url: str) -> bool:
    """False when ``url`` names an SQLite file that does not exist (opening it would create an empty store).
    A server URL counts as existing: connecting tells."""
    parsed = urlparse(url)
    return parsed.scheme != "sqlite" or _sqlite_path(url).is_file()


def pending_migrations(url: str) -> list[str]:
    """The migrations opening the store at ``url`` would apply, in order, without applying them or creating
    anything (``reverie migrate --dry-run``). A store that does not exist yet has them all pending."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        from reverie.storage.sqlite.recover import inspect
        from reverie.storage.sqlite.schema import MIGRATIONS

        path = _sqlite_path(url)
        refusal = inspect(path) if path.is_file() else None
        if refusal is not None:  # a file that is not a store has no migrations: opening it is refused
            raise StorageError(refusal.message)
        return [name for name, _ in MIGRATIONS if name not in _sqlite_applied(path)]
    if parsed.scheme in ("postgresql", "postgres"):
        try:
            from reverie.storage.postgres import migrations
            from reverie.storage.postgres.database import PgDatabase
        except ImportError as exc:
            raise _no_driver(exc) from exc
        return migrations.pending(PgDatabase(url))
    raise ConfigError(f"unknown store URL scheme {parsed.scheme!r} in {url!r}; use sqlite:/// or postgresql://")


def _sqlite_applied(path: Path) -> set[str]:
    """The names in the file's ``schema_migrations``, read through a read-only connection (none: no file)."""
    if not path.is_file():
        return set()
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            ).fetchone()
            if not found:
                return set()
            return {str(row[0]) for row in conn.execute("SELECT name FROM schema_migrations")}
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read the migrations of {path}: {exc}") from exc


def sqlite_file(url: str) -> Path | None:
    """The file an ``sqlite:///`` URL names; None for a server URL."""
    return _sqlite_path(url) if urlparse(url).scheme == "sqlite" else None


def file_problem(url: str, *, quick: bool = False) -> str | None:
    """Why the SQLite file at ``url`` cannot serve as a store, read without opening it as one (nothing is
    written): refused outright (empty, not SQLite, not a Reverie store, an unreadable schema) or failing
    SQLite's integrity check (``quick``: its quick check). None when it is sound, missing, or not a file
    (a server URL)."""
    path = sqlite_file(url)
    if path is None or not path.is_file():
        return None
    from reverie.storage.sqlite import recover

    refusal = recover.inspect(path)
    if refusal is not None:
        return refusal.message
    found = recover.integrity(path, quick=quick)
    return None if found == "ok" else f"{path} fails its integrity check ({found})"


def recoverable(url: str) -> bool:
    """Whether ``url`` is an SQLite file whose rows ``recover_store`` may still read: damaged, not empty,
    foreign or another kind of file."""
    path = sqlite_file(url)
    if path is None or not path.is_file():
        return False
    from reverie.storage.sqlite import recover

    refusal = recover.inspect(path)
    return refusal is None or refusal.kind == "damaged"


def recover_store(url: str, *, now: datetime) -> Recovery:
    """Copy what can still be read of the damaged SQLite store at ``url`` into a new file beside it
    (``<stem>.recovered-<UTC time>.db``), leaving the damaged file as it is; see ``sqlite.recover``. The new
    store is then repaired as ``doctor --repair`` repairs (an entry whose version rows were lost gets its
    current state as version 1), so it passes every check."""
    path = sqlite_file(url)
    if path is None:
        raise StorageError(f"{url}: recovery reads an SQLite file; a server's recovery is its own (backups)")
    if not path.is_file():
        raise StorageError(f"no store at {path}")
    from reverie.storage.sqlite import SqliteStore, recover

    recovery = recover.recover(path, now)
    if recovery.destination is None:
        return recovery
    store = SqliteStore(recovery.destination, now=now)
    try:
        report = store.check(repair=True)
    finally:
        store.close()
    return replace(recovery, repaired=report.repaired)
