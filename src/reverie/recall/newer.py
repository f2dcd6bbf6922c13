"""Newer first among a search's hits (``core.succession``): a hit said later that changes what an older one
above it says ranks just above it, at the older hit's score.

Invariants: hits only move up and scores stay best first; a moved hit's gain is shown as ``context`` (so
``score = own + context + time`` holds) and ``evidence.succeeds`` names the older hit; nothing moves when
``ratio`` is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reverie.core.stance_vocabulary import StanceVocabulary
from reverie.core.succession import Said, newer_first, successions
from reverie.types import SearchHit

# How many of the first hits are read: a change competes with what it changes near the top. At LoCoMo's limit of
# 20, reading all of them moved turns from as deep as the 20th to the first (turn@1 −0.005, against −0.003).
WINDOW = 10


def ranked(hits: Sequence[SearchHit], ratio: float, vocabulary: StanceVocabulary) -> list[SearchHit]:
    """``hits`` (best first) with each of the first ``WINDOW`` that changes an older one above it moved just
    above that one."""
    said = [Said(h.entry.content, h.entry.last_seen_at, h.score) for h in hits[:WINDOW]]
    pairs = successions(said, ratio, vocabulary)
    if not pairs:
        return list(hits)
    moved = list(hits)
    for newer, older in sorted(pairs):
        hit, above = moved[newer], moved[older]  # ``above`` already lifted when it succeeds one itself
        moved[newer] = lifted(hit, max(above.score, hit.score), above.entry.id)
    return [moved[i] for i in newer_first(said, pairs)] + list(hits[WINDOW:])


def lifted(hit: SearchHit, score: float, succeeds: str) -> SearchHit:
    """``hit`` at ``score`` (not below its own) because it changes the entry ``succeeds``: the gain shown as
    ``context``, so ``score = own + context + time`` still holds, and ``evidence.succeeds`` naming that entry."""
    gain = max(score - hit.score, 0.0)
    evidence = hit.evidence
    if evidence is not None:
        evidence = replace(evidence, context=evidence.context + gain, succeeds=succeeds)
    return SearchHit(hit.entry, hit.score + gain, hit.matched_by, evidence)
