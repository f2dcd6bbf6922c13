"""Keyset pages of working memory on both backends: ``WorkingRepository.page`` in code-point key order, and
``WorkingMemoryView.page`` walking a listing by cursor. A walk with entries added, rewritten and deleted
between its pages sees every entry live for the whole walk exactly once; another agent's, another prefix's
and expired entries never appear; a cursor is refused by another listing."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.storage.base import Store
from reverie.types import WorkingEntry
from reverie.working.service import WorkingConfig, WorkingMemory

from .support import T0

LIVE = T0 + timedelta(minutes=1)


def item(key: str, *, agent: str = "default", ttl_minutes: float = 5) -> WorkingEntry:
    return WorkingEntry(agent, key, "scratch", T0, T0 + timedelta(minutes=ttl_minutes), None, ())


def test_repository_pages_in_code_point_order_under_the_prefix(store: Store) -> None:
    names = ["b", "B", "a", "Z", "a_b", "a%b", "é", "10", "9"]
    for name in names:
        store.working.put(item(f"session/s1/{name}"))
    store.working.put(item("session/s1/gone", ttl_minutes=0.5))  # expired by LIVE
    store.working.put(item("session/s1/other", agent="agent-b"))
    store.working.put(item("session/s10/a"))  # a longer namespace, not under session/s1/
    first = store.working.page("default", "session/s1/", now=LIVE, after=None, limit=4)
    rest = store.working.page("default", "session/s1/", now=LIVE, after=first[-1].key, limit=100)
    expected = sorted(f"session/s1/{name}" for name in names)  # Python sorts str by code point
    assert [e.key for e in first + rest] == expected and len(first) == 4


def _memory(store: Store, clock: FakeClock) -> WorkingMemory:
    return WorkingMemory(store, clock, WorkingConfig(max_entries_per_namespace=1000))


def test_a_walk_with_writes_between_pages_sees_every_entry_exactly_once(store: Store, clock: FakeClock) -> None:
    view = _memory(store, clock).for_namespace("session/walk")
    initial = [f"k{n:04d}" for n in range(250)]
    for key in initial:
        view.save(key, f"value {key}", ttl_minutes=600)
    rng = random.Random(7)
    deleted: set[str] = set()
    seen: list[str] = []
    cursor: str | None = None
    extra = 0
    while True:
        page = view.page(cursor=cursor, limit=30)
        seen.extend(e.key for e in page.entries)
        cursor = page.next_cursor
        if cursor is None:
            break
        clock.advance(timedelta(seconds=5))
        for _ in range(3):  # new keys before and after the cursor, rewrites (which move recency), deletions
            extra += 1
            view.save(f"{rng.choice('jkl')}{extra:04d}x", "late", ttl_minutes=600)
        for key in rng.sample(initial, 3):
            view.save(key, "rewritten", ttl_minutes=600)
        for key in rng.sample(initial, 2):
            view.delete(key)
            deleted.add(key)
    keys = [key.removeprefix("session/walk/") for key in seen]
    assert len(keys) == len(set(keys)) and keys == sorted(keys)
    assert set(initial) - deleted <= set(keys)


def test_a_filtered_walk_and_a_prefix_walk_across_namespaces(store: Store, clock: FakeClock) -> None:
    memory = _memory(store, clock)
    for task in range(4):
        view = memory.for_namespace(f"patrol/t{task}")
        for n in range(40):
            view.save(f"f{n:02d}", "found", category="email/inbox" if n % 4 == 0 else "notes", tags=["p"])
    reader = memory.for_namespace("session/r")
    every: list[str] = []
    cursor: str | None = None
    while True:
        page = reader.page(namespace="patrol", category="email", tags=["p"], cursor=cursor, limit=7)
        every.extend(e.key for e in page.entries)
        assert page.resolved_prefix == "patrol"
        cursor = page.next_cursor
        if cursor is None:
            break
    assert every == sorted(f"patrol/t{t}/f{n:02d}" for t in range(4) for n in range(0, 40, 4))
    whole = reader.page(namespace="patrol", limit=1000)
    assert len(whole.entries) == 160 and whole.next_cursor is None


def test_a_cursor_belongs_to_its_listing(store: Store, clock: FakeClock) -> None:
    memory = _memory(store, clock)
    view = memory.for_namespace("session/a")
    for n in range(5):
        view.save(f"k{n}", "v")
    token = view.page(limit=2).next_cursor
    assert token is not None
    for call in (
        lambda: view.page(cursor=token, category="x"),
        lambda: memory.for_namespace("session/b").page(cursor=token),
        lambda: view.page(cursor="garbage"),
    ):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.field == "cursor"
    with pytest.raises(ValidationError) as too_big:
        view.page(limit=1001)
    assert too_big.value.field == "limit"
    assert view.page(namespace="stash").resolved_prefix is None
