"""DreamRepository (ledger, lease lock, activity, runs, evidence) and the purge log / agent list of FactRepository."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from reverie.storage import open_store
from reverie.storage.base import DreamLockState, LedgerStamp, PurgedRecord, PurgeRule, Store
from reverie.types import DreamRun, Evidence, Scope
from reverie.types.dream import DreamProcess

from .support import T0, at, eid, entry

LEASE = 60.0


# -- the change-gate ledger -----------------------------------------------------------------------------
def test_an_empty_ledger_has_no_stamps(store: Store) -> None:
    assert store.dream.ledger("agent-a") == {}


def test_stamps_read_back_by_pass_name(store: Store) -> None:
    merge = LedgerStamp("agent-a", "merge", at(hours=1), fingerprint="abc123")
    decay = LedgerStamp("agent-a", "decay", at(hours=2))
    store.dream.stamp(merge)
    store.dream.stamp(decay)
    assert store.dream.ledger("agent-a") == {"merge": merge, "decay": decay}


def test_a_stamp_upserts_by_agent_and_pass(store: Store) -> None:
    store.dream.stamp(LedgerStamp("agent-a", "merge", at(hours=1), fingerprint="old"))
    newer = LedgerStamp("agent-a", "merge", at(hours=5), fingerprint=None)
    store.dream.stamp(newer)
    assert store.dream.ledger("agent-a") == {"merge": newer}


def test_ledgers_are_per_agent_and_clear_counts_rows(store: Store) -> None:
    for agent in ("agent-a", "agent-b"):
        for name in ("merge", "decay"):
            store.dream.stamp(LedgerStamp(agent, name, T0))
    assert set(store.dream.ledger("agent-b")) == {"merge", "decay"}
    assert store.dream.ledger("agent-c") == {}
    assert store.dream.clear_ledger("agent-a") == 2
    assert store.dream.ledger("agent-a") == {}
    assert set(store.dream.ledger("agent-b")) == {"merge", "decay"}
    assert store.dream.clear_ledger("agent-a") == 0
    store.dream.stamp(LedgerStamp("agent-a", "merge", T0))
    assert store.dream.clear_ledger() == 3
    assert store.dream.ledger("agent-b") == {}


# -- the lock ---------------------------------------------------------------------------------------
def test_an_agent_never_locked_has_an_empty_lock_state(store: Store) -> None:
    assert store.dream.lock_state("agent-a") == DreamLockState(
        "agent-a", holder=None, expires_at=None, last_dream_at=None, abort_requested=False
    )


def test_acquire_returns_a_lease_and_shows_in_the_state(store: Store) -> None:
    lease = store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE)
    assert lease is not None
    assert (lease.agent_id, lease.holder, lease.acquired_at, lease.expires_at) == (
        "agent-a",
        "run-1",
        T0,
        T0 + timedelta(seconds=LEASE),
    )
    state = store.dream.lock_state("agent-a")
    assert (state.holder, state.expires_at, state.abort_requested) == ("run-1", lease.expires_at, False)


def test_a_second_holder_is_refused_while_the_lease_is_live(store: Store) -> None:
    lease = store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE)
    assert lease is not None
    assert store.dream.acquire("agent-a", "run-2", now=T0, lease_seconds=LEASE) is None
    just_before = lease.expires_at - timedelta(microseconds=1)
    assert store.dream.acquire("agent-a", "run-2", now=just_before, lease_seconds=LEASE) is None
    assert store.dream.lock_state("agent-a").holder == "run-1"
    # Other agents have their own lock.
    assert store.dream.acquire("agent-b", "run-2", now=T0, lease_seconds=LEASE) is not None


def test_an_expired_lease_is_taken_over(store: Store) -> None:
    lease = store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE)
    assert lease is not None
    taken = store.dream.acquire("agent-a", "run-2", now=lease.expires_at, lease_seconds=LEASE)
    assert taken is not None
    assert taken.holder == "run-2"
    assert store.dream.lock_state("agent-a").holder == "run-2"
    # The crashed holder has lost it: renew and release say so or do nothing.
    assert store.dream.renew("agent-a", "run-1", now=lease.expires_at, lease_seconds=LEASE) is False
    store.dream.release("agent-a", "run-1", completed_at=at(hours=1))
    assert store.dream.lock_state("agent-a").holder == "run-2"
    assert store.dream.lock_state("agent-a").last_dream_at is None


def test_the_holder_acquiring_again_extends_its_lease(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    again = store.dream.acquire("agent-a", "run-1", now=at(seconds=30), lease_seconds=LEASE)
    assert again is not None
    assert store.dream.lock_state("agent-a").expires_at == at(seconds=30 + LEASE)


def test_renew_extends_the_lease_of_the_holder(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    assert store.dream.renew("agent-a", "run-1", now=at(seconds=50), lease_seconds=LEASE) is True
    assert store.dream.lock_state("agent-a").expires_at == at(seconds=50 + LEASE)
    assert store.dream.acquire("agent-a", "run-2", now=at(seconds=100), lease_seconds=LEASE) is None
    # Expired but not taken over: still ours.
    assert store.dream.renew("agent-a", "run-1", now=at(seconds=500), lease_seconds=LEASE) is True
    assert store.dream.renew("agent-a", "run-2", now=at(seconds=500), lease_seconds=LEASE) is False
    assert store.dream.renew("agent-b", "run-1", now=T0, lease_seconds=LEASE) is False


def test_renew_after_release_fails(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-1", completed_at=None)
    assert store.dream.renew("agent-a", "run-1", now=T0, lease_seconds=LEASE) is False


def test_a_non_positive_lease_is_refused(store: Store) -> None:
    with pytest.raises(ValueError):
        store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=0)
    with pytest.raises(ValueError):
        store.dream.renew("agent-a", "run-1", now=T0, lease_seconds=-1)


def test_a_completed_release_advances_last_dream_at(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-1", completed_at=at(seconds=40))
    state = store.dream.lock_state("agent-a")
    assert state == DreamLockState(
        "agent-a", holder=None, expires_at=None, last_dream_at=at(seconds=40), abort_requested=False
    )
    # Free again: anyone may take it.
    assert store.dream.acquire("agent-a", "run-2", now=at(seconds=41), lease_seconds=LEASE) is not None


def test_a_failed_release_keeps_the_previous_last_dream_at(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-1", completed_at=at(seconds=40))
    assert store.dream.acquire("agent-a", "run-2", now=at(hours=1), lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-2", completed_at=None)
    state = store.dream.lock_state("agent-a")
    assert (state.holder, state.last_dream_at) == (None, at(seconds=40))


def test_a_failed_first_dream_leaves_no_last_dream_at(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-1", completed_at=None)
    assert store.dream.lock_state("agent-a").last_dream_at is None


def test_a_release_by_a_non_holder_is_a_no_op(store: Store) -> None:
    store.dream.release("agent-a", "run-1", completed_at=T0)  # never locked
    assert store.dream.lock_state("agent-a").last_dream_at is None
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    before = store.dream.lock_state("agent-a")
    store.dream.release("agent-a", "run-2", completed_at=at(seconds=10))
    assert store.dream.lock_state("agent-a") == before


def test_abort_is_requested_of_the_holder_and_cleared_by_the_next_acquire(store: Store) -> None:
    assert store.dream.request_abort("agent-a") is False  # nothing running
    assert store.dream.lock_state("agent-a").abort_requested is False
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    assert store.dream.request_abort("agent-a") is True
    assert store.dream.lock_state("agent-a").abort_requested is True
    assert store.dream.lock_state("agent-b").abort_requested is False
    # The aborted run crashed instead of releasing; the next run takes over and starts unaborted.
    assert store.dream.acquire("agent-a", "run-2", now=at(seconds=LEASE), lease_seconds=LEASE) is not None
    assert store.dream.lock_state("agent-a").abort_requested is False


def test_abort_is_cleared_when_the_dream_releases(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE) is not None
    assert store.dream.request_abort("agent-a") is True
    store.dream.release("agent-a", "run-1", completed_at=None)
    assert store.dream.lock_state("agent-a").abort_requested is False
    assert store.dream.request_abort("agent-a") is False
    assert store.dream.acquire("agent-a", "run-2", now=at(seconds=1), lease_seconds=LEASE) is not None
    assert store.dream.lock_state("agent-a").abort_requested is False


# -- the lease's holder: its process, its heartbeat, a dead holder's lease broken --------------------------
PROCESS = DreamProcess(pid=4242, host="worker-1", heartbeat_seconds=5.0)


def test_a_lease_records_its_holders_process_and_a_first_heartbeat(store: Store) -> None:
    lease = store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE, process=PROCESS)
    assert lease is not None and lease.process == PROCESS
    state = store.dream.lock_state("agent-a")
    assert (state.holder, state.process, state.heartbeat_at) == ("run-1", PROCESS, T0)
    # A lease taken without a process (an older caller) records none: only its expiry can end it.
    assert store.dream.acquire("agent-b", "run-2", now=T0, lease_seconds=LEASE) is not None
    assert (store.dream.lock_state("agent-b").process, store.dream.lock_state("agent-b").heartbeat_at) == (None, T0)


def test_a_heartbeat_moves_the_holders_heartbeat_not_its_lease(store: Store) -> None:
    lease = store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE, process=PROCESS)
    assert lease is not None
    assert store.dream.heartbeat("agent-a", "run-1", now=at(seconds=5)) is True
    state = store.dream.lock_state("agent-a")
    assert (state.heartbeat_at, state.expires_at, state.process) == (at(seconds=5), lease.expires_at, PROCESS)
    assert store.dream.heartbeat("agent-a", "run-2", now=at(seconds=6)) is False  # not the holder
    assert store.dream.heartbeat("agent-b", "run-1", now=at(seconds=6)) is False
    assert store.dream.lock_state("agent-a").heartbeat_at == at(seconds=5)
    store.dream.release("agent-a", "run-1", completed_at=None)
    assert store.dream.heartbeat("agent-a", "run-1", now=at(seconds=10)) is False  # a late beat after release
    state = store.dream.lock_state("agent-a")
    assert (state.holder, state.process, state.heartbeat_at) == (None, None, None)


def test_a_new_holder_replaces_the_process_of_the_old_one(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE, process=PROCESS) is not None
    other = DreamProcess(pid=7, host="worker-2", heartbeat_seconds=2.5)
    taken = store.dream.acquire("agent-a", "run-2", now=at(seconds=LEASE), lease_seconds=LEASE, process=other)
    assert taken is not None
    state = store.dream.lock_state("agent-a")
    assert (state.holder, state.process, state.heartbeat_at) == ("run-2", other, at(seconds=LEASE))


def test_breaking_a_dead_holders_lease_frees_the_lock_and_interrupts_its_run(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-0", now=T0, lease_seconds=LEASE) is not None
    store.dream.release("agent-a", "run-0", completed_at=at(seconds=1))
    assert store.dream.acquire("agent-a", "run-1", now=at(hours=1), lease_seconds=LEASE, process=PROCESS) is not None
    store.dream.save_run(run(1, current_pass="consolidation", progress="4/7 passes", tokens=300))
    assert store.dream.request_abort("agent-a") is True
    reason = "process 4242 on worker-1 is gone"
    assert store.dream.break_lease("agent-a", "run-1", now=at(hours=1, seconds=30), reason=reason) is True
    assert store.dream.lock_state("agent-a") == DreamLockState(
        "agent-a", holder=None, expires_at=None, last_dream_at=at(seconds=1), abort_requested=False
    )  # the time gate stays where the last completed dream left it
    assert store.dream.get_run("run-1") == run(
        1,
        phase="interrupted",
        finished_at=at(hours=1, seconds=30),
        current_pass="consolidation",  # where it died
        progress="4/7 passes",
        tokens=300,
        error=reason,
    )
    # Broken once: again, or by a late call naming it, nothing changes.
    assert store.dream.break_lease("agent-a", "run-1", now=at(hours=2), reason="again") is False
    assert store.dream.get_run("run-1").finished_at == at(hours=1, seconds=30)  # type: ignore[union-attr]
    assert store.dream.acquire("agent-a", "run-2", now=at(hours=1, seconds=31), lease_seconds=LEASE) is not None


def test_breaking_names_the_holder_so_a_new_holders_lease_is_never_broken(store: Store) -> None:
    assert store.dream.acquire("agent-a", "run-2", now=T0, lease_seconds=LEASE, process=PROCESS) is not None
    store.dream.save_run(run(1, phase="completed", finished_at=at(hours=1)))
    assert store.dream.break_lease("agent-a", "run-1", now=at(seconds=1), reason="gone") is False
    assert store.dream.lock_state("agent-a").holder == "run-2"
    assert store.dream.get_run("run-1") == run(1, phase="completed", finished_at=at(hours=1))  # a finished run stays
    assert store.dream.break_lease("agent-b", "run-2", now=at(seconds=1), reason="gone") is False


def test_the_store_knows_whether_a_lease_it_holds_is_alive(store: Store) -> None:
    """PostgreSQL knows from the advisory lock (None would mean: ask the process and heartbeat); SQLite
    cannot tell (None)."""
    assert store.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE, process=PROCESS) is not None
    assert store.dream.holder_gone("agent-a") is not True


def test_a_lease_whose_holder_closed_its_store_is_gone_on_postgres(store: Store) -> None:
    """A holder that went away without releasing (its store closed, as at a process's death): PostgreSQL's
    advisory lock went with its session, so the store says the holder is gone; SQLite cannot tell."""
    other = open_store(store.url, now=T0)
    try:
        assert other.dream.acquire("agent-a", "run-1", now=T0, lease_seconds=LEASE, process=PROCESS) is not None
        assert store.dream.holder_gone("agent-a") in (None, False)
    finally:
        other.close()
    assert store.dream.lock_state("agent-a").holder == "run-1"  # the row stays: only the lease's end frees it
    expected = True if store.url.startswith("postgres") else None
    assert store.dream.holder_gone("agent-a") is expected


# -- activity ---------------------------------------------------------------------------------------
def test_no_activity(store: Store) -> None:
    assert store.dream.activity_since("agent-a", None) == (0, None)
    assert store.dream.last_activity() is None


def test_activity_counts_distinct_sessions_since_a_time(store: Store) -> None:
    store.dream.note_activity("agent-a", "s1", at(hours=1))
    store.dream.note_activity("agent-a", "s2", at(hours=2))
    store.dream.note_activity("agent-a", "s1", at(hours=3))
    store.dream.note_activity("agent-a", "s3", at(hours=1))
    store.dream.note_activity("agent-a", "", at(hours=4))  # no session: counts for the time, not the sessions
    store.dream.note_activity("agent-b", "s9", at(hours=9))
    assert store.dream.activity_since("agent-a", None) == (3, at(hours=4))
    assert store.dream.activity_since("agent-a", at(hours=1)) == (2, at(hours=4))  # strictly after
    assert store.dream.activity_since("agent-a", at(hours=2)) == (1, at(hours=4))
    assert store.dream.activity_since("agent-a", at(hours=3)) == (0, at(hours=4))
    assert store.dream.activity_since("agent-b", None) == (1, at(hours=9))
    assert store.dream.activity_since("agent-c", None) == (0, None)
    assert store.dream.last_activity() == at(hours=9)


def test_activity_keeps_the_latest_time_of_a_session(store: Store) -> None:
    store.dream.note_activity("agent-a", "s1", at(hours=5))
    store.dream.note_activity("agent-a", "s1", at(hours=1))  # late, out-of-order report
    assert store.dream.activity_since("agent-a", at(hours=2)) == (1, at(hours=5))
    assert store.dream.last_activity() == at(hours=5)


# -- runs -------------------------------------------------------------------------------------------
def run(n: int, agent: str = "agent-a", **fields: Any) -> DreamRun:
    """Run ``run-n`` of ``agent``, started ``n`` hours after T0, running unless ``fields`` say otherwise."""
    started = DreamRun(run_id=f"run-{n}", agent_id=agent, trigger="manual", started_at=at(hours=n), phase="running")
    return replace(started, **fields)


def test_a_run_round_trips_and_upserts(store: Store) -> None:
    assert store.dream.get_run("run-1") is None
    live = run(1, current_pass="merge", progress="3/9 passes", tokens=1200, cost=0.0125)
    store.dream.save_run(live)
    assert store.dream.get_run("run-1") == live
    done = run(
        1,
        phase="completed",
        finished_at=at(hours=1, minutes=5),
        progress="9/9 passes",
        tokens=4000,
        cost=0.5,
        report={"passes": {"merge": {"merged": 3, "ids": ["a", "b"]}}, "note": "café ✓", "ok": True, "n": None},
    )
    store.dream.save_run(done)
    assert store.dream.get_run("run-1") == done
    failed = run(2, phase="failed", finished_at=at(hours=2, minutes=1), error="LLM timed out")
    store.dream.save_run(failed)
    assert store.dream.get_run("run-2") == failed
    assert len(store.dream.runs()) == 2


def test_runs_list_newest_started_first(store: Store) -> None:
    for n, agent in ((2, "agent-a"), (5, "agent-b"), (1, "agent-a"), (4, "agent-a"), (3, "agent-b")):
        store.dream.save_run(run(n, agent))
    assert [r.run_id for r in store.dream.runs()] == ["run-5", "run-4", "run-3", "run-2", "run-1"]
    assert [r.run_id for r in store.dream.runs("agent-a")] == ["run-4", "run-2", "run-1"]
    assert [r.run_id for r in store.dream.runs("agent-a", limit=2)] == ["run-4", "run-2"]
    assert [r.run_id for r in store.dream.runs(limit=1)] == ["run-5"]
    assert store.dream.runs("agent-c") == []


def test_prune_runs_deletes_finished_runs_finished_before(store: Store) -> None:
    store.dream.save_run(run(1, phase="completed", finished_at=at(hours=1, minutes=1)))
    store.dream.save_run(run(2, phase="failed", finished_at=at(hours=2, minutes=1)))
    store.dream.save_run(run(3, phase="aborted", finished_at=at(hours=3)))  # exactly at the cutoff: kept
    store.dream.save_run(run(0))  # still running, however old
    assert store.dream.prune_runs(at(hours=3)) == 2
    assert sorted(r.run_id for r in store.dream.runs()) == ["run-0", "run-3"]
    assert store.dream.prune_runs(at(hours=3)) == 0


# -- evidence ---------------------------------------------------------------------------------------
def test_evidence_reads_back_oldest_first(store: Store) -> None:
    assert store.dream.evidence(eid(9)) == []
    store.dream.add_evidence([])
    later = [Evidence("run-2", eid(9), eid(3), at(hours=2))]
    earlier = [Evidence("run-1", eid(9), eid(1), at(hours=1)), Evidence("run-1", eid(9), eid(2), at(hours=1))]
    other = [Evidence("run-1", eid(8), eid(4), at(hours=1))]
    store.dream.add_evidence(later)
    store.dream.add_evidence(earlier + other)
    assert store.dream.evidence(eid(9)) == earlier + later
    assert store.dream.evidence(eid(8)) == other


def test_evidence_recorded_twice_is_kept_once(store: Store) -> None:
    row = Evidence("run-1", eid(9), eid(1), at(hours=1))
    store.dream.add_evidence([row, row])
    store.dream.add_evidence([row])
    assert store.dream.evidence(eid(9)) == [row]


# -- the purge log and the agent list ------------------------------------------------------------------
def purge_rule(**fields: Any) -> PurgeRule:
    return replace(PurgeRule(archived_before=at(days=-90), protect_importance=0.8, protect_reinforcement=5), **fields)


def test_purge_logs_each_purged_entry_and_no_protected_one(store: Store) -> None:
    old = at(days=-200)
    store.facts.add(entry(1, "doomed", scope=Scope("agent-a", user_id="u"), archived_at=old), at=old)
    store.facts.add(entry(2, "doomed too", scope=Scope("agent-b"), archived_at=old), at=old)
    store.facts.add(entry(3, "precious", scope=Scope("agent-a"), archived_at=old, pinned=True), at=old)
    store.facts.add(entry(4, "recently archived", scope=Scope("agent-a"), archived_at=at(days=-1)), at=old)
    store.facts.add(entry(5, "live"), at=old)
    assert store.facts.purge_log() == []
    purged, protected = store.facts.purge(purge_rule(purged_at=T0))
    assert sorted(purged) == [eid(1), eid(2)]
    assert protected == [eid(3)]
    log = store.facts.purge_log()
    assert sorted(log, key=lambda r: r.fact_id) == [
        PurgedRecord(eid(1), "agent-a", T0),
        PurgedRecord(eid(2), "agent-b", T0),
    ]
    assert store.facts.purge_log(agent_id="agent-b") == [PurgedRecord(eid(2), "agent-b", T0)]
    assert store.facts.purge_log(agent_id="agent-c") == []


def test_the_purge_log_defaults_to_the_cutoff_and_filters_by_time(store: Store) -> None:
    old = at(days=-400)
    store.facts.add(entry(1, "first", archived_at=old), at=old)
    store.facts.purge(purge_rule())  # no purged_at: the cutoff is recorded
    store.facts.add(entry(2, "second", archived_at=old), at=old)
    store.facts.purge(purge_rule(purged_at=at(days=1)))
    store.facts.add(entry(1, "the first id, reused", archived_at=old), at=old)
    store.facts.purge(purge_rule(purged_at=at(days=2)))
    assert store.facts.purge_log() == [
        PurgedRecord(eid(1), "default", at(days=-90)),
        PurgedRecord(eid(2), "default", at(days=1)),
        PurgedRecord(eid(1), "default", at(days=2)),
    ]
    assert store.facts.purge_log(since=at(days=1)) == store.facts.purge_log()[1:]  # inclusive
    assert store.facts.purge_log(since=at(days=3)) == []


def test_a_purge_that_deletes_nothing_logs_nothing(store: Store) -> None:
    store.facts.add(entry(1, "precious", archived_at=at(days=-200), importance=0.9), at=T0)
    assert store.facts.purge(purge_rule(purged_at=T0)) == ([], [eid(1)])
    assert store.facts.purge_log() == []


def test_agents_lists_every_agent_with_an_entry(store: Store) -> None:
    assert store.facts.agents() == []
    store.facts.add(entry(1, "b", scope=Scope("agent-b", user_id="u", session_id="s")), at=T0)
    store.facts.add(entry(2, "a", scope=Scope("agent-a")), at=T0)
    store.facts.add(entry(3, "a again", scope=Scope("agent-a")), at=T0)
    store.facts.add(entry(4, "only archived", scope=Scope("agent-z"), archived_at=at(days=-200)), at=T0)
    assert store.facts.agents() == ["agent-a", "agent-b", "agent-z"]
    store.facts.purge(purge_rule(purged_at=T0))
    assert store.facts.agents() == ["agent-a", "agent-b"]
