"""The accesses proactive memory counts (seed 004: ``auto_retrieve`` counts an access of every memory it
returns, which raises its confidence and restarts its decay), noted in memory and written in batches, as
long-term memory writes its reads (``memory.aging.Aging.note_reads``): a context build writes nothing.

Invariants:
- ``note`` never touches the store: it returns each entry as it reads with its accesses so far (the stored
  count plus the waiting ones, accessed now, its confidence recomputed), so a caller sees what a flush writes.
- ``flush`` writes every waiting access in one transaction (one commit), reading the entries as they are then
  (a save or a sweep in between is kept) and skipping those no longer live; writes are housekeeping (no
  version row). It runs on a background thread once ``FLUSH_AT`` entries wait, before every upkeep of the
  agent's memories (the dream's decay sweep, consolidation, listing) and when the engine closes. Flushes run
  one at a time.
- A crash loses at most the accesses not flushed yet: a memory then looks less used, never anything else.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from reverie.clock import Clock
from reverie.core.proactive import META, current_confidence, state_of
from reverie.errors import ReverieError
from reverie.storage.base import FactFilter, Store
from reverie.types import Change, MemoryEntry, Scope

log = logging.getLogger("reverie.proactive")


@dataclass(frozen=True, slots=True)
class _Waiting:
    scope: Scope
    count: int
    at: datetime  # the last access


class AccessBatch:
    """Accesses of proactive memories waiting to be written (see the module docstring)."""

    FLUSH_AT = 256

    def __init__(self, store: Store, clock: Clock, rate: float) -> None:
        """``rate``: the confidence decay rate a touched entry's confidence is recomputed with."""
        self._store = store
        self._clock = clock
        self._rate = rate
        self._waiting: dict[str, _Waiting] = {}
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time
        self._flusher: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Entries with accesses not written yet."""
        with self._lock:
            return len(self._waiting)

    def note(self, entries: Sequence[MemoryEntry]) -> dict[str, MemoryEntry]:
        """Count an access of each proactive entry now; returns them by id as a flush will write them."""
        now = self._clock.now()
        shown: dict[str, MemoryEntry] = {}
        with self._lock:
            for entry in entries:
                state = state_of(entry.metadata)
                if state is None:
                    continue
                before = self._waiting.get(entry.id)
                count = 1 if before is None else before.count + 1
                self._waiting[entry.id] = _Waiting(entry.scope, count, now)
                state = replace(state, access_count=state.access_count + count, accessed_at=now)
                shown[entry.id] = replace(
                    entry,
                    confidence=current_confidence(state, now, self._rate),
                    metadata={**entry.metadata, META: state.as_metadata()},
                )
            if len(self._waiting) >= self.FLUSH_AT and (self._flusher is None or not self._flusher.is_alive()):
                # On a thread of its own: the context build that fills the batch must not pay for writing it.
                self._flusher = threading.Thread(target=self._flush_quietly, name="reverie-accesses", daemon=True)
                self._flusher.start()
        return shown

    def _flush_quietly(self) -> None:
        try:
            self.flush()
        except ReverieError as exc:  # the accesses only make memories look more used: losing them loses nothing else
            log.warning("could not record proactive memory accesses: %s", exc)

    def flush(self) -> int:
        """Write the waiting accesses in one transaction; returns how many entries were updated."""
        with self._flush_lock:
            with self._lock:
                waiting, self._waiting = self._waiting, {}
            if not waiting:
                return 0
            now = self._clock.now()
            scopes: dict[Scope, list[str]] = {}
            for entry_id, access in waiting.items():
                scopes.setdefault(access.scope, []).append(entry_id)
            written = 0
            with self._store.transaction():
                for scope, ids in scopes.items():
                    for current in self._store.facts.get_many(ids, FactFilter(scope=scope, now=now)):
                        written += self._write(current, waiting[current.id], now)
            return written

    def _write(self, current: MemoryEntry, access: _Waiting, now: datetime) -> int:
        state = state_of(current.metadata)
        if state is None:
            return 0
        last = access.at if state.accessed_at is None else max(access.at, state.accessed_at)
        state = replace(state, access_count=state.access_count + access.count, accessed_at=last)
        touched = replace(
            current,
            confidence=current_confidence(state, now, self._rate),
            metadata={**current.metadata, META: state.as_metadata()},
        )
        self._store.facts.write(touched, change=Change.HOUSEKEEPING, at=now)
        return 1
