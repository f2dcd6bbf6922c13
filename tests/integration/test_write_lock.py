"""The write-lock costs of issue 21, each shown by a count (never a timing), on a real SQLite store:

1. save-time deduplication looks up the entry a save restates BEFORE the write transaction (no full-text
   lookup under the lock), and re-checks the plan cheaply under it: a write meanwhile that touches what the
   lookup read, or that could be a match itself, makes it decide again under the lock, so the outcome is
   always the one the lookup inside the lock would give;
2. ``Aging.flush_reads`` writes the waiting reads as one batched two-column UPDATE: no entry is read or
   rewritten whole, and no version is recorded.

The counts come from counting wrappers around the engine's real store, handed to the public constructors
(``Deduplicator``, ``LongTermMemory``, ``Aging``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, cast

import reverie
from reverie.clock import FakeClock
from reverie.core.aging import ReadState, record_read
from reverie.memory.aging import Aging
from reverie.memory.dedup import Contradicted, Deduplicator
from reverie.memory.entries import new_id
from reverie.memory.longterm import LongTermMemory
from reverie.storage.base import Store
from reverie.types import MemoryEntry, Scope, Tier

FACT = "Maya bought a bicycle for 300 euros in Lisbon on March 3, 2024."
RESTATED = "On March 3, 2024, Maya purchased a bicycle for 300 euros in Lisbon."


class _Facts:
    """The store's fact repository, counting full-text lookups (and those made inside a transaction), whole-row
    reads and writes, and the rows ``write_reads`` sets."""

    def __init__(self, inner: Any, store: Store) -> None:
        self._inner = inner
        self._store = store
        self.searches = self.searches_in_lock = self.gets = self.writes = self.read_batches = self.reads_set = 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        self.searches_in_lock += self._store.in_transaction()
        return self._inner.search(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets += 1
        return self._inner.get(*args, **kwargs)

    def write(self, *args: Any, **kwargs: Any) -> Any:
        self.writes += 1
        return self._inner.write(*args, **kwargs)

    def write_reads(self, reads: list[tuple[str, float, datetime]]) -> None:
        self.read_batches += 1
        self.reads_set += len(reads)
        self._inner.write_reads(reads)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Store:
    """A real store whose facts are counted, and whose outermost transactions are (each one commit)."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.facts = _Facts(inner.facts, inner)
        self.commits = 0

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if not self._inner.in_transaction():
            self.commits += 1
        with self._inner.transaction():
            yield

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _counted_dedup(rv: reverie.Reverie) -> tuple[_Store, Deduplicator]:
    store = _Store(rv.store)
    dedup = Deduplicator(cast(Store, store), rv.clock, rv.dedup.config, vocabulary=rv.coverage_vocabulary)
    return store, dedup


def _candidate(text: str, clock: FakeClock, scope: Scope | None = None) -> MemoryEntry:
    """An entry as a save builds it (``LongTermMemory.save``): a new id, seen now."""
    now = clock.now()
    return MemoryEntry(
        id=new_id(),
        content=text,
        category="general",
        tags=(),
        tier=Tier.SEMANTIC,
        scope=scope or Scope(),
        created_at=now,
        last_seen_at=now,
    )


def _fold(rv: reverie.Reverie, dedup: Deduplicator, candidate: MemoryEntry, plan: Any) -> Any:
    with rv.store.transaction():
        return dedup.fold_on_save(candidate, rv.clock.now(), plan)


# -- 1. save-time deduplication outside the lock -----------------------------------------------------------
def test_a_save_looks_up_its_match_before_the_write_lock(rv: reverie.Reverie, clock: FakeClock) -> None:
    store, dedup = _counted_dedup(rv)
    memory = LongTermMemory(cast(Store, store), clock, dedup=dedup)
    first = memory.save(FACT)
    clock.advance(timedelta(days=1))
    again = memory.save(RESTATED)
    assert (first.outcome, again.outcome, again.id) == ("created", "reinforced", first.id)
    assert store.facts.searches == 2 and store.facts.searches_in_lock == 0  # one lookup per save, none locked
    assert store.commits == 2
    assert rv.memory.get(first.id).reinforcement_count == 2 and rv.memory.get(first.id).last_seen_at == clock.now()


def test_an_unrelated_write_meanwhile_keeps_the_plan(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.memory.save(FACT)
    store, dedup = _counted_dedup(rv)
    candidate = _candidate(RESTATED, clock)
    plan = dedup.plan_save(candidate, clock.now())
    rv.memory.save("The staging database runs PostgreSQL 16.")  # same agent, another topic
    rv.memory.save(FACT, scope=Scope(user_id="u1"))  # the same words, another scope: never a match
    outcome, stored = _fold(rv, dedup, candidate, plan)
    assert (outcome, stored.id) == ("reinforced", first.id)
    assert store.facts.searches == 1 and store.facts.searches_in_lock == 0


def test_a_restatement_saved_meanwhile_is_found_under_the_lock(rv: reverie.Reverie, clock: FakeClock) -> None:
    """Two saves of one fact at once: the second's plan found nothing, but the first's entry is a match."""
    store, dedup = _counted_dedup(rv)
    candidate = _candidate(RESTATED, clock)
    plan = dedup.plan_save(candidate, clock.now())
    assert plan.existing is None
    first = rv.memory.save(FACT)
    outcome, stored = _fold(rv, dedup, candidate, plan)
    assert (outcome, stored.id) == ("reinforced", first.id)  # no duplicate entry
    assert store.facts.searches_in_lock == 1  # decided again, under the lock


def test_a_match_edited_meanwhile_is_decided_again(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.memory.save(FACT)
    _, dedup = _counted_dedup(rv)
    candidate = _candidate(RESTATED, clock)
    plan = dedup.plan_save(candidate, clock.now())
    assert plan.existing is not None and plan.existing.id == first.id
    rv.memory.edit(first.id, content="Maya sold her car in Porto.")
    assert _fold(rv, dedup, candidate, plan) is None  # nothing says it any more: created
    assert rv.memory.get(first.id).reinforcement_count == 1


def test_a_match_archived_meanwhile_is_decided_again(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.memory.save(FACT)
    _, dedup = _counted_dedup(rv)
    candidate = _candidate(RESTATED, clock)
    plan = dedup.plan_save(candidate, clock.now())
    rv.memory.archive(first.id)
    assert _fold(rv, dedup, candidate, plan) is None
    assert rv.memory.get(first.id).archived and rv.memory.get(first.id).reinforcement_count == 1


def test_a_reinforcement_meanwhile_is_counted_once_more(rv: reverie.Reverie, clock: FakeClock) -> None:
    """The plan holds (the text did not change): it is applied to the entry as it is under the lock."""
    first = rv.memory.save(FACT, tags=["bikes"])
    store, dedup = _counted_dedup(rv)
    candidate = replace(_candidate(RESTATED, clock), tags=("lisbon",))
    plan = dedup.plan_save(candidate, clock.now())
    clock.advance(timedelta(hours=1))
    rv.memory.save(FACT.lower(), tags=["shopping"])  # another save reinforces it meanwhile (tags: a logged change)
    outcome, stored = _fold(rv, dedup, candidate, plan)
    assert (outcome, stored.id, stored.reinforcement_count) == ("reinforced", first.id, 3)
    assert rv.memory.get(first.id).tags == ("bikes", "shopping", "lisbon")


def test_a_contradiction_planned_before_the_lock_supersedes(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.memory.save("Priya prefers tabs over spaces.")
    clock.advance(timedelta(days=1))
    second = rv.memory.save("Priya prefers spaces over tabs.")
    assert second.outcome == "superseded" and second.contradiction is not None
    assert rv.memory.get(first.id).superseded_by == second.id


# -- 2. recent reads: two columns, one batch -----------------------------------------------------------------
def test_flush_reads_writes_two_columns_in_one_batch_never_whole_rows(rv: reverie.Reverie, clock: FakeClock) -> None:
    ids = [rv.memory.save(f"The {name} service runs on port {8000 + i}").id for i, name in enumerate("abcdef")]
    store = _Store(rv.store)
    aging = Aging(cast(Store, store), clock, rv.aging.config)
    aging.note_reads(ids[:4])
    clock.advance(timedelta(hours=3))
    aging.note_reads([*ids[:2], "0123456789ab"])  # an id the store does not hold (purged meanwhile): skipped
    before = {i: rv.store.facts.get(i, Scope()) for i in ids}
    versions = {i: len(rv.store.versions.history(i, Scope())) for i in ids}

    assert aging.flush_reads() == 4
    assert store.commits == 1 and store.facts.read_batches == 1 and store.facts.reads_set == 4
    assert store.facts.writes == 0 and store.facts.gets == 0  # no entry read or written whole
    params = aging.config.retention
    for position, entry_id in enumerate(ids):
        stored = rv.store.facts.get(entry_id, Scope())
        old = before[entry_id]
        assert stored is not None and old is not None
        stamps = [old.created_at, old.created_at + timedelta(hours=3)][: 2 if position < 2 else 1]
        expected: ReadState | None = None
        for stamp in stamps if position < 4 else []:
            expected = record_read(expected, now=stamp, tier=Tier.SEMANTIC, params=params)
        if expected is None:
            assert stored == old  # not read: untouched
        else:
            assert replace(stored, read_strength=0.0, read_at=None) == old  # nothing else moved
            assert (stored.read_strength, stored.read_at) == (expected.strength, expected.at)
        assert len(rv.store.versions.history(entry_id, Scope())) == versions[entry_id]  # no version
    assert aging.flush_reads() == 0 and store.commits == 1  # nothing waiting: no transaction


def test_an_entry_a_correction_changes_written_meanwhile_in_another_category_is_found_under_the_lock(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    """The correction lookup reads every category: a plan made before the entry it corrects was written does
    not hold, whatever that entry's category."""
    store, dedup = _counted_dedup(rv)
    candidate = _candidate("The team replaced Trello with Linear", clock)
    plan = dedup.plan_save(candidate, clock.now())
    assert plan.existing is None
    first = rv.memory.save("The team uses Trello for planning", category="project-context").entry
    found = _fold(rv, dedup, candidate, plan)
    assert isinstance(found, Contradicted) and found.existing.id == first.id
    assert store.facts.searches_in_lock >= 1  # decided again, under the lock
