"""Hybrid ranking arithmetic (seed 000's HybridRanker, LibreFang's min_similarity). Pure.

Two normalisations, one weighted mean:
- ``fuse`` (working memory, skills): each signal min-max normalised to [0, 1] over its own candidate list (a
  list whose scores are all equal normalises to 1.0); vector candidates below the floor are dropped first
  (``above_floor``), so a sparse store can answer nothing rather than noise.
- ``lexical_evidence`` / ``semantic_evidence`` (long-term recall, issue 18): each signal as evidence that means
  the same for every query — BM25 against an ideal match, similarity between the model's floor and its
  strong similarity — so weak evidence stays weak instead of being stretched to 1.
- ``corroborated`` (long-term recall): lexical evidence credited by how far the embedder agrees with it.
- ``weighted``: the weighted mean of two maps over the union of their keys; a signal that did not return
  an id contributes 0.
"""

from __future__ import annotations

from collections.abc import Container, Mapping


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores mapped onto [0, 1]: the best becomes 1, the worst 0; all-equal scores become 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    span = high - low
    return {key: (value - low) / span for key, value in scores.items()}


def above_floor(similarities: Mapping[str, float], floor: float | None) -> dict[str, float]:
    """Vector candidates at or above ``floor`` (None: no floor)."""
    if floor is None:
        return dict(similarities)
    return {key: value for key, value in similarities.items() if value >= floor}


def fuse(
    lexical: Mapping[str, float], semantic: Mapping[str, float], *, semantic_weight: float = 0.5
) -> dict[str, float]:
    """Weighted mean of min-max-normalised lexical and semantic scores over the union of candidates."""
    return weighted(minmax(lexical), minmax(semantic), semantic_weight)


def resolve_floor(*candidates: float | None) -> float | None:
    """The first floor that is set, in priority order (per call, per agent, per deployment, per model)."""
    for value in candidates:
        if value is not None:
            return value
    return None


def ranked(scores: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """Best first; ties broken by id so the order is deterministic."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


def near_best(hits: list[tuple[str, float]], share: float) -> list[tuple[str, float]]:
    """The ranked ``hits`` (best first) whose score is at least ``share`` of the best one's: a strong answer
    is not padded with hits that barely relate to the query. The best hit is always kept; ``share`` 0 (or a
    best score of 0 or less) keeps them all."""
    if share <= 0 or not hits or hits[0][1] <= 0:
        return list(hits)
    cut = share * hits[0][1]
    return [hit for hit in hits if hit[1] >= cut]


def spread(scores: Mapping[str, float], neighbours: Mapping[str, list[str]], share: float) -> dict[str, float]:
    """Each item also takes ``share`` of its best neighbour's score (sequence context: the turn before or
    after a matching turn often holds the answer). Items only reachable as neighbours start from 0."""
    if share <= 0:
        return dict(scores)
    out = dict(scores)
    for key, near in neighbours.items():
        best = max((scores.get(n, 0.0) for n in near), default=0.0)
        out[key] = scores.get(key, 0.0) + share * best
    return out


# -- evidence (issue 18): scores that mean something across queries -------------------------------------
def lexical_evidence(scores: Mapping[str, float], ideal: float | None) -> dict[str, float]:
    """BM25 scores as evidence in [0, 1]: each divided by the larger of the best score and ``ideal`` (what
    an entry holding enough of the query's weight would score; None: the best score alone). So a list
    whose best hit matches only a weak word of the query stays weak instead of being stretched to 1."""
    if not scores:
        return {}
    scale = max(max(scores.values()), ideal or 0.0)
    if scale <= 1e-12:
        return dict.fromkeys(scores, 0.0)
    return {key: min(value / scale, 1.0) for key, value in scores.items()}


def semantic_evidence(similarities: Mapping[str, float], floor: float, strong: float) -> dict[str, float]:
    """Cosine similarities as evidence in [0, 1]: 0 at or below ``floor``, 1 for the best candidate when it
    reaches ``strong`` (the model's "clearly related"); a query whose best candidate is weaker than
    ``strong`` keeps its hits below 1."""
    if not similarities:
        return {}
    scale = max(max(similarities.values()), strong) - floor
    if scale <= 1e-12:
        return dict.fromkeys(similarities, 0.0)
    return {key: min(max(value - floor, 0.0) / scale, 1.0) for key, value in similarities.items()}


def corroborated(
    lexical: Mapping[str, float],
    semantic: Mapping[str, float],
    judged: Container[str],
    unrelated: Container[str],
    share: float,
) -> dict[str, float]:
    """Lexical evidence credited as far as the embedder agrees with it: a BM25 hit keeps ``share`` of its
    evidence plus the rest in proportion to its semantic evidence (all of it at full semantic evidence,
    ``share`` at none). ``unrelated`` hits (the embedder judged them unrelated without a similarity: not
    among its candidates) keep ``share``; a hit the embedder did not judge (not in ``judged``: no vector
    yet) keeps all of it. ``share`` 1 trusts words alone."""
    if not 0.0 <= share <= 1.0:
        raise ValueError("share must be between 0 and 1")
    out: dict[str, float] = {}
    for key, value in lexical.items():
        if key in unrelated:
            credit = share
        elif key in judged:
            credit = share + (1.0 - share) * semantic.get(key, 0.0)
        else:
            credit = 1.0
        out[key] = value * credit
    return out


def weighted(lexical: Mapping[str, float], semantic: Mapping[str, float], semantic_weight: float) -> dict[str, float]:
    """The weighted sum of two evidence maps over the union of their keys (a missing signal counts 0)."""
    if not 0.0 <= semantic_weight <= 1.0:
        raise ValueError("semantic_weight must be between 0 and 1")
    return {
        key: (1.0 - semantic_weight) * lexical.get(key, 0.0) + semantic_weight * semantic.get(key, 0.0)
        for key in lexical.keys() | semantic.keys()
    }


def thread_gain(
    lexical: Mapping[str, float], semantic: Mapping[str, float], threads: Mapping[str, str], share: float
) -> dict[str, float]:
    """What each threaded item gains from its thread's evidence: ``share`` of the mean of the thread's best
    lexical and best semantic evidence (evidence spread over a session counts for each of its turns).
    Items without a thread gain nothing; so does everything when ``share`` is 0."""
    if share <= 0:
        return {}
    best_lexical: dict[str, float] = {}
    best_semantic: dict[str, float] = {}
    for key, thread in threads.items():
        best_lexical[thread] = max(best_lexical.get(thread, 0.0), lexical.get(key, 0.0))
        best_semantic[thread] = max(best_semantic.get(thread, 0.0), semantic.get(key, 0.0))
    return {key: share * 0.5 * (best_lexical[thread] + best_semantic[thread]) for key, thread in threads.items()}
