"""The one place that maps a store URL to a backend. Nothing above ``storage/`` names a backend."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from reverie.errors import ConfigError, StorageError
from reverie.storage.base import Store, StoreOptions

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


def open_store(url: str, *, now: datetime, options: StoreOptions | None = None) -> Store:
    """Open (and migrate) the store at ``url``."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        from reverie.storage.sqlite import SqliteStore

        return SqliteStore(_sqlite_path(url), now=now, options=options)
    if parsed.scheme in ("postgresql", "postgres"):
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
        from reverie.storage.sqlite.schema import MIGRATIONS

        return [name for name, _ in MIGRATIONS if name not in _sqlite_applied(_sqlite_path(url))]
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
