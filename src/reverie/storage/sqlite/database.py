"""Connections, transactions and lock waits for one SQLite file.

Invariants:
- One connection per thread, in autocommit mode; writes happen only inside ``transaction()``, which
  starts with ``BEGIN IMMEDIATE`` so a writer takes the write lock up front and waits for it (busy
  timeout, then retries until ``lock_wait_seconds``) instead of failing half-way on an upgrade.
- No "database is locked" error reaches a caller before ``lock_wait_seconds``; after it, ``StoreBusy``.
- Every other driver error surfaces as ``StorageError`` (``Conflict`` for uniqueness violations).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from reverie.errors import Conflict, StorageError, StoreBusy

T = TypeVar("T")
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def ts(value: datetime) -> str:
    """A fixed-width UTC timestamp, so text order is time order."""
    return value.astimezone(UTC).strftime(_TS_FORMAT)


def ts_or_none(value: datetime | None) -> str | None:
    return None if value is None else ts(value)


def parse_ts(value: str) -> datetime:
    # fromisoformat (C) reads our fixed format, "Z" included, ~20x faster than strptime on hot paths.
    return datetime.fromisoformat(value)


def parse_ts_or_none(value: str | None) -> datetime | None:
    return None if value is None else parse_ts(value)


def _unicode_lower(value: str | None) -> str | None:
    return value.lower() if isinstance(value, str) else value


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Database:
    """Per-thread connections to one file, with the pragmas Reverie relies on."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_ms: int = 10_000,
        lock_wait_seconds: float = 60.0,
        synchronous: str = "FULL",
    ) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_wait = lock_wait_seconds
        self._synchronous = synchronous
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._registry_lock = threading.Lock()
        self._closed = False

    # -- connections -------------------------------------------------------------------------------
    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError(f"the store at {self.path} is closed")
            conn = self._retry(self._connect)
            self._local.conn = conn
            self._local.depth = 0
            with self._registry_lock:
                self._connections.append(conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StorageError(f"{self.path}: could not switch to WAL (journal_mode={mode})")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            # SQLite's lower() folds ASCII only; substring search must fold the way Python does.
            conn.create_function("unicode_lower", 1, _unicode_lower, deterministic=True)
            return conn
        except sqlite3.DatabaseError as exc:
            if _is_busy(exc):
                raise
            raise StorageError(f"cannot open {self.path}: {exc}") from exc

    def close(self) -> None:
        self._closed = True
        with self._registry_lock:
            conns, self._connections = self._connections, []
        for conn in conns:
            # A connection another thread is still using may refuse; it closes when that thread ends.
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    # -- running statements ------------------------------------------------------------------------
    def read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read, retrying while another process holds a lock it needs (WAL recovery)."""
        conn = self.connection()
        if self._local.depth:
            return self.write(work)
        return self._retry(lambda: self._translate(work, conn))

    def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` inside a transaction (joining the current one, if any)."""
        try:
            with self.transaction():
                return self._translate(work, self.connection())
        except sqlite3.OperationalError as exc:
            # Only reachable when a lock is refused while we hold the write lock: report, never leak.
            raise StoreBusy(f"{self.path}: {exc}") from exc

    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``."""
        return bool(getattr(self._local, "depth", 0))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self.connection()
        if self._local.depth:
            # Nested: a savepoint, so a failure inside rolls back only the inner writes.
            name = f"sp{self._local.depth}"
            conn.execute(f"SAVEPOINT {name}")
            self._local.depth += 1
            try:
                yield
            except BaseException:
                conn.execute(f"ROLLBACK TO {name}")
                raise
            finally:
                self._local.depth -= 1
                if conn.in_transaction:
                    conn.execute(f"RELEASE {name}")
            return
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        self._local.depth = 1
        try:
            yield
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.OperationalError):
                raise StorageError(str(exc)) from exc
            raise
        finally:
            self._local.depth = 0

    def _retry(self, attempt: Callable[[], T]) -> T:
        deadline = time.monotonic() + self._lock_wait
        delay = 0.005
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise StorageError(str(exc)) from exc
                if time.monotonic() >= deadline:
                    raise StoreBusy(f"{self.path} stayed locked by another writer for {self._lock_wait:.0f} s") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    @staticmethod
    def _translate(work: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
        try:
            return work(conn)
        except sqlite3.IntegrityError as exc:
            raise Conflict(str(exc)) from exc
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise  # let the retry loop (or the caller's transaction) see it
            raise StorageError(str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            raise StorageError(str(exc)) from exc
