"""EntryFilter's ``archived`` and ``superseded`` on both backends, through the listing (``page``) and the reads
search uses (full-text, substring, recent, candidates). A current entry, a contradicted one (``superseded_by``
set, not archived: ADR 0011), a folded one (both) and a plain archived one. True widens the read to entries
the default visibility leaves out; False only narrows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reverie.core.filters import entry_filter
from reverie.storage.base import FactFilter, Store
from reverie.types import EntryFilter

from .support import T0, at, eid, entry, match, view

CURRENT, CONTRADICTED, FOLDED, ARCHIVED = (eid(n) for n in (1, 2, 3, 4))


@pytest.fixture
def states(store: Store) -> Store:
    with store.transaction():
        for e in (
            entry(1, "alpha current", seen=at(days=4)),
            entry(2, "alpha contradicted", seen=at(days=3), superseded_by=eid(1)),
            entry(3, "alpha folded", seen=at(days=2), superseded_by=eid(1), archived_at=at(days=5)),
            entry(4, "alpha archived", seen=at(days=1), archived_at=at(days=5)),
        ):
            store.facts.add(e, at=T0)
    return store


def through(flt: EntryFilter, *, include_archived: bool = False) -> FactFilter:
    return replace(view(now=at(days=10), include_archived=include_archived), entry=entry_filter(flt))


def listed(store: Store, flt: EntryFilter, *, include_archived: bool = False) -> set[str]:
    return {e.id for e in store.facts.page(through(flt, include_archived=include_archived), "newest", None, 100)}


CASES = [
    # Without include_archived: True reaches past the default visibility, False narrows the current ones.
    (EntryFilter(archived=True), {FOLDED, ARCHIVED}),
    (EntryFilter(superseded=True), {CONTRADICTED, FOLDED}),
    (EntryFilter(archived=False), {CURRENT}),
    (EntryFilter(superseded=False), {CURRENT}),
    (EntryFilter(archived=False, superseded=True), {CONTRADICTED}),
    (EntryFilter(archived=True, superseded=False), {ARCHIVED}),
    (EntryFilter(archived=True, superseded=True), {FOLDED}),
]


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_the_listing_keeps_the_states_asked_for(states: Store, flt: EntryFilter, expected: set[str]) -> None:
    assert listed(states, flt) == expected


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (EntryFilter(archived=False), {CURRENT, CONTRADICTED}),
        (EntryFilter(superseded=False), {CURRENT, ARCHIVED}),
        (EntryFilter(archived=True), {FOLDED, ARCHIVED}),
        (EntryFilter(superseded=True), {CONTRADICTED, FOLDED}),
    ],
)
def test_with_include_archived_false_narrows_too(states: Store, flt: EntryFilter, expected: set[str]) -> None:
    assert listed(states, flt, include_archived=True) == expected


def test_the_default_visibility_is_unchanged(states: Store) -> None:
    assert {e.id for e in states.facts.page(view(now=at(days=10)), "newest", None, 100)} == {CURRENT}
    assert listed(states, EntryFilter(pinned=False)) == {CURRENT}


@pytest.mark.parametrize(("flt", "expected"), CASES)
def test_every_read_search_uses_applies_it(states: Store, flt: EntryFilter, expected: set[str]) -> None:
    read = through(flt)
    every = [eid(n) for n in range(1, 5)]
    assert {e.id for e, _ in states.facts.search(match("alpha"), read, 10)} == expected
    assert {e.id for e in states.facts.search_substring("alpha", read, 10, frozenset())} == expected
    assert {e.id for e in states.facts.recent(read, 10)} == expected
    assert {c.id for c in states.facts.candidates(every, read)} == expected


def test_a_walk_of_the_superseded_pages_by_cursor(states: Store) -> None:
    read = through(EntryFilter(superseded=True))
    first = states.facts.page(read, "newest", None, 1)
    assert [e.id for e in first] == [CONTRADICTED]  # created at days=3, the folded one at days=2
    rest = states.facts.page(read, "newest", (first[0].created_at.isoformat(), first[0].id), 10)
    assert [e.id for e in rest] == [FOLDED]
