"""Ranking working-memory entries for a query (seed 000's search_working_memory): BM25 over key, value,
category and tags, fused with cosine similarity when an embedder is configured.

Working memory is small (a namespace holds at most a few dozen entries), so nothing is indexed: the
candidates are scored where they stand, and their values are embedded on the fly in one batch.

Invariants:
- BM25 is FTS5's formula (``recall.postings.bm25``) over ``core.tokens``' words, with the candidates as
  the corpus; a column's words count with its weight (key and value 1.0, tags 0.6, category 0.4).
- Each signal is min-max normalised to [0, 1] and the two are fused by ``core.fusion.fuse``, exactly as
  long-term recall does (``recall.hybrid``); vector candidates below the floor are dropped first.
- An entry is a hit when at least one signal returned it. An embedder failure degrades to BM25 and says
  so in the notes; it never fails the search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from reverie.core import fusion, tokens
from reverie.embed.base import Embedder, embed_query_and_texts
from reverie.errors import EmbeddingError
from reverie.recall.postings import score_documents, weighted_document
from reverie.types import WorkingEntry

log = logging.getLogger("reverie.working")
KEY_WEIGHT, VALUE_WEIGHT, TAGS_WEIGHT, CATEGORY_WEIGHT = 1.0, 1.0, 0.6, 0.4


@dataclass(frozen=True, slots=True)
class Ranked:
    """One candidate the query matched: its fused score in [0, 1] and which signals returned it."""

    entry: WorkingEntry
    score: float
    matched_by: str  # bm25 | vector | bm25+vector


def lexical_scores(entries: Sequence[WorkingEntry], query: str) -> dict[str, float]:
    """BM25 score by key of every entry holding at least one query word (scores are positive)."""
    documents = [
        weighted_document(
            (
                (KEY_WEIGHT, e.key),
                (VALUE_WEIGHT, e.value),
                (TAGS_WEIGHT, " ".join(e.tags)),
                (CATEGORY_WEIGHT, e.category or ""),
            )
        )
        for e in entries
    ]
    return {entries[i].key: score for i, score in score_documents(documents, tokens.search_terms(query)).items()}


def semantic_scores(
    entries: Sequence[WorkingEntry], query: str, embedder: Embedder, floor: float | None
) -> dict[str, float]:
    """Cosine similarity by key of the entries at or above ``floor``: the query and every value embedded in
    one batch (an empty value stands in by its key; a model that embeds queries its own way takes the query
    apart). Raises ``EmbeddingError``."""
    if not entries or not query.strip():
        return {}
    query_vector, values = embed_query_and_texts(
        embedder, query, [e.value if e.value.strip() else e.key for e in entries]
    )
    similarities = values @ query_vector
    return fusion.above_floor({e.key: float(s) for e, s in zip(entries, similarities, strict=True)}, floor)


def rank(
    entries: Sequence[WorkingEntry],
    query: str,
    *,
    embedder: Embedder | None,
    semantic_weight: float,
    floor: float | None,
    limit: int,
) -> tuple[list[Ranked], list[str]]:
    """The best ``limit`` matches, best first (ties by key), and notes on how they were ranked."""
    notes: list[str] = []
    lexical = lexical_scores(entries, query)
    semantic: dict[str, float] | None = None
    if embedder is not None:
        try:
            semantic = semantic_scores(entries, query, embedder, floor)
        except EmbeddingError as exc:
            log.warning("working-memory search: embedding failed, BM25 only: %s", exc)
            notes.append(f"the embedder failed ({exc}); these results are BM25 only")
    if semantic is None:
        scores = fusion.minmax(lexical)
    else:
        scores = fusion.fuse(lexical, semantic, semantic_weight=semantic_weight)
    by_key = {e.key: e for e in entries}
    out = []
    for key, score in fusion.ranked(scores, limit):
        both = key in lexical and semantic is not None and key in semantic
        matched_by = "bm25+vector" if both else ("bm25" if key in lexical else "vector")
        out.append(Ranked(by_key[key], score, matched_by))
    return out, notes
