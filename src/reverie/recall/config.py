"""The knobs of hybrid recall (``recall.hybrid``); the engine fills them from ``Settings.recall``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Knobs of hybrid recall; the engine fills them from Settings."""

    # Seed 000 averages the two signals (0.5); 0.35 measured better on LoCoMo with MiniLM (docs/adr/0005).
    semantic_weight: float = 0.35
    candidates: int = 100  # per signal, before fusion (at least the limit)
    min_similarity: float | None = None  # deployment default; None: the model's calibrated floor
    agent_min_similarity: Mapping[str, float] = field(default_factory=dict, hash=False)
    model_min_similarity: float | None = None  # the embedder's calibrated default
    model_strong_similarity: float | None = None  # the embedder's full semantic evidence; None: floor + 0.35
    query_cache_size: int = 512
    # Entries in a sequence (metadata.thread + metadata.position) take this share of their best
    # neighbour's score; 0 turns it off. Entries without a thread are unaffected.
    neighbour_share: float = 0.3
    # Threaded entries gain this share of their thread's best evidence (a session that holds the query's
    # words and meaning lifts each of its turns); 0 turns it off.
    thread_share: float = 0.5
    # Hybrid only: a hybrid result set whose best own evidence is below this is empty; a BM25 match whose
    # similarity is below the floor counts this share of its lexical evidence.
    min_evidence: float = 0.25
    uncorroborated_share: float = 0.5
    # Hybrid only: a hit scoring under this share of the best hit's score is not returned, so a strong answer
    # is not padded with entries that barely relate ("Biscuit grapes raisins" also returned Mia's kiwi
    # allergy at 0.04 of its 1.0); 0 returns every hit with evidence. At 0.1 no expected hit was lost on
    # LoCoMo or either everyday set (docs/benchmarks.md).
    relative_floor: float = 0.1
    # Hybrid only: when one of the first hits introduces someone the query describes without naming ("Leo is
    # Dan's son" for "son's drug allergy"), the query is asked again with the name in its place and a hit keeps
    # this share of its second score when that is better (recall.introduced); 0 turns it off.
    introduction_share: float = 0.9
    # Hybrid only: a later hit that says it changed what an older hit above it says ("now", "moved", "replaced",
    # "went up", read as a change by the stance check) ranks just above it when it scores at least this share of
    # that hit's score (core.succession, recall.newer); 0 turns it off. LoCoMo and the everyday sets move the same
    # hits from 0.02 to 0.5 (the stance check decides); a correction worded unlike the question scores low ("Priya
    # left Google and joined Stripe": 0.18 of "Priya works at Google as a data engineer"). 0.1: any hit returned.
    newer_first: float = 0.1
    # Hybrid only: when the query names a time ("last week", "in May 2023"), an entry saved or dated in it
    # gains this much, less as its time lies further away (core.timeq); 0 turns it off.
    time_weight: float = 0.4
    # Where BM25 candidates come from: "memory" (the in-process ``LexicalIndex``) or "fts" (the store's
    # full-text search). Filters the index cannot answer (include_archived, any entry filter: one with
    # ``archived`` or ``superseded`` true reads retired entries) always use the store.
    lexical: Literal["memory", "fts"] = "memory"
    # BM25's length normalisation in the in-memory index (FTS5's is 0.75): memories range from three words to
    # a long turn, and 0.75 let a short entry sharing one word outrank the long one that holds the answer
    # (LoCoMo turn@10 0.759 -> 0.769 at 0.3, flat from 0 to 0.3; docs/adr/0012). The "fts" source keeps its own.
    bm25_b: float = 0.3
    # The in-memory index reads a query word no entry holds as the indexed word it most likely misspells
    # ("swiming lesons" finds "swimming lessons"; ``LexicalIndex.search_corrected``). The "fts" source reads
    # words as given.
    typo_tolerance: bool = True
    # Fetch the vector signal (query embedding, nearest neighbours, hydration) on a worker thread while this
    # thread fetches the BM25 one: the slow parts (the model, numpy, the database) release the GIL, so a
    # hybrid search costs about the slower signal rather than the sum of both.
    parallel: bool = True
