"""Portable rows: export, import, count, delete, read snapshots, and ``portable.copy`` between two stores of
the same backend (SQLite <-> PostgreSQL is ``tests/integration/test_copy.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

from reverie.errors import Conflict, StorageError
from reverie.storage import open_store, portable, store_url
from reverie.storage.base import Store
from reverie.storage.portable import TABLES
from reverie.types import Entity, Relation, WorkingEntry

from .support import AGENT, T0, UNICODE_TEXTS, at, entry, hit_ids, match, view
from .test_store import in_thread

T1 = T0 + timedelta(hours=1, microseconds=123_456)
VEC_A = np.linspace(-1, 1, 8, dtype=np.float32).tobytes()
VEC_B = np.array([0.1, -0.0, 3.5e-8, 1e30, -2.5, 0.0, 7.0, 1 / 3], dtype=np.float32).tobytes()


def _fact(fact_id: str, content: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": fact_id,
        "agent_id": "default",
        "user_id": None,
        "session_id": None,
        "content": content,
        "category": "general",
        "tags": [],
        "tier": "semantic",
        "created_at": T0,
        "updated_at": None,
        "last_seen_at": T0,
        "reinforcement_count": 1,
        "importance": 0.5,
        "retention": 1.0,
        "confidence": 0.7,
        "pinned": False,
        "expires_at": None,
        "archived_at": None,
        "superseded_by": None,
        "metadata": {},
        "decayed_through": None,
        "read_strength": 0.0,
        "read_at": None,
        "fold_pending": False,
        "expand_pending": False,
    }
    row.update(fields)
    return row


def _version(fact: dict[str, Any], version: int, change: str, at_: Any) -> dict[str, Any]:
    return {
        "fact_id": fact["id"],
        "version": version,
        "change": change,
        "recorded_at": at_,
        "content": fact["content"],
        "category": fact["category"],
        "tags": fact["tags"],
        "importance": fact["importance"],
        "metadata": fact["metadata"],
        "archived": fact["archived_at"] is not None,
    }


def _vector(fact_id: str, vector: bytes, at_: Any) -> dict[str, Any]:
    return {
        "fact_id": fact_id,
        "agent_id": "default",
        "model": "hash-8",
        "dim": 8,
        "vector": vector,
        "embedded_at": at_,
    }


def sample_rows() -> dict[str, list[dict[str, Any]]]:
    """A row or more for every portable table, with the awkward values: unicode, NULLs, nested JSON,
    microseconds, floats that are not round in binary, vectors with -0.0 and extremes."""
    f1 = _fact(
        "00000000000b",
        UNICODE_TEXTS[0],
        category="user/préférences",
        tags=["café", "日本"],
        metadata={"source": "cli", "nested": {"list": [1, 2.5, None, True], "ü": "ß"}, "position": 3},
        importance=0.1 + 0.2,
        pinned=True,
        updated_at=T1,
        read_strength=1.25,
        read_at=T1,
        decayed_through=T1,
        fold_pending=True,
    )
    f2 = _fact(
        "00000000000a",
        UNICODE_TEXTS[4],
        user_id="u1",
        session_id="s1",
        archived_at=T1,
        expires_at=T1 + timedelta(days=3),
        superseded_by="00000000000b",
        expand_pending=True,
        tier="episodic",
    )
    return {
        "facts": [f1, f2],  # insertion order, not id order
        "fact_versions": [
            _version(f2, 1, "created", T0),
            _version(f1, 1, "created", T0),
            _version(f1, 2, "edited", T1),
        ],
        "fact_vectors": [
            _vector(f2["id"], VEC_B, T1),
            _vector(f1["id"], VEC_A, T0),
        ],
        "store_meta": [{"key": "embedding_model", "value": "hash-8"}, {"key": "ünïcode", "value": "✓"}],
        "dream_ledger": [
            {"agent_id": "default", "pass_name": "consolidate", "stamped_at": T1, "fingerprint": "abc"},
            {"agent_id": "default", "pass_name": "aging", "stamped_at": T0, "fingerprint": None},
        ],
        "dream_locks": [
            {
                "agent_id": "default",
                "holder": None,
                "acquired_at": None,
                "expires_at": None,
                "last_dream_at": T1,
                "abort_requested": False,
                "holder_pid": None,
                "holder_host": None,
                "heartbeat_seconds": None,
                "heartbeat_at": None,
            },
            {
                "agent_id": "other",
                "holder": "host:1",
                "acquired_at": T0,
                "expires_at": T1,
                "last_dream_at": None,
                "abort_requested": True,
                "holder_pid": 4242,
                "holder_host": "worker-1",
                "heartbeat_seconds": 5.0,
                "heartbeat_at": T1,
            },
        ],
        "dream_activity": [
            {"agent_id": "default", "session_key": "", "last_at": T0},
            {"agent_id": "default", "session_key": "s1", "last_at": T1},
        ],
        "dream_runs": [
            {
                "run_id": "run-2",
                "agent_id": "default",
                "run_trigger": "manual",
                "started_at": T0,
                "phase": "done",
                "finished_at": T1,
                "current_pass": None,
                "progress": "",
                "tokens": 12_345_678_901,
                "cost": 0.0123,
                "report": {"passes": [{"name": "aging", "changed": 2}], "note": "ok ✓"},
                "error": None,
            },
            {
                "run_id": "run-1",
                "agent_id": "default",
                "run_trigger": "schedule",
                "started_at": T1,
                "phase": "running",
                "finished_at": None,
                "current_pass": "consolidate",
                "progress": "2/5",
                "tokens": 0,
                "cost": 0.0,
                "report": {},
                "error": "boom",
            },
        ],
        "dream_evidence": [
            {"run_id": "run-2", "target_id": f1["id"], "source_id": "00000000000c", "at": T1},
            {"run_id": "run-2", "target_id": f1["id"], "source_id": "000000000009", "at": T1},
        ],
        "purge_log": [{"fact_id": "00000000000c", "agent_id": "default", "purged_at": T0}],
        "graph_extraction": [
            {"fact_id": f2["id"], "agent_id": "default", "queued_at": T1},
            {"fact_id": f1["id"], "agent_id": "default", "queued_at": T0},
        ],
        "sessions": [
            {
                "agent_id": "default",
                "session_id": "s1",
                "name": "Première",
                "metadata": {"channel": "cli"},
                "created_at": T0,
                "last_active_at": T1,
                "started_at": T0,
                "summary": None,
                "compacted_through": 0,
                "deleted_at": None,
            },
            {
                "agent_id": "default",
                "session_id": "s0",
                "name": None,
                "metadata": {},
                "created_at": T0,
                "last_active_at": T0,
                "started_at": T0,
                "summary": "earlier talk",
                "compacted_through": 2,
                "deleted_at": T1,
            },
        ],
        "turns": [
            {
                "agent_id": "default",
                "session_id": "s1",
                "turn_index": 0,
                "role": "user",
                "content": UNICODE_TEXTS[2],
                "at": T0,
                "name": None,
                "tool_call_id": None,
                "tool_calls": None,
                "archived": False,
            },
            {
                "agent_id": "default",
                "session_id": "s1",
                "turn_index": 1,
                "role": "assistant",
                "content": "",
                "at": T1,
                "name": None,
                "tool_call_id": None,
                "tool_calls": [{"id": "c1", "function": {"name": "memory_search", "arguments": '{"q": "x"}'}}],
                "archived": True,
            },
        ],
        "working_entries": [
            {
                "agent_id": "default",
                "key": "scratch/a",
                "value": "first ✓",
                "category": None,
                "tags": ["t"],
                "stored_at": T0,
                "expires_at": T1,
                "seq": 7,
            },
            {
                "agent_id": "default",
                "key": "scratch/b",
                "value": "second",
                "category": "notes",
                "tags": [],
                "stored_at": T0,
                "expires_at": T1,
                "seq": 3,
            },
        ],
        "api_keys": [
            {
                "key_id": "k1",
                "name": "ci",
                "agent_id": None,
                "scopes": ["read", "write"],
                "key_hash": "0" * 64,
                "created_at": T0,
                "revoked_at": None,
                "last_used_at": T1,
                "users": ["u1", "u-2"],
            }
        ],
        "kv_items": [
            {
                "agent_id": "default",
                "key": "user:preference:théme",
                "value": {"theme": "dark", "nested": [1, 2.5, None, True]},
                "created_at": T0,
                "updated_at": T1,
                "version": 3,
                "deleted_at": None,
            },
            {
                "agent_id": "default",
                "key": "User:a_%",
                "value": None,
                "created_at": T0,
                "updated_at": T1,
                "version": 2,
                "deleted_at": T1,
            },
            {
                "agent_id": "default",
                "key": "project:version",
                "value": "1.0 ✓",
                "created_at": T0,
                "updated_at": T0,
                "version": 1,
                "deleted_at": None,
            },
        ],
        "kg_entities": [
            {
                "agent_id": "default",
                "entity_id": "e2",
                "type": "person",
                "name": "Ana ",
                "key": "ana",
                "properties": {"role": "developer", "ü": ["ß", 2]},
                "created_at": T0,
                "updated_at": T1,
                "last_seen_at": T1,
                "sources": [f1["id"], f2["id"]],
                "merged_into": None,
                "archived_at": None,
            },
            {
                "agent_id": "default",
                "entity_id": "e1",
                "type": "thing",
                "name": "ana",
                "key": "ana",
                "properties": {},
                "created_at": None,
                "updated_at": None,
                "last_seen_at": None,
                "sources": [],
                "merged_into": "e2",
                "archived_at": T1,
            },
        ],
        "kg_relations": [
            {
                "agent_id": "default",
                "relation_id": "r2",
                "source_id": "e2",
                "relation": "works_at",
                "target_id": "e1",
                "properties": {"since": 2020},
                "valid_from": T0,
                "invalid_at": T1,
                "created_at": T0,
                "sources": [f1["id"]],
            },
            {
                "agent_id": "default",
                "relation_id": "r1",
                "source_id": "e1",
                "relation": "knows",
                "target_id": "e2",
                "properties": {},
                "valid_from": None,
                "invalid_at": None,
                "created_at": None,
                "sources": [],
            },
        ],
        "llm_usage": [
            {
                "at": T1,
                "agent_id": "default",
                "provider": "openai",
                "model": "gpt",
                "purpose": "dream",
                "prompt_tokens": 100,
                "completion_tokens": 20,
                "cost": 0.000125,
                "ok": True,
            },
            {
                "at": T0,
                "agent_id": "default",
                "provider": "openai",
                "model": "gpt",
                "purpose": "expansion",
                "prompt_tokens": 5,
                "completion_tokens": 0,
                "cost": 0.0,
                "ok": False,
            },
        ],
        **_skill_rows(),
        **_log_rows(),
    }


def _log_rows() -> dict[str, list[dict[str, Any]]]:
    """Rows of the telemetry logs (inserted out of time order) and of the context delta filter."""
    turn = {"at": "2026-01-01T10:00:00.123456Z", "role": "user", "content": UNICODE_TEXTS[4], "agent": "default"}
    call = {"at": T0.isoformat(), "agent": "default", "tool": "search", "ok": False, "arguments": {"q": [1, None]}}
    return {
        "conversation_log": [
            {"agent_id": "default", "session_id": "s1", "at": T1, "record": turn},
            {"agent_id": "other", "session_id": "s0", "at": T0, "record": {**turn, "agent": "other"}},
        ],
        "execution_log": [
            {"agent_id": "default", "session_id": None, "at": T0, "record": {"description": "x", "steps": []}},
        ],
        "tool_call_log": [
            {"agent_id": "default", "session_id": "s1", "at": T1, "record": call},
            {"agent_id": "default", "session_id": None, "at": T0, "record": {**call, "ok": True}},
        ],
        "context_injected": [
            {"agent_id": "default", "session_id": "s1", "entry_id": "00000000000b", "injected_at": T1},
            {"agent_id": "default", "session_id": "s0", "entry_id": "00000000000a", "injected_at": T0},
        ],
    }


def _skill_rows() -> dict[str, list[dict[str, Any]]]:
    """Rows of the skill store, the usage log and the feedback log (inserted out of name order)."""
    email = {
        "agent_id": "default",
        "name": "mcp/email",
        "summary": "Send mail through MCP ✓",
        "content": UNICODE_TEXTS[3],
        "see_also": ["mcp/calendar"],
        "metadata": {"source": "dream", "merged_from": ["email", "mail"], "n": [1, 2.5, None, True]},
        "created_at": T0,
        "updated_at": T1,
        "last_used_at": T1,
        "archived_at": None,
        "version": 2,
        "vector": VEC_B,
        "vector_model": "hash-8",
    }
    old = {**email, "name": "mail", "see_also": [], "metadata": {}, "last_used_at": None, "archived_at": T1,
           "version": 1, "vector": None, "vector_model": None}  # fmt: skip
    version = {key: email[key] for key in ("agent_id", "name", "summary", "content", "see_also", "metadata")}
    return {
        "skills": [email, old],
        "skill_versions": [
            {**version, "version": 2, "change": "edited", "recorded_at": T1, "archived": False},
            {**version, "version": 1, "change": "created", "recorded_at": T0, "archived": False},
        ],
        "skill_usage": [
            {"agent_id": "default", "session_id": "s1", "name": "mcp/email", "used_at": T1},
            {"agent_id": "default", "session_id": "s0", "name": "mail", "used_at": T0},
        ],
        "feedback": [
            {
                "feedback_id": "fb2",
                "agent_id": "default",
                "session_id": "s1",
                "kind": "session_summary",
                "rating": "poor",
                "comment": "wrong recipient ✗",
                "entry_ids": ["00000000000b"],
                "skill_names": ["mcp/email"],
                "created_at": T1,
            },
            {
                "feedback_id": "fb1",
                "agent_id": "default",
                "session_id": "s0",
                "kind": "stale",
                "rating": None,
                "comment": None,
                "entry_ids": [],
                "skill_names": [],
                "created_at": T0,
            },
        ],
    }


def in_export_order(name: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` in the order ``export_rows`` gives them: insertion order, or the key with text as bytes."""
    t = portable.table(name)
    if t.hidden_seq:
        return rows

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row[c].encode() if isinstance(row[c], str) else row[c] for c in t.order)

    return sorted(rows, key=key)


def load(store: Store, rows: dict[str, list[dict[str, Any]]]) -> None:
    with store.transaction():
        for t in TABLES:
            assert store.import_rows(t.name, rows[t.name]) == len(rows[t.name])


def dump(store: Store) -> dict[str, list[dict[str, Any]]]:
    return {t.name: list(store.export_rows(t.name)) for t in TABLES}


@pytest.fixture
def other(request: pytest.FixtureRequest, store: Store, tmp_path: Path) -> Iterator[Store]:
    """A second fresh store of the same backend as ``store``."""
    if urlsplit(store.url).scheme == "sqlite":
        second = open_store(store_url(tmp_path / "other.db"), now=T0)
        try:
            yield second
        finally:
            second.close()
        return
    server = request.getfixturevalue("pg_server")
    url = server.new_database()
    second = open_store(url, now=T0)
    try:
        yield second
    finally:
        second.close()
        server.drop_database(url)


# -- export and import -----------------------------------------------------------------------------------
def test_the_catalog_covers_every_table_once_in_dependency_order() -> None:
    names = [t.name for t in TABLES]
    assert len(names) == len(set(names))
    assert names.index("facts") < names.index("fact_vectors")
    assert names.index("sessions") < names.index("turns")
    assert not {"fact_log", "vector_log", "schema_migrations", "facts_fts"} & set(names)


def test_a_fresh_store_has_no_rows(store: Store) -> None:
    assert all(store.count_rows(t.name) == 0 for t in TABLES)
    assert all(list(store.export_rows(t.name)) == [] for t in TABLES)


def test_imported_rows_export_unchanged_in_catalog_order(store: Store) -> None:
    rows = sample_rows()
    load(store, rows)
    exported = dump(store)
    for t in TABLES:
        assert exported[t.name] == in_export_order(t.name, rows[t.name]), t.name
        assert store.count_rows(t.name) == len(rows[t.name])
    vector = next(r for r in exported["fact_vectors"] if r["fact_id"] == "00000000000a")["vector"]
    assert isinstance(vector, bytes) and vector == VEC_B
    assert all(v.tzinfo is not None for r in exported["facts"] for v in r.values() if hasattr(v, "tzinfo"))


def test_export_pages_through_a_table_larger_than_one_batch(store: Store) -> None:
    rows = [{"key": f"k{n:05d}", "value": str(n)} for n in range(1234)]
    assert store.import_rows("store_meta", rows) == 1234
    assert list(store.export_rows("store_meta")) == rows
    facts = [_fact(f"{n:012x}", f"fact number {n}") for n in range(1100, 0, -1)]  # insertion != id order
    assert store.import_rows("facts", facts) == 1100
    assert [r["id"] for r in store.export_rows("facts")] == [f["id"] for f in facts]


def test_an_import_is_all_or_nothing(store: Store) -> None:
    rows = [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}, {"key": "a", "value": "again"}]
    with pytest.raises(Conflict):
        store.import_rows("store_meta", rows)
    assert store.count_rows("store_meta") == 0


def test_an_import_joins_the_callers_transaction(store: Store) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), store.transaction():
        store.import_rows("store_meta", [{"key": "a", "value": "1"}])
        assert store.count_rows("store_meta") == 1
        raise Boom
    assert store.count_rows("store_meta") == 0


def test_unknown_tables_and_malformed_rows_are_refused(store: Store) -> None:
    with pytest.raises(StorageError, match="not a portable table"):
        store.count_rows("fact_log")
    with pytest.raises(StorageError, match="not a portable table"):
        list(store.export_rows("schema_migrations"))
    with pytest.raises(StorageError, match="columns"):
        store.import_rows("store_meta", [{"key": "a"}])
    with pytest.raises(StorageError, match="columns"):
        store.import_rows("store_meta", [{"key": "a", "value": "1", "extra": 2}])
    with pytest.raises(StorageError, match="aware datetime"):
        store.import_rows("purge_log", [{"fact_id": "x", "agent_id": "a", "purged_at": "2026-01-01"}])
    assert store.count_rows("store_meta") == store.count_rows("purge_log") == 0


def test_delete_rows_empties_a_table_and_logs_the_entries(store: Store) -> None:
    load(store, sample_rows())
    assert store.delete_rows("fact_vectors") == 2
    assert store.delete_rows("facts") == 2
    assert store.count_rows("facts") == store.count_rows("fact_vectors") == 0
    assert store.count_rows("fact_versions") == 3  # other tables are left alone
    assert store.facts.text_snapshot("default").rows == []


def test_a_read_snapshot_sees_one_state_while_others_write(store: Store) -> None:
    store.import_rows("store_meta", [{"key": "a", "value": "1"}])
    with store.read_snapshot():
        assert store.count_rows("store_meta") == 1
        in_thread(lambda: store.import_rows("store_meta", [{"key": "b", "value": "2"}]))
        assert store.count_rows("store_meta") == 1
        assert [r["key"] for r in store.export_rows("store_meta")] == ["a"]
    assert store.count_rows("store_meta") == 2


# -- copy ------------------------------------------------------------------------------------------------
def test_copy_moves_every_row_into_an_empty_store(store: Store, other: Store) -> None:
    rows = sample_rows()
    load(store, rows)
    calls: list[tuple[str, int, int]] = []
    counts = portable.copy(store, other, progress=lambda *call: calls.append(call))
    assert counts == {t.name: len(rows[t.name]) for t in TABLES}
    assert dump(other) == dump(store)
    assert [c for c in calls if c[1] == c[2]][-1] == (TABLES[-1].name, 2, 2)
    assert {c[0] for c in calls} == {t.name for t in TABLES}


def test_copy_leaves_the_destination_searchable_and_its_logs_filled(store: Store, other: Store) -> None:
    first = entry(1, "Alpha fact about kestrels", tags=["birds"])
    store.facts.add(first, at=T0)
    store.facts.add(entry(2, UNICODE_TEXTS[2], archived_at=at(hours=1)), at=T0)
    store.vectors.put_many([(first.id, first.content, VEC_A)], model="hash-8", dim=8, at=T0)
    portable.copy(store, other)
    assert other.facts.get(first.id, AGENT) == store.facts.get(first.id, AGENT)
    assert hit_ids(other.facts.search(match("kestrels"), view(), 10)) == [first.id]
    assert hit_ids(other.facts.search(match("birds"), view(), 10)) == [first.id]
    assert sorted(i for i, _ in other.facts.text_snapshot("default").rows) == sorted([first.id, entry(2).id])
    assert other.vectors.snapshot("default", "hash-8").vectors == [(first.id, VEC_A)]
    assert other.versions.history(first.id, AGENT) == store.versions.history(first.id, AGENT)
    assert other.check().ok


def test_copy_refuses_a_destination_that_holds_rows_and_writes_nothing(store: Store, other: Store) -> None:
    load(store, sample_rows())
    other.import_rows("api_keys", sample_rows()["api_keys"])
    with pytest.raises(StorageError, match="not empty.*api_keys"):
        portable.copy(store, other)
    assert {t.name: other.count_rows(t.name) for t in TABLES if other.count_rows(t.name)} == {"api_keys": 1}


def test_a_copy_that_fails_half_way_writes_nothing(store: Store, other: Store) -> None:
    load(store, sample_rows())

    def fail_at_sessions(name: str, done: int, total: int) -> None:
        if name == "sessions":
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        portable.copy(store, other, progress=fail_at_sessions)
    assert all(other.count_rows(t.name) == 0 for t in TABLES)


def test_a_copy_interrupted_in_the_middle_of_a_table_leaves_both_stores_usable(store: Store, other: Store) -> None:
    store.import_rows("store_meta", [{"key": f"k{n:04d}", "value": "v"} for n in range(1200)])

    def fail_mid_table(name: str, done: int, total: int) -> None:
        if name == "store_meta" and 0 < done < total:
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        portable.copy(store, other, progress=fail_mid_table)
    assert all(other.count_rows(t.name) == 0 for t in TABLES)
    store.import_rows("store_meta", [{"key": "after", "value": "v"}])  # no export left open on this thread
    assert in_thread(lambda: store.count_rows("store_meta")) == 1201
    assert portable.copy(store, other)["store_meta"] == 1201


def test_a_store_cannot_be_copied_onto_itself(store: Store) -> None:
    with pytest.raises(StorageError, match="onto itself"):
        portable.copy(store, store)


def test_working_memory_keeps_its_order_after_a_copy(store: Store, other: Store) -> None:
    load(store, sample_rows())
    portable.copy(store, other)
    other.working.put(WorkingEntry(agent_id="default", key="scratch/c", value="third", stored_at=T0, expires_at=T1))
    seqs = {r["key"]: r["seq"] for r in other.export_rows("working_entries")}
    assert seqs["scratch/a"] == 7 and seqs["scratch/b"] == 3
    assert seqs["scratch/c"] > 7


def test_kv_memory_and_the_graph_read_the_same_after_a_copy(store: Store, other: Store) -> None:
    store.kv.put("default", "b", {"n": 1}, at=T0)
    store.kv.put("default", "a", None, at=T0)
    store.kv.put("default", "a", [1, "✓"], at=T1)
    store.kv.put("default", "gone", "x", at=T0)
    store.kv.delete("default", "gone", at=T1)
    for n, entity_id in enumerate(("e3", "e1", "e2")):  # inserted out of id order, seen at one instant
        store.graph.add_entity(
            Entity("default", entity_id, "person", f"P{n}", f"p{n}", last_seen_at=T0, sources=("m",))
        )
    for relation_id in ("r2", "r1", "r3"):  # created at one instant: insertion order breaks the tie
        store.graph.add_relation(Relation("default", relation_id, "e1", "knows", "e2", created_at=T0))
    portable.copy(store, other)
    assert other.kv.list("default") == store.kv.list("default")
    assert [i.version for i in other.kv.list("default")] == [2, 1]
    assert other.kv.put("default", "gone", "back", at=T1).version == 3  # the deleted key came along
    assert other.graph.list_entities("default") == store.graph.list_entities("default")
    assert [e.entity_id for e in other.graph.list_entities("default")] == ["e2", "e1", "e3"]
    assert other.graph.relations("default") == store.graph.relations("default")
    assert [r.relation_id for r in other.graph.relations("default")] == ["r2", "r1", "r3"]
    assert other.graph.entities_of_sources("default", ["m"]) == store.graph.entities_of_sources("default", ["m"])
    assert other.graph.fingerprint("default") == store.graph.fingerprint("default")
