"""Changed beliefs: a newer entry that contradicts an older one becomes the current belief; the older is kept.

Every place that decides whether two texts say the same thing (save-time deduplication, the semantic fold
after embedding, the forget sweep's cold fold, ``memory_semantic_consolidate``, dream consolidation) asks
``core.stance`` too. When two texts about the same thing differ in stance, they are never folded or merged
into one. With ``memory.on_contradiction = "supersede"`` (the default) the newer one is the current belief:
the older entry gets ``superseded_by`` (the newer id) and ``metadata.validTo`` (when it stopped holding) and
``metadata.contradiction`` (how the stances differ); the newer lists the older under ``metadata.supersedes``.
With ``"keep_both"`` both stay current and nothing is written.

Invariants: the older entry is never archived by this and keeps its text and versions (the change is a
versioned ``contradicted`` write); search leaves it out unless asked (``include_superseded``); the forget
sweep never ages it out and so the purge never removes it; it is readable by id and in history. Writes happen
in the caller's transaction.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Final, Literal

from reverie.core.stance import StanceDifference
from reverie.storage.base import Store
from reverie.types import SUPERSEDES, VALID_TO, Change, Contradiction, MemoryEntry

SUPERSEDE: Final = "supersede"
KEEP_BOTH: Final = "keep_both"
ContradictionMode = Literal["supersede", "keep_both"]  # memory.on_contradiction
ON_CONTRADICTION = (SUPERSEDE, KEEP_BOTH)
CONTRADICTION = "contradiction"  # metadata of the older entry: how the stances differ, and what replaced it


def newness(entry: MemoryEntry) -> tuple[datetime, datetime, str]:
    """Which of two entries is the newer statement: last asserted (``last_seen_at`` moves with every
    restatement), then saved, then id (deterministic)."""
    return entry.last_seen_at, entry.created_at, entry.id


def older_newer(a: MemoryEntry, b: MemoryEntry) -> tuple[MemoryEntry, MemoryEntry]:
    return (a, b) if newness(a) <= newness(b) else (b, a)


def with_supersedes(entry: MemoryEntry, older_id: str) -> MemoryEntry:
    """``entry`` listing ``older_id`` among the entries it superseded."""
    listed = entry.metadata.get(SUPERSEDES)
    ids = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else []
    if older_id in ids:
        return entry
    return replace(entry, metadata={**entry.metadata, SUPERSEDES: [*ids, older_id]})


def supersede_older(
    store: Store, a: MemoryEntry, b: MemoryEntry, difference: StanceDifference, now: datetime, *, mode: str
) -> Contradiction | None:
    """Two stored entries that differ in stance, as they are now: the older superseded by the newer
    (``newness``). None when either is no longer current (archived, superseded, gone)."""
    first, second = store.facts.get(a.id, a.scope), store.facts.get(b.id, b.scope)
    if first is None or second is None or not (first.current and second.current):
        return None
    older, newer = older_newer(first, second)
    told = difference if older is first else difference.swapped()  # ``difference`` reads a against b
    return supersede(store, older, newer, told, now, mode=mode)


def contradiction(older: MemoryEntry, difference: StanceDifference, *, superseded: bool) -> Contradiction:
    return Contradiction(older.id, older.content, difference.kind, difference.first, difference.second, superseded)


def supersede(
    store: Store,
    older: MemoryEntry,
    newer: MemoryEntry,
    difference: StanceDifference,
    now: datetime,
    *,
    mode: str,
    newer_stored: bool = True,
) -> Contradiction:
    """Record that ``newer`` contradicts ``older`` (see the module docstring); ``difference`` reads the older
    text against the newer (its ``first`` side is the older's). ``newer_stored``: write the
    newer entry's ``supersedes`` list too (False when the caller saves the newer entry itself, already
    carrying it: ``with_supersedes``). Returns what the caller is told."""
    if mode != SUPERSEDE:
        return contradiction(older, difference, superseded=False)
    metadata = {
        **older.metadata,
        VALID_TO: now.isoformat(),
        CONTRADICTION: {
            "by": newer.id,
            "kind": difference.kind,
            "earlier": list(difference.first),
            "later": list(difference.second),
        },
    }
    store.facts.write(replace(older, superseded_by=newer.id, metadata=metadata), change=Change.CONTRADICTED, at=now)
    if newer_stored:
        marked = with_supersedes(newer, older.id)
        if marked is not newer:
            store.facts.write(marked, change=Change.HOUSEKEEPING, at=now)
    return contradiction(older, difference, superseded=True)
