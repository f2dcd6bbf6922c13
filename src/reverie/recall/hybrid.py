"""Hybrid recall (seed 000): BM25 candidates and vector candidates, each min-max normalised, fused.

The component is generic over what it ranks: long-term memory uses it now; working memory and skills
reuse it with their own candidate sources. The arithmetic lives in ``core.fusion``.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from reverie.core import fusion, text, tokens
from reverie.embed.base import Embedder, Vectors
from reverie.errors import EmbeddingError
from reverie.recall.index import VectorIndex, VectorSearch
from reverie.recall.lexical import LexicalIndex
from reverie.storage.base import FactFilter, Store
from reverie.types import MemoryEntry, SearchHit, SearchResults

log = logging.getLogger("reverie.recall")
MODES = ("auto", "bm25", "vector", "hybrid")
LEXICAL_SOURCES = ("memory", "fts")
# Vector candidates fetched per wanted candidate: other users' and sessions', archived and expired entries
# are only filtered out when hydrated, so ask the index for more than we keep.
VECTOR_OVERFETCH = 2
# BM25 candidates from the in-memory index beyond those kept: it cannot see expiry, so a few of its
# candidates may be dropped when hydrated.
LEXICAL_OVERFETCH = 1.2
# The candidate lists fetched inside a ``HybridSearch.shared_candidates`` block, by signal, text and filter
# (None outside one). A context var: the vector signal's worker thread runs in a copy of the caller's context,
# which holds the same dict.
_SHARED: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "reverie_shared_candidates", default=None
)


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Knobs of hybrid recall; the engine fills them from Settings."""

    semantic_weight: float = 0.35
    candidates: int = 50  # per signal, before fusion
    min_similarity: float | None = None  # deployment default; None: the model's calibrated floor
    agent_min_similarity: tuple[tuple[str, float], ...] = ()
    model_min_similarity: float | None = None  # the embedder's calibrated default
    query_cache_size: int = 512
    # Entries in a sequence (metadata.thread + metadata.position) take this share of their best
    # neighbour's score; 0 turns it off. Entries without a thread are unaffected.
    neighbour_share: float = 0.3
    # Where BM25 candidates come from: "memory" (the in-process ``LexicalIndex``) or "fts" (the store's
    # full-text search). Filters the index cannot answer (include_archived) always use the store.
    lexical: str = "memory"
    # Fetch the vector signal (query embedding, nearest neighbours, hydration) on a worker thread while this
    # thread fetches the BM25 one: the slow parts (the model, numpy, the database) release the GIL, so a
    # hybrid search costs about the slower signal rather than the sum of both.
    parallel: bool = True


@dataclass(slots=True)
class _Signal:
    """The vector signal of one search: scores of candidates above the floor, the entries of those the
    caller's filter lets through, and notes; ``scores`` None when no vector signal could be had."""

    scores: dict[str, float] | None
    entries: dict[str, MemoryEntry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class QueryEmbeddings:
    """A small LRU of query vectors: agents repeat queries, and embedding is the slow part of a search."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        self._embedder = embedder
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, query: str) -> Vectors:
        with self._lock:
            hit = self._cache.get(query)
            if hit is not None:
                self._cache.move_to_end(query)
                return hit
        vector: Vectors = self._embedder.embed([query])[0]
        with self._lock:
            self._cache[query] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector


class HybridSearch:
    """Searches long-term entries by BM25, by vector, or both fused."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        config: RecallConfig | None = None,
        *,
        vectors: VectorSearch | None = None,
    ) -> None:
        """``vectors`` is the vector backend (default: the in-process exact ``VectorIndex``)."""
        self._store = store
        self.config = config or RecallConfig()
        self.embedder = embedder
        self.index: VectorSearch | None = None
        if embedder is not None:
            self.index = vectors or VectorIndex(store, embedder.model_id, embedder.dim)
        self._queries = QueryEmbeddings(embedder, self.config.query_cache_size) if embedder else None
        self._agent_floor = dict(self.config.agent_min_similarity)
        if self.config.lexical not in LEXICAL_SOURCES:
            raise ValueError(f"unknown lexical source {self.config.lexical!r}; use one of {LEXICAL_SOURCES}")
        self.lexical = LexicalIndex(store) if self.config.lexical == "memory" else None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.fetches: Counter[str] = Counter()  # signals fetched from the indexes ("lexical", "vector")

    @contextmanager
    def shared_candidates(self) -> Iterator[None]:
        """Within this block, a search for the same text through the same filter (scope, category, archived;
        not its ``now``) reuses the candidate lists of the first instead of asking the indexes again: the
        context builder's recall step and proactive memory search the same message in the same scope, a
        moment apart. Only the candidates are shared; each search fuses, floors and cuts them as it asks.
        A write inside the block is not seen by a repeated search: keep blocks to one read-only operation."""
        if _SHARED.get() is not None:  # nested: the outer block's lists serve
            yield
            return
        token = _SHARED.set({})
        try:
            yield
        finally:
            _SHARED.reset(token)

    def floor(self, agent_id: str, per_call: float | None) -> float | None:
        """min_similarity: per call, then per agent, then per deployment, then the model's default."""
        cfg = self.config
        return fusion.resolve_floor(
            per_call, self._agent_floor.get(agent_id), cfg.min_similarity, cfg.model_min_similarity
        )

    def search(
        self, query: str, flt: FactFilter, limit: int, *, mode: str = "auto", min_similarity: float | None = None
    ) -> SearchResults:
        notes: list[str] = []
        wanted = "hybrid" if mode == "auto" else mode
        pending: Future[_Signal] | None = None
        if self._parallel(wanted, query):
            # contextvars travel with the job: usage attribution (agent_context) must see the caller's agent.
            job = contextvars.copy_context().run
            pending = self._workers().submit(job, self._vector_signal, query, flt, min_similarity)
        lexical: dict[str, float] = {}
        entries: dict[str, MemoryEntry] = {}
        if wanted in ("bm25", "hybrid"):
            for entry, score in self._lexical(query, flt):
                lexical[entry.id] = score
                entries[entry.id] = entry
        semantic: dict[str, float] = {}
        if wanted in ("vector", "hybrid"):
            signal = pending.result() if pending is not None else self._vector_signal(query, flt, min_similarity)
            notes.extend(signal.notes)
            if signal.scores is not None:
                for entry_id, entry in signal.entries.items():
                    entries.setdefault(entry_id, entry)
                semantic = signal.scores
            elif wanted == "hybrid":
                wanted = "bm25"  # degrade, and the notes say why
        if wanted == "hybrid":
            scores = fusion.fuse(lexical, semantic, semantic_weight=self.config.semantic_weight)
        else:
            scores = fusion.minmax(lexical if wanted == "bm25" else semantic)
        if wanted == "hybrid" and self.config.neighbour_share > 0:
            # Only the full pipeline: "bm25" and "vector" stay the plain single signals (the baselines).
            scores = self._spread(scores, entries, flt, limit)
        hits = [
            SearchHit(entries[i], score, _matched_by(i, lexical, semantic)) for i, score in fusion.ranked(scores, limit)
        ]
        return SearchResults(hits, mode=wanted, notes=tuple(notes))

    def _parallel(self, wanted: str, query: str) -> bool:
        """Whether the vector signal goes to a worker: hybrid only (the single signals stay the plain
        baselines), and never inside a store transaction (another thread would not see its writes)."""
        return (
            wanted == "hybrid"
            and self.config.parallel
            and self.index is not None
            and bool(query.strip())
            and not self._store.in_transaction()
        )

    def _workers(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="reverie-recall")
            return self._pool

    def close(self) -> None:
        """Stop the worker threads (searches after this run both signals on the caller's thread)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
            self.config = replace(self.config, parallel=False)
        if pool is not None:
            pool.shutdown(wait=True)

    def _lexical(self, query: str, flt: FactFilter) -> list[tuple[MemoryEntry, float]]:
        """BM25 candidates, best first: from the in-memory index when configured and able to answer
        ``flt``, else from the store's full-text search. Either way every entry passed ``flt``."""
        shared = _SHARED.get()
        key = ("lexical", query, _shape(flt))
        if shared is not None and key in shared:
            found: list[tuple[MemoryEntry, float]] = shared[key]
            return found
        kept = self._fetch_lexical(query, flt)
        if shared is not None:
            shared[key] = kept
        return kept

    def _fetch_lexical(self, query: str, flt: FactFilter) -> list[tuple[MemoryEntry, float]]:
        self.fetches["lexical"] += 1
        wanted = self.config.candidates
        if self.lexical is None or not self.lexical.supports(flt):
            match = text.fts_match(text.query_terms(query))
            return [] if match is None else self._store.facts.search(match, flt, wanted)
        found = self.lexical.search(flt, tokens.search_terms(query), int(wanted * LEXICAL_OVERFETCH) + 1)
        hydrated = {entry.id: entry for entry in self._store.facts.get_many([i for i, _ in found], flt)}
        kept = [(hydrated[i], score) for i, score in found if i in hydrated]
        # The store's order: score, then the most recently reinforced (the index knows no last_seen_at).
        kept.sort(key=lambda pair: (-pair[1], -pair[0].last_seen_at.timestamp()))
        return kept[:wanted]

    def _spread(
        self, scores: dict[str, float], entries: dict[str, MemoryEntry], flt: FactFilter, limit: int
    ) -> dict[str, float]:
        """Share scores along sequences: the turns next to the best candidates join them (fetched from the
        store through the caller's filter), and each candidate takes a share of its best neighbour's score."""
        top = [i for i, _ in fusion.ranked(scores, max(limit * 2, 20))]
        keys: dict[tuple[str, int], str] = {}
        for entry in entries.values():
            key = _sequence_key(entry)
            if key is not None:
                keys[key] = entry.id
        wanted = set()
        for entry_id in top:
            key = _sequence_key(entries[entry_id])
            if key is not None:
                wanted.update({(key[0], key[1] - 1), (key[0], key[1] + 1)} - keys.keys())
        for entry in self._store.facts.neighbours(sorted(wanted), flt):
            entries[entry.id] = entry
            key = _sequence_key(entry)
            if key is not None:
                keys[key] = entry.id
        near: dict[str, list[str]] = {}
        for (thread, position), entry_id in keys.items():
            near[entry_id] = [keys[k] for k in ((thread, position - 1), (thread, position + 1)) if k in keys]
        return fusion.spread(scores, near, self.config.neighbour_share)

    def _vector_signal(self, query: str, flt: FactFilter, per_call_floor: float | None) -> _Signal:
        """Vector candidates that pass the floor, hydrated through the caller's filter (only those it lets
        through keep a score); ``scores`` None when no vector signal can be had. Safe on a worker thread."""
        if self.index is None or self._queries is None:
            return _Signal(None, notes=["no embedder is configured: BM25 only"])
        if not query.strip():
            return _Signal({})
        try:
            vector = self._queries.get(query)
        except EmbeddingError as exc:
            log.warning("query embedding failed, falling back to BM25: %s", exc)
            return _Signal(None, notes=[f"the embedder failed ({exc}); these results are BM25 only"])
        kept, entries = self._nearest(query, np.asarray(vector), flt, self.floor(flt.scope.agent_id, per_call_floor))
        visible = {i: s for i, s in kept.items() if i in entries}
        scores = dict(fusion.ranked(visible, self.config.candidates))
        return _Signal(scores, {i: entries[i] for i in scores})

    def _nearest(
        self, query: str, vector: npt.NDArray[np.float32], flt: FactFilter, floor: float | None
    ) -> tuple[dict[str, float], dict[str, MemoryEntry]]:
        """The vector candidates above ``floor`` (id -> similarity) and the entries among them ``flt`` lets
        through. Only candidates above the floor are hydrated. Inside a ``shared_candidates`` block the index's
        answer and the entries hydrated so far are shared (a second search with another floor hydrates only
        the candidates the first did not)."""
        shared = _SHARED.get()
        key = ("vector", query, _shape(flt))
        cached: _Nearest | None = shared.get(key) if shared is not None else None
        if cached is None:
            assert self.index is not None
            self.fetches["vector"] += 1
            # Over-fetch: candidates of other users/sessions, archived or expired ones are filtered out below.
            found = self.index.search(flt.scope.agent_id, vector, self.config.candidates * VECTOR_OVERFETCH)
            cached = _Nearest(dict(found))
            if shared is not None:
                shared[key] = cached
        kept = fusion.above_floor(cached.found, floor)
        missing = [i for i in kept if i not in cached.hydrated]
        if missing:
            cached.entries.update((e.id, e) for e in self._store.facts.get_many(missing, flt))
            cached.hydrated.update(missing)
        return kept, cached.entries


@dataclass(slots=True)
class _Nearest:
    """One vector-index answer: the candidates with their similarities, and the entries hydrated so far
    (``hydrated``: the ids asked for, whether or not the filter let them through)."""

    found: dict[str, float]
    entries: dict[str, MemoryEntry] = field(default_factory=dict)
    hydrated: set[str] = field(default_factory=set)


def _shape(flt: FactFilter) -> tuple[Any, ...]:
    """What decides a filter's candidates, less ``now``: within one operation its moments are equivalent."""
    return (flt.scope, flt.category_prefix, flt.include_archived)


def _sequence_key(entry: MemoryEntry) -> tuple[str, int] | None:
    thread, position = entry.metadata.get("thread"), entry.metadata.get("position")
    if isinstance(thread, str) and isinstance(position, int) and not isinstance(position, bool):
        return thread, position
    return None


def _matched_by(entry_id: str, lexical: dict[str, float], semantic: dict[str, float]) -> str:
    if entry_id in lexical and entry_id in semantic:
        return "bm25+vector"
    return "bm25" if entry_id in lexical else "vector"
