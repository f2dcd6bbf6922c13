"""Cursor paging of long-term entries on both backends (``LongTermMemory.list`` over ``FactRepository.page``):
a walk through 10,000 entries with saves and archives between its pages sees every entry that was listed for
the whole walk exactly once; cursors are opaque, tied to their listing, and the walk has no cap."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.storage.base import Store
from reverie.types import EntryFilter, MemoryEntry, Page

from .support import T0, at, eid, entry

TOTAL = 10_000


def fill(store: Store, count: int) -> list[MemoryEntry]:
    """``count`` entries over a hundred creation times (so many share one: the id breaks the tie)."""
    made = [
        entry(n, f"fact number {n}", seen=at(minutes=n % 100), tags=("even",) if n % 2 == 0 else ())
        for n in range(count)
    ]
    with store.transaction():
        for e in made:
            store.facts.add(e, at=T0)
    return made


def walk(memory: LongTermMemory, between: object = None, **options: object) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page: Page[MemoryEntry] = memory.list(cursor=cursor, **options)  # type: ignore[arg-type]
        seen.extend(e.id for e in page.items)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
        if callable(between):
            between(page)


def test_a_walk_through_10000_entries_with_writes_between_pages_misses_and_repeats_nothing(
    store: Store, clock: FakeClock
) -> None:
    clock.set(at(days=1))
    initial = {e.id for e in fill(store, TOTAL)}
    memory = LongTermMemory(store, clock)
    rng = random.Random(7)
    archived: set[str] = set()
    pending = sorted(initial)

    def write(page: Page[MemoryEntry]) -> None:
        # Saves dated into the middle of the walked range, and archives of entries both seen and not yet seen.
        for _ in range(3):
            minute = rng.randrange(100)
            memory.save(f"late arrival {rng.random()}", dedup=False, observed_at=at(minutes=minute).isoformat())
        for victim in rng.sample(pending, 4):
            if victim not in archived:
                memory.archive(victim)
                archived.add(victim)
        clock.advance(seconds=1)

    for order in ("newest", "oldest"):
        before = set(archived)
        seen = walk(memory, write, order=order, limit=1000)
        assert len(seen) == len(set(seen)), f"{order}: an entry came twice"
        missed = initial - archived - set(seen)
        assert not missed, f"{order}: {len(missed)} entries there for the whole walk were missed"
        assert len(archived) - len(before) > 30


def test_pages_follow_the_order_and_the_last_has_no_cursor(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 25)
    memory = LongTermMemory(store, clock)
    first = memory.list(limit=10)
    assert len(first.items) == 10 and first.next_cursor is not None
    assert [e.created_at for e in first.items] == sorted((e.created_at for e in first.items), reverse=True)
    everything = walk(memory, limit=10)
    assert len(everything) == 25
    oldest = walk(memory, order="oldest", limit=7)
    assert oldest == list(reversed(everything))
    assert memory.list(limit=25).next_cursor is None
    by_importance = walk(memory, order="importance", limit=4)
    assert sorted(by_importance) == sorted(everything)


def test_a_filtered_walk_has_no_cap_beyond_the_page_size(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 2500)
    memory = LongTermMemory(store, clock)
    evens = walk(memory, filter=EntryFilter(tags_any=("even",)), limit=1000)
    assert sorted(evens) == sorted(eid(n) for n in range(0, 2500, 2))
    with pytest.raises(ValidationError) as raised:
        memory.list(limit=1001)
    assert raised.value.field == "limit"


def test_archived_entries_are_listed_only_when_asked(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 3)
    memory = LongTermMemory(store, clock)
    memory.archive(eid(1))
    assert {e.id for e in memory.list().items} == {eid(0), eid(2)}
    assert {e.id for e in memory.list(include_archived=True).items} == {eid(0), eid(1), eid(2)}


def test_a_cursor_is_refused_by_another_listing_or_when_it_is_not_one(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 5)
    memory = LongTermMemory(store, clock)
    cursor = memory.list(limit=2).next_cursor
    assert cursor is not None
    for bad in (
        {"cursor": cursor, "order": "oldest"},
        {"cursor": cursor, "filter": EntryFilter(pinned=False)},
        {"cursor": "not-a-cursor"},
        {"cursor": cursor[:-3]},
        {"order": "sideways"},
    ):
        with pytest.raises(ValidationError) as raised:
            memory.list(limit=2, **bad)  # type: ignore[arg-type]
        assert raised.value.field in ("cursor", "order")
    assert len(memory.list(limit=2, cursor=cursor).items) == 2


def test_a_page_reads_through_the_scope(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 3)
    store.facts.add(replace(entry(99), scope=replace(entry(99).scope, agent_id="other")), at=T0)
    memory = LongTermMemory(store, clock)
    assert eid(99) not in {e.id for e in memory.list().items}
