"""Save-time deduplication (seed 000): a restated fact reinforces the entry that already says it.

Two lookups find the entry a new fact most resembles, always among live entries of exactly the same scope
and the same top-level category:

- at save time, lexically: BM25 candidates scored by the token Jaccard of their topic words, without the
  words that carry stance (``core.stance.topic_overlap`` >= ``lexical_similarity_threshold``);
- after the background worker embeds a fresh entry, semantically: the nearest vectors by cosine
  (>= ``similarity_threshold``). Saving never waits for an embedding, so paraphrases are caught here: the
  new entry is folded into the older one (archived, ``superseded_by`` pointing at it), which the caller
  sees through ``get``. Entries wait for this check in the store (``fold_pending``), so a restart, another
  process or a re-embedding after a model change neither loses nor repeats it.

The save-time lookup only reads, so a save makes it before taking the write lock (``plan_save``) and re-checks
it under the lock (``fold_on_save`` with the plan) through the agent's change log: when an entry it read
changed meanwhile, or an entry written meanwhile could be a match itself, it runs again under the lock. The
outcome is the one a lookup under the lock gives (another write may only have shifted BM25's statistics, as
if it had landed just after the save), while the lock is held for the writes, not the lookup.

When neither finds an entry and the new text says a change ("moved", "now", "replaced", "No, …"), a third,
the correction lookup, reads the closest BM25 entries of the scope in any category said no later than it:
one it corrects (``core.correction``: a changed belief about the same holder, read more loosely than a
restatement) is contradicted as below, never folded.

``core.dedupe.decide`` and the merge coverage check then choose reinforced, extended or created; a pair that
differs in stance (``core.stance``: a negation, an antonym, a flipped comparison, a moved time) is a changed
belief, never a restatement: the new text is its own entry and, with ``on_contradiction = "supersede"``, the
current one, the older kept as superseded (``memory.contradiction``).

Invariants: nothing is lost (reinforce only when the existing text covers the new one; extend keeps
both texts; a folded entry is archived, never deleted, and restorable); a reinforcement leaves
``updated_at`` alone and moves ``last_seen_at``; trust only rises through reinforcement, never through
combined text (``core.provenance``); feedback/*, claim/capability/* and sequence entries (turns, chunks:
``metadata.thread`` + ``metadata.position``) are never deduplicated; an entry and a fact expanded out of it
(``metadata.expandedFrom``) never fold into each other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from reverie.clock import Clock
from reverie.core import text
from reverie.core.correction import corrects
from reverie.core.coverage import Vocabulary, category_matches
from reverie.core.dedup import Decision, Verdict, decide, extend_text, top_category
from reverie.core.provenance import least_trusted, most_trusted
from reverie.core.stance import StanceDifference, StanceVocabulary, change_words, stance_difference, topic_overlap
from reverie.core.subject_time import merge_subject_time
from reverie.embed.base import Vectors
from reverie.errors import StorageError
from reverie.memory.contradiction import SUPERSEDE, ContradictionMode, supersede
from reverie.recall.hybrid import HybridSearch
from reverie.recall.index import VectorIndex
from reverie.storage.base import FactFilter, Store
from reverie.types import Change, MemoryEntry, Scope

log = logging.getLogger("reverie.dedup")
BYPASS_CATEGORIES = ("feedback", "claim/capability")
SUBJECT_TIME_KEYS = ("subjectTime", "subjectTimeStart", "subjectTimeEnd")
EXPANDED_FROM = "expandedFrom"  # metadata of a fact the background expansion read out of another entry


@dataclass(frozen=True, slots=True)
class DedupConfig:
    """Seed 000's MemoryOptions for deduplication; the engine fills them from ``[memory] dedupe_*``."""

    enabled: bool = True
    similarity_threshold: float = 0.88  # cosine
    lexical_similarity_threshold: float = 0.6  # token Jaccard: a different scale, hence a different number
    max_extended_content_length: int = 2000
    candidates: int = 8
    on_contradiction: ContradictionMode = SUPERSEDE  # memory.contradiction


@dataclass(frozen=True, slots=True)
class SavePlan:
    """``Deduplicator.plan_save``'s answer for one candidate, made before the save's write transaction.

    ``mark``: the agent's change-log position read before the lookup (None: no lookup was made); ``looked``:
    the ids the lookup read; ``existing`` and ``decision``: the entry the candidate would fold into or
    contradict and ``decide``'s verdict on the pair (None: the candidate would be created)."""

    candidate: MemoryEntry
    mark: int | None
    looked: frozenset[str]
    existing: MemoryEntry | None
    decision: Decision | None


@dataclass(frozen=True, slots=True)
class Contradicted:
    """A save's text contradicts the live entry ``existing`` (``difference`` says how): not a restatement."""

    existing: MemoryEntry
    difference: StanceDifference


def bypasses(entry: MemoryEntry) -> bool:
    """Entries deduplication must leave alone: feedback/* (the contradiction detector's), claim/capability/*
    (the verifier's) and members of a sequence, whose position is their identity."""
    if any(category_matches(entry.category, prefix) for prefix in BYPASS_CATEGORIES):
        return True
    return "thread" in entry.metadata and "position" in entry.metadata


class Deduplicator:
    """Finds the entry a new fact restates and folds the fact into it."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: DedupConfig,
        *,
        vocabulary: Callable[[], Vocabulary],
        recall: HybridSearch | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self.config = config
        self._vocabulary = vocabulary
        self._recall = recall

    # -- at save time ----------------------------------------------------------------------------------
    def plan_save(self, candidate: MemoryEntry, now: datetime) -> SavePlan:
        """The read-only half of ``fold_on_save``, run BEFORE the save's write transaction (the lexical lookup,
        the scoring and ``decide`` hold no write lock): which live entry ``candidate`` would reinforce, extend or
        contradict, if any, with the agent's change-log position read before the lookup. ``fold_on_save`` with
        the plan re-checks it cheaply under the lock."""
        if not self.config.enabled or bypasses(candidate):
            return SavePlan(candidate, mark=None, looked=frozenset(), existing=None, decision=None)
        mark = self._store.facts.log_position(candidate.scope.agent_id)  # first: a change after it is replayed
        looked, existing, decision = self._lookup(candidate, now)
        return SavePlan(candidate, mark=mark, looked=looked, existing=existing, decision=decision)

    def _lookup(
        self, candidate: MemoryEntry, now: datetime
    ) -> tuple[frozenset[str], MemoryEntry | None, Decision | None]:
        """The ids every lookup read, and the entry ``candidate`` reinforces, extends or contradicts with
        ``decide``'s verdict (None, None: it is created). First the restatement lookup (same top-level category,
        close in topic words); failing that, when the candidate says a change, the correction lookup."""
        looked, matches = self._lexical_lookup(candidate, now)
        vocabulary = self._vocabulary()
        for existing in matches:
            decision = decide(existing.content, candidate.content, category=existing.category, vocabulary=vocabulary)
            if decision.verdict is not Verdict.DISTINCT:
                return looked, existing, decision
        read, corrected = self._correction_lookup(candidate, now, vocabulary)
        if corrected is None:
            return looked | read, None, None
        return looked | read, corrected[0], Decision(Verdict.CONTRADICT, candidate.content, corrected[1])

    def _correction_lookup(
        self, candidate: MemoryEntry, now: datetime, vocabulary: Vocabulary
    ) -> tuple[frozenset[str], tuple[MemoryEntry, StanceDifference] | None]:
        """A candidate that says a change ("moved", "now", "replaced", "No, …") may correct an entry the
        restatement lookup does not compare: one of another category, or sharing fewer topic words
        (``core.correction``). The ids read, and the first BM25 candidate of the whole scope said no later than
        the candidate that it corrects, with how."""
        if not change_words(candidate.content, vocabulary.stance):
            return frozenset(), None
        terms = text.query_terms(candidate.content)
        # "I moved to Bristol" shares no word with "I live in Leeds": the relation's other words find it.
        match = text.fts_match(terms + vocabulary.stance.related(terms))
        if match is None:
            return frozenset(), None
        found = self._store.facts.search(match, FactFilter(scope=candidate.scope, now=now), self.config.candidates)
        read = frozenset(entry.id for entry, _ in found)
        for entry, _ in found:
            if not self._comparable(candidate, entry, across=True) or entry.last_seen_at > candidate.last_seen_at:
                continue
            difference = corrects(entry.content, candidate.content, category=candidate.category, vocabulary=vocabulary)
            if difference is not None:
                return read, (entry, difference)
        return read, None

    def fold_on_save(
        self, candidate: MemoryEntry, now: datetime, plan: SavePlan | None = None
    ) -> tuple[str, MemoryEntry] | Contradicted | None:
        """Reinforce or extend the live entry ``candidate`` restates, writing it; returns the outcome and the
        updated entry, ``Contradicted`` when the closest entry says the opposite (the caller creates the
        candidate and supersedes that entry), or None when the candidate should be created. Call inside a
        store transaction. The candidate was seen at its ``last_seen_at`` (``now``, or the observed time of a
        dated save): a reinforcement or extension moves the entry's ``last_seen_at`` to it, never backwards.

        ``plan`` (``plan_save``'s, for this candidate, made before the transaction): used when it still holds,
        i.e. no entry the lookup read changed since and no entry that could now match was written (the agent's
        change log since the plan's position says so), and the chosen entry still has the text and category
        the decision read; the decision is then applied to the entry as it is now. Otherwise the whole lookup
        runs again here, under the lock, so the outcome is the one the lookup inside the lock would give."""
        if not self.config.enabled or bypasses(candidate):
            return None
        seen = candidate.last_seen_at
        if plan is not None and plan.candidate == candidate and self._plan_holds(plan):
            if plan.existing is None or plan.decision is None:
                return None
            fresh = self._store.facts.get(plan.existing.id, plan.existing.scope)
            if (
                fresh is not None
                and (fresh.content, fresh.category) == (plan.existing.content, plan.existing.category)
                # A contradiction the correction lookup found may be of another category; the text and
                # category it was read from are unchanged.
                and self._comparable(candidate, fresh, across=plan.decision.verdict is Verdict.CONTRADICT)
            ):
                return self._apply(fresh, candidate, plan.decision, now, seen)
        _, existing, decision = self._lookup(candidate, now)
        if existing is None or decision is None:
            return None
        return self._apply(existing, candidate, decision, now, seen)

    def _plan_holds(self, plan: SavePlan) -> bool:
        """Whether nothing the plan's lookup depends on was written since its log position: no entry it read
        changed, and no entry written since (created, edited, restored, moved) could be a match itself. (A
        write elsewhere in the agent may still shift BM25's statistics: the same as that write landing just
        after this save.)"""
        if plan.mark is None:
            return True  # no lookup was made (deduplication off, a bypassed entry)
        candidate = plan.candidate
        changes = self._store.facts.text_changes(candidate.scope.agent_id, plan.mark)
        if changes.watermark < plan.mark:
            return False  # the log was replaced (a restored backup)
        vocabulary = self._vocabulary()
        changing = bool(change_words(candidate.content, vocabulary.stance))
        for fact_id, row in changes.rows:
            if fact_id in plan.looked:
                return False
            if row is None or row.archived or fact_id == candidate.id:
                continue
            if Scope(candidate.scope.agent_id, row.user_id, row.session_id) != candidate.scope:
                continue
            if changing and corrects(
                row.content, candidate.content, category=candidate.category, vocabulary=vocabulary
            ):
                return False  # the correction lookup could find it, in any category
            if top_category(row.category) != top_category(candidate.category):
                continue
            score = self._lexical_score(row.content, candidate.content, vocabulary.stance)
            if score >= self.config.lexical_similarity_threshold:
                return False
        return True

    def _first_applicable(
        self,
        matches: list[MemoryEntry],
        candidate: MemoryEntry,
        now: datetime,
        *,
        fold: bool = True,
        seen: datetime | None = None,
    ) -> tuple[str, MemoryEntry] | Contradicted | None:
        """Apply the first of ``matches`` (most similar first) that ``decide`` does not call a different
        fact: the most similar entry may be someone else's twin ("Mateo no longer drinks coffee") while the
        entry this text restates or contradicts ("Sofia drinks coffee") comes next. ``fold=False``: only a
        contradiction is returned (nothing is reinforced or extended)."""
        vocabulary = self._vocabulary()
        for existing in matches:
            decision = decide(existing.content, candidate.content, category=existing.category, vocabulary=vocabulary)
            if decision.verdict is Verdict.DISTINCT:
                continue
            if not fold and decision.verdict is not Verdict.CONTRADICT:
                return None
            return self._apply(existing, candidate, decision, now, now if seen is None else seen)
        return None

    def _lexical_lookup(self, candidate: MemoryEntry, now: datetime) -> tuple[frozenset[str], list[MemoryEntry]]:
        """The ids of every entry the BM25 lookup returned, and those within the lexical threshold of
        ``candidate`` that it may fold into, most similar first."""
        match = text.fts_match(text.query_terms(candidate.content))
        if match is None:
            return frozenset(), []
        flt = FactFilter(scope=candidate.scope, now=now, category_prefix=top_category(candidate.category))
        scored: list[tuple[float, MemoryEntry]] = []
        stance, threshold = self._vocabulary().stance, self.config.lexical_similarity_threshold
        found = self._store.facts.search(match, flt, self.config.candidates)
        for entry, _ in found:
            if not self._comparable(candidate, entry):
                continue
            score = self._lexical_score(entry.content, candidate.content, stance)
            if score >= threshold:
                scored.append((score, entry))
        scored.sort(key=lambda pair: -pair[0])  # stable: equal scores keep the index's order
        return frozenset(entry.id for entry, _ in found), [entry for _, entry in scored]

    def _lexical_score(self, existing: str, new: str, stance: StanceVocabulary) -> float:
        # What the two texts are about, without the words that carry stance: "does not deploy" must meet
        # "deploys" (they share few tokens), and "no longer allergic to eggs" must not meet "no longer
        # allergic to gluten" on the strength of "no longer" (decide would take it for a paraphrase).
        score = topic_overlap(existing, new, stance)
        if score >= self.config.lexical_similarity_threshold:
            return score
        difference = stance_difference(existing, new, stance)
        if difference is None:
            return score
        # Only for a pair that differs in stance (decide can then only call it a contradiction or distinct,
        # never fold it, so a looser match can never swallow a text): a correction with a slip in it ("Harbor
        # never deplys …") must still meet its fact, and so must a replaced value ("Maya lives in Porto now"
        # shares only its frame with "Maya lives in Lisbon").
        if difference.kind == "value":
            return topic_overlap(existing, new, stance, ignore=difference.evidence)
        return topic_overlap(existing, new, stance, typos=True)

    @staticmethod
    def _comparable(candidate: MemoryEntry, entry: MemoryEntry, *, across: bool = False) -> bool:
        """Whether ``entry`` may be compared with ``candidate`` at all; ``across``: in any category (the
        correction lookup), else only in the candidate's top-level one."""
        return (
            entry.id != candidate.id
            and entry.scope == candidate.scope  # exactly: folding must not widen or narrow who sees a fact
            and entry.current  # neither archived nor superseded: only the current belief is compared with
            and (across or top_category(entry.category) == top_category(candidate.category))
            and not bypasses(entry)
            and not _lineage(candidate, entry)
        )

    def _apply(
        self, existing: MemoryEntry, candidate: MemoryEntry, decision: Decision, now: datetime, seen: datetime
    ) -> tuple[str, MemoryEntry] | Contradicted | None:
        verdict = decision.verdict
        if verdict is Verdict.CONTRADICT and decision.stance is not None:
            return Contradicted(existing, decision.stance)
        if verdict is Verdict.REINFORCE:
            updated = reinforced(existing, candidate, now, seen=seen)
            self._store.facts.write(updated, change=Change.REINFORCED, at=now)
            return "reinforced", updated
        if verdict is Verdict.EXTEND:
            content = extend_text(existing.content, decision.text)
            if len(content) > self.config.max_extended_content_length:
                return None  # one busy topic must not accrete into a hundred-paragraph entry
            updated = extended(existing, candidate, content, now, seen=seen)
            self._store.facts.write(updated, change=Change.EXTENDED, at=now)
            return "extended", updated
        return None

    def semantic_check_pending(self, entry: MemoryEntry) -> bool:
        """Whether a freshly created ``entry`` waits for the after-embedding check (``fold_pending``)."""
        return self.config.enabled and self._has_vectors() and not bypasses(entry)

    def _has_vectors(self) -> bool:
        return self._recall is not None and self._recall.index is not None

    # -- after embedding -------------------------------------------------------------------------------
    def fold_embedded(self, embedded: list[tuple[str, Vectors]]) -> int:
        """The semantic pass over freshly embedded entries that wait for it (``fold_pending``): each one
        whose nearest live neighbour (cosine >= the threshold, created earlier) it restates is folded into
        that neighbour; the others just leave the queue. Returns how many were folded. Never raises on one
        entry's account: a failure is logged and the entry stays as it was saved."""
        if not self._has_vectors():
            return 0
        folded = 0
        waiting = self._store.facts.fold_pending([fact_id for fact_id, _ in embedded])
        if not waiting:
            return 0  # the common case in bulk ingestion: one query, no transaction
        try:
            near = self._nearest_many([(fact_id, vector) for fact_id, vector in embedded if fact_id in waiting])
        except StorageError:
            raise  # the store itself failed: the entries stay waiting, the worker retries
        except Exception:  # the batch lookup is a shortcut: each entry can still search on its own
            log.exception("the batch lookup of nearest vectors failed; searching per entry")
            near = {}
        with self._store.transaction():
            for fact_id, vector in embedded:
                if fact_id not in waiting:
                    continue
                try:
                    with self._store.transaction():  # a savepoint: one entry's failure undoes only its writes
                        folded += self._fold_one(fact_id, vector, near.get(fact_id))
                except StorageError:
                    raise  # the store itself failed (a full disk): no other entry can be written either
                except Exception:  # one entry's trouble must not stop the worker; the dream is the backstop
                    log.exception("semantic deduplication of %s failed; the entry is kept as saved", fact_id)
        return folded

    def _nearest_many(self, waiting: list[tuple[str, Vectors]]) -> dict[str, list[tuple[str, float]]]:
        """The nearest vectors of each waiting entry, found for a whole batch at once where the index can
        (one matrix product per agent instead of a scan of the agent's vectors per entry: at 50,000 vectors a
        scan cost ~17 ms of CPU, as much as embedding the entry). The fold writes no vector, so these are the
        neighbours a search per entry would find (another process's writes meanwhile aside, which the next
        batch sees); hydration still filters them. Found before the fold's write transaction, so no vector
        search holds the write lock; a lone entry (the common case under live load) is searched as the fold
        would search it."""
        index = self._recall.index if self._recall is not None else None
        if index is not None and len(waiting) == 1:
            fact_id, vector = waiting[0]
            scope = self._store.facts.owner(fact_id)
            if scope is None:
                return {}
            query = np.asarray(vector, dtype=np.float32)
            return {fact_id: index.search(scope.agent_id, query, self.config.candidates + 1)}
        if not isinstance(index, VectorIndex) or len(waiting) < 2:
            return {}
        by_agent: dict[str, list[tuple[str, Vectors]]] = {}
        for fact_id, vector in waiting:
            scope = self._store.facts.owner(fact_id)
            if scope is not None:
                by_agent.setdefault(scope.agent_id, []).append((fact_id, vector))
        near: dict[str, list[tuple[str, float]]] = {}
        for agent_id, items in by_agent.items():
            queries = np.stack([np.asarray(vector, dtype=np.float32) for _, vector in items])
            found = index.search_many(agent_id, queries, self.config.candidates + 1)
            near.update((fact_id, hits) for (fact_id, _), hits in zip(items, found, strict=True))
        return near

    def _fold_one(self, fact_id: str, vector: Vectors, near: list[tuple[str, float]] | None = None) -> int:
        """``near``: the entry's nearest vectors when already found for its batch (``_nearest_many``)."""
        now = self._clock.now()
        scope = self._store.facts.owner(fact_id)
        candidate = None if scope is None else self._store.facts.get(fact_id, scope)
        if candidate is None or not candidate.fold_pending:
            return 0
        done = replace(candidate, fold_pending=False)
        # Touched since it was saved (edited, reinforced): no longer a fresh restatement to fold away, but
        # still a statement that may contradict an older entry.
        fresh = candidate.reinforcement_count == 1 and candidate.updated_at is None
        current = candidate.current and self.config.enabled
        matches = self._semantic_matches(candidate, vector, now, near) if current else []
        result = self._first_applicable(matches, candidate, now, fold=fresh)
        if isinstance(result, Contradicted):
            # Close in meaning, opposite in stance: the fresh entry is the newer belief (saved later).
            self._store.facts.write(done, change=Change.HOUSEKEEPING, at=now)
            supersede(self._store, result.existing, done, result.difference, now, mode=self.config.on_contradiction)
            log.info("%s contradicts %s (%s)", candidate.id, result.existing.id, result.difference.describe())
            return 0
        if result is None:
            self._store.facts.write(done, change=Change.HOUSEKEEPING, at=now)
            return 0
        self._store.facts.write(
            replace(done, archived_at=now, superseded_by=result[1].id), change=Change.SUPERSEDED, at=now
        )
        log.info("folded %s into %s (%s)", candidate.id, result[1].id, result[0])
        return 1

    def _semantic_matches(
        self, candidate: MemoryEntry, vector: Vectors, now: datetime, near: list[tuple[str, float]] | None = None
    ) -> list[MemoryEntry]:
        """The live entries within the cosine threshold of ``candidate``, nearest first."""
        assert self._recall is not None and self._recall.index is not None
        if near is None:
            query = np.asarray(vector, dtype=np.float32)
            near = self._recall.index.search(candidate.scope.agent_id, query, self.config.candidates + 1)
        wanted = {i: s for i, s in near if s >= self.config.similarity_threshold and i != candidate.id}
        if not wanted:
            return []
        flt = FactFilter(scope=candidate.scope, now=now, category_prefix=top_category(candidate.category))
        entries = {e.id: e for e in self._store.facts.get_many(list(wanted), flt)}
        ranked = [entries[i] for i in sorted(wanted, key=lambda i: -wanted[i]) if i in entries]
        # Never into an entry still waiting for its own check: entries are checked in save order, so of two
        # fresh restatements the first is kept and the second folds into it.
        return [e for e in ranked if self._comparable(candidate, e) and not e.fold_pending]


def _lineage(a: MemoryEntry, b: MemoryEntry) -> bool:
    """One entry was expanded out of the other (``metadata.expandedFrom``). They never fold into each other:
    the original stays as its caller saved it (text and source), and the agent's own reading of a text is
    not a second observation of it, so it must not reinforce it."""
    return a.metadata.get(EXPANDED_FROM) == b.id or b.metadata.get(EXPANDED_FROM) == a.id


def _merged_metadata(existing: MemoryEntry, candidate: MemoryEntry, source: str | None) -> dict[str, Any]:
    metadata = {k: v for k, v in existing.metadata.items() if k not in SUBJECT_TIME_KEYS and k != "source"}
    metadata.update(merge_subject_time([existing.metadata, candidate.metadata]))
    if source is not None:
        metadata["source"] = source
    return metadata


def _union_tags(existing: tuple[str, ...], new: tuple[str, ...]) -> tuple[str, ...]:
    return existing + tuple(tag for tag in new if tag not in existing)


def reinforced(
    existing: MemoryEntry, candidate: MemoryEntry, now: datetime, *, seen: datetime | None = None
) -> MemoryEntry:
    """The same fact seen again (at ``seen``, default ``now``): last_seen_at (only forwards),
    reinforcement_count, importance (the higher), tags (the union) and the source (the more trusted) move; the
    text, ``created_at`` and ``updated_at`` do not."""
    source = most_trusted(existing.source, candidate.source)
    return replace(
        existing,
        last_seen_at=max(now if seen is None else seen, existing.last_seen_at),
        reinforcement_count=existing.reinforcement_count + candidate.reinforcement_count,
        importance=max(existing.importance, candidate.importance),
        tags=_union_tags(existing.tags, candidate.tags),
        metadata=_merged_metadata(existing, candidate, source),
    )


def extended(
    existing: MemoryEntry, candidate: MemoryEntry, content: str, now: datetime, *, seen: datetime | None = None
) -> MemoryEntry:
    """A restatement with new specifics (seen at ``seen``, default ``now``): the text grows, ``updated_at``
    moves to ``now`` (the record changes now), ``last_seen_at`` only forwards, and the source is the less
    trusted of the two (combined text is no more trusted than its weakest part)."""
    source = least_trusted(existing.source, candidate.source)
    return replace(
        existing,
        content=content,
        updated_at=now,
        last_seen_at=max(now if seen is None else seen, existing.last_seen_at),
        reinforcement_count=existing.reinforcement_count + candidate.reinforcement_count,
        importance=max(existing.importance, candidate.importance),
        tags=_union_tags(existing.tags, candidate.tags),
        metadata=_merged_metadata(existing, candidate, source),
    )
