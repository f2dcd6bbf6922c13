"""The one place that maps a store URL to a backend. Nothing above ``storage/`` names a backend."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from reverie.errors import ConfigError
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

        # SQLAlchemy's convention: sqlite:///relative.db and sqlite:////absolute/path.db
        path = unquote(parsed.path)[1:]
        if parsed.netloc:
            raise ConfigError(f"{url!r}: write sqlite URLs as sqlite:////absolute/path.db")
        if not path or path.endswith("/"):
            raise ConfigError(f"{url!r} names no database file")
        return SqliteStore(Path(path), now=now, options=options)
    if parsed.scheme in ("postgresql", "postgres"):
        raise ConfigError("the PostgreSQL backend is not built yet; use a SQLite path for now")
    raise ConfigError(f"unknown store URL scheme {parsed.scheme!r} in {url!r}; use sqlite:/// or postgresql://")
