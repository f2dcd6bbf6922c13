"""The telemetry logs kept in the store (``StoredLog``): the conversation log, the execution log and the
tool-call log, read and written through ``Store.logs`` so that every process and host serving an agent
appends to the same log and a dream worker anywhere learns from all of it.

Invariants:
- Append-only: a record is added whole or not at all, and never changed. A record must be a JSON object
  without NUL characters (``ValidationError``, nothing written): what the store can hold on both backends.
- A record keeps the shape the JSONL files had (``export`` writes it back as such a line).
- Retention (seed 001, Pass 0) caps the log with the same ``RetentionPolicy`` as the files: a per-session
  log (the conversation log) drops sessions last written before ``now - max_file_age_days``, keeps the
  ``max_files_per_directory`` most recently written sessions, and trims each to its last
  ``max_lines_per_file`` rows; a single log (executions, tool calls) keeps its last ``max_lines_per_file``
  rows. A session appended to during the sweep is never dropped. Retention is best effort: a store error is
  recorded in the report, never raised.
- Group commit (``flush_seconds`` > 0, the tool-call log): an append is checked at once (a bad record raises,
  nothing is kept) and then waits in memory; a daemon thread appends what waits in one store write (one
  commit, one fsync) at most ``flush_seconds`` after the first of them, at once past ``MAX_PENDING`` rows, and
  ``close`` (or the interpreter's exit) writes the rest. So a crash loses at most the last ``flush_seconds``
  of records of this log, never anything else. Batches are written in the order appended. Every read, delete,
  clear and retention of the log writes what waits first, so this process always reads its own appends; other
  processes see them once flushed. A batch the store refuses (a full disk) is dropped and logged: these
  records are telemetry, and a tool call must never fail for its log line.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any

from reverie.core import validate
from reverie.errors import ReverieError, ValidationError
from reverie.logs.retention import RetentionPolicy, RetentionReport, require_aware
from reverie.storage.base import ActivityLogRepository, LogName, LogRow, SessionWrites

_SECONDS_PER_DAY = 86_400.0
MAX_PENDING = 1000  # rows waiting for a group commit past which the flush starts at once
log = logging.getLogger("reverie.logs")


def checked_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``record`` as strict JSON holds it; ValidationError for anything else."""
    if not isinstance(record, Mapping):
        raise ValidationError("a log record must be a mapping", field="record")
    try:
        text = json.dumps(dict(record), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"a log record must be JSON-serializable: {exc}", field="record") from exc
    loaded: dict[str, Any] = json.loads(text)
    if validate.has_nul(loaded):
        raise ValidationError("a log record cannot hold a NUL character", field="record")
    return loaded


class StoredLog:
    """One of the store's logs (``Store.logs``), under the name retention reports it by."""

    def __init__(
        self,
        repository: ActivityLogRepository,
        log: LogName,
        *,
        per_session: bool = False,
        flush_seconds: float = 0.0,
    ) -> None:
        """``per_session``: the log is capped session by session (the conversation log). ``flush_seconds`` > 0:
        appends are committed in groups at most this long after they were made (module docstring); 0: each
        append is durable when it returns."""
        if not flush_seconds >= 0:
            raise ValueError("flush_seconds must not be negative")
        self._repo = repository
        self._log: LogName = log
        self._per_session = per_session
        self._flush_seconds = float(flush_seconds)
        self.reads = 0  # calls that read rows from the store (the costs a test counts)
        self.writes = 0  # store writes that appended rows: each one commit (one fsync)
        self._pending: list[LogRow] = []
        self._in_flight = 0  # rows taken from _pending whose write has not returned yet
        self._cond = threading.Condition()  # guards the three above and _closed; flushed batches notify it
        self._flush_lock = threading.Lock()  # one batch at a time, so batches land in the order appended
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        return self._log

    @property
    def per_session(self) -> bool:
        return self._per_session

    def append(self, agent_id: str, session_id: str | None, at: datetime, record: Mapping[str, Any]) -> None:
        """Append one record: durable when this returns, or with group commit (``flush_seconds``) within that
        interval. Raises ValidationError (nothing kept) for a record the store cannot hold, a naive ``at`` or a
        per-session log without a session; StorageError (a durable append only)."""
        require_aware(at)
        if self._per_session and session_id is None:
            raise ValidationError(f"the {self._log} log needs a session id", field="session_id")
        row = LogRow(agent_id, session_id, at, checked_record(record))
        with self._cond:
            if self._flush_seconds > 0 and not self._closed:
                self._pending.append(row)
                self._start_flusher()
                self._cond.notify_all()  # the flusher: a first row starts its interval, a full buffer ends it
                return
        # A closed group-commit log waits for a batch still being written: the log keeps the order of appends.
        with self._flush_lock if self._flush_seconds > 0 else contextlib.nullcontext():
            self._repo.append(self._log, [row])
            self.writes += 1

    @property
    def pending(self) -> int:
        """Appended rows not written to the store yet (group commit only)."""
        with self._cond:
            return len(self._pending) + self._in_flight

    def flush(self) -> int:
        """Write the rows waiting for their group commit now, in one store write; returns how many. A store
        error drops them (logged, module docstring) and returns 0."""
        with self._flush_lock:
            with self._cond:
                rows, self._pending = self._pending, []
                self._in_flight = len(rows)
            try:
                if rows:
                    self._repo.append(self._log, rows)
                    self.writes += 1
            except ReverieError as exc:
                log.warning("%d %s log record(s) lost: %s", len(rows), self._log, exc)
                rows = []
            finally:
                with self._cond:
                    self._in_flight = 0
                    self._cond.notify_all()
            return len(rows)

    def wait_flushed(self, timeout: float) -> bool:
        """Wait until nothing appended waits for its commit (or ``timeout`` seconds); True when nothing does."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._in_flight, timeout)

    def close(self) -> None:
        """Write what waits and stop the flusher; later appends are written at once. Idempotent."""
        with self._cond:
            self._closed = True
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None:
            thread.join()
            atexit.unregister(self.close)
        self.flush()

    def _start_flusher(self) -> None:
        """Start the flusher thread on the first buffered append (called holding ``_cond``)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._flusher, name=f"reverie-log-{self._log}", daemon=True)
            self._thread.start()
            atexit.register(self.close)  # a process that exits without closing its engine still writes them

    def _flusher(self) -> None:
        """Wait for a first row, then for the interval (or a full buffer, or ``close``), then write the batch."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending) or self._closed)
                if self._closed:
                    return  # close writes what is left
                deadline = time.monotonic() + self._flush_seconds
                while not self._closed and len(self._pending) < MAX_PENDING:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            try:
                self.flush()
            except Exception:  # a bug, not the store: the thread must outlive it (the rows are lost, logged)
                log.exception("the %s log's flusher failed", self._log)

    def rows(
        self, *, agent_id: str | None = None, session_id: str | None = None, since: datetime | None = None
    ) -> list[LogRow]:
        """The rows (of one agent, one session, at or after ``since``) in the order they were appended."""
        self._settle()
        self.reads += 1
        return self._repo.read(self._log, agent_id=agent_id, session_id=session_id, since=since)

    def records(self, *, agent_id: str | None = None) -> Iterator[dict[str, Any]]:
        """The records as the JSONL file held them, in the order they were appended (``reverie logs export``)."""
        return (row.record for row in self.rows(agent_id=agent_id))

    def delete(self, seqs: Collection[int]) -> int:
        """Remove the rows with these ``seq`` (read earlier); returns how many went."""
        self._settle()
        return self._repo.delete(self._log, seqs)

    def clear(self, *, agent_id: str | None = None, session_id: str | None = None) -> int:
        """Remove the rows of one agent and/or one session, or every row; returns how many went."""
        if agent_id is not None:
            agent_id = validate.identifier(agent_id, name="agent_id")
        self._settle()
        return self._repo.clear(self._log, agent_id=agent_id, session_id=session_id)

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        """Apply ``policy`` as of ``now`` (see the module docstring); errors go into the report."""
        require_aware(now)
        self._settle()
        dropped = trimmed = 0
        errors: list[str] = []
        try:
            if self._per_session:
                dropped = self._drop_sessions(policy, now)
            if policy.max_lines_per_file > 0:
                trimmed = self._repo.trim(self._log, policy.max_lines_per_file, per_session=self._per_session)
        except ReverieError as exc:
            errors.append(f"{self._log}: {type(exc).__name__}: {exc}")
        return RetentionReport(log=self._log, files_deleted=dropped, lines_trimmed=trimmed, errors=tuple(errors))

    def _settle(self) -> None:
        """Write what waits for its group commit before the log is read or changed here."""
        if self.pending:
            self.flush()

    def _drop_sessions(self, policy: RetentionPolicy, now: datetime) -> int:
        """The age prune, then the count cap; returns the sessions dropped."""
        age, cap = policy.max_file_age_days, policy.max_files_per_directory
        if age <= 0 and cap <= 0:
            return 0
        sessions = self._repo.sessions(self._log)
        doomed: list[SessionWrites] = []
        if age > 0:
            # Float arithmetic, not timedelta: a huge age (a policy meaning "forever") cannot overflow.
            cutoff = now.timestamp() - age * _SECONDS_PER_DAY
            doomed = [s for s in sessions if s.last_at.timestamp() < cutoff]
            sessions = [s for s in sessions if s.last_at.timestamp() >= cutoff]
        if cap > 0 and len(sessions) > cap:
            oldest_first = sorted(sessions, key=lambda s: (s.last_at, s.last_seq))
            doomed += oldest_first[: len(sessions) - cap]
        return sum(1 for session in doomed if self._repo.drop_session(self._log, session))
