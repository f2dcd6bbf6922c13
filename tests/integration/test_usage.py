"""LLM usage tracking (seed 004): every call of a real loopback LLM lands in the store's usage log,
attributed to the agent it was made for, and ``rv.usage`` / the CSV reports read it back."""

from __future__ import annotations

import csv
import io
import logging
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.errors import LLMError, ValidationError
from reverie.llm.base import Message
from reverie.llm.usage import agent_context, current_agent
from reverie.testing.openai_server import ChatReply, ScriptedOpenAIServer
from reverie.usage.report import ROW_FIELDS, SUMMARY_FIELDS, calls_csv, summary_csv, total

from ._dream import EMPTY

# Prices chosen so the cost of a call is plain arithmetic: 2 per prompt token, 4 per completion token.
PRICES = {"price_input_per_mtok": 2_000_000.0, "price_output_per_mtok": 4_000_000.0}


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> Iterator[reverie.Reverie]:
    with reverie.open(
        tmp_path / "home",
        clock=clock,
        embedding={"provider": "none"},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        llm={"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0, **PRICES},
    ) as engine:
        yield engine


def ask(rv: reverie.Reverie, text: str, *, purpose: str = "answer") -> None:
    assert rv.llm is not None
    rv.llm.complete([Message.user(text)], purpose=purpose)


def test_calls_are_summarised_per_agent_with_tokens_and_cost(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    server.script_chat(["one two three", "four", "five six", "seven"])
    with agent_context("a"):
        ask(rv, "hello there")
        ask(rv, "what is the time")
    with agent_context("b"):
        ask(rv, "hi")
    ask(rv, "outside any agent")
    assert rv.llm is not None
    records = rv.llm.ledger.records()
    summaries = {s.agent_id: s for s in rv.usage()}
    assert set(summaries) == {"a", "b", "default"}
    a = summaries["a"]
    assert (a.provider, a.model, a.calls, a.failed) == ("openai", "m", 2, 0)
    assert a.prompt_tokens == sum(r.prompt_tokens or 0 for r in records[:2]) > 0
    assert a.completion_tokens == 3 + 1
    assert a.cost == pytest.approx(2 * a.prompt_tokens + 4 * a.completion_tokens)
    assert summaries["b"].calls == 1 and summaries["b"].completion_tokens == 2
    assert total(rv.usage()).cost == pytest.approx(sum(r.cost for r in records))
    assert [s.agent_id for s in rv.usage(agent_id="b")] == ["b"]
    assert [r.purpose for r in rv.usage_calls(agent_id="a")] == ["answer", "answer"]


def test_a_failed_call_is_recorded_as_failed(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    server.script_chat([ChatReply("nope", status=400)])
    with agent_context("a"), pytest.raises(LLMError):
        ask(rv, "hello")
    (summary,) = rv.usage()
    assert (summary.agent_id, summary.calls, summary.failed) == ("a", 1, 1)
    (row,) = rv.usage_calls()
    assert row.ok is False and row.prompt_tokens == 0 and row.cost == 0.0


def test_a_period_filters_calls_by_when_they_ended(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    server.script_chat(["first", "second", "third"])
    start = clock.now()
    ask(rv, "day one")
    clock.advance(days=1)
    ask(rv, "day two")
    clock.advance(days=1)
    ask(rv, "day three")
    day = timedelta(days=1)
    assert [r.at for r in rv.usage_calls(since=start + day)] == [start + day, start + 2 * day]
    assert [r.at for r in rv.usage_calls(until=start + day)] == [start]  # until is exclusive
    (middle,) = rv.usage(since=start + day, until=start + 2 * day)
    assert middle.calls == 1 and middle.completion_tokens == 1
    assert rv.usage(since=start + 3 * day) == []


def test_a_dream_run_s_calls_are_attributed_to_its_agent(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    server.script_chat([EMPTY])
    scope = Scope(agent_id="dreamer")
    rv.memory.save("Alice moved to Porto in March", scope=scope)
    rv.memory.save("The Lantern service runs on PostgreSQL", scope=scope)
    report = rv.dream.run("dreamer")
    assert report.phase == "completed" and report.llm_calls == 1
    (summary,) = rv.usage()
    assert summary.agent_id == "dreamer" and summary.calls == 1
    assert summary.prompt_tokens + summary.completion_tokens == report.tokens
    assert summary.cost == pytest.approx(report.cost)
    assert current_agent() == "default"  # the run's context ended with it


def test_csv_reports_parse(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    server.script_chat(["a b", "c"])
    with agent_context("agent, with a comma"):
        ask(rv, 'a "quoted" question')
    with agent_context("b"):
        ask(rv, "plain")
    calls = list(csv.DictReader(io.StringIO(calls_csv(rv.usage_calls()))))
    assert [c["agent_id"] for c in calls] == ["agent, with a comma", "b"]
    assert tuple(calls[0]) == ROW_FIELDS and calls[0]["ok"] == "true" and calls[0]["at"].endswith("Z")
    summaries = list(csv.DictReader(io.StringIO(summary_csv(rv.usage()))))
    assert tuple(summaries[0]) == SUMMARY_FIELDS
    assert sum(float(s["cost"]) for s in summaries) == pytest.approx(total(rv.usage()).cost)
    assert [int(s["calls"]) for s in summaries] == [1, 1]
    assert summary_csv([]) == ",".join(SUMMARY_FIELDS) + "\n"


def test_a_store_that_refuses_the_row_does_not_fail_the_call(
    tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A real refusal: another connection holds the write lock longer than this engine will wait.
    with reverie.open(
        tmp_path / "busy",
        clock=clock,
        embedding={"provider": "none"},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        store={"busy_timeout_ms": 50, "lock_wait_seconds": 0.3},
        llm={"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0, **PRICES},
    ) as busy:
        holder = sqlite3.connect(tmp_path / "busy" / "reverie.db", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            server.script_chat(["fine"])
            with caplog.at_level(logging.WARNING, logger="reverie"):
                ask(busy, "hello")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert "could not record LLM usage" in caplog.text
        assert busy.llm is not None and busy.llm.ledger.totals().calls == 1
        assert busy.usage() == []  # the row was refused, and nothing else was written


def test_usage_validates_its_arguments(rv: reverie.Reverie, clock: FakeClock) -> None:
    now = clock.now()
    with pytest.raises(ValidationError) as raised:
        rv.usage(since=now.replace(tzinfo=None))
    assert raised.value.field == "since"
    with pytest.raises(ValidationError) as raised:
        rv.usage(since=now, until=now - timedelta(seconds=1))
    assert raised.value.field == "since"
    with pytest.raises(ValidationError) as raised:
        rv.usage_calls(agent_id="")
    assert raised.value.field == "agent_id"
    with pytest.raises(ValidationError):
        rv.usage(until="2026-01-01")  # type: ignore[arg-type]


def test_agent_contexts_nest_and_stay_in_their_thread() -> None:
    seen: list[str] = []
    with agent_context("outer"):
        with agent_context("inner"):
            seen.append(current_agent())
            worker = threading.Thread(target=lambda: seen.append(current_agent()))
            worker.start()
            worker.join()
        seen.append(current_agent())
    seen.append(current_agent())
    assert seen == ["inner", "default", "outer", "default"]
    with pytest.raises(ValidationError), agent_context(""):
        pass


def test_without_an_llm_nothing_is_recorded(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path / "plain", clock=clock, embedding={"provider": "none"}) as plain:
        assert plain.llm is None
        assert plain.usage() == [] and plain.usage_calls() == []
