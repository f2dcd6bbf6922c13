"""Scope isolation: every read of the contract shows exactly what ``Scope.sees`` allows, and nothing else.

Each entry has its own category and shares the word "zebra", so one look through every read method tells
which entries a scope can see.
"""

from __future__ import annotations

import pytest

from reverie.storage.base import Store
from reverie.types import Scope

from .support import T0, eid, entry, hit_ids, ids, match, view

A, B = "agent-a", "agent-b"
STORED = {
    1: Scope(A),
    2: Scope(A, user_id="u1"),
    3: Scope(A, user_id="u2"),
    4: Scope(A, session_id="s1"),
    5: Scope(A, user_id="u1", session_id="s1"),
    6: Scope(B),
    7: Scope(B, user_id="u1"),
    8: Scope(B, session_id="s1"),
}
CASES = [
    pytest.param(Scope(A), {1}, id="agent-a"),
    pytest.param(Scope(A, user_id="u1"), {1, 2}, id="a-user1"),
    pytest.param(Scope(A, user_id="u2"), {1, 3}, id="a-user2"),
    pytest.param(Scope(A, user_id="u3"), {1}, id="a-unknown-user"),
    pytest.param(Scope(A, session_id="s1"), {1, 4}, id="a-session1"),
    pytest.param(Scope(A, session_id="s2"), {1}, id="a-other-session"),
    pytest.param(Scope(A, user_id="u1", session_id="s1"), {1, 2, 4, 5}, id="a-user1-session1"),
    pytest.param(Scope(A, user_id="u2", session_id="s1"), {1, 3, 4}, id="a-user2-session1"),
    pytest.param(Scope(B), {6}, id="agent-b"),
    pytest.param(Scope(B, user_id="u1"), {6, 7}, id="b-user1"),
    pytest.param(Scope(B, user_id="u1", session_id="s1"), {6, 7, 8}, id="b-user1-session1"),
    pytest.param(Scope("agent-c", user_id="u1", session_id="s1"), set(), id="unknown-agent"),
    pytest.param(Scope(), set(), id="default-agent"),
]


@pytest.fixture
def populated(store: Store) -> Store:
    for n, scope in STORED.items():
        store.facts.add(entry(n, f"zebra fact {n}", category=f"scope/n{n}", tags=("shared",), scope=scope), at=T0)
    return store


def observe(store: Store, scope: Scope) -> dict[str, set[int]]:
    """Which stored entries each read returns for ``scope``."""
    number = {eid(n): n for n in STORED}
    flt = view(scope)
    return {
        "get": {n for n in STORED if store.facts.get(eid(n), scope) is not None},
        "search": {number[i] for i in hit_ids(store.facts.search(match("zebra"), flt, 100))},
        "search-tag": {number[i] for i in hit_ids(store.facts.search(match("shared"), flt, 100))},
        "search_substring": {number[i] for i in ids(store.facts.search_substring("ebra fac", flt, 100, frozenset()))},
        "recent": {number[i] for i in ids(store.facts.recent(flt, 100))},
        "taxonomy": {int(c.category.removeprefix("scope/n")) for c in store.facts.taxonomy(flt)},
        "history": {n for n in STORED if store.versions.history(eid(n), scope)},
        "version": {n for n in STORED if store.versions.get(eid(n), 1, scope) is not None},
    }


def test_the_expected_sets_agree_with_scope_sees() -> None:
    for case in CASES:
        query, expected = case.values
        assert {n for n, stored in STORED.items() if query.sees(stored)} == expected, case.id


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_every_read_shows_exactly_what_the_scope_may_see(populated: Store, query: Scope, expected: set[int]) -> None:
    observed = observe(populated, query)
    assert observed == dict.fromkeys(observed, expected)


@pytest.mark.parametrize(("query", "expected"), CASES)
def test_scope_holds_with_archived_entries_included(populated: Store, query: Scope, expected: set[int]) -> None:
    flt = view(query, include_archived=True)
    got = {int(e.category.removeprefix("scope/n")) for e in populated.facts.recent(flt, 100)}
    assert got == expected
    got = {int(e.category.removeprefix("scope/n")) for e, _ in populated.facts.search(match("zebra"), flt, 100)}
    assert got == expected


def test_scope_holds_under_a_category_prefix(populated: Store) -> None:
    flt = view(Scope(A, user_id="u1"), category_prefix="scope")
    assert sorted(ids(populated.facts.recent(flt, 100))) == [eid(1), eid(2)]
    flt = view(Scope(A, user_id="u1"), category_prefix="scope/n3")
    assert populated.facts.recent(flt, 100) == []
    assert populated.facts.search(match("zebra"), flt, 100) == []


def test_iter_all_by_agent_never_crosses_agents(populated: Store) -> None:
    assert ids(populated.facts.iter_all(A)) == [eid(n) for n in (1, 2, 3, 4, 5)]
    assert ids(populated.facts.iter_all(B)) == [eid(n) for n in (6, 7, 8)]
