"""Keyset pages of API keys on both backends: ``ApiKeyRepository.page`` in ``list`` order (created_at, then id
in code points), and ``ApiKeys.page`` walking the keys by cursor. A walk with keys created and revoked between
its pages sees every key that existed for the whole walk exactly once, oldest first."""

from __future__ import annotations

import pytest

from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.keys.service import ApiKeys
from reverie.storage.base import Store

from .support import T0, at


def test_a_key_walk_with_writes_between_pages_misses_and_repeats_nothing(store: Store) -> None:
    clock = FakeClock(T0)
    keys = ApiKeys(store, clock)
    initial = []
    for n in range(11):
        if n % 3 == 0:  # several keys share a creation time: the id breaks the ties
            clock.set(at(minutes=n))
        initial.append(keys.create(f"key {n}", agent_id="a", scopes=["memory_read"])[0].key_id)
    assert [k.key_id for k in store.keys.page(None, 100)] == [k.key_id for k in store.keys.list()]
    seen: list[str] = []
    cursor: str | None = None
    extra = 0
    while True:
        page = keys.page(cursor=cursor, limit=4)
        assert len(page.items) <= 4
        seen.extend(k.key_id for k in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        extra += 1
        keys.revoke(initial[extra])
        clock.set(at(hours=extra))
        keys.create(f"late {extra}", agent_id="a", scopes=["memory_read"])
    assert len(seen) == len(set(seen))
    assert seen == [k.key_id for k in keys.list()]
    assert set(initial) <= set(seen)
    with pytest.raises(ValidationError) as refused:
        keys.page(cursor="garbage")
    assert refused.value.field == "cursor"
    with pytest.raises(ValidationError):
        keys.page(limit=0)
