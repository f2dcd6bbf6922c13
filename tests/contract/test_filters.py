"""EntryFilter on both backends: every field, through the reads that take a FactFilter (page, recent, full-text
search, substring search, candidates), with the checked filter the services build (``core.filters``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reverie.core.filters import entry_filter
from reverie.errors import ValidationError
from reverie.storage.base import FactFilter, Store
from reverie.types import EntryFilter, MemoryEntry, Tier

from .support import T0, at, eid, entry, match, view


def add(store: Store, *entries: MemoryEntry) -> None:
    with store.transaction():
        for e in entries:
            store.facts.add(e, at=T0)


def through(flt: EntryFilter) -> FactFilter:
    checked = entry_filter(flt)
    return replace(view(now=at(days=400)), entry=checked)


def listed(store: Store, flt: EntryFilter) -> set[str]:
    return {e.id for e in store.facts.page(through(flt), "newest", None, 1000)}


def numbers(*ns: int) -> set[str]:
    return {eid(n) for n in ns}


@pytest.fixture
def corpus(store: Store) -> Store:
    """Seven entries whose fields differ one at a time."""
    add(
        store,
        entry(1, "alpha fact", tags=("work", "urgent"), metadata={"source": "user", "project": "x", "n": 5}),
        entry(2, "alpha fact two", tags=("work",), tier=Tier.EPISODIC, importance=0.9, metadata={"n": "5"}),
        entry(3, "alpha three", tags=("home",), importance=0.1, pinned=True, metadata={"source": "tool:web"}),
        entry(4, "alpha four", seen=at(days=10), updated_at=at(days=20), metadata={"subjectTime": "2025-03-14"}),
        entry(5, "alpha five", seen=at(days=30), metadata={"subjectTimeStart": "2025-01", "subjectTimeEnd": "2025-02"}),
        entry(6, "alpha six", seen=at(days=40), metadata={"subjectTime": "2024", "flag": True, "z": None}),
        entry(7, "alpha seven", tags=("urgent",), metadata={"flag": False, "project": "y"}),
    )
    return store


def test_tags_any_and_all(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(tags_any=("work", "home"))) == numbers(1, 2, 3)
    assert listed(corpus, EntryFilter(tags_all=("work", "urgent"))) == numbers(1)
    assert listed(corpus, EntryFilter(tags_any=("urgent",), tags_all=("work",))) == numbers(1)
    assert listed(corpus, EntryFilter(tags_any=("nowhere",))) == set()


def test_source_tier_pinned(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(source="user")) == numbers(1)
    assert listed(corpus, EntryFilter(source="tool:web")) == numbers(3)
    assert listed(corpus, EntryFilter(tier=Tier.EPISODIC)) == numbers(2)
    assert listed(corpus, EntryFilter(pinned=True)) == numbers(3)
    assert listed(corpus, EntryFilter(pinned=False)) == numbers(1, 2, 4, 5, 6, 7)


def test_importance_range_is_inclusive(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(importance_min=0.9)) == numbers(2)
    assert listed(corpus, EntryFilter(importance_max=0.1)) == numbers(3)
    assert listed(corpus, EntryFilter(importance_min=0.5, importance_max=0.5)) == numbers(1, 4, 5, 6, 7)


def test_created_and_updated_ranges_are_half_open(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(created_from=at(days=10))) == numbers(4, 5, 6)
    assert listed(corpus, EntryFilter(created_from=at(days=10), created_to=at(days=40))) == numbers(4, 5)
    # "updated": the last rewrite, or the creation for an entry never rewritten.
    assert listed(corpus, EntryFilter(updated_from=at(days=15), updated_to=at(days=35))) == numbers(4, 5)


def test_subject_time_overlaps_at_the_coarser_precision(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(subject_from="2025-03")) == numbers(4)
    assert listed(corpus, EntryFilter(subject_from="2025-02-10", subject_to="2025-03-01")) == numbers(5)
    assert listed(corpus, EntryFilter(subject_to="2024-06-01")) == numbers(6)
    assert listed(corpus, EntryFilter(subject_from="2024", subject_to="2025")) == numbers(4, 5, 6)
    assert listed(corpus, EntryFilter(subject_from="2026")) == set()


def test_metadata_equality_is_typed(corpus: Store) -> None:
    assert listed(corpus, EntryFilter(metadata={"n": 5})) == numbers(1)
    assert listed(corpus, EntryFilter(metadata={"n": 5.0})) == numbers(1)
    assert listed(corpus, EntryFilter(metadata={"n": "5"})) == numbers(2)
    assert listed(corpus, EntryFilter(metadata={"flag": True})) == numbers(6)
    assert listed(corpus, EntryFilter(metadata={"flag": False})) == numbers(7)
    assert listed(corpus, EntryFilter(metadata={"project": "x", "source": "user"})) == numbers(1)
    # None: absent or null.
    assert listed(corpus, EntryFilter(metadata={"project": None})) == numbers(2, 3, 4, 5, 6)
    assert listed(corpus, EntryFilter(metadata={"z": None, "flag": True})) == numbers(6)


def test_every_filtered_read_applies_it(corpus: Store) -> None:
    flt = through(EntryFilter(tags_any=("work",)))
    assert {e.id for e, _ in corpus.facts.search(match("alpha"), flt, 10)} == numbers(1, 2)
    assert {e.id for e in corpus.facts.recent(flt, 10)} == numbers(1, 2)
    assert {e.id for e in corpus.facts.search_substring("alpha", flt, 10, frozenset())} == numbers(1, 2)
    assert {c.id for c in corpus.facts.candidates([eid(n) for n in range(1, 8)], flt)} == numbers(1, 2)
    assert {e.id for e in corpus.facts.get_many([eid(n) for n in range(1, 8)], flt)} == numbers(1, 2)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (EntryFilter(importance_min=0.8, importance_max=0.2), "importance_min"),
        (EntryFilter(importance_min=1.5), "importance_min"),
        (EntryFilter(tier="cosmic"), "tier"),  # type: ignore[arg-type]
        (EntryFilter(created_from=T0, created_to=T0 - timedelta(days=1)), "created_from"),
        (EntryFilter(subject_from="2025-13"), "subject_from"),
        (EntryFilter(subject_from="2025-05", subject_to="2025-04-30"), "subject_from"),
        (EntryFilter(metadata={"bad key": 1}), "metadata"),
        (EntryFilter(metadata={"k": [1, 2]}), "metadata"),  # type: ignore[dict-item]
        (EntryFilter(tags_any=("x" * 200,)), "tags_any"),
        (EntryFilter(pinned="yes"), "pinned"),  # type: ignore[arg-type]
        (EntryFilter(source=""), "source"),
        (EntryFilter(updated_from="last tuesday"), "updated_from"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_filter_names_its_field(bad: EntryFilter, field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        entry_filter(bad)
    assert raised.value.field == field


def test_an_empty_filter_is_no_filter() -> None:
    assert entry_filter(EntryFilter()) is None
    assert entry_filter(EntryFilter(tags_any=(" ",))) is None
    checked: Any = entry_filter(EntryFilter(created_from="2026-01-01"))  # type: ignore[arg-type]
    assert checked.created_from == T0.replace(hour=0)
