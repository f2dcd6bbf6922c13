"""``reverie keys ...``, ``reverie usage`` and ``reverie cost`` through Typer's runner, against a real store in a
temp directory. Usage comes from real calls to the loopback scripted LLM, made through the library on a fake
clock so the dates are known."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.llm.base import Message
from reverie.llm.usage import agent_context
from reverie.testing.openai_server import ScriptedOpenAIServer

runner = CliRunner()


def run(home: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout


def run_json(home: Path, *args: str) -> Any:
    return json.loads(run(home, *args, "--json"))


# -- keys -------------------------------------------------------------------------------------------------
def test_create_prints_the_secret_once_with_a_warning(home: Path) -> None:
    result = runner.invoke(app, ["--home", str(home), "keys", "create", "support bot", "--agent", "bot"])
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip().splitlines()[-1]
    assert secret.startswith("rv_")
    assert "only time the secret is shown" in result.stderr
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        key = rv.keys.authenticate(secret)
        assert key is not None and key.agent_id == "bot" and key.scopes == ("memory_read", "memory_write")
    listed = run(home, "keys", "list")
    assert "support bot" in listed and secret not in listed


def test_create_admin_and_scoped_keys_as_json(home: Path) -> None:
    admin = run_json(home, "keys", "create", "ops", "--admin")
    assert admin["key"]["agent_id"] is None and admin["key"]["scopes"] == ["admin"] and admin["key"]["admin"]
    reader = run_json(home, "keys", "create", "reader", "-a", "bot", "--scope", "memory_read")
    assert reader["key"]["scopes"] == ["memory_read"] and reader["secret"].startswith("rv_")
    listed = run_json(home, "keys", "list")
    assert [k["name"] for k in listed] == ["ops", "reader"]
    assert all("key_hash" not in k and "secret" not in k for k in listed)


@pytest.mark.parametrize(
    "args",
    [
        ("keys", "create", "ci"),  # neither --agent nor --admin
        ("keys", "create", "ci", "--agent", "bot", "--admin"),
        ("keys", "create", "ci", "--agent", "bot", "--scope", "root"),
        ("keys", "create", "ci", "--agent", "bot", "--scope", "admin"),
    ],
)
def test_create_refuses_bad_arguments_with_exit_2(home: Path, args: tuple[str, ...]) -> None:
    run(home, *args, code=2)
    assert run_json(home, "keys", "list") == []


def test_revoke_refuses_the_key_from_then_on(home: Path) -> None:
    created = run_json(home, "keys", "create", "ci", "--agent", "bot")
    key_id = created["key"]["key_id"]
    assert key_id in run(home, "keys", "revoke", key_id)
    listed = run_json(home, "keys", "list")
    assert listed[0]["revoked_at"] is not None
    assert "revoked" in run(home, "keys", "list")
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        assert rv.keys.authenticate(created["secret"]) is None
    run(home, "keys", "revoke", "ffffffffffff", code=2)


def test_list_says_when_there_are_no_keys(home: Path) -> None:
    assert "no API keys" in run(home, "keys", "list")


# -- usage and cost --------------------------------------------------------------------------------------
@pytest.fixture
def used(home: Path, server: ScriptedOpenAIServer) -> Path:
    """A home whose usage log holds calls of agents a and b in January 2026 and one of a in February."""
    clock = FakeClock(datetime(2026, 1, 10, 12, tzinfo=UTC))
    llm = {
        "provider": "openai",
        "endpoint": server.url,
        "model": "m",
        "max_retries": 0,
        "price_input_per_mtok": 1_000_000.0,
        "price_output_per_mtok": 1_000_000.0,
    }
    server.script_chat(["one", "two words", "three more words", "four"])
    with reverie.open(home, clock=clock, embedding={"provider": "none"}, llm=llm) as rv:
        assert rv.llm is not None
        with agent_context("a"):
            rv.llm.complete([Message.user("hello")])
            clock.set(datetime(2026, 1, 31, 23, 59, tzinfo=UTC))
            rv.llm.complete([Message.user("hello again")])
        with agent_context("b"):
            rv.llm.complete([Message.user("hi")])
        clock.set(datetime(2026, 2, 1, 0, 0, tzinfo=UTC))
        with agent_context("a"):
            rv.llm.complete([Message.user("february")])
    return home


def test_usage_reports_calls_tokens_and_cost_per_agent(used: Path) -> None:
    report = run_json(used, "usage")
    by_agent = {s["agent_id"]: s for s in report["summaries"]}
    assert by_agent["a"]["calls"] == 3 and by_agent["b"]["calls"] == 1
    assert by_agent["a"]["provider"] == "openai" and by_agent["a"]["model"] == "m"
    assert by_agent["a"]["completion_tokens"] == 1 + 2 + 1  # "one", "two words", "four"
    assert report["total"]["calls"] == 4
    january = run_json(used, "usage", "--from", "2026-01-01", "--to", "2026-01-31", "--agent", "a")
    assert [(s["agent_id"], s["calls"]) for s in january["summaries"]] == [("a", 2)]
    text = run(used, "usage")
    assert "openai/m" in text and "total" in text


def test_cost_writes_csv_for_the_period(used: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run(used, "cost", "--from", "2026-01-01", "--to", "2026-01-31", "--csv"))))
    assert [(r["agent_id"], r["calls"]) for r in rows] == [("a", "2"), ("b", "1")]
    assert float(rows[0]["cost"]) == pytest.approx(int(rows[0]["prompt_tokens"]) + int(rows[0]["completion_tokens"]))
    calls = list(
        csv.DictReader(io.StringIO(run(used, "cost", "--from", "2026-02-01", "--to", "2026-02-28", "--calls")))
    )
    assert [(c["agent_id"], c["at"][:10], c["ok"]) for c in calls] == [("a", "2026-02-01", "true")]
    table = run(used, "cost", "--from", "2026-01-01", "--to", "2026-01-01")
    assert "no LLM calls" in table


def test_cost_needs_its_dates_and_refuses_bad_ones(used: Path) -> None:
    run(used, "cost", "--csv", code=2)
    run(used, "cost", "--from", "2026-13-01", "--to", "2026-01-31", code=2)
    run(used, "cost", "--from", "2026-02-01", "--to", "2026-01-01", code=2)
    run(used, "usage", "--from", "yesterday", code=2)
