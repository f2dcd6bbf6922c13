"""KvRepository: set / overwrite / revive with growing versions, compare-and-set, soft delete, prefix listing in
code-point order with a cursor, agent isolation, and the purge of deleted keys."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from reverie.errors import Conflict, ValidationError
from reverie.storage.base import Store
from reverie.types import KvItem

from .support import T0, UNICODE_TEXTS, at

VALUES: list[Any] = [
    "dark",
    "",
    0,
    -7,
    12_345_678_901_234,
    2.5,
    0.1 + 0.2,
    True,
    False,
    None,
    [],
    {},
    [1, "two", None, [3.5, {"four": False}]],
    {"theme": "dark", "nested": {"list": [1, 2.5, None, True], "ü": "ß"}, "": "empty key"},
    *UNICODE_TEXTS,
]


def keys(items: list[KvItem]) -> list[str]:
    return [i.key for i in items]


# -- put and get -------------------------------------------------------------------------------------------
def test_put_then_get_reads_every_field_back(store: Store) -> None:
    stored = store.kv.put("default", "user:preference:theme", {"theme": "dark"}, at=T0)
    assert stored == KvItem("default", "user:preference:theme", {"theme": "dark"}, T0, T0, 1, None)
    assert store.kv.get("default", "user:preference:theme") == stored


@pytest.mark.parametrize("n", range(len(VALUES)))
def test_any_json_value_comes_back_equal(store: Store, n: int) -> None:
    value = VALUES[n]
    store.kv.put("default", f"k{n}", value, at=T0)
    got = store.kv.get("default", f"k{n}")
    assert got is not None
    assert got.value == value and type(got.value) is type(value)


def test_a_key_never_set_reads_as_none(store: Store) -> None:
    assert store.kv.get("default", "missing") is None
    assert store.kv.list("default") == []
    assert store.kv.count("default") == 0


def test_keys_compare_exactly(store: Store) -> None:
    for key in ("Key", "key", "key ", " key", "ke\u0301y", "k\u00e9y"):
        store.kv.put("default", key, key, at=T0)
    assert store.kv.count("default") == 6
    for key in ("Key", "key", "key ", " key", "ke\u0301y", "k\u00e9y"):
        got = store.kv.get("default", key)
        assert got is not None and got.value == key and got.key == key


def test_an_overwrite_bumps_the_version_and_keeps_created_at(store: Store) -> None:
    store.kv.put("default", "project:version", "1.0", at=T0)
    second = store.kv.put("default", "project:version", "1.1", at=at(hours=1))
    assert (second.version, second.created_at, second.updated_at, second.value) == (2, T0, at(hours=1), "1.1")
    third = store.kv.put("default", "project:version", ["1.2"], at=at(hours=2))
    assert third.version == 3 and third.created_at == T0
    assert store.kv.get("default", "project:version") == third


# -- compare-and-set ---------------------------------------------------------------------------------------
def test_compare_and_set_succeeds_on_the_live_version(store: Store) -> None:
    first = store.kv.put("default", "k", "a", at=T0, expected_version=0)
    assert first.version == 1
    second = store.kv.put("default", "k", "b", at=at(minutes=1), expected_version=1)
    assert second.version == 2 and second.value == "b"


@pytest.mark.parametrize("expected", [0, 1, 3, -1])
def test_a_stale_version_is_a_conflict_and_changes_nothing(store: Store, expected: int) -> None:
    store.kv.put("default", "k", "a", at=T0)
    live = store.kv.put("default", "k", "b", at=at(minutes=1))  # version 2
    with pytest.raises(Conflict):
        store.kv.put("default", "k", "c", at=at(minutes=2), expected_version=expected)
    assert store.kv.get("default", "k") == live


@pytest.mark.parametrize("expected", [1, 2])
def test_a_version_for_a_key_not_set_is_a_conflict_and_writes_nothing(store: Store, expected: int) -> None:
    with pytest.raises(Conflict):
        store.kv.put("default", "k", "a", at=T0, expected_version=expected)
    assert store.kv.get("default", "k") is None
    store.kv.put("default", "gone", "x", at=T0)
    store.kv.delete("default", "gone", at=at(minutes=1))  # version 2, not live
    with pytest.raises(Conflict):
        store.kv.put("default", "gone", "y", at=at(minutes=2), expected_version=2)
    assert store.kv.get("default", "gone") is None


def test_compare_and_set_between_two_writers_lets_exactly_one_win(store: Store) -> None:
    store.kv.put("default", "counter", 0, at=T0)
    results: list[str] = []
    barrier = threading.Barrier(6)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.kv.put("default", "counter", n, at=at(seconds=n), expected_version=1)
            results.append("won")
        except Conflict:
            results.append("lost")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(1, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == ["lost"] * 5 + ["won"]
    final = store.kv.get("default", "counter")
    assert final is not None and final.version == 2


def test_concurrent_first_writes_of_one_key_never_fail(store: Store) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.kv.put("default", "fresh", n, at=at(seconds=n))
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    final = store.kv.get("default", "fresh")
    assert final is not None and final.version == 6


# -- delete and revive -------------------------------------------------------------------------------------
def test_delete_hides_the_key_and_reports_whether_it_was_live(store: Store) -> None:
    store.kv.put("default", "note:1", "Important note", at=T0)
    assert store.kv.delete("default", "note:1", at=at(minutes=1)) is True
    assert store.kv.get("default", "note:1") is None
    assert store.kv.list("default") == [] and store.kv.count("default") == 0
    assert store.kv.delete("default", "note:1", at=at(minutes=2)) is False
    assert store.kv.delete("default", "never-set", at=at(minutes=2)) is False


def test_a_revived_key_goes_on_from_the_old_version(store: Store) -> None:
    store.kv.put("default", "k", "a", at=T0)
    store.kv.put("default", "k", "b", at=at(minutes=1))  # 2
    store.kv.delete("default", "k", at=at(minutes=2))  # 3
    revived = store.kv.put("default", "k", "c", at=at(minutes=3))
    assert (revived.version, revived.value, revived.deleted_at) == (4, "c", None)
    assert revived.created_at == at(minutes=3) and revived.updated_at == at(minutes=3)
    assert store.kv.get("default", "k") == revived
    store.kv.delete("default", "k", at=at(minutes=4))  # 5
    again = store.kv.put("default", "k", "d", at=at(minutes=5), expected_version=0)  # 0: "not live"
    assert again.version == 6


def test_a_put_inside_a_rolled_back_transaction_leaves_nothing(store: Store) -> None:
    store.kv.put("default", "k", "kept", at=T0)
    with pytest.raises(RuntimeError), store.transaction():
        store.kv.put("default", "k", "lost", at=at(minutes=1))
        store.kv.put("default", "new", "lost", at=at(minutes=1))
        store.kv.delete("default", "k", at=at(minutes=1))
        raise RuntimeError("roll back")
    got = store.kv.get("default", "k")
    assert got is not None and (got.value, got.version) == ("kept", 1)
    assert store.kv.get("default", "new") is None


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), {"x": [float("-inf")]}, "nul \x00 inside", {"k\x00": 1}, {1, 2}, object()]
)
def test_a_value_that_cannot_be_stored_is_refused_before_any_write(store: Store, value: Any) -> None:
    store.kv.put("default", "k", "kept", at=T0)
    with pytest.raises(ValidationError) as caught:
        store.kv.put("default", "k", value, at=at(minutes=1))
    assert caught.value.field == "value"
    got = store.kv.get("default", "k")
    assert got is not None and (got.value, got.version) == ("kept", 1)


# -- listing -----------------------------------------------------------------------------------------------
def test_list_is_in_code_point_order(store: Store) -> None:
    names = ["b", "a", "B", "A", "a b", "a-b", "a_b", "ab", "é", "e\u0301", "日本", "🎉", "~", "Z", "0", ""]
    for key in names:
        store.kv.put("default", key, key, at=T0)
    assert keys(store.kv.list("default", limit=100)) == sorted(names)
    assert store.kv.count("default") == len(names)


def test_a_prefix_is_plain_characters(store: Store) -> None:
    for key in ("a%b", "a%bc", "axb", "a_c", "abc", "a_", "A_c", "a\\_c", "project:version", "project:name"):
        store.kv.put("default", key, key, at=T0)
    assert keys(store.kv.list("default", "a%")) == ["a%b", "a%bc"]
    assert keys(store.kv.list("default", "a_")) == ["a_", "a_c"]
    assert keys(store.kv.list("default", "a\\")) == ["a\\_c"]
    assert keys(store.kv.list("default", "project:")) == ["project:name", "project:version"]
    assert store.kv.count("default", "a%") == 2 and store.kv.count("default", "a_") == 2
    assert store.kv.count("default", "%") == 0 and store.kv.list("default", "_") == []
    assert store.kv.count("default", "") == 10


def test_a_unicode_prefix_matches_by_characters(store: Store) -> None:
    for key in ("日本語", "日本", "日", "é-composed", "e\u0301-decomposed", "🎉/a", "🎉/b"):
        store.kv.put("default", key, 1, at=T0)
    assert keys(store.kv.list("default", "日本")) == ["日本", "日本語"]
    assert keys(store.kv.list("default", "é")) == ["é-composed"]
    assert keys(store.kv.list("default", "e\u0301")) == ["e\u0301-decomposed"]
    assert store.kv.count("default", "🎉/") == 2


def test_a_cursor_pages_through_every_key_once(store: Store) -> None:
    names = [f"item:{n:03d}" for n in range(37)] + ["other:1", "item", "itemz"]
    for key in reversed(names):
        store.kv.put("default", key, key, at=T0)
    store.kv.delete("default", "item:010", at=at(minutes=1))
    seen: list[str] = []
    after: str | None = None
    while True:
        page = store.kv.list("default", "item:", limit=5, after=after)
        assert len(page) <= 5
        seen += keys(page)
        if len(page) < 5:
            break
        after = page[-1].key
    expected = sorted(k for k in names if k.startswith("item:") and k != "item:010")
    assert seen == expected
    assert keys(store.kv.list("default", after="item:035")) == ["item:036", "itemz", "other:1"]
    assert keys(store.kv.list("default", after="zzz")) == []
    assert store.kv.list("default", limit=0) == []


def test_a_cursor_need_not_be_a_stored_key(store: Store) -> None:
    for key in ("a", "b", "c"):
        store.kv.put("default", key, 1, at=T0)
    assert keys(store.kv.list("default", after="a0")) == ["b", "c"]
    assert keys(store.kv.list("default", after="")) == ["a", "b", "c"]
    assert keys(store.kv.list("default", "b", after="a")) == ["b"]


# -- isolation ---------------------------------------------------------------------------------------------
def test_agents_never_see_or_change_each_others_keys(store: Store) -> None:
    mine = store.kv.put("agent-a", "shared:key", "mine", at=T0)
    theirs = store.kv.put("agent-b", "shared:key", "theirs", at=T0)
    store.kv.put("agent-b", "only:b", "b", at=T0)
    assert store.kv.get("agent-a", "shared:key") == mine
    assert store.kv.get("agent-a", "only:b") is None
    assert keys(store.kv.list("agent-a")) == ["shared:key"]
    assert store.kv.count("agent-a") == 1 and store.kv.count("agent-c") == 0
    assert store.kv.delete("agent-c", "shared:key", at=at(minutes=1)) is False
    assert store.kv.delete("agent-a", "only:b", at=at(minutes=1)) is False
    # A compare-and-set sees only its own agent's version.
    with pytest.raises(Conflict):
        store.kv.put("agent-c", "shared:key", "x", at=at(minutes=1), expected_version=1)
    created = store.kv.put("agent-c", "shared:key", "c", at=at(minutes=1), expected_version=0)
    assert created.version == 1
    store.kv.delete("agent-a", "shared:key", at=at(minutes=2))
    assert store.kv.get("agent-b", "shared:key") == theirs
    assert store.kv.purge_deleted(at(minutes=3)) == 1
    assert store.kv.get("agent-b", "shared:key") == theirs and store.kv.count("agent-b") == 2


# -- the purge ---------------------------------------------------------------------------------------------
def test_purge_removes_keys_deleted_at_or_before_the_cutoff_only(store: Store) -> None:
    for n in range(4):
        store.kv.put("default", f"k{n}", n, at=T0)
    store.kv.put("other", "k0", 0, at=T0)
    store.kv.delete("default", "k0", at=at(days=1))
    store.kv.delete("default", "k1", at=at(days=2))
    store.kv.delete("other", "k0", at=at(days=2))
    store.kv.delete("default", "k2", at=at(days=3))
    assert store.kv.purge_deleted(at(hours=23)) == 0  # before any deletion
    assert store.kv.purge_deleted(at(days=2)) == 3  # exactly at the cutoff counts; every agent
    assert store.kv.purge_deleted(at(days=2)) == 0
    assert keys(store.kv.list("default")) == ["k3"]
    # A purged key is gone for good: set again, it starts at version 1; the one deleted later revives.
    assert store.kv.put("default", "k0", "new", at=at(days=4)).version == 1
    assert store.kv.put("default", "k2", "back", at=at(days=4)).version == 3
    assert store.kv.purge_deleted(at(days=10)) == 0


def test_the_kv_and_graph_migration_is_applied(store: Store) -> None:
    names = [name for name, _ in store.migrations()]
    assert "0013_kv_graph" in names if store.url.startswith("sqlite") else "0002_kv_graph" in names
