"""The storage contract, part four: the telemetry logs the dream learns from, and the context builder's
delta filter. ``storage.base`` re-exports every name; ``Store`` exposes ``logs`` and ``injected``.

- ``ActivityLogRepository``: three append-only logs, one table each (``LOG_TABLES``): the conversation log
  (every turn, by session), the execution log and the tool-call log. A row is the record as the old JSONL
  files held it (``record``, a JSON object) with the columns readers filter by: agent, session, time, and
  ``seq``, the order of appending. Kept in the store so every process and host that serves an agent writes
  the same log, and a dream worker anywhere reads all of it.
- ``InjectedRepository``: which long-term entries each session's context was already given, so an entry is
  injected once per session however many processes serve it.

Invariants:
- The logs are append-only: a row is never changed. Rows leave only by ``clear`` and ``delete`` (the dream
  read them) and by retention (``trim``, ``drop_session``), which are telemetry caps, not memory deletes.
- Reads return rows in ``seq`` order (the order they were appended); ``since`` keeps ``at >= since``.
- Retention never removes a row appended after the caller looked: ``drop_session`` drops a session only
  when its last row is still the one the caller saw, and a trim counts only rows already there.
- Time is passed in; repositories never read a clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

LogName = Literal["conversation", "executions", "tool-calls"]
LOG_TABLES: dict[LogName, str] = {
    "conversation": "conversation_log",
    "executions": "execution_log",
    "tool-calls": "tool_call_log",
}


@dataclass(frozen=True, slots=True)
class LogRow:
    """One record of a log: who and when (the columns readers filter by) and the record itself.

    ``session_id`` is required in the conversation log (its rows are grouped by session) and optional in the
    others. ``seq`` is the store's order of appending (0 for a row not stored yet)."""

    agent_id: str
    session_id: str | None
    at: datetime
    record: dict[str, Any] = field(hash=False)
    seq: int = 0


@dataclass(frozen=True, slots=True)
class SessionWrites:
    """A session of a log as retention sees it: its last write and the ``seq`` of its last row."""

    session_id: str
    last_at: datetime
    last_seq: int


class ActivityLogRepository(Protocol):
    """The conversation, execution and tool-call logs (``LogName``), every agent's rows in one table each."""

    def append(self, log: LogName, rows: Sequence[LogRow]) -> None:
        """Append ``rows`` in order, in one transaction (the caller's when one is open). Raises
        ``StorageError`` and writes nothing when one cannot be stored."""
        ...

    def read(
        self,
        log: LogName,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
    ) -> list[LogRow]:
        """The rows of one agent (every agent's when None), of one session (every one when None), at or after
        ``since`` (all when None), in ``seq`` order."""
        ...

    def count(self, log: LogName) -> int:
        """How many rows the log holds."""
        ...

    def delete(self, log: LogName, seqs: Collection[int]) -> int:
        """Delete the rows with these ``seq``; returns how many went (unknown ones are skipped)."""
        ...

    def clear(self, log: LogName, *, agent_id: str | None = None, session_id: str | None = None) -> int:
        """Delete the rows of one agent and/or one session (every row when both are None); returns how many."""
        ...

    # -- retention
    def sessions(self, log: LogName) -> list[SessionWrites]:
        """Every session with a row in the log, by session id (code-point order)."""
        ...

    def drop_session(self, log: LogName, session: SessionWrites) -> int:
        """Delete every row of ``session.session_id`` if its last row is still ``session.last_seq`` (nothing
        was appended since it was read); returns the rows deleted (0: kept)."""
        ...

    def trim(self, log: LogName, keep: int, *, per_session: bool) -> int:
        """Keep the last ``keep`` rows of the log (of each session with ``per_session``), deleting the older
        ones; returns how many went. ``keep`` is at least 1."""
        ...


class InjectedRepository(Protocol):
    """The context builder's delta filter: the entries a session's context was given (seed 000: once per
    session). Rows belong to the session: purging the session removes them."""

    def injected(self, agent_id: str, session_id: str) -> set[str]:
        """The entry ids the session was given since its filter was last cleared."""
        ...

    def add_injected(self, agent_id: str, session_id: str, entry_ids: Collection[str], *, at: datetime) -> None:
        """Record that the session was given these entries (already recorded ones are kept). The session must
        exist (``Conflict`` otherwise)."""
        ...

    def forget_injected(self, agent_id: str, session_id: str) -> int:
        """Clear the session's filter (a fresh start); returns how many ids it held."""
        ...
