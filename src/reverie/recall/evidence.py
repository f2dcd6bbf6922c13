"""One hybrid search's evidence per candidate, and how a hit is explained (``HitEvidence``, ``matched_by``).

Invariants: ``score = own + context + time`` for every explained hit; ``matched_by`` names the hit's own
signals when it has any, else the time the query names, else what lent it its place (docs/concepts.md,
"Reading a hit's score").
"""

from __future__ import annotations

from dataclasses import dataclass

from reverie.types import HitEvidence


@dataclass(frozen=True, slots=True)
class Evidence:
    """One search's evidence: each signal's (``core.fusion``), the ids BM25 matched (``lexical``'s keys)
    and those at or above the similarity floor."""

    lexical: dict[str, float]
    semantic: dict[str, float]
    above_floor: dict[str, float]
    uncorroborated: set[str]  # BM25 hits the embedder saw as unrelated (similarity below the floor)
    bm25: dict[str, float]
    similarity: dict[str, float]
    time: dict[str, float]  # closeness to the period the query names; empty when it names none
    in_period: set[str]  # candidates saved or dated inside that period

    def explain(self, entry_id: str, own: dict[str, float], score: float, time_weight: float) -> HitEvidence:
        mine = own.get(entry_id, 0.0)
        timed = time_weight * self.time.get(entry_id, 0.0)
        return HitEvidence(
            bm25=self.bm25.get(entry_id),
            similarity=self.similarity.get(entry_id),
            lexical=self.lexical.get(entry_id, 0.0),
            semantic=self.semantic.get(entry_id, 0.0),
            own=mine,
            context=max(score - mine - timed, 0.0),
            time=timed,
        )


def matched_by(entry_id: str, evidence: Evidence, lent: dict[str, str]) -> str:
    """What found a hit: its own signals (``bm25``, ``vector``, ``bm25+vector``), else lying in the time the
    query names (``time``), else a sequence neighbour (``neighbour``) or its thread (``thread``)."""
    lexical, semantic = entry_id in evidence.lexical, entry_id in evidence.above_floor
    if lexical and semantic:
        return "bm25+vector"
    if lexical or semantic:
        return "bm25" if lexical else "vector"
    if entry_id in evidence.in_period:
        return "time"
    return lent[entry_id]
