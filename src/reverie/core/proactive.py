"""Proactive memory's arithmetic (seed 004, "Proactive Memory"), pure: scopes, confidence decay, the
duplicate ladder of auto-consolidation, the per-agent cap, the fusion of the agent's and the user's recall,
and the host's check of an LLM's proposed memories.

Invariants:
- Decay never raises confidence above 1 and never applies to user-level memory (the caller decides which
  entries it sweeps; ``decayed_confidence`` is the formula only). An entry touched within the last day is
  not decayed: ``days_since_access`` counts as 0 then, so a read restores ``base x boost``.
- The duplicate ladder compares two memories of the same group (the exact scope) only: substring containment
  first, then cosine when both have vectors, else word Jaccard. A cluster keeps its most recently created
  member; each other member joins the cluster of the newest member it duplicates, compared with that member
  only (no chaining through a third), so an entry is in at most one cluster.
- The cap archives the lowest-confidence entries first, the oldest among equals (ids break ties), never more
  than the excess.
- Everything is deterministic: the same input gives the same output, whatever its order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from reverie.core.dedup import jaccard
from reverie.core.stance import stance_either_way

CATEGORIES = (  # the defaults auto_memorize extracts (seed 004); configurable
    "communication_style",
    "preference",
    "expertise",
    "work_style",
    "project_context",
    "personal_detail",
    "frustration",
)
TAG = "proactive"  # every proactive entry carries this tag
META = "proactive"  # and its bookkeeping under metadata["proactive"]
USER, AGENT, SESSION = "user", "agent", "session"
KINDS = (USER, AGENT, SESSION)  # user_memory, agent_memory, session_memory
STALE_AFTER_DAYS = 1.0  # seed 004: decay applies to memories not accessed for more than a day
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.): damps the weight of the top ranks
MAX_MEMORIES_PER_ANSWER = 20  # an LLM answer proposing more is cut to this many
MAX_MEMORY_CHARS = 1000  # a proposed memory longer than this is dropped: a memory is one short fact
_NON_WORD = re.compile(r"[^\w']+")


def effective_kind(kind: str, *, user_id: str | None, session_id: str | None) -> str:
    """The scope a memory is filed under: ``user`` needs a user id and ``session`` a session id; without
    one, the memory is the agent's (``agent``). Raises ``ValueError`` for an unknown kind."""
    if kind not in KINDS:
        raise ValueError(f"scope must be one of {', '.join(KINDS)}, got {kind!r}")
    if (kind == USER and user_id is None) or (kind == SESSION and session_id is None):
        return AGENT
    return kind


def decayed_confidence(base: float, *, days_since_access: float, access_count: int, rate: float) -> float:
    """``min(base x e^(-rate x days) x (1 + log2(max(access_count, 1))), 1)``, with ``days`` taken as 0 while
    the memory was accessed within ``STALE_AFTER_DAYS`` (seed 004's decay and its access boost)."""
    if not 0.0 <= base <= 1.0 or math.isnan(base):
        raise ValueError(f"base confidence must be between 0 and 1, got {base!r}")
    if rate < 0 or access_count < 0:
        raise ValueError("rate and access_count must not be negative")
    days = days_since_access if days_since_access > STALE_AFTER_DAYS else 0.0
    boost = 1.0 + math.log2(max(access_count, 1))
    return min(base * math.exp(-rate * days) * boost, 1.0)


# -- auto-consolidation ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Candidate:
    """One live memory as the duplicate ladder sees it. ``group``: only members of one group are compared
    (the entry's exact scope). ``vector``: its stored embedding or None."""

    id: str
    group: Hashable
    text: str
    created_at: datetime
    vector: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Merge:
    """A cluster of duplicates: ``keep`` (the most recently created) and the others, newest first, each
    with the rung of the ladder that matched it (``substring``, ``cosine`` or ``jaccard``)."""

    keep: str
    archive: tuple[str, ...]
    rungs: tuple[str, ...]


def normalised(text: str) -> str:
    """Text as containment compares it: case-folded words (letters, digits, apostrophes) joined by one space;
    punctuation and spacing do not count."""
    return _NON_WORD.sub(" ", text.casefold()).strip()


def cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float | None:
    """Cosine of two vectors, or None when they cannot be compared (other lengths, zero or non-finite)."""
    if a.shape != b.shape:
        return None
    left, right = a.astype(np.float64), b.astype(np.float64)
    norms = float(np.linalg.norm(left)) * float(np.linalg.norm(right))
    if not math.isfinite(norms) or norms == 0.0:
        return None
    return float(np.dot(left, right)) / norms


def duplicate_rung(a: Candidate, b: Candidate, *, cosine_threshold: float, jaccard_threshold: float) -> str | None:
    """The rung of the ladder on which ``a`` and ``b`` are duplicates, or None: ``substring`` when either's
    words contain the other's as a run (exact, superset or subset; ``normalised``); else ``cosine`` >= the
    threshold when both have comparable vectors; else, without vectors, ``jaccard`` of their content words
    >= the threshold. Two texts that differ in stance (``core.stance``: "likes" against "dislikes", a
    negation, a flipped comparison, a moved time) are never duplicates, however close."""
    if stance_either_way(a.text, b.text) is not None:
        return None
    left, right = f" {normalised(a.text)} ", f" {normalised(b.text)} "
    if left.strip() and right.strip() and (left in right or right in left):  # whole words only: "tea" is not "teas"
        return "substring"
    if a.vector is not None and b.vector is not None:
        value = cosine(a.vector, b.vector)
        if value is not None:
            return "cosine" if value >= cosine_threshold else None
    return "jaccard" if jaccard(a.text, b.text) >= jaccard_threshold else None


def duplicate_clusters(
    candidates: Iterable[Candidate], *, cosine_threshold: float, jaccard_threshold: float
) -> list[Merge]:
    """The clusters of duplicates among ``candidates``, newest keeper first (see the module's invariants).
    Ids must be unique (``ValueError``)."""
    ordered = sorted(candidates, key=lambda c: (c.created_at, c.id), reverse=True)
    if len({c.id for c in ordered}) != len(ordered):
        raise ValueError("candidate ids must be unique")
    placed: set[str] = set()
    merges: list[Merge] = []
    for position, keeper in enumerate(ordered):
        if keeper.id in placed:
            continue
        placed.add(keeper.id)
        members: list[tuple[str, str]] = []
        for other in ordered[position + 1 :]:
            if other.id in placed or other.group != keeper.group:
                continue
            rung = duplicate_rung(keeper, other, cosine_threshold=cosine_threshold, jaccard_threshold=jaccard_threshold)
            if rung is not None:
                members.append((other.id, rung))
                placed.add(other.id)
        if members:
            merges.append(Merge(keeper.id, tuple(m[0] for m in members), tuple(m[1] for m in members)))
    return merges


# -- the cap -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CapRow:
    id: str
    confidence: float
    created_at: datetime


def over_cap(rows: Sequence[CapRow], cap: int) -> list[str]:
    """The ids to archive so that at most ``cap`` remain: the lowest confidence first, then the oldest."""
    if cap < 0:
        raise ValueError("cap must not be negative")
    excess = len(rows) - cap
    if excess <= 0:
        return []
    weakest = sorted(rows, key=lambda r: (r.confidence, r.created_at, r.id))
    return [r.id for r in weakest[:excess]]


# -- retrieval -----------------------------------------------------------------------------------------------
def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> list[tuple[str, float]]:
    """Ids of several rankings fused by reciprocal rank (sum of ``1 / (k + rank)``, rank from 1), best first;
    ties keep the order of first appearance (the first ranking's first)."""
    scores: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for which, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            first.setdefault(item, (rank, which))
    return sorted(scores.items(), key=lambda pair: (-pair[1], first[pair[0]]))


# -- the LLM's proposals ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Proposed:
    """One memory to save: its text, category, scope kind (``user``/``agent``/``session``) and confidence."""

    content: str
    category: str
    kind: str
    confidence: float


def proposals(items: Sequence[Any], categories: Sequence[str]) -> tuple[list[Proposed], int]:
    """The well-formed memories among an LLM's ``memories`` items, and how many were dropped. An item is
    kept when it is an object with a non-empty ``content`` string (at most ``MAX_MEMORY_CHARS``), a
    ``category`` among ``categories``, a ``scope`` among ``KINDS`` (default ``user``) and a ``confidence``
    number in [0, 1] (default 0.7); at most ``MAX_MEMORIES_PER_ANSWER`` are kept."""
    kept: list[Proposed] = []
    dropped = 0
    allowed = set(categories)
    for item in items:
        found = _proposed(item, allowed)
        if found is None or len(kept) >= MAX_MEMORIES_PER_ANSWER:
            dropped += 1
        else:
            kept.append(found)
    return kept, dropped


def _proposed(item: object, allowed: set[str]) -> Proposed | None:
    if not isinstance(item, Mapping):
        return None
    content, category = item.get("content"), item.get("category")
    kind, confidence = item.get("scope", USER), item.get("confidence", 0.7)
    if not isinstance(content, str) or not content.strip() or len(content) > MAX_MEMORY_CHARS:
        return None
    if not isinstance(category, str) or category not in allowed or kind not in KINDS:
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        return None
    return Proposed(" ".join(content.split()), category, str(kind), float(confidence))


# -- the bookkeeping of an entry ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class State:
    """``metadata["proactive"]`` of an entry: its scope kind, the confidence it was saved with, how often
    auto_retrieve returned it and when last (``accessed_at``; the save counts as the first touch)."""

    kind: str
    base: float
    access_count: int
    accessed_at: datetime | None

    def as_metadata(self) -> dict[str, Any]:
        return {
            "scope": self.kind,
            "base_confidence": self.base,
            "access_count": self.access_count,
            "accessed_at": None if self.accessed_at is None else self.accessed_at.isoformat(),
        }


def state_of(metadata: Mapping[str, Any]) -> State | None:
    """The bookkeeping of a proactive entry, read defensively (a value of the wrong type takes its default),
    or None when ``metadata`` has none."""
    raw = metadata.get(META)
    if not isinstance(raw, Mapping):
        return None
    kind = raw.get("scope")
    base = raw.get("base_confidence")
    count = raw.get("access_count")
    at = raw.get("accessed_at")
    accessed: datetime | None = None
    if isinstance(at, str):
        try:
            accessed = datetime.fromisoformat(at)
        except ValueError:
            accessed = None
    good_base = 0.5
    if isinstance(base, int | float) and not isinstance(base, bool) and 0.0 <= base <= 1.0:
        good_base = float(base)
    return State(
        kind=kind if kind in KINDS else AGENT,
        base=good_base,
        access_count=count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0,
        accessed_at=accessed if accessed is not None and accessed.tzinfo is not None else None,
    )


def kind_of(metadata: Mapping[str, Any]) -> str:
    """The scope kind of a proactive entry (``agent`` when it has no bookkeeping)."""
    state = state_of(metadata)
    return AGENT if state is None else state.kind


# -- who wrote a user memory ----------------------------------------------------------------------------------
# User memory is shared by every agent serving the user, so each entry records the agent whose save created it
# (WRITTEN_BY, never changed after) and the other agents whose saves restated or extended it (REINFORCED_BY, in
# the order they came, at most MAX_REINFORCED_BY). An agent's own memories record neither: they are the agent's.
WRITTEN_BY = "writtenBy"
REINFORCED_BY = "reinforcedBy"
MAX_REINFORCED_BY = 50


def writer_of(metadata: Mapping[str, Any]) -> str | None:
    """The agent that wrote a user memory; None for an entry saved before writers were recorded."""
    writer = metadata.get(WRITTEN_BY)
    return writer if isinstance(writer, str) and writer else None


def with_reinforcer(metadata: Mapping[str, Any], agent_id: str) -> dict[str, Any]:
    """``metadata`` after ``agent_id`` restated the entry: ``agent_id`` joins ``REINFORCED_BY`` unless it is
    the writer, is listed already, or the list is full (an unreadable list starts afresh)."""
    out = dict(metadata)
    raw = out.get(REINFORCED_BY)
    listed = [a for a in raw if isinstance(a, str)] if isinstance(raw, list) else []
    if agent_id != writer_of(metadata) and agent_id not in listed and len(listed) < MAX_REINFORCED_BY:
        out[REINFORCED_BY] = [*listed, agent_id]
    return out


def merged_state(states: Sequence[State]) -> State:
    """The bookkeeping of a consolidation's survivor: the highest base confidence, every access summed, the
    latest access, the keeper's kind (all members share one scope)."""
    if not states:
        raise ValueError("a merge needs at least one state")
    touched = [s.accessed_at for s in states if s.accessed_at is not None]
    return State(
        kind=states[0].kind,
        base=max(s.base for s in states),
        access_count=sum(s.access_count for s in states),
        accessed_at=max(touched) if touched else None,
    )


def current_confidence(state: State, now: datetime, rate: float) -> float:
    """The confidence an entry holds at ``now``: user-level memory never decays (its base); the others decay
    from their last access (``decayed_confidence``)."""
    if state.kind == USER:
        return state.base
    days = 0.0 if state.accessed_at is None else max(0.0, (now - state.accessed_at).total_seconds() / 86_400)
    return decayed_confidence(state.base, days_since_access=days, access_count=state.access_count, rate=rate)
