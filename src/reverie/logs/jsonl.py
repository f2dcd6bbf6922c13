"""Append-only JSONL telemetry logs in the two on-disk shapes of seed 001 (Pass 0): a single file
(``JsonlFile``: the dream log, ``<home>/logs/dream.jsonl``) and a per-session directory of ``{session_id}.jsonl``
files (``SessionJsonlLog``: how the conversation log was kept before it moved into the store; ``logs.legacy``
reads such a directory once to import it). The conversation, execution and tool-call logs live in the store
(``logs.stored``).

Invariants:
- One JSON object per line, UTF-8. Every write (append, clear, retention's trim and delete) holds the
  file's writer lock: a ``threading.Lock`` for the threads of this process, then a ``filelock.FileLock``
  for other processes. So a trim can never lose a concurrent append.
- An append is fsync'd before it returns. If the file's last line was torn by a crash, the append first
  ends that line, so the torn fragment never swallows a good record. An append that fails (a full disk)
  cuts the file back to where it was, so it leaves no fragment, and raises ``StorageFull`` when the file could
  not grow (no space, a quota, a size limit), ``StorageError`` for another I/O failure.
- Readers take no lock and never fail on bad lines: anything that is not a JSON object (a torn last line,
  garbage) is skipped, and a missing file reads as empty.
- Lock files are bounded: a single file locks ``<path>.lock``; a session directory shares a fixed set of
  lock stripes in ``<directory>/.locks/`` (chosen by a stable hash of the file name), because a lock file
  per session would grow without bound, and deleting one that another process may be waiting on is unsafe.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import filelock

from reverie.errors import StorageError, StorageFull, StoreBusy, ValidationError
from reverie.logs.retention import (
    RetentionPolicy,
    RetentionReport,
    age_cutoff,
    drop_lines,
    fsync_directory,
    require_aware,
    trim_to_last_lines,
)

_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_SUFFIX = ".jsonl"
_LOCK_DIRECTORY = ".locks"
_LOCK_STRIPES = 64
# A holder that keeps the lock this long is stuck; better to fail the caller than hang it forever.
_LOCK_TIMEOUT_SECONDS = 60.0
# filelock waits by polling a non-blocking flock; its 50 ms default would dominate an append (about a
# millisecond) whenever another process holds the lock.
_LOCK_POLL_SECONDS = 0.002


class _WriterLock:
    """The lock every writer of one file takes: thread lock first, then the cross-process file lock.

    One instance per lock path per process (``for_path``), so every ``JsonlFile`` or ``SessionJsonlLog``
    of the same file in this process shares it.
    """

    _instances: ClassVar[dict[str, _WriterLock]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, lock_path: Path) -> None:
        self._lock_path = lock_path
        self._thread_lock = threading.Lock()
        # thread_local=False: the thread lock already serializes this process's threads.
        self._file_lock = filelock.FileLock(str(lock_path), thread_local=False)

    @classmethod
    def for_path(cls, lock_path: Path) -> _WriterLock:
        key = os.path.abspath(lock_path)
        with cls._instances_lock:
            lock = cls._instances.get(key)
            if lock is None:
                lock = cls._instances[key] = cls(Path(key))
            return lock

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock, creating its directory (the log's directory, or inside it) first.

        Raises StoreBusy after waiting ``_LOCK_TIMEOUT_SECONDS``, StorageError if the lock file cannot be
        created.
        """
        if not self._thread_lock.acquire(timeout=_LOCK_TIMEOUT_SECONDS):
            raise StoreBusy(f"another thread held the writer lock {self._lock_path} too long")
        try:
            try:
                self._lock_path.parent.mkdir(parents=True, exist_ok=True)
                self._file_lock.acquire(timeout=_LOCK_TIMEOUT_SECONDS, poll_interval=_LOCK_POLL_SECONDS)
            except filelock.Timeout as exc:
                raise StoreBusy(f"another process held the writer lock {self._lock_path} too long") from exc
            except OSError as exc:
                raise _io_error(exc, self._lock_path, "cannot take the writer lock") from exc
            try:
                yield
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One JSON line; ValidationError (nothing written) for what strict JSON cannot hold."""
    if not isinstance(record, Mapping):
        raise ValidationError("a log record must be a mapping", field="record")
    try:
        text = json.dumps(dict(record), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"a log record must be JSON-serializable: {exc}", field="record") from exc
    # json.dumps escapes "\n" inside strings, so the record is exactly one line.
    return text.encode("utf-8") + b"\n"


def _append_line(path: Path, line: bytes) -> None:
    """Append ``line`` and fsync; the caller holds the writer lock."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # end a line torn by a crash, so this record starts on its own line
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            # A full disk may have taken part of the line: cut it off, so the failed append leaves nothing.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
    if size == 0:
        fsync_directory(path.parent)  # the file may be new: make its directory entry durable too


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def parse_records(data: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects among the lines of ``data`` (a JSONL file's bytes), in order; other lines are skipped."""
    for raw in data.split(b"\n"):
        record = _parse(raw)
        if record is not None:
            yield record


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects in ``path``, in order; lines that are not objects are skipped."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot read log {path}: {exc}") from exc
    # Binary iteration splits on b"\n" only; str.splitlines would also split inside a record on U+2028.
    with handle:
        for raw in handle:
            record = _parse(raw)
            if record is not None:
                yield record


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot clear log {path}: {exc}") from exc


def _io_error(exc: OSError, path: Path, doing: str) -> StorageError:
    """``StorageFull`` when the file could not grow, else ``StorageError`` saying what failed."""
    return StorageFull.of(exc, path) or StorageError(f"{doing} {path}: {exc}")


def _failure(path: Path, exc: BaseException) -> str:
    return f"{path}: {type(exc).__name__}: {exc}"


class JsonlFile:
    """A single append-only JSONL file, such as the wisp-executions log.

    Its writer lock is ``<path>.lock``; every process appending to ``path`` must go through this class.
    """

    def __init__(self, path: Path, name: str) -> None:
        self._path = Path(path)
        self._name = name
        self._lock = _WriterLock.for_path(self._path.with_name(self._path.name + ".lock"))

    @property
    def name(self) -> str:
        return self._name

    @property
    def path(self) -> Path:
        return self._path

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record as a JSON line; durable (fsync'd) when this returns.

        Raises ValidationError for a record strict JSON cannot hold, StoreBusy when the writer lock is
        held too long, StorageError for an I/O failure.
        """
        line = encode_record(record)
        try:
            with self._lock.held():
                _append_line(self._path, line)
        except OSError as exc:
            raise _io_error(exc, self._path, "cannot append to log") from exc

    def read(self) -> Iterator[dict[str, Any]]:
        """The records, oldest first. Lines that are not JSON objects are skipped; a missing file is empty."""
        return _read_records(self._path)

    def clear(self) -> None:
        """Remove every record (the file is unlinked, atomically, under the writer lock)."""
        with self._lock.held():
            _unlink(self._path)

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        """Trim to the last ``policy.max_lines_per_file`` lines; the age and count dimensions do not
        apply to a single file. Failures are recorded in the report, never raised."""
        require_aware(now)
        keep = policy.max_lines_per_file
        if keep <= 0 or not self._path.exists():
            return RetentionReport(log=self._name)
        try:
            with self._lock.held():
                trimmed = trim_to_last_lines(self._path, keep)
        except (OSError, StorageError) as exc:
            return RetentionReport(log=self._name, errors=(_failure(self._path, exc),))
        return RetentionReport(log=self._name, lines_trimmed=trimmed)


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if it is a safe file name (``[A-Za-z0-9._-]{1,128}``, not ``.`` or ``..``);
    raise ValidationError otherwise."""
    if not isinstance(session_id, str) or not _is_session_id(session_id):
        raise ValidationError(
            f"invalid session id {session_id!r}: use 1-128 of A-Z a-z 0-9 . _ -, not '.' or '..'",
            field="session_id",
        )
    return session_id


class SessionJsonlLog:
    """A directory of per-session append-only files, ``{session_id}.jsonl``, such as the tool-call log.

    Only top-level ``*.jsonl`` files belong to the log: files in subdirectories (namespaced sessions) are
    neither listed nor swept by retention.
    """

    def __init__(self, directory: Path, name: str) -> None:
        self._directory = Path(directory)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def directory(self) -> Path:
        return self._directory

    def _lock_for(self, file_name: str) -> _WriterLock:
        # crc32, not hash(): the stripe must be the same in every process.
        stripe = zlib.crc32(file_name.encode("utf-8")) % _LOCK_STRIPES
        return _WriterLock.for_path(self._directory / _LOCK_DIRECTORY / f"{stripe:02d}.lock")

    def _path(self, session_id: str) -> Path:
        return self._directory / f"{validate_session_id(session_id)}{_SUFFIX}"

    def append(self, session_id: str, record: Mapping[str, Any]) -> None:
        """Append one record to the session's file; durable when this returns.

        Raises ValidationError for a bad session id or record, StoreBusy or StorageError as
        ``JsonlFile.append``.
        """
        path = self._path(session_id)
        line = encode_record(record)
        try:
            with self._lock_for(path.name).held():
                _append_line(path, line)
        except OSError as exc:
            raise _io_error(exc, path, "cannot append to log") from exc

    def read(self, session_id: str) -> Iterator[dict[str, Any]]:
        """One session's records, oldest first; an unknown session is empty."""
        return _read_records(self._path(session_id))

    def sessions(self) -> list[str]:
        """The ids of the sessions with a file, sorted."""
        names = self._file_names()
        return sorted(n[: -len(_SUFFIX)] for n in names if _is_session_id(n[: -len(_SUFFIX)]))

    def read_all(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every session's records as ``(session_id, record)``, session by session in ``sessions()`` order."""
        for session_id in self.sessions():
            for record in self.read(session_id):
                yield session_id, record

    def clear(self, session_id: str | None = None) -> None:
        """Remove one session's file, or with no id every top-level ``*.jsonl`` file, each under its lock."""
        names = [self._path(session_id).name] if session_id is not None else self._file_names()
        for file_name in names:
            with self._lock_for(file_name).held():
                _unlink(self._directory / file_name)

    def remove(self, match: Callable[[dict[str, Any]], bool], session_id: str | None = None) -> int:
        """Remove the records ``match`` picks from one session's file (or every file), keeping the others:
        how one agent's records leave a session file other agents' records are in too. Each file is rewritten
        atomically under its writer lock (an append waits, so none is lost); a file left empty is deleted.
        Lines that are not JSON objects are kept. Returns how many records went; raises StorageError."""
        names = [self._path(session_id).name] if session_id is not None else self._file_names()

        def picked(raw: bytes) -> bool:
            record = _parse(raw)
            return record is not None and match(record)

        removed = 0
        for file_name in names:
            path = self._directory / file_name
            try:
                with self._lock_for(file_name).held():
                    removed += drop_lines(path, picked)
            except OSError as exc:
                raise _io_error(exc, path, "cannot remove records from log") from exc
        return removed

    def _file_names(self) -> list[str]:
        """Names of the top-level regular ``*.jsonl`` files (symlinks and directories are not ours)."""
        try:
            with os.scandir(self._directory) as entries:
                return [e.name for e in entries if e.name.endswith(_SUFFIX) and e.is_file(follow_symlinks=False)]
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list log directory {self._directory}: {exc}") from exc

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        """Seed 001 Pass 0 for a session directory, in order: delete files last written before
        ``now - max_file_age_days``; cap the directory at ``max_files_per_directory`` (oldest last write
        dropped first); line-trim each surviving file to ``max_lines_per_file``.

        Each delete and trim re-checks the file under its writer lock, so a session appended to during
        the sweep is never deleted as old. A failing file is recorded in ``errors`` and the sweep goes on.
        """
        require_aware(now)
        sweep = _Sweep(self)
        files = sweep.scan()
        if policy.max_file_age_days > 0:
            cutoff = age_cutoff(now, policy.max_file_age_days)
            files = sweep.prune_older_than(files, cutoff)
        if policy.max_files_per_directory > 0:
            files = sweep.cap_count(files, policy.max_files_per_directory)
        if policy.max_lines_per_file > 0:
            sweep.trim(files, policy.max_lines_per_file)
        return RetentionReport(
            log=self._name,
            files_deleted=sweep.deleted,
            lines_trimmed=sweep.trimmed,
            errors=tuple(sweep.errors),
        )


def _is_session_id(candidate: str) -> bool:
    return bool(_SESSION_ID.fullmatch(candidate)) and candidate not in {".", ".."}


_Files = list[tuple[Path, os.stat_result]]


def _unchanged_since(seen: os.stat_result) -> Callable[[os.stat_result], bool]:
    return lambda current: current.st_mtime_ns == seen.st_mtime_ns


class _Sweep:
    """One retention run over a session directory: counts what it did and collects what failed."""

    def __init__(self, log: SessionJsonlLog) -> None:
        self._log = log
        self.deleted = 0
        self.trimmed = 0
        self.errors: list[str] = []

    def scan(self) -> _Files:
        """The top-level session files with their stat, as of now."""
        directory = self._log.directory
        try:
            names = self._log._file_names()
        except StorageError as exc:
            self.errors.append(str(exc))
            return []
        files = []
        for name in names:
            path = directory / name
            try:
                files.append((path, path.stat()))
            except OSError as exc:
                self.errors.append(_failure(path, exc))
        return files

    def prune_older_than(self, files: _Files, cutoff: float) -> _Files:
        survivors = []
        for path, seen in files:
            if seen.st_mtime >= cutoff:
                survivors.append((path, seen))
                continue
            kept = self._delete_if(path, lambda current: current.st_mtime < cutoff)
            if kept is not None:
                survivors.append((path, kept))
        return survivors

    def cap_count(self, files: _Files, cap: int) -> _Files:
        oldest_first = sorted(files, key=lambda item: (item[1].st_mtime_ns, item[0].name))
        excess = len(oldest_first) - cap
        survivors = []
        for path, seen in oldest_first:
            if excess <= 0:
                survivors.append((path, seen))
                continue
            # Written since the scan means no longer the oldest: keep it and drop the next one instead.
            kept = self._delete_if(path, _unchanged_since(seen))
            if kept is not None:
                survivors.append((path, kept))
            elif not os.path.lexists(path):
                excess -= 1  # deleted, or gone meanwhile; a file that could not be deleted still counts
        return survivors

    def trim(self, files: _Files, keep: int) -> None:
        for path, seen in files:
            if seen.st_size <= keep:
                continue  # a line takes at least one byte: no need to lock and read a file this small
            try:
                with self._log._lock_for(path.name).held():
                    self.trimmed += trim_to_last_lines(path, keep)
            except (OSError, StorageError) as exc:
                self.errors.append(_failure(path, exc))

    def _delete_if(self, path: Path, still_due: Callable[[os.stat_result], bool]) -> os.stat_result | None:
        """Under the file's lock, delete it if ``still_due`` holds for its current stat. Returns the
        current stat if the file was kept, None if it was deleted or failed (the failure recorded)."""
        try:
            with self._log._lock_for(path.name).held():
                current = path.stat()
                if not still_due(current):
                    return current
                path.unlink()
        except (OSError, StorageError) as exc:
            self.errors.append(_failure(path, exc))
            return None
        self.deleted += 1
        return None
