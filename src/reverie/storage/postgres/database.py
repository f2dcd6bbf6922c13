"""Connections and transactions for one PostgreSQL database, through a psycopg connection pool.

Invariants:
- Connections are in autocommit mode; writes happen only inside ``transaction()``. A thread inside a
  transaction reads and writes through that transaction's connection; a nested ``transaction()`` is a
  savepoint (an exception inside it undoes only the nested writes).
- Sessions run in UTC (timestamptz values come back as aware UTC datetimes) with ``lock_timeout`` of
  ``lock_wait_seconds``: past it a caller gets ``StoreBusy``, never a hang.
- Two waits for a connection, never confused: while every pooled connection is in use by this process, a
  caller waits its turn up to ``lock_wait_seconds`` (then ``StoreBusy``); while the pool has none to give
  because the server cannot be reached, it waits ``connect_timeout_seconds`` at most (then
  ``StoreUnavailable``, with that many seconds as its retry-after). A pooled connection idle for more than
  ``IDLE_CHECK_SECONDS`` is checked (one round trip) before it is handed out, so one the server dropped (a
  restart) is replaced, not used; a connection in steady use is not (the check would double a short read).
- Recovery needs no restart: once the server answers again, a call that finds the pool still reconnecting
  (its back-off) is served on a connection of its own, at most ``pool_size`` of them at a time.
- Every driver error surfaces as ``StorageError`` (``Conflict`` for uniqueness and foreign-key violations,
  ``StoreBusy`` for lock timeouts, deadlocks and serialization failures, ``StoreUnavailable`` for a lost or
  refused connection and a server shutting down, ``StorageFull`` for the server's full disk, SQLSTATE 53100).
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from reverie.errors import Conflict, StorageError, StorageFull, StoreBusy, StoreUnavailable

T = TypeVar("T")
Conn = psycopg.Connection[Any]

# Advisory-lock classes (the first key of pg_advisory_*lock(int, int)); the second key hashes the agent id.
LOCK_LOG = 7301  # serialises an agent's change-log writers, so log positions follow commit order
LOCK_DREAM = 7302  # the per-agent dream lock
LOCK_MIGRATE = 7303  # one migrator at a time
IDLE_CHECK_SECONDS = 1.0  # a pooled connection idle longer than this is checked before use


def _busy(exc: BaseException) -> bool:
    return isinstance(
        exc,
        pg_errors.LockNotAvailable
        | pg_errors.DeadlockDetected
        | pg_errors.SerializationFailure
        | pg_errors.QueryCanceled,
    )


# SQLSTATEs of a server going away: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections.
_GONE = frozenset({"57P01", "57P02", "57P03", "53300"})


def _text(exc: BaseException) -> str:
    """The driver's message on one line (libpq's span several)."""
    return " ".join(str(exc).split())


def unreachable(exc: psycopg.Error) -> bool:
    """Whether ``exc`` says the server cannot be reached: a connection refused, lost or closed (no SQLSTATE, or
    class 08), or the server shutting down or full of clients."""
    if isinstance(exc, psycopg.InterfaceError):
        return exc.sqlstate is None  # "the connection is closed"
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _GONE


def translate(exc: psycopg.Error, where: str, *, retry_after: float = 5.0) -> Exception:
    """The Reverie error for a driver error."""
    if isinstance(exc, pg_errors.IntegrityError):
        return Conflict(_text(exc))
    if _busy(exc):
        return StoreBusy(f"{where}: {_text(exc)}")
    if exc.sqlstate == "53100":  # disk_full: "could not extend file", "could not write to file"
        return StorageFull.at(f"the database {where}", _text(exc))
    if unreachable(exc):
        return StoreUnavailable(f"cannot reach the database {where}: {_text(exc)}", retry_after=retry_after)
    return StorageError(f"{where}: {_text(exc)}")


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

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        lock_wait_seconds: float = 60.0,
        connect_timeout_seconds: float = 5.0,
    ) -> None:
        self.url = url
        self.where = redact(url)
        self._lock_wait = lock_wait_seconds
        self._connect_timeout = connect_timeout_seconds
        self._local = threading.local()
        self._pool: ConnectionPool[Conn] | None = None
        self._pool_size = max(pool_size, 1)
        self._in_use = 0  # pooled connections handed out by this process
        self._in_use_lock = threading.Lock()
        self._own = threading.BoundedSemaphore(self._pool_size)  # connections of their own (``_own_connection``)
        # Set when the pool could not give a connection for want of a server; cleared when it gives one again.
        self._reconnecting = False
        self._last_used: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()

    @property
    def retry_after(self) -> float:
        """The seconds a caller told ``StoreUnavailable`` should wait before trying again."""
        return max(1.0, float(math.ceil(self._connect_timeout)))

    def _unavailable(self, why: str) -> StoreUnavailable:
        return StoreUnavailable(f"cannot reach the database {self.where}: {why}", retry_after=self.retry_after)

    def open(self) -> None:
        """Open the pool (after the migrations made the ``vector`` type, which each connection registers)."""
        self._pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=self._pool_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, math.ceil(self._connect_timeout))},
            configure=self._configure,
            check=self._check_if_idle,
            timeout=self._connect_timeout,
            open=False,
            name="reverie",
        )
        try:
            self._pool.open(wait=True, timeout=self._connect_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise self._unavailable(f"no connection within {self._connect_timeout:g} s") from exc

    def _check_if_idle(self, conn: Conn) -> None:
        """The pool's check on handing out ``conn``: a round trip, unless it was used a moment ago."""
        if time.monotonic() - self._last_used.get(conn, 0.0) > IDLE_CHECK_SECONDS:
            ConnectionPool.check_connection(conn)

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
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=max(1, math.ceil(self._connect_timeout)))
            conn.execute("SET TIME ZONE 'UTC'")
            return conn
        except psycopg.Error as exc:
            if unreachable(exc):
                raise self._unavailable(_text(exc)) from exc
            raise StorageError(f"cannot connect to {self.where}: {_text(exc)}") from exc

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
                raise self._error(exc) from exc
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    yield
            except psycopg.Error as exc:
                raise self._error(exc) from exc
            finally:
                self._local.conn = None

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        pool = self._pool
        if pool is None or pool.closed:
            raise StorageError(f"the store at {self.where} is closed")
        conn = self._checkout(pool)
        if conn is None:
            with self._own_connection() as own:
                yield own
            return
        try:
            yield conn
        finally:
            with self._in_use_lock:
                self._in_use -= 1
                self._last_used[conn] = time.monotonic()
            pool.putconn(conn)

    def _checkout(self, pool: ConnectionPool[Conn]) -> Conn | None:
        """A pooled connection; None when the pool has none to give but the server may answer (the caller
        then uses a connection of its own). Raises ``StoreBusy`` after ``lock_wait_seconds`` while every
        pooled connection is in use here, ``StoreUnavailable`` when the server cannot be reached."""
        deadline = time.monotonic() + self._lock_wait
        while True:
            # Reconnecting: take a pooled connection only if one is ready, else go and see the server at once.
            wait = 0.05 if self._reconnecting else min(self._connect_timeout, max(deadline - time.monotonic(), 0.05))
            try:
                conn = pool.getconn(timeout=wait)
            except PoolTimeout as exc:
                with self._in_use_lock:
                    busy = self._in_use >= self._pool_size
                if not busy:
                    # No connection for want of a server, not for want of a turn: until the pool gives one
                    # again, later calls go and see the server at once instead of waiting here first.
                    self._reconnecting = True
                    return None
                if time.monotonic() >= deadline:
                    raise StoreBusy(f"{self.where}: no free connection within {self._lock_wait:.0f} s") from exc
                continue
            except psycopg.Error as exc:
                raise self._error(exc) from exc
            with self._in_use_lock:
                self._in_use += 1
            self._reconnecting = False
            return conn

    @contextmanager
    def _own_connection(self) -> Iterator[Conn]:
        """A connection outside the pool, for one call, while the pool is reconnecting: raises
        ``StoreUnavailable`` at once when the server still cannot be reached (no second wait), and serves the
        call as soon as it can, not after the pool's back-off."""
        if not self._own.acquire(timeout=self._connect_timeout):
            raise self._unavailable("the pool is reconnecting and every connection of its own is in use")
        try:
            try:
                conn = psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, math.ceil(self._connect_timeout))
                )
            except psycopg.Error as exc:
                raise self._unavailable(_text(exc)) from exc
            try:
                try:
                    self._configure(conn)
                except psycopg.Error as exc:
                    raise self._error(exc) from exc
                yield conn
            finally:
                conn.close()
        finally:
            self._own.release()

    def _error(self, exc: psycopg.Error) -> Exception:
        return translate(exc, self.where, retry_after=self.retry_after)

    def _translate(self, work: Callable[[Conn], T], conn: Conn) -> T:
        try:
            return work(conn)
        except psycopg.Error as exc:
            raise self._error(exc) from exc
