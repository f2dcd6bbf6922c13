"""Conversation memory (seed 000) with sessions (seed 004): the turn-by-turn history an agent replays into
each LLM request, per agent and session.

The live conversation of a session is its stored turns: the *retained* ones (the last
``max_turns_per_session``) and the *archive* (older turns evicted past retention, at most
``max_archived_turns_per_session``, oldest dropped first; 0 keeps none), which out-of-window recall reads.
``window`` replays the last ``max_llm_context_turns`` of it.

Invariants:
- Every argument is validated before the store is touched, so a rejected call changes nothing: a bad id,
  role or content is a ``ValidationError`` naming the field, an unknown or deleted session ``NotFound``.
- The archive belongs to the live conversation, not to the session id. A session starts afresh on its first
  turn, and on the first turn after it expired (no turn for ``session_idle_timeout_minutes``; 0: never
  expires): its previous turns, archive and summary are discarded first and ``started_at`` moves. An
  expired session's turns are never replayed or recalled, even before that next turn (``live``,
  ``window`` and ``retained`` are empty).
- One turn is one store transaction: the fresh start, the append, retention, the archive cap and (with
  ``auto_compact``) the extractive compaction commit together or not at all. No LLM call ever happens inside
  ``add_turn``: the LLM summary is made by ``compact`` (``reverie session compact``).
- Delete marks the session deleted (hidden from ``list``, its turns no longer read; its id cannot be reused
  until the purge); ``purge_deleted`` after the retention is the only hard delete of a session. ``clear``
  discards the turns, archive and summary and keeps the session.
- Every turn is also appended to the conversation log (``Store.logs``, by session: ``at``, ``role``,
  ``content``, ``agent``) that the dream reads and clears; every process and host serving the agent appends
  to the same log. The log is written after the turn commits; a log that cannot be written is logged and
  never fails the turn (the turns are the record).
"""

from __future__ import annotations

import builtins
import json
import logging
import secrets
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reverie.clock import Clock
from reverie.conversation.compaction import (
    SUMMARY_METHOD,
    CompactionResult,
    CompactionStatus,
    SessionCompactor,
    fresh_metadata,
    uncovered,
)
from reverie.core import filters, validate
from reverie.core.transcripts import record_key
from reverie.errors import Conflict, NotFound, ReverieError, ValidationError
from reverie.llm.base import LLM
from reverie.logs import StoredLog, validate_session_id
from reverie.storage.base import Store
from reverie.types import Page, Scope, SessionRecord, TurnCounts, TurnRecord
from reverie.views.plain import to_jsonable

log = logging.getLogger("reverie.conversation")

ROLES = ("user", "assistant", "system", "tool")
EXPORT_FORMAT = "reverie.session/1"
MAX_WINDOW = 10_000
PURGE_EVERY = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class ConversationConfig:
    """The knobs of conversation memory; the engine fills them from ``[conversation]``."""

    max_llm_context_turns: int = 20
    max_turns_per_session: int = 50
    max_archived_turns_per_session: int = 500
    session_idle_timeout_minutes: float = 1440
    max_turn_chars: int = 100_000
    compaction_threshold: int = 80
    compaction_keep_recent: int = 20
    auto_compact: bool = True
    deleted_retention_days: float = 90.0  # deleted sessions are purged this long after (memory's archive retention)

    def __post_init__(self) -> None:
        for name in ("max_llm_context_turns", "max_turns_per_session", "max_turn_chars", "compaction_threshold"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        for name in ("max_archived_turns_per_session", "session_idle_timeout_minutes", "compaction_keep_recent"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session and its turns: ``retained`` and ``archived`` as stored, ``live`` as read (0 once expired),
    ``expires_at`` (None: never), and the compaction state (``uncovered`` live turns the summary does not
    cover; ``summary_method``: ``extractive`` or ``llm``)."""

    session: SessionRecord
    retained: int
    archived: int
    live: int
    expired: bool
    expires_at: datetime | None
    uncovered: int
    needs_compaction: bool
    summary_method: str | None


def _turn_content(value: object, *, max_chars: int, allow_empty: bool) -> str:
    if not isinstance(value, str):
        raise ValidationError("content must be a string", field="content")
    if "\x00" in value:
        raise ValidationError("content contains a NUL character", field="content")
    if len(value) > max_chars:
        raise ValidationError(f"content is {len(value):,} characters; the maximum is {max_chars:,}", field="content")
    if not allow_empty and not value.strip():
        raise ValidationError("content is empty", field="content")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("content is not valid Unicode text (lone surrogate)", field="content") from None
    return value


def _tool_calls(value: object, *, max_chars: int) -> list[dict[str, Any]] | None:
    """A list of JSON objects (OpenAI's ``tool_calls``), copied; None for None or an empty list."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple):
        raise ValidationError("tool_calls must be a list of objects", field="tool_calls")
    if not all(isinstance(c, Mapping) and all(isinstance(k, str) for k in c) for c in value):
        raise ValidationError("each tool call must be an object with string keys", field="tool_calls")
    encoded = validate.json_text(list(value), field="tool_calls")  # the one check of caller JSON (depth, NUL, …)
    if len(encoded) > max_chars:
        raise ValidationError(f"tool_calls is longer than {max_chars:,} characters", field="tool_calls")
    calls: list[dict[str, Any]] = json.loads(encoded)
    return calls or None


def _window_size(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WINDOW:
        raise ValidationError(f"n must be a whole number from 1 to {MAX_WINDOW}", field="n")
    return value


class ConversationMemory:
    """Sessions and their turns for one store. Every method takes the caller's ``agent_id``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: ConversationConfig | None = None,
        *,
        log: StoredLog | None = None,
        llm: LLM | None = None,
        home: Path | None = None,
        on_activity: Callable[[Scope], None] | None = None,
        on_turn: Callable[[TurnRecord, str | None], None] | None = None,
    ) -> None:
        """``log``: the conversation log every turn is appended to (None: none). ``llm`` and ``home``: the
        LLM summary of ``compact`` and where ``session-compaction.md`` may override its prompt.
        ``on_activity`` is told the scope of every turn (the dream's activity gate); ``on_turn`` is given
        every recorded turn and the user it was with, after it commits (proactive memory's
        ``memorize_on_turn``)."""
        self._store = store
        self._clock = clock
        self.config = config or ConversationConfig()
        self._log = log
        self._on_activity = on_activity or (lambda _scope: None)
        self._on_turn = on_turn
        self._last_purge: datetime | None = None
        self._compactor = SessionCompactor(
            store,
            threshold=self.config.compaction_threshold,
            keep_recent=self.config.compaction_keep_recent,
            llm=llm,
            home=home,
        )

    # -- sessions ------------------------------------------------------------------------------------
    def create(
        self, session_id: str | None = None, *, name: str | None = None, agent_id: str = "default"
    ) -> SessionRecord:
        """A new session (an id is drawn when ``session_id`` is None). ``Conflict`` when the id is taken,
        including by a deleted session that the purge has not removed yet."""
        agent_id = validate.identifier(agent_id, name="agent_id")
        chosen = validate_session_id(session_id) if session_id is not None else None
        if name is not None:
            name = validate.identifier(name, name="name")
        now = self._clock.now()
        for _ in range(5):
            record = SessionRecord(
                agent_id, chosen or f"s-{secrets.token_hex(6)}", now, now, now, name=name, metadata={}
            )
            try:
                self._store.sessions.create(record)
                return record
            except Conflict:
                if chosen is not None:
                    raise Conflict(_taken(self._store.sessions.get(agent_id, chosen), chosen)) from None
        raise Conflict("could not draw an unused session id in 5 attempts")

    def list(self, agent_id: str = "default") -> builtins.list[SessionRecord]:
        """The agent's sessions (deleted ones hidden), most recently active first."""
        return self._store.sessions.list(validate.identifier(agent_id, name="agent_id"))

    def page(
        self, agent_id: str = "default", *, cursor: str | None = None, limit: int | None = None
    ) -> Page[SessionRecord]:
        """One page of the agent's sessions (deleted ones hidden), newest first (by creation), at most
        ``limit`` (1..1000, default 100) long; pass ``next_cursor`` back as ``cursor`` for the next page (None
        on the last). Keyset paging on (created_at, id), which no write moves: a walk sees every session that
        existed for the whole walk exactly once."""
        agent = validate.identifier(agent_id, name="agent_id")
        count = validate.limit(100 if limit is None else limit)
        return filters.keyset_page(
            lambda after, n: self._store.sessions.page(agent, after, n),
            cursor,
            count,
            filters.fingerprint("sessions", agent),
            lambda s: (s.created_at.isoformat(), s.session_id),
        )

    def get(self, session_id: str, *, agent_id: str = "default") -> SessionRecord:
        """The session; ``NotFound`` when unknown or deleted."""
        return self._session(agent_id, session_id)

    def info(self, session_id: str, *, agent_id: str = "default") -> SessionInfo:
        """The session with its turn counts, expiry and compaction state."""
        session = self._session(agent_id, session_id)
        counts = self._store.sessions.turn_counts(session.agent_id, session.session_id)
        expired = self._is_expired(session, self._clock.now())
        pending = 0 if expired else uncovered(session, counts)
        return SessionInfo(
            session=session,
            retained=counts.retained,
            archived=counts.archived,
            live=0 if expired else counts.retained + counts.archived,
            expired=expired,
            expires_at=self._expires_at(session),
            uncovered=pending,
            needs_compaction=pending > self.config.compaction_threshold,
            summary_method=session.metadata.get(SUMMARY_METHOD),
        )

    def expired(self, session_id: str, *, agent_id: str = "default") -> bool:
        """Whether the session went idle longer than ``session_idle_timeout_minutes``: its next turn starts
        it afresh, and until then its turns are not read."""
        return self._is_expired(self._session(agent_id, session_id), self._clock.now())

    def delete(self, session_id: str, *, agent_id: str = "default") -> None:
        """Mark the session deleted: hidden from ``list``, its turns no longer read; the purge removes it
        after the retention."""
        session = self._session(agent_id, session_id)
        if not self._store.sessions.mark_deleted(session.agent_id, session.session_id, self._clock.now()):
            raise NotFound(f"no session {session_id!r} for agent {agent_id!r}")  # deleted meanwhile

    def clear(self, session_id: str, *, agent_id: str = "default") -> int:
        """Discard the session's turns, archive and summary (the session stays); returns the turns discarded."""
        session = self._session(agent_id, session_id)
        with self._store.transaction():
            discarded = self._store.sessions.discard_turns(session.agent_id, session.session_id)
            self._store.sessions.update(_restarted(session, started_at=session.started_at))
        return discarded

    def export(self, session_id: str, *, agent_id: str = "default") -> dict[str, Any]:
        """The session and every live turn (archive included, in order) as plain JSON values."""
        session = self._session(agent_id, session_id)
        turns = self._live(session)
        return {
            "format": EXPORT_FORMAT,
            "session": to_jsonable(session),
            "expired": self._is_expired(session, self._clock.now()),
            "turns": [to_jsonable(t) for t in turns],
        }

    def purge_deleted(self) -> int:
        """Hard-delete sessions (every agent's) deleted longer than ``deleted_retention_days`` ago, with
        their turns; returns how many. A non-positive retention keeps them forever."""
        days = self.config.deleted_retention_days
        if days <= 0:
            return 0
        return self._store.sessions.purge_deleted(self._clock.now() - timedelta(days=days))

    def purge_job(self, now: datetime) -> None:
        """``purge_deleted`` at most once per ``PURGE_EVERY`` of ``now``: a job for the dream's serve loop."""
        if self._last_purge is None or now - self._last_purge >= PURGE_EVERY:
            self._last_purge = now
            purged = self.purge_deleted()
            if purged:
                log.info("purged %d deleted sessions", purged)

    # -- turns ---------------------------------------------------------------------------------------
    def add_turn(
        self,
        session_id: str,
        role: str,
        content: str,
        *,
        name: str | None = None,
        tool_call_id: str | None = None,
        tool_calls: builtins.list[dict[str, Any]] | None = None,
        create: bool = False,
        agent_id: str = "default",
        user_id: str | None = None,
    ) -> TurnRecord:
        """Append a turn to the session's live conversation and apply retention; returns the stored turn.

        ``role`` is ``user``, ``assistant``, ``system`` or ``tool``; ``tool_calls`` (OpenAI's list) only on an
        assistant turn, whose content may then be empty; ``tool_call_id`` only on a tool turn. An unknown
        session is ``NotFound`` unless ``create`` is true, which creates it (a deleted one stays a
        ``Conflict`` until the purge). A fresh start (the first turn, or the first after expiry) discards
        the previous turns first; see the module docstring. ``user_id``: the user the conversation is with; it
        is not stored with the turn, only told to proactive memory (``memorize_on_turn`` files what it learns
        about the user under that user).
        """
        agent_id = validate.identifier(agent_id, name="agent_id")
        if user_id is not None:
            user_id = validate.identifier(user_id, name="user_id")
        session_id = validate_session_id(session_id)
        if role not in ROLES:
            raise ValidationError(f"role must be one of {', '.join(ROLES)}; got {role!r}", field="role")
        if tool_calls is not None and role != "assistant":
            raise ValidationError("only an assistant turn carries tool_calls", field="tool_calls")
        if tool_call_id is not None and role != "tool":
            raise ValidationError("only a tool turn carries a tool_call_id", field="tool_call_id")
        calls = _tool_calls(tool_calls, max_chars=self.config.max_turn_chars)
        content = _turn_content(content, max_chars=self.config.max_turn_chars, allow_empty=calls is not None)
        if name is not None:
            name = validate.identifier(name, name="name")
        if tool_call_id is not None:
            tool_call_id = validate.identifier(tool_call_id, name="tool_call_id")
        now = self._clock.now()
        draft = TurnRecord(agent_id, session_id, 0, role, content, now, name, tool_call_id, calls)
        with self._store.transaction():
            session = self._session_for_turn(agent_id, session_id, now, create=create)
            turn = self._append(session, draft, now)
        self._after_turn(turn)
        if self._on_turn is not None:
            self._on_turn(turn, user_id)
        return turn

    def _session_for_turn(self, agent_id: str, session_id: str, now: datetime, *, create: bool) -> SessionRecord:
        found = self._store.sessions.get(agent_id, session_id)
        if found is not None and found.deleted_at is None:
            return found
        if not create:
            raise NotFound(f"no session {session_id!r} for agent {agent_id!r} (pass create=True to start one)")
        if found is not None:
            raise Conflict(_taken(found, session_id))
        record = SessionRecord(agent_id, session_id, now, now, now, metadata={})
        self._store.sessions.create(record)
        return record

    def _append(self, session: SessionRecord, draft: TurnRecord, now: datetime) -> TurnRecord:
        """Inside the turn's transaction: fresh start, append, retention, archive cap, auto compaction."""
        repo, cfg = self._store.sessions, self.config
        agent_id, session_id = session.agent_id, session.session_id
        counts = repo.turn_counts(agent_id, session_id)
        if counts.last_index == 0 or self._is_expired(session, now):
            repo.discard_turns(agent_id, session_id)
            session, counts = _restarted(session, started_at=now), TurnCounts()
        turn = replace(draft, index=counts.last_index + 1)
        repo.append_turn(turn)
        if counts.retained + 1 > cfg.max_turns_per_session:
            repo.archive_turns_before(agent_id, session_id, turn.index - cfg.max_turns_per_session + 1)
            repo.drop_archived_beyond(agent_id, session_id, cfg.max_archived_turns_per_session)
        session = replace(session, last_active_at=now)
        if cfg.auto_compact:
            session = self._compactor.compact_inline(session)
        repo.update(session)
        return turn

    def _after_turn(self, turn: TurnRecord) -> None:
        self._on_activity(Scope(agent_id=turn.agent_id, session_id=turn.session_id))
        if self._log is None:
            return
        record = {"at": to_jsonable(turn.at), "role": turn.role, "content": turn.content, "agent": turn.agent_id}
        try:
            self._log.append(turn.agent_id, turn.session_id, turn.at, record)
        except ReverieError as exc:  # the turn is stored; the log is the dream's copy
            log.warning("could not append turn %d of %s to the conversation log: %s", turn.index, turn.session_id, exc)

    # -- reading -------------------------------------------------------------------------------------
    def window(self, session_id: str, n: int | None = None, *, agent_id: str = "default") -> builtins.list[TurnRecord]:
        """The last ``n`` (default ``max_llm_context_turns``) turns of the live conversation, in order: what
        is replayed into the next LLM request. Empty for an expired session."""
        size = self.config.max_llm_context_turns if n is None else _window_size(n)
        session = self._session(agent_id, session_id)
        if self._is_expired(session, self._clock.now()):
            return []
        return self._store.sessions.turns(session.agent_id, session.session_id, last=size)

    def live(self, session_id: str, *, agent_id: str = "default") -> builtins.list[TurnRecord]:
        """The whole live conversation, archive then retained turns, in order (the out-of-window recall
        corpus). Empty for an expired session: its archive is never recalled."""
        return self._live(self._session(agent_id, session_id))

    def retained(self, session_id: str, *, agent_id: str = "default") -> builtins.list[TurnRecord]:
        """The retained turns (the last ``max_turns_per_session``), in order; empty for an expired session."""
        session = self._session(agent_id, session_id)
        if self._is_expired(session, self._clock.now()):
            return []
        return self._store.sessions.turns(session.agent_id, session.session_id, archived=False)

    def _live(self, session: SessionRecord) -> builtins.list[TurnRecord]:
        if self._is_expired(session, self._clock.now()):
            return []
        return self._store.sessions.turns(session.agent_id, session.session_id)

    # -- the conversation log ------------------------------------------------------------------------
    def log_records(self, *, agent_id: str | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(session_id, record)`` for every turn in the conversation log (of one agent, or every agent
        when None), session by session, oldest first."""
        if agent_id is not None:
            agent_id = validate.identifier(agent_id, name="agent_id")
        if self._log is None:
            return iter(())
        rows = sorted(self._log.rows(agent_id=agent_id), key=lambda row: row.session_id or "")  # stable: in order
        return ((row.session_id or "", row.record) for row in rows)

    def clear_log(self, *, session_id: str | None = None) -> None:
        """Empty the conversation log (one session's records, or all of it), as the dream does once it read it."""
        if session_id is not None:
            session_id = validate_session_id(session_id)
        if self._log is not None:
            self._log.clear(session_id=session_id)

    def clear_agent_log(self, agent_id: str, *, keys: Collection[str] | None = None) -> int:
        """Remove one agent's records from the conversation log, leaving other agents' records of the same
        session ids. With ``keys`` (``core.transcripts.record_key`` of records read earlier) only those records
        go, so a turn logged after the read survives. Returns how many records went."""
        agent_id = validate.identifier(agent_id, name="agent_id")
        if self._log is None:
            return 0
        if keys is None:
            return self._log.clear(agent_id=agent_id)
        wanted = frozenset(keys)
        return self._log.delete([r.seq for r in self._log.rows(agent_id=agent_id) if record_key(r.record) in wanted])

    # -- compaction ----------------------------------------------------------------------------------
    def compact(self, session_id: str, *, force: bool = False, agent_id: str = "default") -> CompactionResult:
        """Summarise the session's older turns (see ``reverie.conversation.compaction``): when more than
        ``compaction_threshold`` are not covered, or ``force``, or when an LLM is configured and the current
        summary is extractive (it is then replaced by the LLM's). An expired session is left alone."""
        session = self._session(agent_id, session_id)
        if self._is_expired(session, self._clock.now()):
            return CompactionResult(session.session_id, False, reason="the session expired; its turns are not read")
        return self._compactor.compact(session, force=force)

    def compact_all(self, agent_id: str = "default", *, force: bool = False) -> builtins.list[CompactionResult]:
        """``compact`` every session of the agent that is not expired, most recently active first."""
        now = self._clock.now()
        sessions = [s for s in self.list(agent_id) if not self._is_expired(s, now)]
        return [self._compactor.compact(s, force=force) for s in sessions]

    def compaction_status(self, agent_id: str = "default") -> builtins.list[CompactionStatus]:
        """Per session: live messages, how many the summary does not cover, the threshold, and whether it
        needs compaction."""
        now = self._clock.now()
        return [self._compactor.status(s, expired=self._is_expired(s, now)) for s in self.list(agent_id)]

    # -- helpers -------------------------------------------------------------------------------------
    def _session(self, agent_id: str, session_id: str) -> SessionRecord:
        agent_id = validate.identifier(agent_id, name="agent_id")
        session_id = validate_session_id(session_id)
        found = self._store.sessions.get(agent_id, session_id)
        if found is None or found.deleted_at is not None:
            raise NotFound(f"no session {session_id!r} for agent {agent_id!r}")
        return found

    def _expires_at(self, session: SessionRecord) -> datetime | None:
        minutes = self.config.session_idle_timeout_minutes
        return None if minutes <= 0 else session.last_active_at + timedelta(minutes=minutes)

    def _is_expired(self, session: SessionRecord, now: datetime) -> bool:
        expires = self._expires_at(session)
        return expires is not None and now > expires


def _restarted(session: SessionRecord, *, started_at: datetime) -> SessionRecord:
    """The session with no summary (its turns were discarded), starting at ``started_at``."""
    return replace(
        session, started_at=started_at, summary=None, compacted_through=0, metadata=fresh_metadata(session.metadata)
    )


def _taken(found: SessionRecord | None, session_id: str) -> str:
    if found is not None and found.deleted_at is not None:
        return f"session {session_id!r} was deleted; its id is free again once the purge removes it"
    return f"session {session_id!r} already exists"
