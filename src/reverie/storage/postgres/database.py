"""Connections and transactions for one PostgreSQL database, through a psycopg connection pool.

Invariants:
- Connections are in autocommit mode; writes happen only inside ``transaction()``. A thread inside a
  transaction reads and writes through that transaction's connection; a nested ``transaction()`` is a
  savepoint (an exception inside it undoes only the nested writes).
- Sessions run in UTC (timestamptz values come back as aware UTC datetimes) with ``lock_timeout`` and a
  pool wait of ``lock_wait_seconds``: past it a caller gets ``StoreBusy``, never a hang.
- Every driver error surfaces as ``StorageError`` (``Conflict`` for uniqueness and foreign-key violations,
  ``StoreBusy`` for lock timeouts, deadlocks and serialization failures).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from reverie.errors import Conflict, StorageError, StoreBusy

T = TypeVar("T")
Conn = psycopg.Connection[Any]

# Advisory-lock classes (the first key of pg_advisory_*lock(int, int)); the second key hashes the agent id.
LOCK_LOG = 7301  # serialises an agent's change-log writers, so log positions follow commit order
LOCK_DREAM = 7302  # the per-agent dream lock
LOCK_MIGRATE = 7303  # one migrator at a time


def _busy(exc: BaseException) -> bool:
    return isinstance(
        exc,
        pg_errors.LockNotAvailable
        | pg_errors.DeadlockDetected
        | pg_errors.SerializationFailure
        | pg_errors.QueryCanceled,
    )


def translate(exc: psycopg.Error, where: str) -> Exception:
    """The Reverie error for a driver error."""
    if isinstance(exc, pg_errors.IntegrityError):
        return Conflict(str(exc).strip())
    if _busy(exc):
        return StoreBusy(f"{where}: {str(exc).strip()}")
    return StorageError(f"{where}: {str(exc).strip()}")


def redact(url: str) -> str:
    """``url`` without its password, for messages and ``Store.url``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class PgDatabase:
    """A pool of connections to one database. Safe to share between threads."""

    def __init__(self, url: str, *, pool_size: int = 10, lock_wait_seconds: float = 60.0) -> None:
        self.url = url
        self.where = redact(url)
        self._lock_wait = lock_wait_seconds
        self._local = threading.local()
        self._pool: ConnectionPool[Conn] | None = None
        self._pool_size = pool_size

    def open(self) -> None:
        """Open the pool (after the migrations made the ``vector`` type, which each connection registers)."""
        self._pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=max(self._pool_size, 1),
            kwargs={"autocommit": True},
            configure=self._configure,
            timeout=self._lock_wait,
            open=False,
            name="reverie",
        )
        try:
            self._pool.open(wait=True, timeout=self._lock_wait)
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(f"cannot connect to {self.where} within {self._lock_wait:.0f} s") from exc

    def _configure(self, conn: Conn) -> None:
        from pgvector.psycopg import register_vector

        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute(f"SET lock_timeout = {int(self._lock_wait * 1000)}")
        # Filtered nearest-neighbour queries (one agent of many) keep scanning the graph until they have
        # enough rows instead of returning too few (pgvector 0.8).
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        register_vector(conn)

    def connect(self) -> Conn:
        """A new connection outside the pool (migrations, held advisory locks); the caller closes it."""
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(int(self._lock_wait), 1))
            conn.execute("SET TIME ZONE 'UTC'")
            return conn
        except psycopg.Error as exc:
            raise StorageError(f"cannot connect to {self.where}: {str(exc).strip()}") from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()

    # -- running statements ------------------------------------------------------------------------
    def read(self, work: Callable[[Conn], T]) -> T:
        """Run ``work`` on this thread's transaction connection, or on a pooled one (autocommit: every
        statement sees the latest commits)."""
        current: Conn | None = getattr(self._local, "conn", None)
        if current is not None:
            return self._translate(work, current)
        with self._connection() as conn:
            return self._translate(work, conn)

    def write(self, work: Callable[[Conn], T]) -> T:
        """Run ``work`` inside a transaction (joining the current one, if any)."""
        with self.transaction():
            return self._translate(work, self._local.conn)

    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``."""
        return getattr(self._local, "conn", None) is not None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        current: Conn | None = getattr(self._local, "conn", None)
        if current is not None:
            try:
                with current.transaction():  # a savepoint
                    yield
            except psycopg.Error as exc:
                raise translate(exc, self.where) from exc
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield
            except psycopg.Error as exc:
                raise translate(exc, self.where) from exc
            finally:
                self._local.conn = None

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        if self._pool is None or self._pool.closed:
            raise StorageError(f"the store at {self.where} is closed")
        try:
            with self._pool.connection(timeout=self._lock_wait) as conn:
                yield conn
        except PoolTimeout as exc:
            raise StoreBusy(f"{self.where}: no free connection within {self._lock_wait:.0f} s") from exc
        except psycopg.OperationalError as exc:
            raise StorageError(f"{self.where}: {str(exc).strip()}") from exc

    def _translate(self, work: Callable[[Conn], T], conn: Conn) -> T:
        try:
            return work(conn)
        except psycopg.Error as exc:
            raise translate(exc, self.where) from exc
