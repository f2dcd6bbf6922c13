"""The "reinforced" and "cold" listing orders on both backends (``LongTermMemory.list`` over
``FactRepository.page``): most reinforced first and least recently seen first, each tie broken by the id in
the same direction, a walk by cursor sees every entry once, and a cursor is tied to its order."""

from __future__ import annotations

import pytest

from reverie.clock import FakeClock
from reverie.core.filters import Cursor, encode_cursor, fingerprint
from reverie.errors import ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.storage.base import Store
from reverie.types import EntryFilter, MemoryEntry, Page

from .support import T0, at, eid, entry


def fill(store: Store, count: int) -> list[MemoryEntry]:
    """``count`` entries with few distinct reinforcement counts and last-seen times (ties for the id)."""
    made = [
        entry(
            n,
            f"fact number {n}",
            seen=at(minutes=(n * 7) % 23),
            reinforcement_count=1 + (n * 5) % 9,
            tags=("even",) if n % 2 == 0 else (),
        )
        for n in range(count)
    ]
    with store.transaction():
        for e in made:
            store.facts.add(e, at=T0)
    return made


def walk(memory: LongTermMemory, **options: object) -> list[MemoryEntry]:
    seen: list[MemoryEntry] = []
    cursor: str | None = None
    while True:
        page: Page[MemoryEntry] = memory.list(cursor=cursor, **options)  # type: ignore[arg-type]
        seen.extend(page.items)
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_reinforced_walks_most_reinforced_first_then_by_id_descending(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    made = fill(store, 230)
    memory = LongTermMemory(store, clock)
    seen = walk(memory, order="reinforced", limit=17)
    expected = sorted(made, key=lambda e: (e.reinforcement_count, e.id), reverse=True)
    assert [e.id for e in seen] == [e.id for e in expected]
    assert seen[0].reinforcement_count == 9 and seen[-1].reinforcement_count == 1


def test_cold_walks_least_recently_seen_first_then_by_id_ascending(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    made = fill(store, 230)
    memory = LongTermMemory(store, clock)
    seen = walk(memory, order="cold", limit=19)
    expected = sorted(made, key=lambda e: (e.last_seen_at, e.id))
    assert [e.id for e in seen] == [e.id for e in expected]
    newest_first = walk(memory, order="recent", limit=50)
    assert [e.id for e in newest_first] == [e.id for e in reversed(expected)]


def test_the_new_orders_page_through_a_filter_and_the_archive(store: Store, clock: FakeClock) -> None:
    clock.set(at(days=1))
    fill(store, 40)
    memory = LongTermMemory(store, clock)
    memory.archive(eid(4))
    evens = walk(memory, order="reinforced", limit=3, filter=EntryFilter(tags_any=("even",)))
    assert sorted(e.id for e in evens) == sorted(eid(n) for n in range(0, 40, 2) if n != 4)
    everything = walk(memory, order="cold", limit=7, include_archived=True)
    assert len(everything) == 40 and eid(4) in {e.id for e in everything}


def test_a_reinforcement_during_a_walk_moves_the_entry_but_never_breaks_the_walk(
    store: Store, clock: FakeClock
) -> None:
    clock.set(at(days=1))
    fill(store, 30)
    memory = LongTermMemory(store, clock)
    first = memory.list(order="reinforced", limit=10)
    assert first.next_cursor is not None
    # A save that restates an entry reinforces it (count + 1): the rest of the walk still reads in order.
    memory.save("fact number 29", dedup=True)
    rest = walk_from(memory, first.next_cursor, order="reinforced", limit=10)
    counts = [e.reinforcement_count for e in [*first.items, *rest]]
    assert len(first.items) + len(rest) >= 29
    assert rest == sorted(rest, key=lambda e: (e.reinforcement_count, e.id), reverse=True)
    assert max(counts) >= 9


def walk_from(memory: LongTermMemory, cursor: str, **options: object) -> list[MemoryEntry]:
    seen: list[MemoryEntry] = []
    token: str | None = cursor
    while token is not None:
        page: Page[MemoryEntry] = memory.list(cursor=token, **options)  # type: ignore[arg-type]
        seen.extend(page.items)
        token = page.next_cursor
    return seen


def test_a_cursor_of_one_order_is_refused_by_another_and_a_forged_key_is_a_cursor_error(
    store: Store, clock: FakeClock
) -> None:
    clock.set(at(days=1))
    fill(store, 12)
    memory = LongTermMemory(store, clock)
    reinforced = memory.list(order="reinforced", limit=5).next_cursor
    cold = memory.list(order="cold", limit=5).next_cursor
    assert reinforced is not None and cold is not None
    with pytest.raises(ValidationError) as raised:
        memory.list(order="cold", cursor=reinforced, limit=5)
    assert raised.value.field == "cursor"
    with pytest.raises(ValidationError):
        memory.list(order="reinforced", cursor=cold, limit=5)
    # A token of the right listing whose key is of the wrong kind (text where a count belongs).
    flt_listing = fingerprint(memory.list(order="reinforced", limit=1).items[0].scope, None, False, None, "reinforced")
    forged = encode_cursor(Cursor("many", eid(3)), flt_listing)
    with pytest.raises(ValidationError) as raised:
        memory.list(order="reinforced", cursor=forged, limit=5)
    assert raised.value.field == "cursor" and "another listing" not in str(raised.value)
