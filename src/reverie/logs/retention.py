"""Log retention (seed 001, Pass 0): the policy, the per-log report, the ``PrunableLog`` port and the sweep
over every registered log, plus the one file operation retention shares between log shapes: trimming a
file to its last lines by an atomic rewrite.

Invariants:
- Retention is best effort. A log's ``retain`` records I/O failures in its report instead of raising, and
  ``retain_all`` turns anything a log does raise into that log's report, so one failing log never stops
  the others.
- A non-positive policy value disables that dimension.
- A trim never leaves a half-written file: the kept lines go to a temp file in the same directory, which
  is fsync'd and then renamed over the original (``os.replace``). The caller holds the log's writer lock,
  so no append can land between the read and the rename.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

from reverie.errors import ValidationError

logger = logging.getLogger("reverie.logs")

_CHUNK = 1 << 20
_SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class RetentionPolicy:
    """How much of an append-only log to keep (seed 001: ``LogRetention*``).

    ``max_file_age_days`` and ``max_files_per_directory`` apply to per-session directories;
    ``max_lines_per_file`` to every file. A log kept in the store (``StoredLog``) is capped the same way, a
    session standing for a file and a row for a line. A value of zero or less disables that dimension.
    """

    max_file_age_days: float = 30
    max_files_per_directory: int = 1000
    max_lines_per_file: int = 50_000


@dataclass(frozen=True)
class RetentionReport:
    """What one log's retention did: files deleted, lines trimmed, and the failures it stepped over."""

    log: str
    files_deleted: int = 0
    lines_trimmed: int = 0
    errors: tuple[str, ...] = ()


@runtime_checkable
class PrunableLog(Protocol):
    """An append-only log that knows its own on-disk shape and how to cap it."""

    @property
    def name(self) -> str:
        """The log's name in reports (``tool-call``, ``wisp-executions``)."""
        ...

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        """Apply ``policy`` as of ``now`` (timezone-aware). Never raises for I/O problems: they are
        recorded in the report's ``errors`` and the sweep goes on."""
        ...


def retain_all(logs: Iterable[PrunableLog], policy: RetentionPolicy, *, now: datetime) -> list[RetentionReport]:
    """Run every log's retention, in order; one report per log.

    Anything a log raises becomes that log's report (no deletions counted, the error recorded) and is
    logged on ``reverie.logs``; the remaining logs still run.
    """
    reports = []
    for log in logs:
        try:
            report = log.retain(policy, now=now)
        except Exception as exc:
            name = _name_of(log)
            logger.warning("log retention failed for %s", name, exc_info=True)
            report = RetentionReport(log=name, errors=(f"{type(exc).__name__}: {exc}",))
        else:
            for error in report.errors:
                logger.warning("log retention for %s: %s", report.log, error)
        reports.append(report)
    return reports


def _name_of(log: PrunableLog) -> str:
    # The log already failed once; its name must not be the second failure that stops the sweep.
    try:
        return str(log.name)
    except Exception:
        return type(log).__name__


def require_aware(now: datetime) -> None:
    """Raise ValidationError unless ``now`` is timezone-aware (a naive one would be read as local time)."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValidationError("now must be a timezone-aware datetime", field="now")


def age_cutoff(now: datetime, max_file_age_days: float) -> float:
    """The POSIX timestamp before which a file's last write makes it too old.

    Float arithmetic rather than ``timedelta`` so a huge age (a policy meaning "forever") cannot overflow.
    """
    return now.timestamp() - max_file_age_days * _SECONDS_PER_DAY


def trim_to_last_lines(path: Path, keep: int) -> int:
    """Rewrite ``path`` to hold only its last ``keep`` lines; returns how many lines were removed.

    The caller holds the file's writer lock. A final line without its newline (torn by a crash) counts as
    a line. The rewritten file keeps the original's permission bits and last-write time, because a trim is
    not a write of new records: it must not make an idle session file look fresh to age pruning.
    Raises OSError (a missing file included); the original is untouched when it does.
    """
    with path.open("rb") as source:
        original = os.fstat(source.fileno())
        drop = _count_lines(source) - keep
        if drop <= 0:
            return 0
        source.seek(0)
        source.seek(_offset_after_lines(source, drop))
        _replace_with_rest(path, source, original)
    return drop


def drop_lines(path: Path, drop: Callable[[bytes], bool]) -> int:
    """Rewrite ``path`` without the lines ``drop`` picks (it sees each line without its newline); returns how
    many went. A file left with no line is unlinked. The caller holds the file's writer lock; the rewrite is
    atomic (temp file, fsync, rename) and keeps the original's permission bits and last-write time, as a trim.
    A missing file drops nothing. Raises OSError; the original is untouched when it does."""
    try:
        source = path.open("rb")
    except FileNotFoundError:
        return 0
    with source:
        original = os.fstat(source.fileno())
        kept: list[bytes] = []
        dropped = 0
        for raw in source:
            if drop(raw.rstrip(b"\n")):
                dropped += 1
            else:
                kept.append(raw if raw.endswith(b"\n") else raw + b"\n")
    if not dropped:
        return 0
    if not kept:
        path.unlink()
        fsync_directory(path.parent)
        return dropped
    _rewrite(path, original, lambda target: target.writelines(kept), suffix=".drop")
    return dropped


def _count_lines(source: BinaryIO) -> int:
    count = 0
    last = b""
    while chunk := source.read(_CHUNK):
        count += chunk.count(b"\n")
        last = chunk
    return count + (1 if last and not last.endswith(b"\n") else 0)


def _offset_after_lines(source: BinaryIO, lines: int) -> int:
    """The byte offset just past the ``lines``-th newline (or the end of the file if it has fewer)."""
    offset = 0
    while chunk := source.read(_CHUNK):
        found = chunk.count(b"\n")
        if found < lines:
            lines -= found
            offset += len(chunk)
            continue
        position = -1
        for _ in range(lines):
            position = chunk.index(b"\n", position + 1)
        return offset + position + 1
    return offset


def _replace_with_rest(path: Path, source: BinaryIO, original: os.stat_result) -> None:
    """Copy the rest of ``source`` to a temp file beside ``path``, make it durable, rename it over ``path``."""

    def copy_rest(target: BinaryIO) -> None:
        while chunk := source.read(_CHUNK):
            target.write(chunk)

    _rewrite(path, original, copy_rest, suffix=".trim")


def _rewrite(path: Path, original: os.stat_result, write: Callable[[BinaryIO], object], *, suffix: str) -> None:
    """Replace ``path`` atomically with what ``write`` puts in a temp file beside it (made durable first),
    keeping the file's mode and times (retention ages a file by its modification time)."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as target:
            write(target)
            target.flush()
            os.fchmod(target.fileno(), stat.S_IMODE(original.st_mode))
            os.fsync(target.fileno())
        os.utime(temp, ns=(original.st_atime_ns, original.st_mtime_ns))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable; a platform that cannot is no failure."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
