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

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reverie.core import fusion, tokens
from reverie.recall.postings import bm25
from reverie.storage.skills import Skill

NAME_WEIGHT, SUMMARY_WEIGHT, CONTENT_WEIGHT = 2.0, 1.5, 1.0


@dataclass(frozen=True, slots=True)
class SkillHit:
    """One skill a query matched: its fused score in [0, 1] and which signals returned it."""

    skill: Skill
    score: float
    matched_by: str  # bm25 | vector | bm25+vector


def _document(skill: Skill) -> tuple[dict[str, float], int]:
    """The skill's weighted word frequencies and its length in words over all columns."""
    counts: dict[str, float] = {}
    length = 0
    for weight, text in ((NAME_WEIGHT, skill.name), (SUMMARY_WEIGHT, skill.summary), (CONTENT_WEIGHT, skill.content)):
        words = tokens.tokens(text)
        length += len(words)
        for word, occurrences in Counter(words).items():
            counts[word] = counts.get(word, 0.0) + weight * occurrences
    return counts, length


def lexical_scores(skills: Sequence[Skill], query: str) -> dict[str, float]:
    """BM25 score by name of every skill holding at least one query word (scores are positive)."""
    terms = tokens.search_terms(query)
    if not terms or not skills:
        return {}
    documents = [_document(s) for s in skills]
    lengths = np.asarray([length for _, length in documents], dtype=np.float32)
    average = max(float(lengths.mean()), 1.0)
    total = np.zeros(len(skills), dtype=np.float64)
    matched = np.zeros(len(skills), dtype=bool)
    for term, repeats in Counter(terms).items():
        tf = np.asarray([counts.get(term, 0.0) for counts, _ in documents], dtype=np.float32)
        holding = tf > 0
        if not holding.any():
            continue
        matched |= holding
        total += bm25(
            tf, lengths, documents=len(skills), matching=int(holding.sum()), average_length=average, repeats=repeats
        )
    return {skills[int(i)].name: float(total[i]) for i in np.flatnonzero(matched)}


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
