"""The dream service on real parts: SQLite in a temp directory, the loopback scripted OpenAI server, threads
and spawned processes. Covers the gates (seed 004), abort and busy back-off, status across engines and
processes, the idle trigger (seed 003), missing capabilities and the no-LLM passes (seed 001 Pass 0, 0b,
importance decay)."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.dream.schedule import Schedule
from reverie.errors import NotFound
from reverie.logs import JsonlFile, RetentionPolicy, RetentionReport
from reverie.testing.openai_server import ChatReply, ScriptedOpenAIServer

from ._dream import EMPTY, NO_LLM_PASSES, chats, open_engine


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def save_distinct(rv: reverie.Reverie, n: int = 2) -> list[str]:
    """n entries no two of which are near-duplicates (each its own consolidation group)."""
    texts = [
        "Alice moved to Porto in March",
        "The Lantern service runs on PostgreSQL",
        "Bob prefers tea over coffee",
        "The quarterly review is on Thursdays",
    ]
    return [rv.memory.save(text).id for text in texts[:n]]


# -- the schedule -----------------------------------------------------------------------------------------
def test_the_schedule_comes_from_the_dream_settings(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        assert rv.dream.config.schedule == Schedule(timedelta(minutes=5), timedelta(hours=4))
    with open_engine(home, clock, dream={"initial_delay_minutes": 1, "cron": "0 3 * * *"}) as rv:
        assert rv.dream.config.schedule == Schedule(initial_delay=timedelta(minutes=1), cron="0 3 * * *")


def test_the_scheduler_dreams_after_the_initial_delay_then_every_interval(home: Path, clock: FakeClock) -> None:
    """The serve loop on a fake clock. The audit job (due every 36 s of clock time) runs at the end of each
    loop turn, after the dream and the next due time: a new audit record says a turn completed."""
    with open_engine(home, clock, dream={"busy_poll_seconds": 0.05}, audit={"interval_hours": 0.01}) as rv:
        rv.memory.save("an agent with something to dream about")

        def turns(n: int) -> None:
            wait_until(lambda: len(rv.audit.trend()) == n, f"loop turn {n}")

        rv.dream.start()
        try:
            turns(1)
            assert rv.dream.history() == []  # the clock has not moved: not due
            clock.advance(minutes=4)
            turns(2)
            assert rv.dream.history() == []
            clock.advance(minutes=1)  # the initial delay, 5 minutes
            turns(3)
            (first,) = rv.dream.history()
            assert first.trigger == "scheduled" and first.phase == "completed" and first.started_at == clock.now()
            clock.advance(hours=3, minutes=59)
            turns(4)
            assert len(rv.dream.history()) == 1
            clock.advance(minutes=1)  # the interval, 4 hours
            turns(5)
            assert [r.trigger for r in rv.dream.history()] == ["scheduled", "scheduled"]
            assert rv.dream.history()[0].started_at == clock.now()
        finally:
            rv.dream.stop()


# -- the gates --------------------------------------------------------------------------------------------
def test_dreaming_disabled_globally_skips_every_trigger(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, dream={"enabled": False}) as rv:
        rv.memory.save("something to dream about")
        for trigger in ("manual", "scheduled", "idle"):
            report = rv.dream.run(trigger=trigger)
            assert report.phase == "skipped"
            assert "enabled = false" in report.reason
            assert report.run_id is None and report.passes == {}
        (ticked,) = rv.dream.tick()
        assert ticked.trigger == "scheduled" and ticked.phase == "skipped"
        assert rv.dream.history() == []
        assert rv.dream.status().enabled is False
        assert rv.dream.status().last_dream_at is None


def test_an_agent_opted_out_is_skipped_even_manually_and_others_still_dream(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        rv.dream.set_enabled("a", False)
        assert rv.dream.agent_enabled("a") is False and rv.dream.agent_enabled("b") is True
        skipped = rv.dream.run("a", trigger="manual")
        assert skipped.phase == "skipped" and "disabled for agent 'a'" in skipped.reason
        assert rv.dream.run("b").phase == "completed"
        assert [r.agent_id for r in rv.dream.history()] == ["b"]
        assert rv.dream.status("a").enabled is False
    with open_engine(home, clock) as other:  # the opt-out is stored, not a process's memory
        assert other.dream.run("a").phase == "skipped"
        other.dream.set_enabled("a", True)
        assert other.dream.run("a").phase == "completed"


def test_min_hours_skips_a_scheduled_run_soon_after_a_completed_one_but_not_a_manual(
    home: Path, clock: FakeClock
) -> None:
    with open_engine(home, clock, dream={"min_hours": 1}) as rv:
        assert rv.dream.run(trigger="scheduled").phase == "completed"
        clock.advance(minutes=30)
        soon = rv.dream.run(trigger="scheduled")
        assert soon.phase == "skipped" and "under 1 hours ago" in soon.reason
        manual = rv.dream.run(trigger="manual")
        assert manual.phase == "completed"
        assert rv.dream.status().last_dream_at == clock.now()
        clock.advance(minutes=59)  # 59 minutes after the manual one: still closed
        assert rv.dream.run(trigger="scheduled").phase == "skipped"
        clock.advance(minutes=1)
        assert rv.dream.run(trigger="scheduled").phase == "completed"
        assert [r.trigger for r in rv.dream.history()] == ["scheduled", "manual", "scheduled"]


def test_a_dream_completed_elsewhere_while_the_lock_was_taken_is_not_run_again(
    home: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker's dream completes between this run's gate check and its acquire: the gates, asked again
    under the lock, close, and the lock is given back without a run."""
    with open_engine(home, clock, dream={"min_hours": 1}) as rv:
        acquire = rv.store.dream.acquire

        def after_a_dream_elsewhere(agent_id: str, holder: str, **kw: Any) -> Any:
            assert acquire(agent_id, "elsewhere", **kw) is not None
            rv.store.dream.release(agent_id, "elsewhere", completed_at=clock.now())
            return acquire(agent_id, holder, **kw)

        monkeypatch.setattr(rv.store.dream, "acquire", after_a_dream_elsewhere)
        report = rv.dream.run(trigger="scheduled")
        assert report.phase == "skipped" and "under 1 hours ago" in report.reason
        state = rv.store.dream.lock_state("default")
        assert state.holder is None and state.last_dream_at == clock.now()
        assert rv.dream.history() == []


def test_min_sessions_counts_distinct_sessions_active_since_the_last_dream(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, dream={"min_sessions": 2, "min_hours": 0}) as rv:
        rv.memory.save("said in session one", scope=Scope(session_id="s1"))
        clock.advance(minutes=5)
        rv.memory.save("said in session one again", scope=Scope(session_id="s1"))  # the same session
        rv.memory.save("said outside any session")  # not a session
        first = rv.dream.run(trigger="scheduled")
        assert first.phase == "skipped" and "1 of 2 sessions" in first.reason
        rv.memory.search("session", scope=Scope(session_id="s2"))  # a search is activity too
        assert rv.dream.run(trigger="scheduled").phase == "completed"

        clock.advance(hours=2)
        idle = rv.dream.run(trigger="scheduled")
        assert idle.phase == "skipped" and "0 of 2 sessions" in idle.reason
        assert rv.dream.run(trigger="manual").phase == "completed"  # a manual run bypasses the gate
        clock.advance(minutes=1)
        rv.memory.search("session", scope=Scope(session_id="s1"))
        assert "1 of 2" in rv.dream.run(trigger="scheduled").reason
        rv.memory.save("said in session three", scope=Scope(session_id="s3"))
        assert rv.dream.run(trigger="scheduled").phase == "completed"


def test_another_holder_of_the_lock_skips_the_run_until_its_lease_expires(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, dream={"lease_seconds": 60}) as rv:
        lease = rv.store.dream.acquire("default", "another-process", now=clock.now(), lease_seconds=60)
        assert lease is not None
        assert rv.dream.status().running is True
        for trigger in ("manual", "scheduled"):
            report = rv.dream.run(trigger=trigger)
            assert report.phase == "skipped" and "holds the lock" in report.reason
        assert rv.dream.history() == []
        clock.advance(seconds=59)
        assert rv.dream.run().phase == "skipped"
        clock.advance(seconds=2)  # the holder crashed: its lease ran out
        assert rv.dream.status().running is False
        report = rv.dream.run()
        assert report.phase == "completed"
        state = rv.store.dream.lock_state("default")
        assert state.holder is None and state.last_dream_at == clock.now()


# -- completion, abort, busy back-off ---------------------------------------------------------------------
def test_a_completed_dream_advances_last_dream_at_and_records_the_run(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.script_chat([EMPTY])
    with open_engine(home, clock, server) as rv:
        save_distinct(rv)
        report = rv.dream.run()
        assert report.phase == "completed" and report.llm_calls == 1 and report.tokens > 0
        assert rv.dream.status().last_dream_at == clock.now()
        (run,) = rv.dream.history()
        assert run.run_id == report.run_id and run.phase == "completed" and run.tokens == report.tokens
        assert run.finished_at == clock.now() and run.current_pass is None and run.error is None


def test_abort_while_the_dream_waits_for_a_slow_answer_rolls_the_time_gate_back(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.answer_chat_with(lambda body: EMPTY)
    with open_engine(home, clock, server, dream={"min_hours": 1}) as rv, ThreadPoolExecutor(1) as pool:
        assert rv.dream.abort() is False  # nothing to abort yet
        assert rv.dream.run().phase == "completed"  # nothing saved: no LLM call
        earlier = clock.now()
        save_distinct(rv)
        clock.advance(hours=2)
        server.script_chat([ChatReply(EMPTY, delay=1.0)])
        running = pool.submit(rv.dream.run)
        wait_until(lambda: chats(server) == 1, "the consolidation call")
        assert rv.dream.abort() is True
        assert rv.dream.status().abort_requested is True
        report = running.result(timeout=30)
        assert report.phase == "aborted"
        status = rv.dream.status()
        assert status.last_dream_at == earlier  # not advanced
        assert status.running is False and status.abort_requested is False
        assert status.run is not None and status.run.phase == "aborted"
        # The time gate reopened: a scheduled run now goes (it would be closed had the abort counted).
        assert rv.dream.run(trigger="scheduled").phase == "completed"


def test_abort_while_the_llm_is_busy_makes_no_request(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.answer_chat_with(lambda body: EMPTY)
    with open_engine(home, clock, server, dream={"busy_poll_seconds": 0.05}) as rv, ThreadPoolExecutor(1) as pool:
        assert rv.llm is not None
        save_distinct(rv)
        with rv.llm.foreground():
            running = pool.submit(rv.dream.run)
            wait_until(lambda: _current_pass(rv) == "consolidation", "the consolidation pass")
            time.sleep(0.2)  # several polls
            assert not running.done()
            assert rv.dream.abort() is True
            report = running.result(timeout=30)
        assert report.phase == "aborted"
        assert report.passes["consolidation"].status == "stopped"
        assert report.passes["consolidation"].reason == "aborted"
        assert report.llm_calls == 0 and chats(server) == 0
        assert rv.dream.status().last_dream_at is None
        assert rv.dream.history()[0].phase == "aborted"


def test_the_dream_backs_off_while_a_user_turn_holds_the_llm(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.script_chat([EMPTY])
    with open_engine(home, clock, server, dream={"busy_poll_seconds": 0.05}) as rv, ThreadPoolExecutor(1) as pool:
        assert rv.llm is not None
        save_distinct(rv)
        with rv.llm.foreground():
            assert rv.llm.busy
            running = pool.submit(rv.dream.run)
            wait_until(lambda: _current_pass(rv) == "consolidation", "the consolidation pass")
            time.sleep(0.3)
            assert chats(server) == 0 and not running.done()
            assert rv.dream.status().running is True
        report = running.result(timeout=30)
        assert report.phase == "completed"
        assert report.llm_calls == 1 and chats(server) == 1


def _current_pass(rv: reverie.Reverie) -> str | None:
    run = rv.dream.status().run
    return None if run is None else run.current_pass


# -- across engines and processes ------------------------------------------------------------------------
def test_status_from_another_engine_sees_the_running_pass_then_the_tokens(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.script_chat([ChatReply(EMPTY, delay=0.8)])
    with open_engine(home, clock, server) as rv, ThreadPoolExecutor(1) as pool:
        save_distinct(rv)
        with open_engine(home, clock, server) as watcher:
            running = pool.submit(rv.dream.run)
            wait_until(lambda: _current_pass(watcher) == "consolidation", "the other engine to see the pass")
            status = watcher.dream.status()
            assert status.running is True
            assert status.run is not None and status.run.phase == "running"
            names = [p.name for p in rv.dream.passes]  # the passes before consolidation have run
            assert status.run.progress == f"{names.index('consolidation')}/{len(names)} passes"
            assert status.as_dict()["run"]["current_pass"] == "consolidation"
            # The passes before it already reported.
            assert set(status.run.report) == set(names[: names.index("consolidation")]) >= set(NO_LLM_PASSES)
            report = running.result(timeout=30)
            after = watcher.dream.status()
            assert after.running is False
            assert after.run is not None and after.run.phase == "completed" and after.run.current_pass is None
            assert after.run.tokens == report.tokens > 0
            assert after.last_dream_at == clock.now()


def test_history_keeps_every_run_with_its_pass_reports(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        first = rv.dream.run()
        clock.advance(hours=2)
        second = rv.dream.run(trigger="scheduled")
        rv.dream.set_enabled("default", False)
        rv.dream.run()  # skipped: not recorded
        runs = rv.dream.history()
        assert [r.run_id for r in runs] == [second.run_id, first.run_id]
        assert [r.trigger for r in runs] == ["scheduled", "manual"]
        for run in runs:
            assert set(run.report) == {p.name for p in rv.dream.passes}  # every listed pass reports
            assert set(run.report) >= {*NO_LLM_PASSES, "consolidation", "graph_consolidation", "agent_curation"}
            assert run.report["consolidation"]["status"] == "skipped"
            assert run.report["archive_purge"]["summary"].startswith("archive purge")
        assert [r.run_id for r in rv.dream.history(limit=1)] == [second.run_id]
        assert rv.dream.history("someone-else") == []


@pytest.fixture(params=["sqlite", "postgresql"])
def store_section(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``[store]`` settings of each backend: the home's SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return {}
    return {"url": request.getfixturevalue("pg_url")}


def _dream_in_process(home: str, url: str, store: dict[str, Any], barrier: Any, results: Any) -> None:
    """One of two processes dreaming for the same agent at once."""
    with reverie.open(
        home,
        clock=FakeClock(),
        embedding={"provider": "none"},
        llm={"provider": "openai", "endpoint": url, "model": "m", "max_retries": 0},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        store=store,
    ) as rv:
        barrier.wait(timeout=60)
        report = rv.dream.run()
        results.put((report.phase, report.reason, report.llm_calls))


def _run_workers(target: Callable[..., None], args: tuple[Any, ...], outputs: int) -> list[Any]:
    """Start two spawned processes on ``target(*args, barrier, results)``; the ``outputs`` results they put."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    workers = [ctx.Process(target=target, args=(*args, barrier, results)) for _ in "ab"]
    for worker in workers:
        worker.start()
    outcomes: list[Any] = []
    deadline = time.monotonic() + 120
    try:
        while len(outcomes) < outputs and time.monotonic() < deadline:
            try:
                outcomes.append(results.get(timeout=0.5))
            except queue.Empty:  # a worker that died without a result fails the test now, not at the deadline
                assert all(w.exitcode in (None, 0) for w in workers), [w.exitcode for w in workers]
    finally:
        for worker in workers:
            worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0]
    assert len(outcomes) == outputs, outcomes
    return outcomes


@pytest.mark.slow
def test_two_processes_dreaming_for_one_agent_run_the_passes_once(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, store_section: dict[str, Any]
) -> None:
    server.answer_chat_with(lambda body: ChatReply(EMPTY, delay=1.5))
    with open_engine(home, clock, server, store=store_section) as rv:
        save_distinct(rv)
    outcomes = _run_workers(_dream_in_process, (str(home), server.url, store_section), 2)
    (done, skipped) = sorted(outcomes)
    assert done[0] == "completed" and done[2] == 1
    assert skipped[0] == "skipped" and "holds the lock" in skipped[1] and skipped[2] == 0
    assert chats(server) == 1
    with open_engine(home, clock, server, store=store_section) as rv:
        (run,) = rv.dream.history()
        assert run.phase == "completed"
        assert rv.dream.status().running is False


AGENTS = ("alpha", "beta", "gamma")


def _scheduler_in_process(home: str, url: str, store: dict[str, Any], barrier: Any, results: Any) -> None:
    """One of two dream workers: one scheduled tick over every agent, reporting what each run did."""
    with reverie.open(
        home,
        clock=FakeClock(),
        embedding={"provider": "none"},
        llm={"provider": "openai", "endpoint": url, "model": "m", "max_retries": 0},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        store=store,
    ) as rv:
        barrier.wait(timeout=60)
        reports = rv.dream.tick("scheduled")
        ran = {r.agent_id: sorted(n for n, p in r.passes.items() if p.status != "skipped") for r in reports}
        results.put([(r.agent_id, r.phase, r.reason, ran[r.agent_id], r.llm_calls) for r in reports])


@pytest.mark.slow
def test_two_dream_workers_run_each_pass_once_per_agent(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, store_section: dict[str, Any]
) -> None:
    """The issue's acceptance test: two worker processes tick the same store at once; every agent dreams once
    (the other worker is turned away by the lock, or by the time gate once the dream is done)."""
    server.answer_chat_with(lambda body: ChatReply(EMPTY, delay=0.5))
    with open_engine(home, clock, server, store=store_section) as rv:
        for agent in AGENTS:
            for text in ("Alice moved to Porto in March", "The Lantern service runs on PostgreSQL"):
                rv.memory.save(text, scope=Scope(agent_id=agent))
    reports = [
        r for batch in _run_workers(_scheduler_in_process, (str(home), server.url, store_section), 2) for r in batch
    ]
    assert sorted(r[0] for r in reports) == sorted(AGENTS * 2)  # each worker offered each agent a dream
    for agent in AGENTS:
        ran = [r for r in reports if r[0] == agent and r[1] != "skipped"]
        assert len(ran) == 1, ran
        (_, phase, _, passes, calls) = ran[0]
        assert phase == "completed" and calls == 1 and "consolidation" in passes
        (other,) = [r for r in reports if r[0] == agent and r[1] == "skipped"]
        assert "holds the lock" in other[2] or "hours ago" in other[2], other
    assert chats(server) == len(AGENTS)
    with open_engine(home, clock, server, store=store_section) as rv:
        for agent in AGENTS:
            (run,) = rv.dream.history(agent)
            assert run.phase == "completed"
            assert rv.dream.status(agent).running is False


# -- missing capabilities ---------------------------------------------------------------------------------
def test_without_an_llm_consolidation_is_skipped_and_the_other_passes_run(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        save_distinct(rv, 3)
        report = rv.dream.run()
        assert report.phase == "completed"
        assert report.passes["consolidation"].status == "skipped"
        assert report.passes["consolidation"].reason == "needs llm"
        for name in NO_LLM_PASSES:
            assert report.passes[name].status == "ran", name
        assert report.passes["importance_decay"].counts["examined"] == 3


def test_cold_rewrite_without_an_embedder_is_skipped(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_engine(home, clock, server, dream={"cold_rewrite_enabled": True}) as rv:
        report = rv.dream.run()
        assert report.passes["cold_rewrite"].status == "skipped"
        assert report.passes["cold_rewrite"].reason == "needs embedder"
        assert report.passes["consolidation"].status == "ran"
    with open_engine(home, clock, dream={"cold_rewrite_enabled": True}) as rv:
        assert rv.dream.run().passes["cold_rewrite"].reason == "needs embedder, llm"


# -- the idle trigger -------------------------------------------------------------------------------------
def test_the_idle_trigger_waits_for_quiet_and_dreams_once_per_activity(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, dream={"idle_trigger": True, "idle_window_seconds": 300}) as rv:
        assert rv.dream.idle_tick() == []  # nobody was ever active
        rv.memory.save("a fact from a client")
        assert rv.dream.idle_tick() == []
        clock.advance(seconds=299)
        assert rv.dream.idle_tick() == []
        assert rv.dream.history() == []
        clock.advance(seconds=1)
        (report,) = rv.dream.idle_tick()
        assert report.trigger == "idle" and report.phase == "completed"
        clock.advance(hours=3)
        assert rv.dream.idle_tick() == []  # nothing new since that dream
        rv.memory.search("fact")
        clock.advance(seconds=300)
        (again,) = rv.dream.idle_tick()
        assert again.phase == "completed"
        assert [r.trigger for r in rv.dream.history()] == ["idle", "idle"]


def test_activity_during_an_idle_dream_cancels_it_at_the_next_checkpoint(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.answer_chat_with(lambda body: ChatReply(EMPTY, delay=1.0))
    settings = {"idle_trigger": True, "idle_window_seconds": 300, "consolidation_max_entries_per_call": 2}
    with (
        open_engine(home, clock, server, dream=settings) as rv,
        open_engine(home, clock) as client,  # another engine on the same home: a client coming back
        ThreadPoolExecutor(1) as pool,
    ):
        save_distinct(rv, 4)  # two consolidation calls of two entries each
        clock.advance(seconds=301)
        running = pool.submit(rv.dream.idle_tick)
        wait_until(lambda: chats(server) == 1, "the first consolidation call")
        clock.advance(seconds=1)
        client.memory.save("the user is back")
        (report,) = running.result(timeout=30)
        assert report.trigger == "idle" and report.phase == "cancelled"
        assert report.passes["consolidation"].status == "stopped"
        assert report.passes["consolidation"].reason == "cancelled"
        assert chats(server) == 1  # the second call never went out
        assert rv.dream.status().last_dream_at is None
        assert rv.dream.history()[0].phase == "cancelled"


def test_activity_during_the_last_llm_call_still_cancels_the_run(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    """Activity that arrives during the only (last) LLM call: no checkpoint is left in the passes, the run
    must still end cancelled so the next quiet spell dreams again."""
    server.script_chat([ChatReply(EMPTY, delay=0.8)])
    with open_engine(home, clock, server, dream={"idle_trigger": True}) as rv, ThreadPoolExecutor(1) as pool:
        save_distinct(rv)
        clock.advance(seconds=301)
        running = pool.submit(rv.dream.idle_tick)
        wait_until(lambda: chats(server) == 1, "the consolidation call")
        clock.advance(seconds=1)
        rv.memory.search("anything")
        (report,) = running.result(timeout=30)
        assert report.phase == "cancelled"
        assert report.passes["consolidation"].status == "ran"
        assert rv.dream.status().last_dream_at is None


# -- the no-LLM passes through a cycle --------------------------------------------------------------------
class BrokenLog:
    """A registered log whose retention raises."""

    name = "broken"

    def retain(self, policy: RetentionPolicy, *, now: datetime) -> RetentionReport:
        raise RuntimeError("disk on fire")


def test_log_retention_trims_a_registered_log_and_survives_a_failing_one(
    home: Path, clock: FakeClock, tmp_path: Path
) -> None:
    tool_calls = JsonlFile(tmp_path / "telemetry" / "tool-call.jsonl", "tool-call")
    for n in range(20):
        tool_calls.append({"n": n})
    with open_engine(home, clock, dream={"log_retention_max_lines_per_file": 5}) as rv:
        rv.register_log(BrokenLog())
        rv.register_log(tool_calls)
        report = rv.dream.run()
    assert report.phase == "completed"
    retention = report.passes["log_retention"]
    assert retention.status == "ran"
    # the dream, conversation, executions and tool-calls logs, the broken one, the registered tool-call log
    assert retention.counts["logs"] == 6
    assert retention.counts["errors"] == 1
    assert retention.counts["lines_trimmed"] == 15
    assert [r["n"] for r in tool_calls.read()] == [15, 16, 17, 18, 19]
    for name in ("archive_purge", "importance_decay", "forget"):
        assert report.passes[name].status == "ran"


def test_log_retention_with_no_line_cap_keeps_everything(home: Path, clock: FakeClock, tmp_path: Path) -> None:
    log = JsonlFile(tmp_path / "wisp.jsonl", "wisp-executions")
    for n in range(7):
        log.append({"n": n})
    with open_engine(home, clock, dream={"log_retention_max_lines_per_file": 0}) as rv:
        rv.register_log(log)
        assert rv.dream.run().passes["log_retention"].counts["lines_trimmed"] == 0
    assert len(list(log.read())) == 7


def test_archive_purge_purges_old_archives_but_keeps_high_value_ones(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        plain = rv.memory.save("The user once tried a standing desk").id
        for _ in range(6):
            valued = rv.memory.save("The user drinks oat milk in coffee")
        assert valued.entry.reinforcement_count == 6
        rv.memory.archive(plain)
        rv.memory.archive(valued.id)
        clock.advance(days=89)
        early = rv.dream.run().passes["archive_purge"]
        assert early.counts == {"purged": 0, "kept": 0}
        clock.advance(days=2)
        purge = rv.dream.run().passes["archive_purge"]
        assert purge.status == "ran"
        assert purge.counts == {"purged": 1, "kept": 1}
        assert purge.summary == "archive purge — purged 1, kept 1 above the floor"
        with pytest.raises(NotFound):
            rv.memory.get(plain)
        assert rv.memory.get(valued.id).archived
        assert [r.fact_id for r in rv.store.facts.purge_log()] == [plain]


def test_archive_purge_removes_kv_keys_deleted_longer_than_the_archive_retention(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        kv = rv.store.kv
        for agent in ("default", "other"):
            kv.put(agent, "note:old", "x", at=clock.now())
            kv.put(agent, "note:live", "y", at=clock.now())
        kv.delete("default", "note:old", at=clock.now())
        kv.delete("other", "note:old", at=clock.now())
        clock.advance(days=89)
        rv.dream.run()
        assert rv.store.count_rows("kv_items") == 4  # deleted 89 days ago: kept (hidden) within the retention
        assert kv.put("default", "note:old", "again", at=clock.now(), expected_version=0).version == 3
        kv.delete("default", "note:old", at=clock.now())
        clock.advance(days=2)
        purge = rv.dream.run().passes["archive_purge"]
        assert purge.counts == {"purged": 0, "kept": 0}  # the agent's report never counts other agents' keys
        assert rv.store.count_rows("kv_items") == 3  # other's, 91 days deleted, is gone; default's recent one stays
        assert kv.put("other", "note:old", "new", at=clock.now()).version == 1  # purged: a fresh key
        assert [i.key for i in kv.list("default")] == ["note:live"]
    with open_engine(home, clock, memory={"archive_retention_days": 0}) as rv:
        clock.advance(days=400)
        assert rv.dream.run().passes["archive_purge"].status == "skipped"
        assert rv.store.count_rows("kv_items") == 4  # a retention of 0 keeps deleted keys forever


def test_importance_decays_through_the_dream_but_never_for_pinned(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        plain = rv.memory.save("Lantern uses PostgreSQL 16", importance=0.9).id
        pinned = rv.memory.save("The user's name is Maya", importance=0.9, pinned=True).id
        clock.advance(days=120)
        decay = rv.dream.run().passes["importance_decay"]
        assert decay.status == "ran" and decay.counts["decayed"] == 1
        # 90 days past the 30-day grace, half-life 45: 0.9 * 0.5 ** 2.
        assert rv.memory.get(plain).importance == pytest.approx(0.225, abs=1e-6)
        assert rv.memory.get(pinned).importance == 0.9
        clock.advance(hours=2)
        rv.dream.run()  # calendar-time invariant: the next cycle applies only the new two hours
        assert rv.memory.get(plain).importance == pytest.approx(0.225 * 0.5 ** (2 / 24 / 45), abs=1e-6)
