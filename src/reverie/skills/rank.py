"""Ranking an agent's skills for a query: BM25 over name, summary and content, fused with the cosine of the
skills' stored vectors, by the same arithmetic long-term recall uses (``core.fusion``, ``recall.postings``).

An agent holds hundreds of skills, not millions, so nothing is indexed: every live skill is scored where it
stands at query time (a few milliseconds for a thousand), which also means a save is searchable at once.

Invariants:
- BM25 is FTS5's formula (``recall.postings.bm25``) over ``core.tokens``' words with the candidates as the
  corpus; a column's words count with its weight (name 2.0, summary 1.5, content 1.0: the name and the
  one-line summary say what a skill is for, the content how).
- Each signal is min-max normalised to [0, 1] and the two are fused by ``core.fusion.fuse`` with recall's
  semantic weight; vector candidates below the floor are dropped first (``core.fusion.above_floor``). A skill
  is a hit when at least one signal returned it. Ties break by name.
- Pure: the caller embeds the query and hands in the vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reverie.core import fusion, tokens
from reverie.recall.postings import score_documents, weighted_document
from reverie.types import Skill

NAME_WEIGHT, SUMMARY_WEIGHT, CONTENT_WEIGHT = 2.0, 1.5, 1.0


@dataclass(frozen=True, slots=True)
class SkillHit:
    """One skill a query matched: its fused score in [0, 1] and which signals returned it."""

    skill: Skill
    score: float
    matched_by: str  # bm25 | vector | bm25+vector


def lexical_scores(skills: Sequence[Skill], query: str) -> dict[str, float]:
    """BM25 score by name of every skill holding at least one query word (scores are positive)."""
    documents = [
        weighted_document(((NAME_WEIGHT, s.name), (SUMMARY_WEIGHT, s.summary), (CONTENT_WEIGHT, s.content)))
        for s in skills
    ]
    return {skills[i].name: score for i, score in score_documents(documents, tokens.search_terms(query)).items()}


def semantic_scores(vectors: Mapping[str, bytes], query: np.ndarray, floor: float | None) -> dict[str, float]:
    """Cosine similarity by name of the vectors (float32 bytes, unit length) at or above ``floor``; vectors of
    another dimension than the query's are skipped."""
    kept = {n: v for n, v in vectors.items() if len(v) == 4 * query.shape[0]}
    if not kept:
        return {}
    matrix = np.stack([np.frombuffer(v, dtype=np.float32) for v in kept.values()])
    similarities = matrix @ query.astype(np.float32)
    return fusion.above_floor({n: float(s) for n, s in zip(kept, similarities, strict=True)}, floor)


def rank(
    skills: Sequence[Skill],
    lexical: Mapping[str, float],
    semantic: Mapping[str, float] | None,
    *,
    semantic_weight: float,
    limit: int,
) -> list[SkillHit]:
    """The best ``limit`` skills, best first: the fused signals, or BM25 alone when ``semantic`` is None."""
    if semantic is None:
        scores = fusion.minmax(lexical)
    else:
        scores = fusion.fuse(lexical, semantic, semantic_weight=semantic_weight)
    by_name = {s.name: s for s in skills}
    out = []
    for name, score in fusion.ranked(scores, limit):
        both = name in lexical and semantic is not None and name in semantic
        matched_by = "bm25+vector" if both else ("bm25" if name in lexical else "vector")
        out.append(SkillHit(by_name[name], score, matched_by))
    return out
