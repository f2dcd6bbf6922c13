"""WorkingRepository: upsert by (agent, key), expiry on every read, prefix listing, the oldest, the sweep."""

from __future__ import annotations

from datetime import datetime, timedelta

from reverie.storage.base import Store
from reverie.types import WorkingEntry

from .support import T0, UNICODE_TEXTS, at

LIVE = T0 + timedelta(minutes=1)


def item(
    key: str,
    value: str = "scratch",
    *,
    agent: str = "default",
    stored: datetime = T0,
    ttl_minutes: float = 5,
    category: str | None = None,
    tags: tuple[str, ...] = (),
) -> WorkingEntry:
    return WorkingEntry(
        agent_id=agent,
        key=key,
        value=value,
        stored_at=stored,
        expires_at=stored + timedelta(minutes=ttl_minutes),
        category=category,
        tags=tags,
    )


def test_put_then_get_reads_every_field_back(store: Store) -> None:
    entry = item("session/s1/inbox", "three unread", category="email", tags=("inbox", "unread"))
    store.working.put(entry)
    assert store.working.get("default", "session/s1/inbox", now=LIVE) == entry


def test_values_come_back_byte_for_byte(store: Store) -> None:
    for n, text in enumerate(UNICODE_TEXTS):
        store.working.put(item(f"session/s1/k{n}", text, tags=(text.strip()[:20],)))
    for n, text in enumerate(UNICODE_TEXTS):
        got = store.working.get("default", f"session/s1/k{n}", now=LIVE)
        assert got is not None
        assert got.value == text


def test_put_upserts_by_agent_and_key(store: Store) -> None:
    store.working.put(item("session/s1/draft", "first", tags=("a",)))
    newer = item("session/s1/draft", "second", stored=at(minutes=1), category="drafts")
    store.working.put(newer)
    assert store.working.get("default", "session/s1/draft", now=at(minutes=2)) == newer
    assert store.working.count("default", "session/s1/", now=at(minutes=2)) == 1


def test_an_entry_is_live_until_its_expiry_exactly(store: Store) -> None:
    entry = item("session/s1/k", ttl_minutes=5)
    store.working.put(entry)
    assert store.working.get("default", "session/s1/k", now=entry.expires_at - timedelta(microseconds=1)) == entry
    assert store.working.get("default", "session/s1/k", now=entry.expires_at) is None
    assert store.working.list("default", "session/", now=entry.expires_at, limit=10) == []
    assert store.working.count("default", "session/", now=entry.expires_at) == 0
    assert store.working.oldest("default", "session/", now=entry.expires_at) is None


def test_agents_never_see_each_other(store: Store) -> None:
    store.working.put(item("session/s1/k", "mine", agent="agent-a"))
    store.working.put(item("session/s1/k", "theirs", agent="agent-b"))
    mine = store.working.get("agent-a", "session/s1/k", now=LIVE)
    assert mine is not None and mine.value == "mine"
    assert [e.value for e in store.working.list("agent-b", "", now=LIVE, limit=10)] == ["theirs"]
    assert store.working.get("agent-c", "session/s1/k", now=LIVE) is None
    assert store.working.delete("agent-c", "session/s1/k") is False
    assert store.working.count("agent-a", "", now=LIVE) == 1


def test_list_is_most_recently_stored_first_and_limited(store: Store) -> None:
    for n in range(5):
        store.working.put(item(f"session/s1/k{n}", stored=at(seconds=n)))
    listed = store.working.list("default", "session/s1/", now=at(seconds=10), limit=3)
    assert [e.key for e in listed] == ["session/s1/k4", "session/s1/k3", "session/s1/k2"]


def test_entries_stored_at_one_instant_keep_their_write_order(store: Store) -> None:
    for name in ("c", "a", "b"):
        store.working.put(item(f"session/s1/{name}"))
    listed = store.working.list("default", "session/s1/", now=LIVE, limit=10)
    assert [e.key for e in listed] == ["session/s1/b", "session/s1/a", "session/s1/c"]
    oldest = store.working.oldest("default", "session/s1/", now=LIVE)
    assert oldest is not None and oldest.key == "session/s1/c"
    store.working.put(item("session/s1/c", "rewritten"))  # a rewrite is the newest now
    oldest = store.working.oldest("default", "session/s1/", now=LIVE)
    assert oldest is not None and oldest.key == "session/s1/a"


def test_a_prefix_matches_characters_not_patterns(store: Store) -> None:
    for key in ("patrol/heart_beat/a", "patrol/heartXbeat/b", "patrol/heart%/c", "patrolling/x/d", "session/p/e"):
        store.working.put(item(key))
    keys = {e.key for e in store.working.list("default", "patrol/heart_", now=LIVE, limit=10)}
    assert keys == {"patrol/heart_beat/a"}
    assert store.working.count("default", "patrol/heart%", now=LIVE) == 1
    assert store.working.count("default", "patrol/", now=LIVE) == 3
    assert store.working.count("default", "patrol", now=LIVE) == 4
    assert store.working.count("default", "", now=LIVE) == 5


def test_oldest_skips_expired_entries(store: Store) -> None:
    store.working.put(item("session/s1/short", ttl_minutes=1))
    store.working.put(item("session/s1/long", stored=at(seconds=1), ttl_minutes=60))
    oldest = store.working.oldest("default", "session/s1/", now=at(minutes=2))
    assert oldest is not None and oldest.key == "session/s1/long"


def test_delete_removes_one_entry(store: Store) -> None:
    store.working.put(item("session/s1/a"))
    store.working.put(item("session/s1/b"))
    assert store.working.delete("default", "session/s1/a") is True
    assert store.working.delete("default", "session/s1/a") is False
    assert [e.key for e in store.working.list("default", "", now=LIVE, limit=10)] == ["session/s1/b"]


def test_sweep_hard_deletes_only_expired_entries_of_every_agent(store: Store) -> None:
    store.working.put(item("session/s1/gone", agent="agent-a", ttl_minutes=1))
    store.working.put(item("session/s1/gone", agent="agent-b", ttl_minutes=2))
    store.working.put(item("session/s1/kept", agent="agent-a", ttl_minutes=60))
    assert store.working.sweep(at(minutes=2)) == 2
    assert store.working.sweep(at(minutes=2)) == 0
    # Gone for good: even a read "in the past" no longer finds them.
    assert store.working.get("agent-a", "session/s1/gone", now=T0) is None
    assert store.working.get("agent-b", "session/s1/gone", now=T0) is None
    assert store.working.get("agent-a", "session/s1/kept", now=at(minutes=2)) is not None


def test_a_put_inside_a_failed_transaction_is_undone(store: Store) -> None:
    try:
        with store.transaction():
            store.working.put(item("session/s1/k"))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.working.get("default", "session/s1/k", now=LIVE) is None
