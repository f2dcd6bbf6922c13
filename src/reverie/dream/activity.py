"""Client activity, recorded in the store so every process sees it: LibreFang's min_sessions gate counts the
sessions active since an agent's last dream, and ai-memory's idle trigger waits for a quiet spell.

Invariants: recording is cheap and never fails a caller. Each (agent, session) is written at most once per
``every`` (clock time) by this process, and a store error is logged and dropped. Work done inside
``unobserved()`` (the auto-dream's own tool calls) is not client activity: it must neither open the session gate
nor cancel, or re-arm, an idle-triggered dream, nor be written to the tool-call log the tool-success pass
learns from (``observed()``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta

from reverie.clock import Clock
from reverie.errors import ReverieError
from reverie.storage.base import DreamRepository
from reverie.types import Scope

log = logging.getLogger("reverie.dream")
_UNOBSERVED: ContextVar[bool] = ContextVar("reverie_activity_unobserved", default=False)


@contextmanager
def unobserved() -> Iterator[None]:
    """Nothing noted inside this block (in this thread or task) counts as client activity."""
    token = _UNOBSERVED.set(True)
    try:
        yield
    finally:
        _UNOBSERVED.reset(token)


def observed() -> bool:
    """Whether work done here is a client's (False inside ``unobserved()``: the auto-dream's own calls)."""
    return not _UNOBSERVED.get()


class ActivityTracker:
    """Notes that a scope was used (a save, a search, a read)."""

    def __init__(self, repository: DreamRepository, clock: Clock, *, every: timedelta = timedelta(seconds=30)) -> None:
        self._repo = repository
        self._clock = clock
        self._every = every
        self._written: dict[tuple[str, str], datetime] = {}
        self._lock = threading.Lock()

    def note(self, scope: Scope) -> None:
        if not observed():
            return
        now = self._clock.now()
        key = (scope.agent_id, scope.session_id or "")
        with self._lock:
            last = self._written.get(key)
            if last is not None and now - last < self._every:
                return
            self._written[key] = now
        try:
            self._repo.note_activity(key[0], key[1], now)
        except ReverieError as exc:  # activity feeds a gate; a busy store must not fail the user's call
            log.warning("could not record activity: %s", exc)
