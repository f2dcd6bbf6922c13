"""ApiKeyRepository and UsageRepository: API keys by id and hash, revocation, and the append-only usage log
with half-open periods and per-agent / provider / model summaries."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from reverie.errors import Conflict
from reverie.storage import open_store
from reverie.storage.base import Store
from reverie.types import ApiKey, UsageRow, UsageSummary

from .support import T0, at


def key(n: int, *, agent_id: str | None = "agent-a", scopes: tuple[str, ...] = ("memory_read",)) -> ApiKey:
    return ApiKey(
        key_id=f"{n:012x}",
        name=f"key {n} ✓",
        agent_id=agent_id,
        scopes=scopes,
        key_hash=f"{n:064x}",
        created_at=at(minutes=n),
    )


def row(minutes: float, agent_id: str = "agent-a", *, model: str = "m", **fields: object) -> UsageRow:
    values: dict[str, object] = {
        "at": at(minutes=minutes),
        "agent_id": agent_id,
        "provider": "openai",
        "model": model,
        "purpose": "chat",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cost": 0.25,
        "ok": True,
    }
    values.update(fields)
    return UsageRow(**values)  # type: ignore[arg-type]


# -- API keys -------------------------------------------------------------------------------------------
def test_migration_0012_is_applied(store: Store) -> None:
    if not store.url.startswith("sqlite:"):
        pytest.skip("SQLite's migration history: PostgreSQL's schema has its own migrations")
    assert "0012_keys_usage" in [name for name, _ in store.migrations()]


def test_a_key_reads_back_by_id_and_by_hash(store: Store) -> None:
    admin = key(1, agent_id=None, scopes=("admin",))
    scoped = key(2, scopes=("memory_read", "memory_write"))
    store.keys.add(admin)
    store.keys.add(scoped)
    assert store.keys.get(admin.key_id) == admin
    assert store.keys.get(scoped.key_id) == scoped
    assert store.keys.by_hash(scoped.key_hash) == scoped
    assert store.keys.get("ffffffffffff") is None
    assert store.keys.by_hash("0" * 63 + "f") is None


def test_keys_list_oldest_first_with_revoked_ones(store: Store) -> None:
    keys = [key(3), key(1), key(2)]
    for k in keys:
        store.keys.add(k)
    assert store.keys.revoke(keys[0].key_id, at(hours=1))
    listed = store.keys.list()
    assert [k.key_id for k in listed] == [key(1).key_id, key(2).key_id, key(3).key_id]
    assert listed[-1].revoked_at == at(hours=1)
    assert store.keys.list() == listed


def test_a_duplicate_id_or_hash_is_a_conflict_and_writes_nothing(store: Store) -> None:
    first = key(1)
    store.keys.add(first)
    with pytest.raises(Conflict):
        store.keys.add(replace(first, key_hash="f" * 64))
    with pytest.raises(Conflict):
        store.keys.add(replace(first, key_id="aaaaaaaaaaaa"))
    assert store.keys.list() == [first]


def test_revoke_stamps_once(store: Store) -> None:
    k = key(1)
    store.keys.add(k)
    assert store.keys.revoke(k.key_id, at(hours=1)) is True
    assert store.keys.revoke(k.key_id, at(hours=2)) is False
    assert store.keys.revoke("ffffffffffff", at(hours=2)) is False
    stored = store.keys.get(k.key_id)
    assert stored is not None and stored.revoked_at == at(hours=1)


def test_touch_sets_last_used_at(store: Store) -> None:
    k = key(1)
    store.keys.add(k)
    store.keys.touch(k.key_id, at(hours=3))
    store.keys.touch("ffffffffffff", at(hours=3))  # unknown: nothing happens
    assert store.keys.get(k.key_id) == replace(k, last_used_at=at(hours=3))
    assert len(store.keys.list()) == 1


def test_keys_survive_a_backup_and_restore(store: Store, tmp_path: Path) -> None:
    k = key(1)
    store.keys.add(k)
    store.usage.add(row(1))
    store.backup(tmp_path / "copy.db")
    store.keys.revoke(k.key_id, at(hours=1))
    store.usage.add(row(2))
    store.restore_backup(tmp_path / "copy.db")
    assert store.keys.get(k.key_id) == k
    assert store.usage.rows(None, None) == [row(1)]


def test_the_users_a_key_is_bound_to_read_back(store: Store) -> None:
    keys = [
        replace(key(1), users=()),  # none: a new agent key's default
        replace(key(2), users=("*",)),  # any user
        replace(key(3), users=("u1", "user ✓ two", "u3")),  # in the order given
        replace(key(4), users=None),  # NULL: a key from before the binding
    ]
    for k in keys:
        store.keys.add(k)
    assert [store.keys.get(k.key_id) for k in keys] == keys
    assert store.keys.list() == keys
    assert store.keys.by_hash(keys[2].key_hash) == keys[2]


def test_set_users_rebinds_a_key(store: Store) -> None:
    old = replace(key(1), users=None)
    store.keys.add(old)
    assert store.keys.set_users(old.key_id, ("u1",)) is True
    assert store.keys.get(old.key_id) == replace(old, users=("u1",))
    assert store.keys.set_users(old.key_id, ()) is True
    assert store.keys.get(old.key_id) == replace(old, users=())
    assert store.keys.set_users("ffffffffffff", ("u1",)) is False
    assert len(store.keys.list()) == 1


def test_a_key_from_before_the_binding_migrates_to_null(request: pytest.FixtureRequest, store: Store) -> None:
    """The store as the previous version left it (no ``users`` column, a key in it) is migrated: the key
    reads back with ``users`` None (any user, flagged), and a new key stores its list."""
    sqlite = store.url.startswith("sqlite:")
    name = "0021_key_users" if sqlite else "0010_key_users"
    assert name in [n for n, _ in store.migrations()]
    old = key(1, scopes=("memory_read", "memory_write"))
    downgrade = (
        "ALTER TABLE api_keys DROP COLUMN users",
        f"DELETE FROM schema_migrations WHERE name = '{name}'",
        "INSERT INTO api_keys (key_id, name, agent_id, scopes, key_hash, created_at)"
        f" VALUES ('{old.key_id}', 'old', 'agent-a', '[\"memory_read\", \"memory_write\"]', '{old.key_hash}',"
        " '2026-01-01T00:00:00.000000Z')",
    )
    if sqlite:
        with closing(sqlite3.connect(store.url.removeprefix("sqlite:///"))) as lite, lite:
            for statement in downgrade:
                lite.execute(statement)
        url = store.url
    else:
        url = request.getfixturevalue("pg_url")
        with psycopg.connect(url, autocommit=True) as pg:
            for statement in downgrade:
                pg.execute(statement)
    with closing(open_store(url, now=T0)) as upgraded:
        migrated = upgraded.keys.get(old.key_id)
        assert migrated is not None and migrated.users is None and migrated.scopes == old.scopes
        assert name in [n for n, _ in upgraded.migrations()]
        upgraded.keys.add(replace(key(2), users=("u1",)))
        assert upgraded.keys.get(key(2).key_id) == replace(key(2), users=("u1",))


# -- the usage log -------------------------------------------------------------------------------------
def test_usage_rows_read_back_oldest_first(store: Store) -> None:
    rows = [row(5), row(1, "agent-b", ok=False, prompt_tokens=0, completion_tokens=0, cost=0.0), row(3)]
    for r in rows:
        store.usage.add(r)
    assert store.usage.rows(None, None) == [rows[1], rows[2], rows[0]]


def test_rows_at_the_same_instant_keep_their_order(store: Store) -> None:
    rows = [row(1, purpose=f"p{i}") for i in range(5)]
    for r in rows:
        store.usage.add(r)
    assert store.usage.rows(None, None) == rows


def test_a_period_is_half_open_and_filters_by_agent(store: Store) -> None:
    for minutes, agent in ((0, "agent-a"), (10, "agent-b"), (20, "agent-a"), (30, "agent-a")):
        store.usage.add(row(minutes, agent))
    assert [r.at for r in store.usage.rows(at(minutes=10), at(minutes=30))] == [at(minutes=10), at(minutes=20)]
    assert [r.at for r in store.usage.rows(at(minutes=10), None, "agent-a")] == [at(minutes=20), at(minutes=30)]
    assert [r.at for r in store.usage.rows(None, at(minutes=10))] == [T0]
    assert store.usage.rows(at(minutes=40), None) == []
    assert store.usage.rows(None, None, "agent-c") == []


def test_summary_sums_per_agent_provider_and_model(store: Store) -> None:
    store.usage.add(row(1, "agent-b", model="big", prompt_tokens=100, completion_tokens=50, cost=1.5))
    store.usage.add(row(2, "agent-a", model="small", prompt_tokens=7, completion_tokens=3, cost=0.125))
    store.usage.add(row(3, "agent-a", model="small", prompt_tokens=5, completion_tokens=0, cost=0.0, ok=False))
    store.usage.add(row(4, "agent-a", model="big", prompt_tokens=1, completion_tokens=1, cost=0.5))
    store.usage.add(row(5, "agent-a", model="big", provider="other", prompt_tokens=2, completion_tokens=2, cost=2.0))
    assert store.usage.summary(None, None) == [
        UsageSummary("agent-a", "openai", "big", calls=1, failed=0, prompt_tokens=1, completion_tokens=1, cost=0.5),
        UsageSummary(
            "agent-a", "openai", "small", calls=2, failed=1, prompt_tokens=12, completion_tokens=3, cost=0.125
        ),
        UsageSummary("agent-a", "other", "big", calls=1, failed=0, prompt_tokens=2, completion_tokens=2, cost=2.0),
        UsageSummary("agent-b", "openai", "big", calls=1, failed=0, prompt_tokens=100, completion_tokens=50, cost=1.5),
    ]
    assert [s.model for s in store.usage.summary(at(minutes=2), at(minutes=4), "agent-a")] == ["small"]
    assert store.usage.summary(None, None, "agent-c") == []


def test_usage_writes_join_a_transaction_and_roll_back_with_it(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.usage.add(row(1))
        store.keys.add(key(1))
        raise RuntimeError("boom")
    assert store.usage.rows(None, None) == []
    assert store.keys.list() == []
