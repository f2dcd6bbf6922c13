"""The execution log and the tool-call log through every face: the library (validation, the window, agent
isolation), the HTTP API on a real uvicorn server (scopes, 4xx never 500, nothing written on a refusal), the
CLI, the agent tools (every served call is logged) and the dream's log retention (both logs are registered and
kept in the store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.errors import ValidationError
from reverie.storage.base import LogRow
from reverie.tools import ToolContext, ToolRegistry

from ._api import client, make_keys, memory, serving

runner = CliRunner()
STEPS = [{"name": "search", "ok": True}, {"name": "pay", "ok": False, "error": "card declined"}]


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    with reverie.open(
        tmp_path / "home", clock=clock, embedding={"provider": "none"}, dream={"log_retention_max_lines_per_file": 3}
    ) as engine:
        yield engine


def test_records_are_validated_windowed_and_per_agent(rv: reverie.Reverie, clock: FakeClock) -> None:
    bad = [
        ({"description": " "}, "description"),
        ({"success": 1}, "success"),
        ({"steps": [{"name": "x"}]}, "steps"),
        ({"steps": [{"name": "x", "ok": True, "why": 1}]}, "steps"),
        ({"steps": [{"name": "x", "ok": "yes"}]}, "steps[0].ok"),
        ({"steps": [{"name": "s", "ok": True}] * 201}, "steps"),
        ({"steps": "pay"}, "steps"),
        ({"skill": "Not A Skill"}, "skill"),
        ({"error": "x" * 4001}, "error"),
        ({"agent_id": "@user/u"}, "agent_id"),
    ]
    for change, field in bad:
        args = {"agent_id": "a", "description": "Book a flight", "success": False, **change}
        with pytest.raises(ValidationError) as caught:
            rv.executions.record(args.pop("agent_id"), args.pop("description"), args.pop("success"), **args)
        assert caught.value.field == field, change
    assert rv.store.logs.count("executions") == 0  # a refused call writes nothing

    rv.executions.record("a", "Old run", True)
    clock.advance(days=15)
    rv.executions.record("a", "Book a flight", False, steps=STEPS, skill="travel/book", session_id="s1")
    rv.executions.record("b", "Another agent's run", True)
    (found,) = rv.executions.list("a")  # 14 days by default: the old run is outside
    assert (found.description, found.steps[1].error, found.skill, found.session_id) == (
        "Book a flight",
        "card declined",
        "travel/book",
        "s1",
    )
    assert [r.description for r in rv.executions.list("a", days=30)] == ["Book a flight", "Old run"]
    hand_made = [{"at": "not a time", "agent": "a"}, {"agent": "a", "at": "2026-01-16T09:00:00+00:00"}]
    rv.store.logs.append("executions", [LogRow("a", None, clock.now(), r) for r in hand_made])
    assert rv.store.logs.count("executions") == 5  # a record this module did not write is skipped, never an error
    assert len(rv.executions.list("a", days=30)) == 2

    for kwargs, field in (
        ({"arguments": {"k": "x" * 20_000}}, "arguments"),
        ({"arguments": ["not", "an", "object"]}, "arguments"),
        ({"duration_ms": -1}, "duration_ms"),
        ({"session_id": ""}, "session_id"),
    ):
        with pytest.raises(ValidationError) as caught:
            rv.tool_calls.record("a", "search", True, **kwargs)  # type: ignore[arg-type]
        assert caught.value.field == field
    rv.tool_calls.record("a", "search", False, error="missing query", arguments={"limit": 3}, duration_ms=12)
    rv.tool_calls.record("a", "fetch", True)
    assert [c.tool for c in rv.tool_calls.list("a", tool="search")] == ["search"]
    assert rv.tool_calls.list("b") == []


def test_api_scopes_and_bad_input(rv: reverie.Reverie) -> None:
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.a) as a, client(origin, keys.a_read) as reader:
        body = {"description": "Book a flight", "success": False, "steps": STEPS, "skill": "travel/book"}
        created = a.post(memory("a", "/executions"), json=body)
        assert created.status_code == 201, created.text
        assert created.json()["steps"][1] == {"name": "pay", "ok": False, "error": "card declined"}
        for bad in (
            {**body, "success": "no"},
            {**body, "skill": "Bad Name"},
            {**body, "steps": [{"name": "x"}]},
            {**body, "extra": 1},
            {"success": True},
        ):
            assert a.post(memory("a", "/executions"), json=bad).status_code == 422, bad
        assert reader.post(memory("a", "/executions"), json=body).status_code == 403  # writes need a write scope
        assert a.post(memory("b", "/executions"), json=body).status_code in (403, 404)  # another agent's
        listed = reader.get(memory("a", "/executions"), params={"days": 1})
        assert listed.status_code == 200 and len(listed.json()) == 1
        assert reader.get(memory("a", "/executions"), params={"days": 0}).status_code == 422

        call = {"tool": "search", "ok": False, "error": "missing query", "arguments": {"q": 1}, "duration_ms": 5}
        assert a.post(memory("a", "/tool-calls"), json=call).status_code == 201
        for bad in ({**call, "arguments": {"k": "x" * 20_000}}, {**call, "ok": 0}, {**call, "duration_ms": -1}):
            assert a.post(memory("a", "/tool-calls"), json=bad).status_code == 422
        served = a.post(memory("a", "/tools/search_memory"), json={"arguments": {"query": "flight"}})
        assert served.status_code == 200  # the agent tools served here are logged too
        calls = reader.get(memory("a", "/tool-calls")).json()
        assert [c["tool"] for c in calls] == ["search_memory", "search"]
        # The engine logs its own calls' argument shapes, never their values (no second copy of what they carry).
        assert calls[0]["ok"] is True and calls[0]["arguments"] == {"query": ""}
        assert reader.get(memory("a", "/tool-calls"), params={"tool": "search"}).json()[0]["error"] == "missing query"
    assert [r.description for r in rv.executions.list("a")] == ["Book a flight"]  # the refusals wrote nothing


def test_cli_tool_registry_and_retention(rv: reverie.Reverie, clock: FakeClock) -> None:
    home = rv.settings.home
    registry = ToolRegistry(rv)
    assert registry.call("search_memory", {"query": "x"}, ToolContext(agent_id="a", session_id="s1")).is_error is False
    refused = registry.call("search_memory", {"limit": "many"}, ToolContext(agent_id="a"))
    assert refused.is_error
    registry.call("no_such_tool", {}, ToolContext(agent_id="a"))  # unknown tools are not logged
    logged = rv.tool_calls.list("a")
    assert [(c.tool, c.ok, c.session_id) for c in logged] == [
        ("search_memory", False, None),
        ("search_memory", True, "s1"),
    ]
    assert logged[0].error is not None and logged[0].duration_ms is not None
    assert logged[0].arguments == {"limit": ""} and logged[1].arguments == {"query": ""}

    recorded = runner.invoke(
        app,
        ["--home", str(home), "executions", "record", "Book a flight", "--failure", "--step", "search=ok",
         "--step", "pay=failed:card declined", "--skill", "travel/book", "--agent", "a", "--json"],
    )  # fmt: skip
    assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.output)["steps"][1] == {"name": "pay", "ok": False, "error": "card declined"}
    bad = runner.invoke(app, ["--home", str(home), "executions", "record", "x", "--success", "--step", "pay"])
    assert bad.exit_code == 2
    logged_cli = runner.invoke(
        app, ["--home", str(home), "tool-calls", "record", "fetch", "--failed", "-e", "timeout", "--agent", "a"]
    )
    assert logged_cli.exit_code == 0, logged_cli.output
    listing = runner.invoke(app, ["--home", str(home), "tool-calls", "list", "--agent", "a"])
    assert "fetch" in listing.output and "timeout" in listing.output
    assert "Book a flight" in runner.invoke(app, ["--home", str(home), "executions", "list", "--agent", "a"]).output

    for _ in range(4):
        rv.executions.record("a", "Book a flight", True)
    assert {log.name for log in rv.logs()} >= {"executions", "tool-calls"}
    report = rv.dream.run("a")
    assert report.passes["log_retention"].status == "ran"
    assert rv.store.logs.count("executions") == 3 and rv.store.logs.count("tool-calls") == 3
    assert not (home / "logs" / "executions.jsonl").exists() and not (home / "logs" / "tool-calls.jsonl").exists()
