"""Hybrid recall (seed 000): BM25 candidates and vector candidates, each min-max normalised, fused.

The component is generic over what it ranks: long-term memory uses it now; working memory and skills
reuse it with their own candidate sources. The arithmetic lives in ``core.fusion``.

Invariants:
- Candidates are read as ``FactCandidate`` rows (id, times, metadata: what ranking reads), each through the
  caller's filter, which has the last word on scope, archive and expiry; only the hits returned (at most
  the limit) are read whole, through the same filter. A search reads a few hundred candidates and returns
  ten: a whole entry costs several times a candidate row (issue 21).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from reverie.core import fusion, text, timeq, tokens
from reverie.core.stance_vocabulary import DEFAULT_STANCE_VOCABULARY, StanceVocabulary
from reverie.embed.base import Embedder
from reverie.errors import EmbeddingError
from reverie.recall import introduced, newer, typos
from reverie.recall.config import RecallConfig
from reverie.recall.evidence import Evidence, matched_by
from reverie.recall.index import VectorIndex, VectorSearch
from reverie.recall.lexical import LexicalIndex
from reverie.recall.query_vectors import QueryEmbeddings
from reverie.storage.base import FactCandidate, FactFilter, Store
from reverie.types import MemoryEntry, SearchHit, SearchResults

log = logging.getLogger("reverie.recall")
MODES = ("auto", "bm25", "vector", "hybrid")
LEXICAL_SOURCES = ("memory", "fts")
# Vector candidates fetched per wanted candidate: other users' and sessions', archived and expired entries
# are only filtered out when read through the filter, so ask the index for more than we keep.
VECTOR_OVERFETCH = 2
# BM25 candidates from the in-memory index beyond those kept: it cannot see expiry, so a few of its
# candidates may be dropped when read through the filter.
LEXICAL_OVERFETCH = 1.2
# Full semantic evidence is this far above the floor unless the model says otherwise (MiniLM: 0.25 + 0.35).
STRONG_ABOVE_FLOOR = 0.35
# Full lexical evidence: an entry scoring this share of the query's summed idf (an average-length entry
# holding half the query's weight). Measured on LoCoMo: 0.5 ranks within 0.003 of per-query max scaling.
IDEAL_SHARE = 0.5
# ...but a query of two words names what it wants in both: one of them alone is not full evidence. The ideal
# holds at least this many average words' weight (two words: 0.7 of the query's), which silenced two of the
# everyday set's off-topic questions ("what does GDP stand for" through "stand-up") at no cost to LoCoMo.
IDEAL_WORDS = 1.4
# What ranking reads of a candidate: a ``FactCandidate`` row, or a whole entry when a read gave one (the
# store's full-text search); both have the id, the times and the metadata.
Ranked = MemoryEntry | FactCandidate
# Per signal, the first candidates whose text is read for the times it names (a query naming a time only).
WRITTEN_TIMES_READ = 30
_EARLIEST = datetime(1, 1, 2, tzinfo=UTC)  # an open period's side, a day inside datetime's range
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)
# The candidate lists fetched inside a ``HybridSearch.shared_candidates`` block, by signal, text and filter
# (None outside one). A context var: the vector signal's worker thread runs in a copy of the caller's context,
# which holds the same dict.
_SHARED: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "reverie_shared_candidates", default=None
)


@dataclass(slots=True)
class _Signal:
    """The vector signal of one search: the raw similarities of the candidates the caller's filter lets
    through, their entries, and notes; ``scores`` None when no vector signal could be had."""

    scores: dict[str, float] | None
    entries: dict[str, Ranked] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    complete: bool = False  # every vector of the agent was scored: an entry missing from ``scores`` has none


class HybridSearch:
    """Searches long-term entries by BM25, by vector, or both fused."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        config: RecallConfig | None = None,
        *,
        vectors: VectorSearch | None = None,
        stance: Callable[[], StanceVocabulary] | None = None,
    ) -> None:
        """``vectors`` is the vector backend (default: the in-process exact ``VectorIndex``); ``stance`` gives
        the stance vocabulary in force (default: the built-in one), whose change markers ``newer`` reads."""
        self._store = store
        self._stance = stance or (lambda: DEFAULT_STANCE_VOCABULARY)
        self.config = config or RecallConfig()
        self.embedder = embedder
        self.index: VectorSearch | None = None
        if embedder is not None:
            self.index = vectors or VectorIndex(store, embedder.model_id, embedder.dim)
        self._queries = QueryEmbeddings(embedder, self.config.query_cache_size) if embedder else None
        self._agent_floor = dict(self.config.agent_min_similarity)
        if self.config.lexical not in LEXICAL_SOURCES:
            raise ValueError(f"unknown lexical source {self.config.lexical!r}; use one of {LEXICAL_SOURCES}")
        self.lexical = LexicalIndex(store, b=self.config.bm25_b) if self.config.lexical == "memory" else None
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
        """The best ``limit`` entries for ``query`` through ``flt``. Candidate lists are deep enough for the
        fusion and the limit (``recall.candidates``, at least the limit); the floor judges what is
        returned, not what is fused: a hit needs lexical evidence, a similarity at or above the floor, a
        time the query names, or a neighbour or thread that has one of those. Scores are evidence (see
        ``core.fusion`` and ``HitEvidence``), comparable across queries. Hybrid searches read the introductions
        among their first hits (``recall.introduced``): a query that describes someone is asked again by name; and
        a hit said later that changes what an older hit above it says moves just above it (``recall.newer``)."""
        wanted = "hybrid" if mode == "auto" else mode
        if wanted != "hybrid":
            return self._search(query, flt, limit, wanted, min_similarity)
        if self.config.introduction_share <= 0:
            found = self._search(query, flt, max(limit, introduced.LOOK), wanted, min_similarity)
            return SearchResults(self._newer(found)[:limit], mode=found.mode, notes=found.notes)
        # The first ranking unfloored: an introduction the query describes may be its only (weak) evidence
        # ("my wife's allergy" matches "My wife Layla is a nurse" by one word).
        first, weak, meant, order = self._ranked(
            query, flt, max(limit, introduced.LOOK), wanted, min_similarity, floored=False, deep=introduced.DEEP
        )
        # Introductions are read in the query as meant: "my husbnd's allergy" describes "My husband Raj".
        query = meant or query
        if first.mode == "hybrid":

            def again(rewritten: str) -> SearchResults:
                # Deep enough that the hits naming the person are ranked by it, not left at their first rank.
                return self._search(rewritten, flt, max(limit, introduced.DEEP), wanted, min_similarity)

            def deeper() -> list[MemoryEntry]:
                below = order[introduced.LOOK : introduced.DEEP]
                whole = {h.entry.id: h.entry for h in first}  # the hits beyond the fifth are read already
                whole.update((e.id, e) for e in self._store.facts.get_many([i for i in below if i not in whole], flt))
                return [whole[i] for i in below if i in whole]

            share = self.config.introduction_share
            merged = introduced.resolve(query, first, again, share, weak=weak, deeper=deeper)
            if merged is not None:
                merged = self._newer(merged)
                kept = fusion.near_best([(h.entry.id, h.score) for h in merged[:limit]], self.config.relative_floor)
                return SearchResults(merged[: len(kept)], mode=first.mode, notes=first.notes)
        hits = [] if weak else self._newer(introduced.definition_first(query, first))[:limit]
        return SearchResults(hits, mode=first.mode, notes=first.notes)

    def _newer(self, hits: list[SearchHit]) -> list[SearchHit]:
        """``hits`` with a later one that says it changes an older one above it moved just above it."""
        ratio = self.config.newer_first
        return newer.ranked(hits, ratio, self._stance()) if ratio > 0 and len(hits) > 1 else hits

    def _search(
        self,
        query: str,
        flt: FactFilter,
        limit: int,
        wanted: str,
        min_similarity: float | None,
    ) -> SearchResults:
        """One ranking of ``query`` in mode ``wanted`` (``search`` without asking again by name)."""
        return self._ranked(query, flt, limit, wanted, min_similarity, floored=True)[0]

    def _ranked(
        self,
        query: str,
        flt: FactFilter,
        limit: int,
        wanted: str,
        min_similarity: float | None,
        *,
        floored: bool,
        deep: int = 0,
    ) -> tuple[SearchResults, bool, str | None, list[str]]:
        """One ranking; whether its best evidence is below ``recall.min_evidence`` (hybrid only: floored, such a
        ranking is empty; unfloored, it is returned as it is); the query respelt when a word was corrected; and
        the ids of the ranking's first ``deep`` (at least its hits), best first."""
        depth = max(self.config.candidates, limit)
        period = timeq.find_period(query, flt.now) if wanted == "hybrid" and self.config.time_weight > 0 else None
        found = self._candidates(wanted, query, period, flt, depth)
        floor = self.floor(flt.scope.agent_id, min_similarity) or 0.0
        evidence = Evidence(
            fusion.lexical_evidence(found.lexical, found.ideal),
            fusion.semantic_evidence(found.similarity, floor, self._strong(floor)),
            {i: s for i, s in found.similarity.items() if s >= floor},
            {i for i in found.lexical if _unsupported(i, found, floor)},
            found.lexical,
            found.similarity,
            *self._timed(period, query, found, flt, depth),
        )
        hits, weak, order = self._fused(found.mode, evidence, found.entries, flt, (limit, deep), floored)
        return SearchResults(hits, mode=found.mode, notes=tuple(found.notes)), weak, found.meant, order

    def _candidates(
        self, wanted: str, query: str, period: timeq.Period | None, flt: FactFilter, depth: int
    ) -> _Candidates:
        """Both signals' candidates (the vector one on a worker thread when it may), and the mode actually
        run: hybrid degrades to BM25 when no vector signal can be had (the notes say why). The BM25 query
        leaves out the words that named ``period``."""
        out = _Candidates(wanted)
        pending: Future[_Signal] | None = None
        if self._parallel(wanted, query):
            # contextvars travel with the job: usage attribution (agent_context) must see the caller's agent.
            job = contextvars.copy_context().run
            pending = self._workers().submit(job, self._vector_signal, query, flt, depth)
        respelt: tuple[tuple[str, str], ...] = ()
        if wanted in ("bm25", "hybrid"):
            words = query if period is None else timeq.without(query, period)
            lexical = self._lexical(words, flt, depth) if words.strip() else _Lexical([], None)
            out.ideal, respelt = lexical.ideal, lexical.respelt
            for entry, score in lexical.found:
                out.lexical[entry.id] = score
                out.entries[entry.id] = entry
        if wanted in ("vector", "hybrid"):
            signal = pending.result() if pending is not None else self._vector_signal(query, flt, depth)
            fixed = out.meant = typos.respell(query, respelt) if respelt else query
            if fixed != query and signal.scores is not None:
                # The embedder also reads the query as meant ("swiming" as "swimming"); a candidate keeps the
                # better of its two similarities, so a wrong reading costs nothing it had.
                signal = _merged(signal, self._vector_signal(fixed, flt, depth))
            out.notes.extend(signal.notes)
            if signal.scores is not None:
                for entry_id, entry in signal.entries.items():
                    out.entries.setdefault(entry_id, entry)
                out.similarity = signal.scores
                out.complete = signal.complete
            elif wanted == "hybrid":
                out.mode = "bm25"
        return out

    def _timed(
        self, period: timeq.Period | None, query: str, found: _Candidates, flt: FactFilter, depth: int
    ) -> tuple[dict[str, float], set[str]]:
        """How close each candidate's time is to ``period`` (1 inside it, by the weight ranking gives), and which
        candidates were saved or dated inside it, after adding the entries saved or dated inside it to
        ``found.entries``; both empty when the query names no time."""
        if period is None:
            return {}, set()
        entries = found.entries
        first = (period.start or _EARLIEST).date().isoformat()
        last = ((period.end or _LATEST) - timedelta(microseconds=1)).date().isoformat()
        for entry in self._store.facts.candidates_in_period(flt, first, last, depth):
            entries.setdefault(entry.id, entry)
        saved = timeq.about_saving(query)
        # The texts of each signal's first candidates only: one deeper in both lists seldom reaches the hits.
        best = (fusion.ranked(scores, WRITTEN_TIMES_READ) for scores in (found.lexical, found.similarity))
        written = self._written_times([i for ranked in best for i, _ in ranked], entries, flt)
        near = {
            i: timeq.entry_closeness(e.metadata, e.created_at, period, saved=saved, written=written.get(i))
            for i, e in entries.items()
        }
        return near, {i for i, e in entries.items() if timeq.inside(e.metadata, e.created_at, period, written.get(i))}

    def _written_times(
        self, ids: list[str], entries: dict[str, Ranked], flt: FactFilter
    ) -> dict[str, list[tuple[datetime, datetime]]]:
        """The times the texts of the candidates ``ids`` with no subject time name, each counted from when it was
        saved; those read without their text are read whole for it, and kept whole in ``entries`` (only for a
        query naming a time)."""
        undated = [i for i in dict.fromkeys(ids) if not timeq.has_subject_time(entries[i].metadata)]
        texts = {i: e.content for i in undated if isinstance(e := entries[i], MemoryEntry)}
        missing = [i for i in undated if i not in texts]
        if missing:
            for whole in self._store.facts.get_many(missing, flt):
                texts[whole.id] = whole.content
                entries[whole.id] = whole  # read once: a hit among them is not read again
        out = {}
        for entry_id, content in texts.items():
            if found := timeq.written_times(content, entries[entry_id].created_at):
                out[entry_id] = found
        return out

    def _strong(self, floor: float) -> float:
        """The similarity that counts as full semantic evidence: the model's own, else the floor + 0.35
        (MiniLM: 0.6, where its related pairs cluster)."""
        strong = self.config.model_strong_similarity
        return strong if strong is not None else min(floor + STRONG_ABOVE_FLOOR, 1.0)

    def _fused(
        self,
        wanted: str,
        evidence: Evidence,
        entries: dict[str, Ranked],
        flt: FactFilter,
        depth: tuple[int, int],
        floored: bool,
    ) -> tuple[list[SearchHit], bool, list[str]]:
        """Rank by the mode's evidence; hybrid adds what threads and neighbours lend. Only hits with
        evidence of their own, or lent by a neighbour or thread that has some, are returned: the first
        ``depth[0]`` (the limit), and the ids of the first ``depth[1]`` (at least the hits)."""
        limit, deep = depth
        lexical, semantic = evidence.lexical, evidence.semantic
        weak = False
        if wanted == "bm25":
            own = dict(lexical)
        elif wanted == "vector":
            own = {i: v for i, v in semantic.items() if i in evidence.above_floor}
        else:
            # A word match the embedder sees as unrelated is weak evidence ("how do vaccines work" matching a
            # fact through "work"), and one it sees as barely related is not much stronger.
            corroborated = fusion.corroborated(
                lexical, semantic, evidence.similarity, evidence.uncorroborated, self.config.uncorroborated_share
            )
            own = fusion.weighted(corroborated, semantic, self.config.semantic_weight)
            # An entry saved or dated in the time the query names is evidence enough to answer.
            weak = not evidence.in_period and max(own.values(), default=0.0) < self.config.min_evidence
            if weak and floored:
                return [], True, []  # the best evidence is too weak: nothing rather than noise
        scores = dict(own)
        lent: dict[str, str] = {}  # what lent a hit without evidence of its own its place
        for entry_id, near in evidence.time.items():
            scores[entry_id] = scores.get(entry_id, 0.0) + self.config.time_weight * near
        if wanted == "hybrid":
            # Only the full pipeline: "bm25" and "vector" stay the plain single signals (the baselines).
            threads = {i: seq[0] for i, e in entries.items() if (seq := _sequence_key(e)) is not None}
            for entry_id, gain in fusion.thread_gain(lexical, semantic, threads, self.config.thread_share).items():
                scores[entry_id] = scores.get(entry_id, 0.0) + gain
                if gain > 0:
                    lent[entry_id] = "thread"
            if self.config.neighbour_share > 0:
                before = dict(scores)
                scores = self._spread(scores, entries, flt, limit)
                lent.update((i, "neighbour") for i, v in scores.items() if v > before.get(i, 0.0) + 1e-12)
        found = {i for i in scores if i in lexical or i in evidence.above_floor or i in evidence.in_period}
        # Evidence of its own, or lent by its thread or a neighbour; a time near (not in) the named one, or a
        # vector candidate below the floor alone in its thread, is noise.
        order = fusion.ranked({i: v for i, v in scores.items() if i in found or i in lent}, max(limit, deep))
        if wanted == "hybrid":
            order = fusion.near_best(order, self.config.relative_floor)
        kept = order[:limit]
        whole = self._whole([i for i, _ in kept], entries, flt)
        time_weight = self.config.time_weight
        hits = [
            SearchHit(whole[i], score, matched_by(i, evidence, lent), evidence.explain(i, own, score, time_weight))
            for i, score in kept
            if i in whole
        ]
        return hits, weak, [i for i, _ in order]

    def _whole(self, ids: list[str], entries: Mapping[str, Ranked], flt: FactFilter) -> dict[str, MemoryEntry]:
        """The hits' whole entries, read through the caller's filter (the candidates were ``FactCandidate``
        rows). A hit another writer archived or moved out of the filter between the two reads is left out."""
        whole = {i: e for i in ids if isinstance(e := entries[i], MemoryEntry)}
        missing = [i for i in ids if i not in whole]
        if missing:
            whole.update((e.id, e) for e in self._store.facts.get_many(missing, flt))
        return whole

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

    def _lexical(self, query: str, flt: FactFilter, depth: int) -> _Lexical:
        """BM25 candidates, best first, the score of an entry holding enough of the query's weight (None when
        unknown: the store's full-text search), and the query words read as misspellings. Every entry
        passed ``flt``."""
        shared = _SHARED.get()
        key = ("lexical", query, _shape(flt))
        if shared is not None and key in shared:
            deep, cached = shared[key]
            if deep >= depth and isinstance(cached, _Lexical):  # a deeper list serves a shallower one
                return replace(cached, found=cached.found[:depth])
        kept = self._fetch_lexical(query, flt, depth)
        if shared is not None:
            shared[key] = (depth, kept)
        return kept

    def _fetch_lexical(self, query: str, flt: FactFilter, depth: int) -> _Lexical:
        """From the in-memory index when configured and able to answer ``flt``, else from the store's
        full-text search."""
        self.fetches["lexical"] += 1
        if self.lexical is None or not self.lexical.supports(flt):
            match = text.fts_match(text.query_terms(query))
            return _Lexical([] if match is None else list(self._store.facts.search(match, flt, depth)), None)
        written = text.query_terms(query)
        terms = [tokens.word(term) for term in written]  # tokens.search_terms, keeping the words as written
        fetch = int(depth * LEXICAL_OVERFETCH) + 1
        if self.config.typo_tolerance:
            searched, found = self.lexical.search_corrected(flt, terms, written, fetch)
            respelt = tuple((w, t) for w, t, was in zip(written, searched, terms, strict=True) if t != was)
            terms = searched
        else:
            found, respelt = self.lexical.search(flt, terms, fetch), ()
        passed = {row.id: row for row in self._store.facts.candidates([i for i, _ in found], flt)}
        kept: list[tuple[Ranked, float]] = [(passed[i], score) for i, score in found if i in passed]
        # The store's order: score, then the most recently reinforced (the index knows no last_seen_at).
        kept.sort(key=lambda pair: (-pair[1], -pair[0].last_seen_at.timestamp()))
        ideal = self.lexical.ideal(flt.scope.agent_id, terms) * ideal_share(len(set(terms)))
        return _Lexical(kept[:depth], ideal, respelt)

    def _spread(
        self, scores: dict[str, float], entries: dict[str, Ranked], flt: FactFilter, limit: int
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
        for entry in self._store.facts.neighbour_candidates(sorted(wanted), flt):
            entries[entry.id] = entry
            key = _sequence_key(entry)
            if key is not None:
                keys[key] = entry.id
        near: dict[str, list[str]] = {}
        for (thread, position), entry_id in keys.items():
            near[entry_id] = [keys[k] for k in ((thread, position - 1), (thread, position + 1)) if k in keys]
        return fusion.spread(scores, near, self.config.neighbour_share)

    def _vector_signal(self, query: str, flt: FactFilter, depth: int) -> _Signal:
        """The ``depth`` nearest entries ``flt`` lets through, with their raw similarities (no floor: the
        floor judges what is returned); ``scores`` None when no vector signal can be had. Safe on a worker
        thread."""
        if self.index is None or self._queries is None:
            return _Signal(None, notes=["no embedder is configured: BM25 only"])
        if not query.strip():
            return _Signal({})
        try:
            vector = self._queries.get(query)
        except EmbeddingError as exc:
            log.warning("query embedding failed, falling back to BM25: %s", exc)
            return _Signal(None, notes=[f"the embedder failed ({exc}); these results are BM25 only"])
        nearest = self._nearest(query, np.asarray(vector), flt, depth)
        # Every candidate the filter lets through keeps its similarity (up to the over-fetch, usually more than
        # ``depth``): a BM25 hit is judged by it. Fewer candidates than asked for: the index scored every
        # vector the agent has, so an entry missing here has none.
        scores = {i: s for i, s in nearest.found.items() if i in nearest.entries}
        complete = len(nearest.found) < nearest.asked
        return _Signal(scores, {i: nearest.entries[i] for i in scores}, complete=complete)

    def _nearest(self, query: str, vector: npt.NDArray[np.float32], flt: FactFilter, depth: int) -> _Nearest:
        """The vector candidates (id -> similarity) and the entries among them ``flt`` lets through. Inside
        a ``shared_candidates`` block the index's answer and its candidate rows are shared."""
        shared = _SHARED.get()
        key = ("vector", query, _shape(flt))
        cached: _Nearest | None = shared.get(key) if shared is not None else None
        if cached is None or cached.depth < depth:
            assert self.index is not None
            self.fetches["vector"] += 1
            found, passed, asked = self._nearest_through(vector, flt, depth)
            cached = _Nearest(found, passed, depth, asked)
            if shared is not None:
                shared[key] = cached
        return cached

    def _nearest_through(
        self, vector: npt.NDArray[np.float32], flt: FactFilter, depth: int
    ) -> tuple[dict[str, float], dict[str, FactCandidate], int]:
        """The index's nearest candidates and those ``flt`` lets through. Over-fetch: candidates of other
        users/sessions, archived or expired ones are filtered out. With an ``EntryFilter`` (which the index
        cannot see) the index is asked ever deeper until ``depth`` candidates pass or it has no more, so a
        narrow filter never hides an entry the index would otherwise have found."""
        assert self.index is not None
        k = depth * VECTOR_OVERFETCH
        while True:
            found = dict(self.index.search(flt.scope.agent_id, vector, k))
            passed = {e.id: e for e in self._store.facts.candidates(list(found), flt)}
            if flt.entry is None or len(passed) >= depth or len(found) < k:
                return found, passed, k
            k *= 4


@dataclass(frozen=True, slots=True)
class _Nearest:
    """One vector-index answer: the candidates with their similarities, and those the filter let through."""

    found: dict[str, float]
    entries: dict[str, FactCandidate]
    depth: int  # the candidates asked for (before the over-fetch)
    asked: int  # the candidates the index was last asked for: it had no more when it gave fewer


@dataclass(frozen=True, slots=True)
class _Lexical:
    """One BM25 answer: the candidates with their scores, best first; the score of an ideal match (None:
    unknown); the query words read as misspellings, each with the index word it was read as."""

    found: list[tuple[Ranked, float]]
    ideal: float | None
    respelt: tuple[tuple[str, str], ...] = ()


def _merged(typed: _Signal, fixed: _Signal) -> _Signal:
    """The vector signal of a query and of its misspellings read as meant: each candidate's better
    similarity; complete only when both were."""
    if fixed.scores is None:
        return typed
    scores = dict(typed.scores or {})
    for entry_id, similarity in fixed.scores.items():
        scores[entry_id] = max(similarity, scores.get(entry_id, similarity))
    entries = {**fixed.entries, **typed.entries}
    notes = list(dict.fromkeys([*typed.notes, *fixed.notes]))
    return _Signal(scores, entries, notes, complete=typed.complete and fixed.complete)


@dataclass(slots=True)
class _Candidates:
    """What the signals found: raw BM25 scores (and the score of an ideal match), raw similarities, the
    entries of both, notes, and the mode actually run."""

    mode: str
    lexical: dict[str, float] = field(default_factory=dict)
    ideal: float | None = None
    similarity: dict[str, float] = field(default_factory=dict)
    entries: dict[str, Ranked] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    complete: bool = False  # the vector signal scored every vector of the agent
    meant: str | None = None  # the query respelt, when the lexical search corrected a word of it


def ideal_share(words: int) -> float:
    """The share of a query's summed idf an ideal match holds, for a query of ``words`` distinct terms: half,
    or ``IDEAL_WORDS`` average words' worth when that is more (short queries)."""
    return min(max(IDEAL_SHARE, IDEAL_WORDS / max(words, 1)), 1.0)


def _shape(flt: FactFilter) -> tuple[Any, ...]:
    """What decides a filter's candidates, less ``now``: within one operation its moments are equivalent."""
    return (flt.scope, flt.category_prefix, flt.include_archived, flt.entry)


def _sequence_key(entry: Ranked) -> tuple[str, int] | None:
    thread, position = entry.metadata.get("thread"), entry.metadata.get("position")
    if isinstance(thread, str) and isinstance(position, int) and not isinstance(position, bool):
        return thread, position
    return None


def _unsupported(entry_id: str, found: _Candidates, floor: float) -> bool:
    """Whether the embedder judged a BM25 hit unrelated: its similarity is below the floor, or it was not
    among the nearest candidates though the index had more (an entry with no vector yet is not judged)."""
    similarity = found.similarity.get(entry_id)
    if similarity is not None:
        return similarity < floor
    return found.mode == "hybrid" and not found.complete
