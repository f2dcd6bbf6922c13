"""Stance across a merge: may these sources become one text, and does the merged text keep each one's stance?

The dream's consolidation and the forget sweep's cold rewrite merge texts (an LLM writes the merged one); two
sources that differ in stance (``core.stance``) may never become one text, and a merge must not flip the stance
of any clause it carries over.

Invariants: pure and deterministic; quadratic in the number of sources (a merge has a handful).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import combinations

from reverie.core.stance import (
    DEFAULT_STANCE_VOCABULARY,
    TOPIC_OVERLAP,
    StanceDifference,
    StanceVocabulary,
    same_text,
    same_topic,
    stance_either_way,
    topic_words,
    word_overlap,
)

_CLAUSE_PUNCTUATION = re.compile(r"[.;:!?\n]+|,\s|\s[-–—]\s|\(|\)")
_ANY_WORD = re.compile(r"[^\W_]", re.UNICODE)


def conflicting_sources(
    texts: Sequence[str], vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> tuple[int, int, StanceDifference] | None:
    """The first pair of ``texts`` (by position) about the same topic (``same_topic``) that differ in
    stance, with the difference; None when none do. Quadratic in the number of texts: callers pass a
    merge's sources (a handful)."""
    for i, j in combinations(range(len(texts)), 2):
        if not same_topic(texts[i], texts[j], vocabulary):
            continue  # "likes tea" and "doesn't drink coffee" are two facts, not one fact and its negation
        found = stance_either_way(texts[i], texts[j], vocabulary)
        if found is not None:
            return i, j, found
    return None


def merge_stance_conflict(
    sources: Sequence[str], merged: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> StanceDifference | None:
    """Whether a merge of ``sources`` into ``merged`` mixes or flips stances: two sources that differ in
    stance may never become one text, and each clause of each source must keep its stance in the clause of
    ``merged`` that says most nearly the same thing (negation, antonym, order or time moved there is a flip).
    A merge that contains every source verbatim only fails when the sources themselves disagree."""
    conflict = conflicting_sources(sources, vocabulary)
    return conflict[2] if conflict is not None else merge_flips_stance(sources, merged, vocabulary)


def merge_flips_stance(
    sources: Sequence[str], merged: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> StanceDifference | None:
    """How ``merged`` flips the stance of a clause of one of ``sources`` (in the clause of ``merged`` that
    says most nearly the same thing), or None: the second half of ``merge_stance_conflict``."""
    targets = [(c, topic_words(c, vocabulary)) for c in _clauses(merged, vocabulary)]
    if not targets:
        return None
    for source in sources:
        for clause in _clauses(source, vocabulary):
            if any(same_text(clause, target) for target, _ in targets):
                continue
            words = topic_words(clause, vocabulary)
            score, best = max(((word_overlap(words, w), c) for c, w in targets), key=lambda pair: pair[0])
            if score >= TOPIC_OVERLAP:
                found = stance_either_way(clause, best, vocabulary)
                if found is not None:
                    return found
    return None


def _clauses(text: str, vocabulary: StanceVocabulary) -> list[str]:
    parts = _CLAUSE_PUNCTUATION.split(text)
    if vocabulary.clause_breaks:
        breaks = re.compile(r"\s(?:" + "|".join(map(re.escape, sorted(vocabulary.clause_breaks))) + r")\s", re.I)
        parts = [piece for part in parts for piece in breaks.split(part)]
    return [p.strip() for p in parts if _ANY_WORD.search(p)]
