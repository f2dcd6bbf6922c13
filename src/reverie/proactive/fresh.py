"""Auto-consolidation of what is new (seed 004's auto-consolidation, kept off the whole history): the proactive
entries saved since an agent's last auto-consolidation, each compared with its nearest neighbours only.

``ProactiveMemory`` counts the memorize calls that saved something new (created, extended or superseded: a
reinforcement changes no text, so it cannot make a new duplicate) and records the entries they saved
(``FreshKey``, in the store's meta table); every ``consolidate_every`` such calls ``FreshPlanner.plan`` takes
those entries and, for each, its nearest neighbours by vector (the recall vector index, with the new entry's
embedding) and by words (a BM25 search of its text), and runs the duplicate ladder over the pairs that hold a
new entry. Neither every entry nor every vector of the agent is read.

Invariants:
- The ladder is ``core.proactive``'s: substring containment, then cosine when both have vectors, else word
  Jaccard; never across a stance difference; only within one group (the exact scope and, for user-level
  memory, one writer); the newest member of a cluster is kept. Cosines are exact: the vector index's for a new
  entry and a neighbour, computed for two new entries. A neighbour that is not among a new entry's nearest
  vectors is no cosine duplicate of it; two old entries are not compared again (they were when they were new,
  and ``consolidate(full=True)`` compares everything).
- Only live (current, unexpired) proactive entries are candidates; the ids from the indexes are hydrated
  through the store with the new entry's scope, so an index never widens what is seen.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from reverie.core.proactive import Candidate, Merge, cosine, duplicate_rung, writer_of
from reverie.core.stance import stance_either_way
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import MemoryEntry, Scope

log = logging.getLogger("reverie.proactive")

FRESH_KEY = "proactive.fresh."  # + agent id: the entries saved since its last auto-consolidation (JSON)
MAX_FRESH = 1000  # entries recorded at most; older ones wait for a manual consolidation
NEIGHBOURS = 16  # nearest entries fetched per new entry, by vector and by words each
Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class FreshKey:
    """Where a freshly saved entry lives: its id and its exact scope."""

    id: str
    scope: Scope

    def as_json(self) -> list[str | None]:
        return [self.id, self.scope.agent_id, self.scope.user_id, self.scope.session_id]


def read_keys(raw: str | None) -> list[FreshKey]:
    """The keys a meta value holds; anything unreadable reads as none (it only costs a merge found later)."""
    try:
        items = json.loads(raw or "[]")
    except ValueError:
        return []
    keys: list[FreshKey] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, list) and len(item) == 4 and isinstance(item[0], str) and isinstance(item[1], str):
            user, session = item[2], item[3]
            if (user is None or isinstance(user, str)) and (session is None or isinstance(session, str)):
                keys.append(FreshKey(item[0], Scope(item[1], user, session)))
    return keys


def write_keys(keys: Sequence[FreshKey]) -> str:
    unique = list(dict.fromkeys(keys))[-MAX_FRESH:]
    return json.dumps([k.as_json() for k in unique])


def group_of(entry: MemoryEntry) -> tuple[Scope, str]:
    """What the ladder compares within: the exact scope, and the writer (user-level memory: one agent's own)."""
    return entry.scope, writer_of(entry.metadata) or ""


class FreshPlanner:
    """Finds the duplicates the new entries make (see the module docstring)."""

    def __init__(
        self, store: Store, recall: HybridSearch | None, *, cosine_threshold: float, jaccard_threshold: float
    ) -> None:
        self._store = store
        self._recall = recall
        self._cosine = cosine_threshold
        self._jaccard = jaccard_threshold

    def entries(self, keys: Sequence[FreshKey], now: datetime) -> list[MemoryEntry]:
        """The entries ``keys`` name that are still there (``get_many`` per scope: no scan)."""
        by_scope: dict[Scope, list[str]] = {}
        for key in keys:
            by_scope.setdefault(key.scope, []).append(key.id)
        found: list[MemoryEntry] = []
        for scope, ids in by_scope.items():
            found += [e for e in self._store.facts.get_many(ids, FactFilter(scope=scope, now=now)) if e.scope == scope]
        return found

    def plan(
        self,
        new: Sequence[MemoryEntry],
        vectors: Mapping[str, Vector],
        now: datetime,
        *,
        live: Callable[[MemoryEntry], bool],
    ) -> tuple[list[MemoryEntry], list[Merge]]:
        """The candidates (the new entries and their neighbours that ``live`` accepts: live proactive entries)
        and the merges among them. ``vectors``: the new entries' embeddings (those that have one)."""
        candidates = {e.id: e for e in new}
        cosines: dict[frozenset[str], float] = {}
        for entry in new:
            flt = FactFilter(scope=entry.scope, now=now)
            for other, similarity in self._by_vector(entry, vectors.get(entry.id), flt):
                if other.id != entry.id and live(other) and group_of(other) == group_of(entry):
                    candidates.setdefault(other.id, other)
                    cosines[frozenset((entry.id, other.id))] = similarity
            for other in self._by_words(entry, flt):
                if other.id != entry.id and live(other) and group_of(other) == group_of(entry):
                    candidates.setdefault(other.id, other)
        for a, b in itertools.combinations([e for e in new if e.id in vectors], 2):
            value = cosine(vectors[a.id], vectors[b.id])
            if value is not None:
                cosines[frozenset((a.id, b.id))] = value
        merges = self._clusters(list(candidates.values()), {e.id for e in new}, set(vectors), cosines)
        return list(candidates.values()), merges

    def _by_vector(self, entry: MemoryEntry, vector: Vector | None, flt: FactFilter) -> list[tuple[MemoryEntry, float]]:
        index = None if self._recall is None else self._recall.index
        if index is None or vector is None:
            return []
        nearest = dict(index.search(entry.scope.agent_id, vector, NEIGHBOURS + 1))
        if not nearest:
            return []
        return [(e, nearest[e.id]) for e in self._store.facts.get_many(list(nearest), flt)]

    def _by_words(self, entry: MemoryEntry, flt: FactFilter) -> list[MemoryEntry]:
        if self._recall is None:
            return []
        return [h.entry for h in self._recall.search(entry.content, flt, NEIGHBOURS, mode="bm25")]

    def _clusters(
        self,
        entries: Sequence[MemoryEntry],
        new: Collection[str],
        embedded: Collection[str],
        cosines: Mapping[frozenset[str], float],
    ) -> list[Merge]:
        """``core.proactive.duplicate_clusters``' walk (newest keeper first, no chaining) over the pairs that
        hold a new entry."""
        ordered = sorted(entries, key=lambda e: (e.created_at, e.id), reverse=True)
        placed: set[str] = set()
        merges: list[Merge] = []
        indexed = self._recall is not None and self._recall.index is not None
        for position, keeper in enumerate(ordered):
            if keeper.id in placed:
                continue
            placed.add(keeper.id)
            members: list[tuple[str, str]] = []
            for other in ordered[position + 1 :]:
                if other.id in placed or group_of(other) != group_of(keeper):
                    continue
                if keeper.id not in new and other.id not in new:
                    continue  # two old entries: compared when they were new
                # An old entry has its vector when the agent's are indexed; a new one when it was embedded now.
                vectored = [(e.id in embedded) if e.id in new else indexed for e in (keeper, other)]
                rung = self._rung(keeper, other, cosines.get(frozenset((keeper.id, other.id))), all(vectored))
                if rung is not None:
                    members.append((other.id, rung))
                    placed.add(other.id)
            if members:
                merges.append(Merge(keeper.id, tuple(m[0] for m in members), tuple(m[1] for m in members)))
        return merges

    def _rung(self, a: MemoryEntry, b: MemoryEntry, similarity: float | None, vectored: bool) -> str | None:
        """``core.proactive.duplicate_rung`` with the pair's cosine given (None: not among the nearest)."""
        if stance_either_way(a.content, b.content) is not None:
            return None
        words = duplicate_rung(  # without vectors: substring, else Jaccard
            Candidate(a.id, 0, a.content, a.created_at),
            Candidate(b.id, 0, b.content, b.created_at),
            cosine_threshold=self._cosine,
            jaccard_threshold=self._jaccard,
        )
        if words == "substring":
            return words
        if similarity is not None:
            return "cosine" if similarity >= self._cosine else None
        return None if vectored else words
