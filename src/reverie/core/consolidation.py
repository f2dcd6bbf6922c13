"""The host's side of a consolidation merge (seeds 000 and 001), as pure functions: the review fingerprint,
the temporal arithmetic of a merge, the high-value floor, and how an entry is shown to the model.

Invariants:
- The review fingerprint covers what a write path changes (content, category, tags, reinforcement count),
  never what housekeeping changes (importance decay, reads, ``updated_at``): a reinforcement, an edit or a
  prior merge re-opens an entry for review; a decay pass does not.
- Merge arithmetic is the host's, never the model's: ``created_at`` is the earliest of the sources,
  ``last_seen_at`` the latest (never "now"), ``reinforcement_count`` the sum; subject-time keys merge by
  ``core.subject_time`` and every other metadata key is dropped (entry-scoped, ambiguous across merges).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from reverie.core.subject_time import (
    SUBJECT_TIME,
    SUBJECT_TIME_END,
    SUBJECT_TIME_KEYS,
    SUBJECT_TIME_START,
    merge_subject_time,
)
from reverie.types import MemoryEntry, Tier

REVIEWED_HASH = "consolidationReviewedHash"
REJECTED_CLUSTER = "consolidationRejectedCluster"
REJECTED_AT = "consolidationRejectedAt"
MERGED_FROM = "mergedFrom"
MERGED_AT = "mergedAt"

# The more durable tier wins a merge: a fact seen once as an episode and once as knowledge is knowledge.
_DURABILITY = {Tier.WORKING: 0, Tier.EPISODIC: 1, Tier.SEMANTIC: 2, Tier.PROCEDURAL: 3}


def review_fingerprint(entry: MemoryEntry) -> str:
    """The content fingerprint a review stamps into ``metadata.consolidationReviewedHash``."""
    payload = json.dumps(
        [entry.content, entry.category, sorted(entry.tags), entry.reinforcement_count], ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def is_reviewed(entry: MemoryEntry) -> bool:
    """True when the entry was reviewed and has not changed since (by its fingerprint)."""
    return entry.metadata.get(REVIEWED_HASH) == review_fingerprint(entry)


def is_high_value(entry: MemoryEntry, *, importance: float, reinforcement: int) -> bool:
    """The high-value floor: may be merged, never pruned as ephemeral (pinned entries count as high-value)."""
    return entry.pinned or entry.importance >= importance or entry.reinforcement_count >= reinforcement


@dataclass(frozen=True, slots=True)
class MergedFields:
    """What the host computes for a merged entry from its sources."""

    created_at: datetime
    last_seen_at: datetime
    reinforcement_count: int
    importance: float
    tier: Tier
    subject_time: dict[str, str]
    expires_at: datetime | None


def merged_fields(sources: Sequence[MemoryEntry], *, importance: float | None = None) -> MergedFields:
    """The temporal arithmetic of a merge. ``importance``: the model's, else the highest of the sources.
    An expiry survives only when every source expires (then the latest): one durable source keeps the fact."""
    if not sources:
        raise ValueError("a merge needs at least one source")
    expiries = [s.expires_at for s in sources]
    return MergedFields(
        created_at=min(s.created_at for s in sources),
        last_seen_at=max(s.last_seen_at for s in sources),
        reinforcement_count=sum(s.reinforcement_count for s in sources),
        importance=max(s.importance for s in sources) if importance is None else importance,
        tier=max((s.tier for s in sources), key=lambda tier: _DURABILITY[tier]),
        subject_time=merge_subject_time([s.metadata for s in sources]),
        expires_at=None if any(e is None for e in expiries) else max(e for e in expiries if e is not None),
    )


def absorbed(newest: MemoryEntry, retired: Sequence[MemoryEntry], now: datetime) -> MemoryEntry:
    """``newest`` after absorbing the ``retired`` duplicates archived into it: the merge arithmetic
    (``merged_fields``), the union of tags, the merged subject time, and ``metadata.mergedFrom`` / ``mergedAt``;
    its text and source do not change. Shared by every merge that keeps one of its entries (the agent's
    memory_semantic_consolidate, proactive memory's auto-consolidation)."""
    fields = merged_fields([newest, *retired])
    tags = tuple(dict.fromkeys([*newest.tags, *(t for e in retired for t in e.tags)]))
    metadata = {k: v for k, v in newest.metadata.items() if k not in SUBJECT_TIME_KEYS}
    metadata.update(fields.subject_time)
    earlier = metadata.get(MERGED_FROM)
    sources = [i for i in earlier if isinstance(i, str)] if isinstance(earlier, list) else []
    metadata[MERGED_FROM] = list(dict.fromkeys([*sources, *(e.id for e in retired)]))
    metadata[MERGED_AT] = now.isoformat()
    return replace(
        newest,
        created_at=fields.created_at,
        last_seen_at=fields.last_seen_at,
        reinforcement_count=fields.reinforcement_count,
        importance=fields.importance,
        tier=fields.tier,
        expires_at=fields.expires_at,
        tags=tags,
        metadata=metadata,
    )


def subject_label(metadata: dict[str, Any]) -> str | None:
    """``subject=`` as shown to the model: the point, or ``start..end`` (an open bound left empty)."""
    point = metadata.get(SUBJECT_TIME)
    if isinstance(point, str | int) and str(point):
        return str(point)
    start, end = metadata.get(SUBJECT_TIME_START), metadata.get(SUBJECT_TIME_END)
    if start is None and end is None:
        return None
    return f"{start or ''}..{end or ''}"


RELATED_NOTE = "related=merge-only"


def render_entry(position: int, entry: MemoryEntry, *, note: str | None = None) -> str:
    """One entry as the consolidation prompt shows it: a header line with its temporal context (and
    ``note``, e.g. ``related=merge-only``), then its content, every line indented four spaces."""
    parts = [f"[{position}] id={entry.id}", f"category={entry.category}"]
    if entry.tags:
        parts.append("tags=" + ",".join(entry.tags))
    parts.append(f"importance={entry.importance:.2f}")
    parts.append(f"first={entry.created_at.date().isoformat()}")
    parts.append(f"last={entry.last_seen_at.date().isoformat()}")
    parts.append(f"reinforced={entry.reinforcement_count}×")
    subject = subject_label(entry.metadata)
    if subject:
        parts.append(f"subject={subject}")
    if entry.source:
        parts.append(f"source={entry.source}")
    if note:
        parts.append(note)
    body = "\n".join("    " + line for line in entry.content.splitlines() or [""])
    return " ".join(parts) + "\n" + body


def render_entries(entries: Sequence[MemoryEntry], *, related: Collection[str] = ()) -> str:
    """``## Entries (n)`` and every entry, numbered from 1; ids in ``related`` carry ``related=merge-only``."""
    blocks = [render_entry(i, e, note=RELATED_NOTE if e.id in related else None) for i, e in enumerate(entries, 1)]
    return f"## Entries ({len(entries)})\n" + "\n".join(blocks)


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines() or [""])


def corpus_fingerprint(parts: Sequence[str]) -> str:
    """A change-gate fingerprint of the corpus a pass would describe (order-insensitive)."""
    digest = hashlib.sha256()
    for part in sorted(parts):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
