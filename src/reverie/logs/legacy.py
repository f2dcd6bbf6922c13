"""The one-time import of a home's JSONL logs into the store: the conversation log
(``<home>/logs/conversation/{session_id}.jsonl``), the execution log (``executions.jsonl``) and the tool-call
log (``tool-calls.jsonl``), written by versions that kept them as files.

Invariants:
- Each file is imported once: its rows and a marker naming its content (``store_meta``
  ``logs.imported.<sha256>``) commit in one transaction, then the file is renamed ``<name>.imported``
  (``<name>.<n>.imported`` when that name is taken). A crash before the rename finds the marker on the next
  open and only renames, so nothing is read twice; nothing is deleted, so nothing is lost.
- Processes of one home import one at a time (a file lock, ``<home>/logs/.import.lock``).
- A record the readers could never have used (not a JSON object, no agent, no readable aware time, a value
  the store cannot hold) stays in the renamed file only; the import counts it as skipped.
- Best effort: a file that cannot be imported is logged and left in place, to be tried at the next open.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import filelock

from reverie.errors import ReverieError, ValidationError
from reverie.logs.jsonl import SessionJsonlLog, parse_records
from reverie.logs.stored import checked_record
from reverie.storage.base import LogName, LogRow, Store

log = logging.getLogger("reverie.logs")

CONVERSATION_DIRECTORY = "conversation"
FILES: dict[str, LogName] = {"executions.jsonl": "executions", "tool-calls.jsonl": "tool-calls"}
SUFFIX = ".imported"
_MARKER = "logs.imported."
_LOCK_TIMEOUT_SECONDS = 60.0


@dataclass
class ImportReport:
    """What one import did: files imported (or only renamed), rows added, records skipped, failures."""

    files: int = 0
    rows: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


def pending(logs_dir: Path) -> list[tuple[Path, LogName, str | None]]:
    """The legacy files in ``logs_dir``: ``(path, log, session_id)``, the session only for the conversation
    log (its file name); top-level regular files only, as the old readers listed them."""
    found: list[tuple[Path, LogName, str | None]] = []
    for name, log_name in FILES.items():
        path = logs_dir / name
        if path.is_file() and not path.is_symlink():
            found.append((path, log_name, None))
    directory = logs_dir / CONVERSATION_DIRECTORY
    if directory.is_dir():  # the files the old log listed: safe session ids, top level, no symlinks
        sessions = SessionJsonlLog(directory, "conversation").sessions()
        found.extend((directory / f"{session_id}.jsonl", "conversation", session_id) for session_id in sessions)
    return found


def import_legacy(logs_dir: Path, store: Store, *, now: datetime) -> ImportReport:
    """Import every legacy JSONL log in ``logs_dir`` into ``store`` (see the module docstring)."""
    report = ImportReport()
    lock = filelock.FileLock(str(logs_dir / ".import.lock"), thread_local=False)
    try:
        if not pending(logs_dir):
            return report
        with lock.acquire(timeout=_LOCK_TIMEOUT_SECONDS):
            for path, log_name, session_id in pending(logs_dir):  # again: another process may have done it
                try:
                    _import_file(path, log_name, session_id, store, now, report)
                except (OSError, ReverieError) as exc:
                    report.errors.append(f"{path}: {type(exc).__name__}: {exc}")
    except (filelock.Timeout, OSError, ReverieError) as exc:
        report.errors.append(f"{logs_dir}: {type(exc).__name__}: {exc}")
    for error in report.errors:
        log.warning("importing a JSONL log into the store: %s", error)
    if report.files:
        log.info(
            "imported %d JSONL log files into the store: %d records, %d skipped", report.files, report.rows,
            report.skipped,
        )  # fmt: skip
    return report


def _import_file(
    path: Path, log_name: LogName, session_id: str | None, store: Store, now: datetime, report: ImportReport
) -> None:
    data = path.read_bytes()
    marker = _MARKER + hashlib.sha256(data).hexdigest()
    if data.strip() and store.meta.get(marker) is None:
        rows: list[LogRow] = []
        for record in parse_records(data):
            row = _row(record, session_id)
            if row is None:
                report.skipped += 1
            else:
                rows.append(row)
        with store.transaction():
            store.logs.append(log_name, rows)
            store.meta.set(marker, now.isoformat())
        report.rows += len(rows)
    os.replace(path, _free_name(path))
    report.files += 1


def _row(record: dict[str, Any], session_id: str | None) -> LogRow | None:
    """The row of a legacy record, or None for one no reader could use."""
    agent, at = record.get("agent"), _moment(record.get("at"))
    if not isinstance(agent, str) or not agent or at is None:
        return None
    if session_id is None:
        session = record.get("session_id")
        session_id = session if isinstance(session, str) and session else None
    try:
        return LogRow(agent, session_id, at, checked_record(record))
    except ValidationError:
        return None


def _moment(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _free_name(path: Path) -> Path:
    """``<name>.imported``, or ``<name>.<n>.imported`` when an earlier import already took that name."""
    candidate = path.with_name(path.name + SUFFIX)
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{n}{SUFFIX}")
        n += 1
    return candidate
