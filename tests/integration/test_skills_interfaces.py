"""Skills and feedback through every interface: the agent tools (search_skills, get_skill, save_skill,
record_feedback) through the registry and the MCP server, the CLI (``reverie skills …``, ``reverie feedback …``)
through Typer's runner, and the HTTP API on a real uvicorn server (scoping, another agent's skill is a 404,
bad input a 422 that writes nothing)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.mcp.server import Caller, ToolServer
from reverie.tools import HEADLINES, NOT_EVIDENCE, ToolContext, ToolRegistry, ToolResult

from ._api import Keys, client, make_keys, memory, serving

EMAIL = {"summary": "Send an email through MCP", "content": "Confirm the recipient address, then send the mail."}


def rows(rv: reverie.Reverie) -> dict[str, list[dict[str, Any]]]:
    return {t: list(rv.store.export_rows(t)) for t in ("skills", "skill_versions", "skill_usage", "feedback")}


# -- the agent tools -----------------------------------------------------------------------------------------
def ok(result: ToolResult) -> ToolResult:
    assert not result.is_error, result.text
    json.dumps(result.data)
    return result


def refused(result: ToolResult, kind: str) -> ToolResult:
    assert result.is_error and result.data["error"]["kind"] == kind, result.data
    return result


def test_tools_save_search_get_and_record_feedback(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    me = ToolContext(agent_id="coder", user_id="u1", session_id="s1")
    saved = ok(tools.call("save_skill", {"name": "mcp/email", **EMAIL, "see_also": ["mcp/calendar"]}, me))
    assert saved.data["outcome"] == "created" and saved.text == "Created skill mcp/email (version 1)."
    again = ok(tools.call("save_skill", {"name": "mcp/email", **EMAIL}, me))
    assert again.data["outcome"] == "unchanged"
    found = ok(tools.call("search_skills", {"query": "send mail to the recipient"}, me))
    assert [h["name"] for h in found.data["hits"]] == ["mcp/email"] and "get_skill" in found.text
    got = ok(tools.call("get_skill", {"name": "mcp/email"}, me))
    assert got.data["content"] == EMAIL["content"] and "See also: mcp/calendar" in got.text
    assert [(u.session_id, u.name) for u in rv.skills.usage("coder")] == [("s1", "mcp/email")]  # a use, logged
    ok(tools.call("get_skill", {"name": "mcp/email"}, ToolContext(agent_id="coder")))  # no session: no use
    assert len(rv.skills.usage("coder")) == 1
    feedback = ok(
        tools.call("record_feedback", {"kind": "session_summary", "rating": "fair", "skill_names": ["mcp/email"]}, me)
    )
    assert feedback.data["session_id"] == "s1" and "fair" in feedback.text  # the caller's own session
    other = ok(tools.call("record_feedback", {"kind": "correction", "session_id": "s0", "comment": "no"}, me))
    assert other.data["session_id"] == "s0"
    assert [r.skill.name for r in rv.skills.at_risk("coder")] == ["mcp/email"]


def test_an_empty_skill_search_points_at_the_recall_family_never_at_itself(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    empty = ok(tools.call("search_skills", {"query": "zebra"}, ToolContext()))
    assert NOT_EVIDENCE in empty.text and empty.data["hits"] == []
    for sibling in ("search_memory", "search_working_memory"):
        assert sibling in empty.text and HEADLINES[sibling] in empty.text
    assert not re.search(r"\bsearch_skills\b", empty.text)


def test_tools_refusals_and_other_agents_write_nothing(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    me, them = ToolContext(agent_id="coder", session_id="s1"), ToolContext(agent_id="other", session_id="s1")
    ok(tools.call("save_skill", {"name": "mcp/email", **EMAIL}, me))
    entry = rv.memory.save("Agent other's note", scope=reverie.Scope("other")).id
    before = rows(rv)
    refused(tools.call("get_skill", {"name": "mcp/email"}, them), "not_found")
    assert ok(tools.call("search_skills", {"query": "email"}, them)).data["hits"] == []
    refused(tools.call("get_skill", {"name": "Bad Name"}, me), "validation")
    refused(tools.call("save_skill", {"name": "mcp/email", "summary": "x"}, me), "validation")
    refused(tools.call("save_skill", {"name": "a//b", **EMAIL}, me), "validation")
    refused(tools.call("save_skill", {"name": "a", "summary": "x\ny", "content": "c"}, me), "validation")
    refused(tools.call("record_feedback", {"kind": "praise", "session_id": "s1"}, me), "validation")
    refused(tools.call("record_feedback", {"kind": "session_summary"}, me), "validation")
    refused(tools.call("record_feedback", {"kind": "wrong"}, ToolContext(agent_id="coder")), "validation")
    refused(tools.call("record_feedback", {"kind": "wrong", "entry_ids": [entry]}, me), "not_found")
    refused(tools.call("record_feedback", {"kind": "wrong", "skill_names": ["mcp/email"]}, them), "not_found")
    assert rows(rv) == before
    rv.skills.archive("coder", "mcp/email")
    refused(tools.call("get_skill", {"name": "mcp/email"}, me), "not_found")


def test_the_mcp_server_serves_the_skill_tools_by_scope(rv: reverie.Reverie) -> None:
    server = ToolServer(ToolRegistry(rv), rv.keys, lambda _ctx: Caller("coder"))
    names = {s.name for s in server.specs(Caller("coder"))}
    assert {"search_skills", "get_skill", "save_skill", "record_feedback"} <= names
    stored = server.call(Caller("coder"), "save_skill", {"name": "weather", "summary": "Forecast", "content": "Ask."})
    assert not stored.is_error and stored.structured_content is not None
    assert stored.structured_content["version"] == 1
    _, reader_secret = rv.keys.create("reader", agent_id="coder", scopes=["memory_read"])
    reader = {s.name for s in server.specs(Caller("coder", rv.keys.authenticate(reader_secret)))}
    assert {"search_skills", "get_skill"} <= reader and not {"save_skill", "record_feedback"} & reader


# -- the CLI ---------------------------------------------------------------------------------------------------
runner = CliRunner()


def cli(home: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = runner.invoke(app, ["--home", str(home), *args], input=stdin)
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout if code == 0 else " ".join(result.stderr.split())


def cli_json(home: Path, *args: str) -> Any:
    return json.loads(cli(home, *args, "--json"))


def test_cli_skills_save_list_show_search_history_archive_restore(home: Path) -> None:
    saved = cli_json(
        home, "skills", "save", "mcp/email", EMAIL["content"], "-s", EMAIL["summary"], "--see-also", "mcp/x"
    )
    assert saved["outcome"] == "created" and saved["skill"]["see_also"] == ["mcp/x"] and "vector" not in saved["skill"]
    cli(home, "skills", "save", "mcp/calendar", "-", "-s", "Schedule a meeting", stdin="Find a slot, then book it.\n")
    cli(home, "skills", "save", "mcp/email", "Draft, confirm the address, send.", "-s", EMAIL["summary"])
    assert [s["name"] for s in cli_json(home, "skills", "list", "-p", "mcp")] == ["mcp/calendar", "mcp/email"]
    assert "mcp/calendar" in cli(home, "skills", "list")
    assert cli_json(home, "skills", "show", "mcp/calendar")["content"] == "Find a slot, then book it."
    assert cli_json(home, "skills", "show", "mcp/email", "--version", "1")["content"] == EMAIL["content"]
    assert "Draft, confirm" in cli(home, "skills", "show", "mcp/email")
    hits = cli_json(home, "skills", "search", "book a meeting slot")["hits"]
    assert hits[0]["skill"]["name"] == "mcp/calendar"
    assert [v["change"] for v in cli_json(home, "skills", "history", "mcp/email")] == ["created", "edited"]
    assert cli_json(home, "skills", "archive", "mcp/email")["archived"] is True
    assert [s["name"] for s in cli_json(home, "skills", "list")] == ["mcp/calendar"]
    assert cli_json(home, "skills", "list", "--archived")[1]["archived"] is True
    assert cli_json(home, "skills", "restore", "mcp/email", "--version", "1")["content"] == EMAIL["content"]
    assert "restored" in cli(home, "skills", "restore", "mcp/email")


def test_cli_usage_and_feedback(home: Path) -> None:
    cli(home, "skills", "save", "mcp/email", EMAIL["content"], "-s", EMAIL["summary"])
    cli(home, "skills", "save", "mcp/calendar", "Find a slot.", "-s", "Schedule a meeting")
    recorded = cli_json(home, "skills", "usage", "--session", "s1", "--use", "mcp/email", "--use", "mcp/calendar")
    assert [r["name"] for r in recorded] == ["mcp/email", "mcp/calendar"]
    report = cli_json(home, "skills", "usage")
    assert report["counts"] == {"mcp/calendar": 1, "mcp/email": 1}
    assert report["co_usage"] == [{"first": "mcp/calendar", "second": "mcp/email", "sessions": 1}]
    assert report["prefix_clusters"] == {"mcp": ["mcp/calendar", "mcp/email"]}
    assert "used together" in cli(home, "skills", "usage")
    signal = cli_json(home, "feedback", "record", "session_summary", "-s", "s1", "-r", "poor", "--skill", "mcp/email")
    assert (signal["kind"], signal["rating"], signal["skill_names"]) == ("session_summary", "poor", ["mcp/email"])
    cli(home, "feedback", "record", "correction", "-s", "s2", "-c", "It was Ana, not Rita")
    assert [f["kind"] for f in cli_json(home, "feedback", "list", "-k", "correction")] == ["correction"]
    assert "It was Ana" in cli(home, "feedback", "list", "--session", "s2")


def test_cli_refusals(home: Path) -> None:
    assert "name" in cli(home, "skills", "save", "Bad Name", "c", "-s", "s", code=2)
    assert "no skill" in cli(home, "skills", "show", "nothing", code=2)
    assert "--session" in cli(home, "skills", "usage", "--use", "x", code=2)
    assert "rating" in cli(home, "feedback", "record", "session_summary", "-s", "s1", code=2)
    assert "kind" in cli(home, "feedback", "record", "praise", "-s", "s1", code=2)
    assert cli_json(home, "skills", "list") == [] and cli_json(home, "feedback", "list") == []


# -- the HTTP API ----------------------------------------------------------------------------------------------
@pytest.fixture
def api_rv(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with reverie.open(tmp_path / "api", clock=FakeClock(), embedding={"provider": "hash", "background": False}) as rv:
        yield rv


@pytest.fixture
def keys(api_rv: reverie.Reverie) -> Keys:
    return make_keys(api_rv)


@pytest.fixture
def origin(api_rv: reverie.Reverie, keys: Keys) -> Iterator[str]:
    with serving(api_rv) as started:
        yield started


def skill_path(agent: str, name: str = "", action: str = "") -> str:
    return memory(agent, "/skills" + (f"/{name}" if name else "") + action)


def test_api_skill_lifecycle(origin: str, keys: Keys) -> None:
    with client(origin, keys.a) as a:
        created = a.put(skill_path("a", "mcp/email"), json={**EMAIL, "see_also": ["mcp/calendar"]})
        assert created.status_code == 200, created.text
        assert created.json()["outcome"] == "created" and created.json()["skill"]["embedding_model"] == "hash-256"
        stale = a.put(skill_path("a", "mcp/email"), json={**EMAIL, "content": "new", "expected_version": 0})
        assert stale.status_code == 409 and stale.json()["error"] == "conflict"
        updated = a.put(skill_path("a", "mcp/email"), json={**EMAIL, "content": "Draft, confirm, send."})
        assert updated.json()["skill"]["version"] == 2 and updated.json()["skill"]["see_also"] == ["mcp/calendar"]
        assert a.get(skill_path("a", "mcp/email")).json()["content"] == "Draft, confirm, send."
        assert [s["name"] for s in a.get(skill_path("a"), params={"prefix": "mcp"}).json()["skills"]] == ["mcp/email"]
        hits = a.get(memory("a", "/skills:search"), params={"query": "send the email"}).json()
        assert hits["mode"] == "hybrid" and hits["hits"][0]["skill"]["name"] == "mcp/email"
        history = a.get(skill_path("a", "mcp/email", ":history")).json()
        assert [v["change"] for v in history] == ["created", "edited"]
        assert a.delete(skill_path("a", "mcp/email")).json()["archived"] is True
        assert a.get(skill_path("a")).json()["skills"] == []
        restored = a.post(skill_path("a", "mcp/email", ":restore"), json={"version": 1})
        assert restored.status_code == 200 and restored.json()["content"] == EMAIL["content"]
        assert a.post(skill_path("a", "mcp/email", ":restore")).json()["archived"] is False


def test_api_usage_and_feedback(origin: str, keys: Keys) -> None:
    with client(origin, keys.a) as a:
        for name in ("mcp/email", "mcp/calendar"):
            assert a.put(skill_path("a", name), json=EMAIL).status_code == 200
        used = a.post(memory("a", "/skills:usage"), json={"session_id": "s1", "names": ["mcp/email", "mcp/calendar"]})
        assert used.status_code == 201, used.text
        assert [r["name"] for r in used.json()["recorded"]] == ["mcp/email", "mcp/calendar"]
        report = a.get(memory("a", "/skills:usage")).json()
        assert report["counts"] == {"mcp/calendar": 1, "mcp/email": 1}
        assert report["co_usage"] == [{"first": "mcp/calendar", "second": "mcp/email", "sessions": 1}]
        assert report["prefix_clusters"] == {"mcp": ["mcp/calendar", "mcp/email"]} and len(report["recent"]) == 2
        missing = a.post(memory("a", "/skills:usage"), json={"session_id": "s1", "names": ["nothing"]})
        assert missing.status_code == 404
        signal = a.post(
            memory("a", "/feedback"),
            json={"kind": "session_summary", "session_id": "s1", "rating": "poor", "skill_names": ["mcp/email"]},
        )
        assert signal.status_code == 201, signal.text
        listed = a.get(memory("a", "/feedback"), params={"kind": ["session_summary", "wrong"]}).json()
        assert [f["id"] for f in listed] == [signal.json()["id"]]
        assert a.get(memory("a", f"/feedback/{signal.json()['id']}")).json()["rating"] == "poor"


def test_api_another_agents_skill_is_unknown(api_rv: reverie.Reverie, origin: str, keys: Keys) -> None:
    with client(origin, keys.b) as b, client(origin, keys.a) as a, client(origin, keys.admin) as admin:
        assert b.put(skill_path("b", "secret"), json=EMAIL).status_code == 200
        signal = b.post(memory("b", "/feedback"), json={"kind": "wrong", "session_id": "s1"}).json()
        assert a.get(skill_path("a", "secret")).status_code == 404  # under its own agent: not there
        assert a.get(memory("a", f"/feedback/{signal['id']}")).status_code == 404
        assert a.get(memory("a", "/skills:search"), params={"query": "email"}).json()["hits"] == []
        assert (
            a.post(
                memory("a", "/feedback"), json={"kind": "wrong", "session_id": "s", "skill_names": ["secret"]}
            ).status_code
            == 404
        )
        for method, path in (("GET", skill_path("b", "secret")), ("DELETE", skill_path("b", "secret"))):
            assert a.request(method, path).status_code == 403  # another agent's path: refused
        assert admin.get(skill_path("b", "secret")).json()["name"] == "secret"
    with client(origin, keys.a_read) as reader:
        assert reader.get(skill_path("a")).status_code == 200
        assert reader.put(skill_path("a", "k"), json=EMAIL).status_code == 403  # memory_read only
    assert api_rv.skills.list("a") == [] and api_rv.feedback.list("a") == []


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PUT", skill_path("a", "Bad"), EMAIL, "name"),
        ("PUT", skill_path("a", "a//b"), EMAIL, "name"),
        ("PUT", skill_path("a", "x"), {"summary": "s"}, "content"),
        ("PUT", skill_path("a", "x"), {**EMAIL, "summary": "two\nlines"}, "summary"),
        ("PUT", skill_path("a", "x"), {**EMAIL, "content": "nul \u0000"}, "content"),
        ("PUT", skill_path("a", "x"), {**EMAIL, "see_also": ["Bad"]}, "see_also"),
        ("PUT", skill_path("a", "x"), {**EMAIL, "extra": 1}, "extra"),
        ("PUT", skill_path("a", "x"), {**EMAIL, "expected_version": "1"}, "expected_version"),
        ("GET", memory("a", "/skills:search?query="), None, "query"),
        ("GET", memory("a", "/skills?prefix=Bad"), None, "prefix"),
        ("GET", memory("a", "/skills:usage?days=0"), None, "days"),
        ("POST", memory("a", "/skills:usage"), {"session_id": "s1", "names": []}, "names"),
        ("POST", skill_path("a", "x", ":restore"), {"version": 0}, "version"),
        ("POST", memory("a", "/feedback"), {"kind": "praise", "session_id": "s1"}, "kind"),
        ("POST", memory("a", "/feedback"), {"kind": "session_summary", "session_id": "s1"}, "rating"),
        ("POST", memory("a", "/feedback"), {"kind": "wrong", "session_id": "s1", "rating": "poor"}, "rating"),
        ("GET", memory("a", "/feedback?kind=praise"), None, "kind"),
    ],
)
def test_api_bad_input_is_a_422_and_writes_nothing(
    api_rv: reverie.Reverie, origin: str, keys: Keys, method: str, path: str, body: Any, field: str
) -> None:
    with client(origin, keys.a) as a:
        response = a.request(method, path, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "validation" and response.json()["field"] == field, response.text
    assert api_rv.skills.list("a", include_archived=True) == [] and api_rv.feedback.list("a") == []
