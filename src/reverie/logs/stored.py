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
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any

from reverie.core import validate
from reverie.errors import ReverieError, ValidationError
from reverie.logs.retention import RetentionPolicy, RetentionReport, require_aware
from reverie.storage.base import ActivityLogRepository, LogName, LogRow, SessionWrites

_SECONDS_PER_DAY = 86_400.0


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

    def __init__(self, repository: ActivityLogRepository, log: LogName, *, per_session: bool = False) -> None:
        """``per_session``: the log is capped session by session (the conversation log)."""
        self._repo = repository
        self._log: LogName = log
        self._per_session = per_session

    @property
    def name(self) -> str:
        return self._log

    @property
    def per_session(self) -> bool:
        return self._per_session

    def append(self, agent_id: str, session_id: str | None, at: datetime, record: Mapping[str, Any]) -> None:
        """Append one record; durable when this returns. Raises ValidationError (nothing written) for a record
        the store cannot hold, a naive ``at`` or a per-session log without a session; StorageError."""
        require_aware(at)
        if self._per_session and session_id is None:
            raise ValidationError(f"the {self._log} log needs a session id", field="session_id")
        self._repo.append(self._log, [LogRow(agent_id, session_id, at, checked_record(record))])

    def rows(
        self, *, agent_id: str | None = None, session_id: str | None = None, since: datetime | None = None
    ) -> list[LogRow]:
        """The rows (of one agent, one session, at or after ``since``) in the order they were appended."""
        return self._repo.read(self._log, agent_id=agent_id, session_id=session_id, since=since)

    def records(self, *, agent_id: str | None = None) -> Iterator[dict[str, Any]]:
        """The records as the JSONL file held them, in the order they were appended (``reverie logs export``)."""
        return (row.record for row in self.rows(agent_id=agent_id))

    def delete(self, seqs: Collection[int]) -> int:
        """Remove the rows with these ``seq`` (read earlier); returns how many went."""
        return self._repo.delete(self._log, seqs)

    def clear(self, *, agent_id: str | None = None, session_id: str | None = None) -> int:
        """Remove the rows of one agent and/or one session, or every row; returns how many went."""
        if agent_id is not None:
            agent_id = validate.identifier(agent_id, name="agent_id")
        return self._repo.clear(self._log, agent_id=agent_id, session_id=session_id)

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        """Apply ``policy`` as of ``now`` (see the module docstring); errors go into the report."""
        require_aware(now)
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
