"""Connections, transactions and lock waits for one SQLite file.

Invariants:
- One connection per thread, in autocommit mode; writes happen only inside ``transaction()``, which
  starts with ``BEGIN IMMEDIATE`` so a writer takes the write lock up front and waits for it (busy
  timeout, then retries until ``lock_wait_seconds``) instead of failing half-way on an upgrade.
- No "database is locked" error reaches a caller before ``lock_wait_seconds``; after it, ``StoreBusy``.
- The threads of one process take the write lock in turn through a process-wide lock per file (``_writer``)
  before ``BEGIN IMMEDIATE``, so they queue and are woken the moment the writer before them commits; only a
  writer in another process meets a locked file (and polls for it: SQLite's busy handler, then ``_retry``).
- Every other driver error surfaces as ``StorageError`` (``Conflict`` for uniqueness violations), whether a
  statement, a COMMIT, a savepoint or a checkpoint raised it: no ``sqlite3`` exception leaves this module.
- A file that cannot grow (a full disk, a quota, a file-size limit) is ``StorageFull``; the transaction is
  rolled back, so nothing of it was written and everything committed before it stays.
- A read-only database (``read_only``) opens its file with ``mode=ro``, never changes its journal mode,
  and refuses ``transaction()`` (every write) with ``StorageError`` before touching the file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from reverie.errors import Conflict, ReverieError, StorageError, StorageFull, StoreBusy

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


def read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only. SQLite reads a WAL file through its ``-shm`` index, which it must
    create when missing; in a directory it cannot write, with no ``-wal`` beside the file (so no process is
    writing: a writer would have made one), the file is opened ``immutable`` instead, without that index."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return uri
    except sqlite3.OperationalError:
        wal = Path(f"{path}-wal")
        if os.access(path.parent, os.W_OK) or (wal.exists() and wal.stat().st_size > 0):
            raise
        return f"{uri}&immutable=1"


_WRITERS: dict[str, threading.Lock] = {}
_WRITERS_GUARD = threading.Lock()


def _writer_lock(path: Path) -> threading.Lock:
    """The one lock of this process for writing the file at ``path`` (every ``Database`` on it shares it)."""
    key = os.path.realpath(path)
    with _WRITERS_GUARD:
        return _WRITERS.setdefault(key, threading.Lock())


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


# Below this much free space (or this close to a file-size limit) an I/O error while writing is taken to be
# for want of space: a WAL frame is a few KiB, a checkpoint writes pages one by one.
_LOW_SPACE_BYTES = 1 << 20


def full_disk(exc: BaseException, path: Path) -> StorageFull | None:
    """``StorageFull`` naming ``path`` when ``exc`` (a driver or OS error) says a file could not grow; else None.

    SQLite says SQLITE_FULL when the OS answered ENOSPC, but a bare I/O error (SQLITE_IOERR_*) when a write hit
    a file-size limit (EFBIG) or a full disk refused to extend the shared-memory index: for those the disk and
    the limit are looked at."""
    if isinstance(exc, OSError):
        return StorageFull.of(exc, path)
    if not isinstance(exc, sqlite3.Error):
        return None
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name == "SQLITE_FULL" or "database or disk is full" in str(exc):
        return StorageFull.at(path, exc)
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in str(exc).lower():
        cause = _out_of_space(path)
        return None if cause is None else StorageFull.at(path, cause)
    return None


def _out_of_space(path: Path) -> str | None:
    """Why writing beside ``path`` failed for want of space, if it did: the disk is (nearly) full, or one of the
    store's files is at the process's file-size limit."""
    try:
        free: int | None = shutil.disk_usage(path.parent).free
    except OSError:
        free = None
    if free is not None and free < _LOW_SPACE_BYTES:
        return f"{free} bytes free"
    limit = _file_size_limit()
    if limit is None:
        return None
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            size = os.stat(f"{path}{suffix}").st_size
        except OSError:
            continue
        if size + _LOW_SPACE_BYTES >= limit:
            return f"a file reached the size limit of {limit} bytes"
    return None


def _file_size_limit() -> int | None:
    """This process's soft limit on the size of a file it writes (``ulimit -f``), None when unlimited."""
    if sys.platform == "win32":
        return None
    import resource

    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


class Database:
    """Per-thread connections to one file, with the pragmas Reverie relies on."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_ms: int = 10_000,
        lock_wait_seconds: float = 60.0,
        synchronous: str = "FULL",
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.read_only = read_only
        self._uri: str | None = None
        if read_only:
            try:
                self._uri = read_only_uri(path)
            except sqlite3.DatabaseError as exc:
                raise StorageError(f"cannot open {path} read-only: {exc}") from exc
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_wait = lock_wait_seconds
        self._synchronous = synchronous
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._registry_lock = threading.Lock()
        self._closed = False
        # Trigger: SQLite's busy handler polls a locked file with sleeps of up to 100 ms, not woken by the
        # commit. Why: 16 threads of one server writing at once left the lock idle while its waiters slept
        # (78% of the request threads' time under `reverie bench load` was in BEGIN IMMEDIATE). Outcome: the threads
        # of this process queue on a lock instead; SQLite's polling is left to writers of other processes.
        self._writer = _writer_lock(path)
        self.busy_polls = 0  # times a writer found the file locked by another connection and had to poll

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
                self._uri or self.path,
                timeout=self._busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
                uri=self._uri is not None,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            if not self.read_only:  # read-only: the file keeps its journal mode (changing it is a write)
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
        with self.transaction():
            return self._translate(work, self.connection())

    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``."""
        return bool(getattr(self._local, "depth", 0))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self.connection()
        if self._local.depth:
            # Nested: a savepoint, so a failure inside rolls back only the inner writes.
            name = f"sp{self._local.depth}"
            self._statement(conn, f"SAVEPOINT {name}")
            self._local.depth += 1
            try:
                yield
            except BaseException as exc:
                # SQLite may have rolled the whole transaction back already (a full disk, an I/O error).
                if conn.in_transaction:
                    self._statement(conn, f"ROLLBACK TO {name}")
                if isinstance(exc, sqlite3.Error):
                    raise self._error(exc) from exc
                raise
            finally:
                self._local.depth -= 1
                if conn.in_transaction:
                    self._statement(conn, f"RELEASE {name}")
            return
        if self.read_only:
            raise StorageError(f"the store at {self.path} is open read-only: writes are off")
        deadline = time.monotonic() + self._lock_wait
        if not self._writer.acquire(timeout=self._lock_wait):
            raise StoreBusy(f"{self.path} stayed locked by another writer for {self._lock_wait:.0f} s")
        try:
            self._retry(lambda: conn.execute("BEGIN IMMEDIATE"), deadline)
            self._local.depth = 1
            try:
                yield
                conn.execute("COMMIT")  # a full disk often shows only here, when the log is written
            except BaseException as exc:
                if conn.in_transaction:
                    self._statement(conn, "ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._error(exc) from exc
                raise
            finally:
                self._local.depth = 0
        finally:
            self._writer.release()

    def _statement(self, conn: sqlite3.Connection, sql: str) -> None:
        """A transaction-control statement, its failure translated like any other."""
        try:
            conn.execute(sql)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _error(self, exc: sqlite3.Error) -> ReverieError:
        """The Reverie error for a driver error: ``StorageFull``, ``Conflict``, ``StoreBusy`` or ``StorageError``."""
        full = full_disk(exc, self.path)
        if full is not None:
            return full
        if isinstance(exc, sqlite3.IntegrityError):
            return Conflict(str(exc))
        if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
            return StoreBusy(f"{self.path}: {exc}")
        return StorageError(str(exc))

    def _retry(self, attempt: Callable[[], T], deadline: float | None = None) -> T:
        deadline = time.monotonic() + self._lock_wait if deadline is None else deadline
        delay = 0.005
        while True:
            try:
                return attempt()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise self._error(exc) from exc
                self.busy_polls += 1
                if time.monotonic() >= deadline:
                    raise StoreBusy(f"{self.path} stayed locked by another writer for {self._lock_wait:.0f} s") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def _translate(self, work: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
        try:
            return work(conn)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise  # let the retry loop (or the caller's transaction) see it
            raise self._error(exc) from exc
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc
