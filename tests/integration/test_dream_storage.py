"""The dream storage on real databases: damaged rows and the purge log's transaction on an SQLite file; the
lock raced by two processes on each backend; and on PostgreSQL, a holder killed outright freeing the lock at
once (the advisory lock dies with its session)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reverie.errors import ReverieError
from reverie.storage import open_store, store_url
from reverie.storage.base import LedgerStamp, PurgeRule, Store
from reverie.types import MemoryEntry, Scope, Tier

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
ROUNDS = 20


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(path: Path) -> Iterator[Store]:
    opened = open_store(store_url(path), now=T0)
    try:
        yield opened
    finally:
        opened.close()


def raw(path: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on the file behind the store's back (committed)."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql, params)


def test_the_dream_migration_is_recorded(store: Store) -> None:
    assert "0009_dream" in [name for name, _ in store.migrations()]


def test_corrupt_ledger_rows_are_left_out(store: Store, path: Path) -> None:
    good = LedgerStamp("agent-a", "merge", T0, fingerprint="abc")
    store.dream.stamp(good)
    for pass_name, stamped_at in (
        ("garbled", "not a time"),
        ("naive", "2026-01-01T09:00:00"),  # no zone: cannot be compared with the gate's aware times
        ("number", 12345),
        ("blob", b"\x00\x01"),
    ):
        raw(
            path,
            "INSERT INTO dream_ledger (agent_id, pass_name, stamped_at) VALUES ('agent-a', ?, ?)",
            (pass_name, stamped_at),
        )
    # A good time, but a fingerprint that is not text.
    raw(path, "INSERT INTO dream_ledger VALUES ('agent-a', 'bad-print', '2026-01-01T09:00:00.000000Z', X'00FF')")
    assert store.dream.ledger("agent-a") == {"merge": good}
    # A corrupt row is repaired by the next stamp of its pass.
    store.dream.stamp(LedgerStamp("agent-a", "garbled", T0))
    assert set(store.dream.ledger("agent-a")) == {"merge", "garbled"}


def test_a_lock_with_an_unreadable_expiry_can_be_taken_over(store: Store, path: Path) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=60) is not None
    raw(path, "UPDATE dream_locks SET expires_at = 'garbage' WHERE agent_id = 'agent-a'")
    assert store.dream.lock_state("agent-a").expires_at is None
    assert store.dream.acquire("agent-a", "run-2", now=T0, lease_seconds=60) is not None
    assert store.dream.lock_state("agent-a").holder == "run-2"


def test_a_purge_whose_log_fails_deletes_nothing(store: Store, path: Path) -> None:
    old = T0 - timedelta(days=200)
    doomed = MemoryEntry(
        id="000000000001",
        content="doomed",
        category="general",
        tags=(),
        scope=Scope(),
        tier=Tier.SEMANTIC,
        created_at=old,
        last_seen_at=old,
        archived_at=old,
    )
    store.facts.add(doomed, at=old)
    raw(path, "CREATE TRIGGER refuse_log BEFORE INSERT ON purge_log BEGIN SELECT RAISE(ABORT, 'log refused'); END")
    rule = PurgeRule(archived_before=T0, protect_importance=0.8, protect_reinforcement=5)
    with pytest.raises(ReverieError):
        store.facts.purge(rule)
    assert store.facts.get(doomed.id, Scope()) == doomed
    raw(path, "DROP TRIGGER refuse_log")
    assert store.facts.purge(rule) == ([doomed.id], [])
    assert [r.fact_id for r in store.facts.purge_log()] == [doomed.id]


@pytest.fixture(params=["sqlite", "postgresql"])
def lock_url(request: pytest.FixtureRequest, path: Path) -> str:
    """A fresh store of each backend, by URL (for child processes)."""
    if request.param == "sqlite":
        return store_url(path)
    url: str = request.getfixturevalue("pg_url")
    return url


def _race(url: str, index: int, barrier: Any, results: Any) -> None:
    """One racer: each round, wait for the other, then try to take the lock at that round's time (every
    earlier lease has expired by then, so only the race decides)."""
    store = open_store(url, now=T0)
    try:
        for round_no in range(ROUNDS):
            barrier.wait(timeout=60)
            lease = store.dream.acquire(
                "racer", f"worker-{index}-round-{round_no}", now=T0 + timedelta(hours=round_no), lease_seconds=60
            )
            results.put((round_no, index, lease is not None))
        # Close only once both have raced the last round: on PostgreSQL closing frees the advisory lock at once
        # (as a crash would), and a racer still trying would then rightly take it.
        barrier.wait(timeout=60)
    finally:
        store.close()


@pytest.mark.slow
def test_two_processes_racing_acquire_never_both_win(lock_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    workers = [ctx.Process(target=_race, args=(lock_url, i, barrier, results)) for i in range(2)]
    for worker in workers:
        worker.start()
    try:
        outcomes = [results.get(timeout=120) for _ in range(2 * ROUNDS)]
    finally:
        for worker in workers:
            worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0]
    winners: dict[int, list[int]] = {r: [] for r in range(ROUNDS)}
    for round_no, index, won in outcomes:
        if won:
            winners[round_no].append(index)
    assert all(len(w) == 1 for w in winners.values()), winners
    with closing(open_store(lock_url, now=T0)) as store:
        last = store.dream.lock_state("racer")
    assert last.holder == f"worker-{winners[ROUNDS - 1][0]}-round-{ROUNDS - 1}"


def _hold_forever(url: str, ready: Any) -> None:
    """Take the dream lock of agent-a with a lease of an hour, say so, then wait to be killed."""
    store = open_store(url, now=T0)
    lease = store.dream.acquire("agent-a", "doomed", now=T0, lease_seconds=3600)
    ready.put(lease is not None)
    while True:
        time.sleep(1)


@pytest.mark.slow
def test_a_killed_holder_frees_the_postgres_lock_at_once(pg_url: str) -> None:
    """The advisory lock dies with its holder's session: another process takes the lock long before the dead
    holder's lease would have run out (on SQLite it would wait the hour)."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Queue()
    holder = ctx.Process(target=_hold_forever, args=(pg_url, ready))
    holder.start()
    try:
        assert ready.get(timeout=60) is True
        with closing(open_store(pg_url, now=T0)) as store:
            soon = T0 + timedelta(seconds=1)
            assert store.dream.acquire("agent-a", "next", now=soon, lease_seconds=60) is None  # alive: refused
            assert holder.pid is not None
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(timeout=30)
            killed_at = time.monotonic()
            lease = None
            while lease is None and time.monotonic() - killed_at < 10:
                lease = store.dream.acquire("agent-a", "next", now=soon, lease_seconds=60)
                if lease is None:
                    time.sleep(0.05)
            assert lease is not None, "the dead holder's advisory lock was not freed"
            state = store.dream.lock_state("agent-a")
            assert state.holder == "next" and state.expires_at == soon + timedelta(seconds=60)
            assert store.dream.renew("agent-a", "next", now=soon, lease_seconds=60) is True
    finally:
        if holder.is_alive():
            holder.kill()
        holder.join(timeout=30)
