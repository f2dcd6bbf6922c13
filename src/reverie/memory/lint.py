"""Contradiction lint, confidence and explain (seed 003: memory_lint, the confidence score, ``explain``).

memory_lint reports pairs of live entries that are about the same topic without being duplicates, and says
which one is newer. A pair is a finding when

- both are in the same top-level category and neither is one deduplication leaves alone (feedback/*,
  claim/capability/*, members of a sequence: ``memory.dedup.bypasses``);
- they are about the same topic: cosine of their stored embeddings >= ``similarity`` (0.75) when both
  have a vector of the active model, else token Jaccard (``core.dedupe.jaccard``) >= ``lexical_similarity``
  (0.35). There is no upper bound: a near-miss twin ("... leaves on May 3" / "... on May 5") scores above
  the deduplication threshold (0.977 with MiniLM), and it is exactly what the lint is for. What keeps
  duplicates out is the next rule, not a similarity band;
- they are not duplicates: ``core.dedupe.decide(older, newer)`` says DISTINCT, and each side has a
  specific the other lacks (``core.coverage.specifics`` — a name, acronym, multi-digit number or date —
  or a lone digit): a detail was *replaced* (``kind`` "specifics"); or ``decide`` says CONTRADICT: the two
  differ in stance (``core.stance``: a negation, an antonym, a flipped comparison, a moved time; ``kind``
  "stance", the evidence words in ``newer_specifics`` / ``older_specifics``) — two live entries that do so
  are left by ``memory.on_contradiction = "keep_both"``, a save without deduplication, or wording the save
  could not pair. A restatement (reinforce) or an elaboration (extend) is not a contradiction.

The report also lists every *superseded pair* in the scope (``LintReport.superseded``): an entry a later one
contradicted (kept, ``superseded_by`` the newer) with the evidence recorded when it was superseded.

Confidence (``confidence_of``) is ``core.aging.confidence`` with: supporting sessions = the entry's
``reinforcement_count`` (Reverie does not record sessions per observation yet, so each folded
observation counts as one supporting session), last support = ``last_seen_at``, contradictions = the
lint findings that involve the entry.

Invariants:
- Advisory: nothing in this module writes to the store — no version, no counter, no read is recorded, and
  the entries' ``confidence`` column is left alone (confidence is computed on demand, so it is never stale).
- Bounded: a run examines at most ``max_entries`` live entries of the scope (the most recently reinforced,
  under the category filter); a per-entry check (``explain``, ranking by confidence) compares the entry with
  at most ``max_entries`` live entries of its top-level category. The cost is one pass over those pairs
  (a matrix product for the embedded ones), plus ``decide`` for the few pairs similar enough.
- Each unordered pair is reported at most once; ``newer`` is the one reinforced last (``last_seen_at``, then
  ``created_at``, then the id, so the order is total).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.aging import DEFAULT_CONFIDENCE, ConfidenceParams, confidence
from reverie.core.coverage import Specific, SpecificKind, Vocabulary, lowercase_words, specifics
from reverie.core.dedup import Verdict, content_tokens, decide, normalise_case, top_category
from reverie.core.temporal import seen_phrase
from reverie.core.text import STOPWORDS
from reverie.errors import NotFound
from reverie.memory.contradiction import CONTRADICTION
from reverie.memory.dedup import bypasses
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import MemoryEntry, Scope

_Vector = npt.NDArray[np.float32]
# A digit standing alone ("May 3", "3 apples"): multi-digit numbers, codes ("4B") and decimals are already
# specifics (core.coverage) or parts of them; decide() counts every number, so the report shows these too.
_LONE_DIGIT = re.compile(r"(?<![\w.:/,-])\d(?!\w|[.:/,]\d)")


@dataclass(frozen=True, slots=True)
class LintConfig:
    """The engine fills it from ``memory.lint_*`` settings."""

    similarity: float = 0.75  # cosine: about the same topic
    lexical_similarity: float = 0.35  # token Jaccard, for pairs without vectors
    max_entries: int = 1000  # entries examined per run (and compared with per entry)
    confidence: ConfidenceParams = DEFAULT_CONFIDENCE


@dataclass(frozen=True, slots=True)
class LintFinding:
    """Two entries about the same topic that disagree on a specific.

    ``newer_specifics`` are the specifics the newer entry states and the older does not, and the other way
    round; ``measure`` is ``cosine`` (both embedded) or ``jaccard``.
    """

    newer_id: str
    older_id: str
    category: str  # the shared top-level category
    similarity: float
    measure: str
    newer_specifics: tuple[str, ...]
    older_specifics: tuple[str, ...]
    kind: str = "specifics"  # specifics (a detail replaced), stance (core.stance) or superseded

    def involves(self, entry_id: str) -> bool:
        return entry_id in (self.newer_id, self.older_id)


@dataclass(frozen=True, slots=True)
class LintReport:
    """A lint run: its findings (most similar first), how many entries it examined, and whether the scope
    held more live entries than it could examine (``truncated``: raise ``limit`` or narrow ``category``)."""

    findings: tuple[LintFinding, ...]
    examined: int
    truncated: bool
    category: str | None = None
    superseded: tuple[LintFinding, ...] = ()  # kind "superseded": the newer contradicts the older, both kept

    def involving(self, entry_id: str) -> tuple[LintFinding, ...]:
        return tuple(f for f in self.findings if f.involves(entry_id))


@dataclass(frozen=True, slots=True)
class Confidence:
    """An entry's confidence and the inputs it was computed from (seed 003)."""

    value: float
    supporting_sessions: int  # reinforcement_count: observations stand in for sessions (module docstring)
    last_support_at: datetime | None  # last_seen_at
    contradictions: int


@dataclass(frozen=True, slots=True)
class Explanation:
    """What ``reverie memory explain`` shows: why an entry stands where it does."""

    entry: MemoryEntry
    seen: str  # "seen 4× from 2024-06 to today"
    retention: float  # the forget sweep's score; never used for ranking
    confidence: Confidence
    contradictions: tuple[LintFinding, ...]
    superseded_by: str | None
    versions: int


def confidence_of(
    entry: MemoryEntry, contradictions: int, now: datetime, params: ConfidenceParams = DEFAULT_CONFIDENCE
) -> Confidence:
    """The entry's confidence at ``now``: 0 to ``params.ceiling`` (0.95), rising with its observations
    (``reinforcement_count``), falling with the age of the last one (``last_seen_at``) and with each
    contradiction. Pure."""
    value = confidence(
        supporting_sessions=entry.reinforcement_count,
        last_support_at=entry.last_seen_at,
        contradictions=contradictions,
        now=now,
        params=params,
    )
    return Confidence(value, entry.reinforcement_count, entry.last_seen_at, contradictions)


def differing_specifics(
    newer: str, older: str, *, category: str | None, vocabulary: Vocabulary
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The specifics only ``newer`` states and those only ``older`` states, in order of appearance. Both
    texts are read with their case normalised (as ``decide`` reads them); a month-name date is one specific
    with its day and year ("May 3"), so "May 3" and "May 5" differ. Pure."""
    newer_n, older_n = normalise_case([newer, older])
    corpus = lowercase_words([newer_n, older_n])
    mine = _details(newer_n, category, vocabulary, corpus)
    theirs = _details(older_n, category, vocabulary, corpus)
    return (
        tuple(label for key, label in mine.items() if key not in theirs),
        tuple(label for key, label in theirs.items() if key not in mine),
    )


def _details(text: str, category: str | None, vocabulary: Vocabulary, corpus: frozenset[str]) -> dict[object, str]:
    found = specifics(text, category=category, vocabulary=vocabulary, corpus_lowercase=corpus)
    out: dict[object, str] = {(s.text, s.kind, s.date): _label(s) for s in found}
    if vocabulary.is_numeric_exempt(category):
        return out
    days = {str(s.date.day) for s in found if s.date is not None and s.date.day is not None}
    for match in _LONE_DIGIT.finditer(text):
        if match.group(0) not in days:
            out.setdefault(("digit", match.group(0)), match.group(0))
    return out


def _label(specific: Specific) -> str:
    date = specific.date
    if date is None or specific.kind is not SpecificKind.NAME:
        return specific.text
    day = "" if date.day is None else f" {date.day}"
    year = "" if date.year is None else f"{',' if day else ''} {date.year}"
    return f"{specific.text}{day}{year}"


def _newness(entry: MemoryEntry) -> tuple[datetime, datetime, str]:
    return entry.last_seen_at, entry.created_at, entry.id


def _words(entry: MemoryEntry) -> frozenset[str]:
    # The token sets core.dedupe.jaccard compares, computed once per entry rather than once per pair.
    return content_tokens(entry.content) - STOPWORDS


def _overlap(left: frozenset[str], right: frozenset[str]) -> float:
    union = left | right
    return len(left & right) / len(union) if union else 0.0


@dataclass
class _Group:
    """The examined entries of one top-level category, with their unit vectors (zero rows: no vector)."""

    entries: list[MemoryEntry]
    matrix: _Vector
    embedded: npt.NDArray[np.bool_]
    positions: dict[str, int] = field(default_factory=dict)
    words: dict[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.positions = {entry.id: index for index, entry in enumerate(self.entries)}

    def words_of(self, index: int) -> frozenset[str]:
        entry = self.entries[index]
        found = self.words.get(entry.id)
        if found is None:
            found = self.words[entry.id] = _words(entry)
        return found


class _StoredVectors:
    """The stored vectors of one model, per agent, kept in step through the store's vector log (as the
    recall index is), so a check reads only what changed since the last one. Read-only."""

    def __init__(self, store: Store, model: str, dim: int) -> None:
        self._store = store
        self._model = model
        self._dim = dim
        self._agents: dict[str, tuple[int, dict[str, _Vector]]] = {}
        self._lock = threading.Lock()

    def of(self, agent_id: str) -> Mapping[str, _Vector]:
        with self._lock:
            known = self._agents.get(agent_id)
            if known is None:
                snapshot = self._store.vectors.snapshot(agent_id, self._model)
                vectors: dict[str, _Vector] = {}
            else:
                snapshot = self._store.vectors.changes(agent_id, self._model, known[0])
                vectors = known[1]
            for fact_id, blob in snapshot.vectors:
                vector = None if blob is None else np.frombuffer(blob, dtype=np.float32)
                if vector is None or vector.shape[0] != self._dim:
                    vectors.pop(fact_id, None)
                    continue
                norm = float(np.linalg.norm(vector))
                vectors[fact_id] = vector / norm if norm > 0 else vector
            self._agents[agent_id] = (max(snapshot.watermark, known[0] if known else 0), vectors)
            return vectors


class MemoryLint:
    """memory_lint, confidence and explain over one store. Reads only (see the module invariants)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: LintConfig | None = None,
        *,
        vocabulary: Callable[[], Vocabulary],
        recall: HybridSearch | None = None,
        retention: Callable[[MemoryEntry, datetime], float] | None = None,
    ) -> None:
        """``recall``: where the embedder is known (None or no embedder: token Jaccard only).
        ``retention``: the forget sweep's score, for ``explain`` (the engine passes ``Aging.score``)."""
        self._store = store
        self._clock = clock
        self.config = config or LintConfig()
        self._vocabulary = vocabulary
        self._retention = retention or (lambda _entry, _now: 1.0)
        embedder = None if recall is None else recall.embedder
        self._vectors = None if embedder is None else _StoredVectors(store, embedder.model_id, embedder.dim)

    # -- the lint run ----------------------------------------------------------------------------------
    def run(self, scope: Scope | None = None, *, category: str | None = None, limit: int | None = None) -> LintReport:
        """memory_lint over the live entries ``scope`` sees under ``category``: at most ``limit`` (default
        ``max_entries``) of them, the most recently reinforced. Advisory: edits nothing."""
        clean = validate.scope(scope)
        prefix = validate.category_prefix(category)
        count = self.config.max_entries if limit is None else validate.limit(limit, maximum=100_000)
        now = self._clock.now()
        found = self._store.facts.recent(FactFilter(scope=clean, now=now, category_prefix=prefix), count + 1)
        examined = found[:count]
        groups = self._groups(examined, clean.agent_id)
        findings: list[LintFinding] = []
        vocabulary = self._vocabulary()
        for group in groups.values():
            for position, entry in enumerate(group.entries):
                findings.extend(self._findings(entry, group, vocabulary, after=position))
        findings.sort(key=lambda f: (-f.similarity, f.newer_id, f.older_id))
        superseded = tuple(self._superseded(clean, prefix, now, count))
        return LintReport(
            tuple(findings),
            examined=len(examined),
            truncated=len(found) > count,
            category=prefix,
            superseded=superseded,
        )

    def _superseded(self, scope: Scope, prefix: str | None, now: datetime, count: int) -> Iterator[LintFinding]:
        """The superseded pairs ``scope`` sees under ``prefix`` (at most ``count``, newest supersession first):
        entries a later one contradicted, kept unarchived, with the evidence recorded then."""
        everything = FactFilter(scope=scope, now=now, category_prefix=prefix, include_archived=True)
        found = [e for e in self._store.facts.recent(everything, 100_000) if e.superseded_by and not e.archived]
        found.sort(key=lambda e: (e.valid_to or "", e.id), reverse=True)
        for older in found[:count]:
            recorded = older.metadata.get(CONTRADICTION)
            record = recorded if isinstance(recorded, dict) else {}
            yield LintFinding(
                newer_id=str(older.superseded_by),
                older_id=older.id,
                category=top_category(older.category),
                similarity=1.0,
                measure=str(record.get("kind") or "stance"),
                newer_specifics=_recorded_words(record.get("later")),
                older_specifics=_recorded_words(record.get("earlier")),
                kind="superseded",
            )

    # -- per entry -------------------------------------------------------------------------------------
    def contradictions(self, entries: Sequence[MemoryEntry], scope: Scope) -> dict[str, tuple[LintFinding, ...]]:
        """The findings involving each of ``entries``, each compared with the live entries ``scope`` sees in
        its top-level category (at most ``max_entries``, the most recently reinforced). An archived entry,
        or one deduplication leaves alone, is outside the lint: it has none."""
        now = self._clock.now()
        vocabulary = self._vocabulary()
        subjects: dict[str, list[MemoryEntry]] = {}
        for entry in entries:
            subjects.setdefault(top_category(entry.category), []).append(entry)
        out: dict[str, tuple[LintFinding, ...]] = {entry.id: () for entry in entries}
        for top, members in subjects.items():
            flt = FactFilter(scope=scope, now=now, category_prefix=top)
            found = self._store.facts.recent(flt, self.config.max_entries)
            group = self._groups([*found, *members], scope.agent_id).get(top)
            for entry in members:
                if group is not None and entry.id in group.positions:
                    out[entry.id] = tuple(self._findings(entry, group, vocabulary, after=None))
        return out

    def confidences(self, entries: Sequence[MemoryEntry], scope: Scope) -> dict[str, float]:
        """Each entry's confidence value now (for ranking by ``belief_authority_weight``)."""
        now = self._clock.now()
        found = self.contradictions(entries, scope)
        params = self.config.confidence
        return {e.id: confidence_of(e, len(found[e.id]), now, params).value for e in entries}

    def explain(self, entry_id: str, *, scope: Scope | None = None) -> Explanation:
        """Why an entry stands where it does: its temporal phrase, retention, confidence with its inputs,
        the lint findings involving it, what superseded it and how many versions it has. Archived entries
        too. Records no read. Raises ``NotFound`` when ``scope`` does not see it."""
        clean_id = validate.identifier(entry_id, name="id")
        clean = validate.scope(scope)
        entry = self._store.facts.get(clean_id, clean)
        if entry is None:
            raise NotFound(f"no memory with id {entry_id!r} in this scope")
        now = self._clock.now()
        findings = self.contradictions([entry], clean)[entry.id]
        return Explanation(
            entry=entry,
            seen=seen_phrase(entry.created_at, entry.last_seen_at, entry.reinforcement_count, now),
            retention=self._retention(entry, now),
            confidence=confidence_of(entry, len(findings), now, self.config.confidence),
            contradictions=findings,
            superseded_by=entry.superseded_by,
            versions=len(self._store.versions.history(entry.id, clean)),
        )

    # -- the pair test ---------------------------------------------------------------------------------
    def _groups(self, entries: Sequence[MemoryEntry], agent_id: str) -> dict[str, _Group]:
        """``entries`` by top-level category (first occurrence of each id), live and not left alone by
        deduplication, with their vectors."""
        vectors: Mapping[str, _Vector] = {} if self._vectors is None else self._vectors.of(agent_id)
        by_top: dict[str, list[MemoryEntry]] = {}
        seen: set[str] = set()
        for entry in entries:
            if entry.id in seen or not entry.current or bypasses(entry):
                continue
            seen.add(entry.id)
            by_top.setdefault(top_category(entry.category), []).append(entry)
        groups: dict[str, _Group] = {}
        for top, members in by_top.items():
            rows = [vectors.get(e.id) for e in members]
            dim = next((len(r) for r in rows if r is not None), 1)
            matrix = np.zeros((len(members), dim), dtype=np.float32)
            for index, row in enumerate(rows):
                if row is not None:
                    matrix[index] = row
            embedded = np.array([r is not None for r in rows], dtype=np.bool_)
            groups[top] = _Group(members, matrix, embedded)
        return groups

    def _similar(self, entry: MemoryEntry, group: _Group, after: int | None) -> Iterator[tuple[int, float, str]]:
        """``(position, similarity, measure)`` of the group's entries about the same topic as ``entry`` (a
        member of the group); with ``after``, only those after that position (each pair once in a run)."""
        position = group.positions[entry.id]
        candidates = np.arange(0 if after is None else after + 1, len(group.entries))
        candidates = candidates[candidates != position]
        cosines = group.matrix[candidates] @ group.matrix[position] if group.embedded[position] else None
        both = np.zeros(len(candidates), dtype=np.bool_)
        if cosines is not None:
            # Pairs with two vectors are judged by cosine alone; the rest fall back to token Jaccard.
            both = group.embedded[candidates]
            keep = ~both | (cosines >= self.config.similarity)
            candidates, cosines, both = candidates[keep], cosines[keep], both[keep]
        for slot, index in enumerate(candidates.tolist()):
            if both[slot] and cosines is not None:
                yield index, float(cosines[slot]), "cosine"
                continue
            score = _overlap(group.words_of(position), group.words_of(index))
            if score >= self.config.lexical_similarity:
                yield index, score, "jaccard"

    def _findings(
        self, entry: MemoryEntry, group: _Group, vocabulary: Vocabulary, *, after: int | None
    ) -> Iterator[LintFinding]:
        for index, similarity, measure in self._similar(entry, group, after):
            other = group.entries[index]
            newer, older = (entry, other) if _newness(entry) > _newness(other) else (other, entry)
            decision = decide(older.content, newer.content, category=older.category, vocabulary=vocabulary)
            if decision.verdict is Verdict.CONTRADICT and decision.stance is not None:
                said = decision.stance  # stance_difference(older, newer): first is the older's side
                pair = (newer.id, older.id, top_category(older.category), round(similarity, 4), measure)
                yield LintFinding(*pair, newer_specifics=said.second, older_specifics=said.first, kind="stance")
                continue
            if decision.verdict is not Verdict.DISTINCT:
                continue  # a restatement or an elaboration: deduplication's business, not a contradiction
            mine, theirs = differing_specifics(
                newer.content, older.content, category=older.category, vocabulary=vocabulary
            )
            if mine and theirs:
                yield LintFinding(
                    newer_id=newer.id,
                    older_id=older.id,
                    category=top_category(older.category),
                    similarity=round(similarity, 4),
                    measure=measure,
                    newer_specifics=mine,
                    older_specifics=theirs,
                )


def _recorded_words(value: object) -> tuple[str, ...]:
    """A recorded list of evidence words (metadata is data: anything else reads as none)."""
    return tuple(str(w) for w in value) if isinstance(value, list) else ()
