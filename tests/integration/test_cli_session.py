"""``reverie session ...`` through Typer's runner, against a real store in a temp directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reverie.cli import app
from reverie.testing import ScriptedOpenAIServer

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    return home


def run(home: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = runner.invoke(app, ["--home", str(home), "session", *args], input=stdin)
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout if code == 0 else result.stderr


def run_json(home: Path, *args: str, stdin: str | None = None) -> Any:
    return json.loads(run(home, *args, "--json", stdin=stdin))


def talk(home: Path, session_id: str, n: int) -> None:
    for i in range(1, n + 1):
        role = "user" if i % 2 else "assistant"
        run(home, "add", session_id, role, f"Message {i}. It mentions port {8000 + i}.")


def test_create_list_info_delete(home: Path) -> None:
    assert run(home, "create", "--id", "trip", "--name", "Trip planning").strip() == "trip"
    drawn = run_json(home, "create")
    assert drawn["session_id"].startswith("s-") and drawn["name"] is None
    listed = run_json(home, "list")
    assert {s["session_id"] for s in listed} == {"trip", drawn["session_id"]}
    assert "Trip planning" in run(home, "list")
    run(home, "add", "trip", "user", "We fly to Lisbon on March 14.")
    info = run_json(home, "info", "trip")
    assert (info["live"], info["retained"], info["archived"], info["expired"]) == (1, 1, 0, False)
    assert info["session"]["name"] == "Trip planning"
    assert "1 live" in run(home, "info", "trip")
    assert run_json(home, "delete", "trip") == {"deleted": "trip"}
    assert [s["session_id"] for s in run_json(home, "list")] == [drawn["session_id"]]
    assert "no session 'trip'" in run(home, "info", "trip", code=2)


def test_add_reads_stdin_creates_on_request_and_refuses_bad_input(home: Path) -> None:
    assert "no session 'chat'" in run(home, "add", "chat", "user", "hello", code=2)
    turn = run_json(home, "add", "chat", "user", "-", "--create", stdin="from standard input\n")
    assert (turn["index"], turn["content"], turn["role"]) == (1, "from standard input", "user")
    calls = json.dumps([{"id": "c1", "type": "function", "function": {"name": "web", "arguments": "{}"}}])
    assert run_json(home, "add", "chat", "assistant", "", "--tool-calls", calls)["tool_calls"][0]["id"] == "c1"
    assert run_json(home, "add", "chat", "tool", "ok", "--tool-call-id", "c1")["tool_call_id"] == "c1"
    assert "role must be one of" in run(home, "add", "chat", "narrator", "hi", code=2)
    assert "not JSON" in run(home, "add", "chat", "assistant", "", "--tool-calls", "{", code=2)
    assert "invalid session id" in run(home, "add", "bad id", "user", "hi", "--create", code=2)
    exported = run_json(home, "export", "chat")
    assert [t["role"] for t in exported["turns"]] == ["user", "assistant", "tool"]


def test_export_is_json_of_every_live_turn(home: Path) -> None:
    with (home / "reverie.toml").open("a", encoding="utf-8") as handle:
        handle.write("[conversation]\nmax_turns_per_session = 5\n")
    run(home, "create", "--id", "s1")
    talk(home, "s1", 7)
    exported = json.loads(run(home, "export", "s1", "--format", "json"))
    assert exported["format"] == "reverie.session/1"
    assert [t["index"] for t in exported["turns"]] == list(range(1, 8))
    assert sum(t["archived"] for t in exported["turns"]) == 2
    assert "--format must be one of" in run(home, "export", "s1", "--format", "xml", code=2)


def test_compact_and_compaction_status(home: Path) -> None:
    small = "[conversation]\nauto_compact = false\ncompaction_threshold = 8\ncompaction_keep_recent = 2\n"
    with (home / "reverie.toml").open("a", encoding="utf-8") as handle:
        handle.write(small)
    run(home, "create", "--id", "long")
    run(home, "create", "--id", "short")
    talk(home, "long", 9)
    talk(home, "short", 3)
    status = {s["session_id"]: s for s in run_json(home, "compaction-status")}
    assert status["long"]["needs_compaction"] and not status["short"]["needs_compaction"]
    assert (status["long"]["live_messages"], status["long"]["threshold"]) == (9, 8)
    assert "needs compaction" in run(home, "compaction-status")
    assert "not compacted" in run(home, "compact", "short")
    result = run_json(home, "compact", "long")
    assert result["compacted"] and result["method"] == "extractive" and result["compacted_through"] == 7
    assert run_json(home, "info", "long")["session"]["compacted_through"] == 7
    results = run_json(home, "compact", "--all", "--force")
    assert {r["session_id"]: r["compacted"] for r in results} == {"long": False, "short": True}
    assert "summarised" not in run(home, "compact", "--all")
    assert "give a session id or --all" in run(home, "compact", code=2)
    assert "give a session id or --all" in run(home, "compact", "long", "--all", code=2)


def test_compact_uses_the_llm_and_warns_on_fallback(home: Path) -> None:
    with ScriptedOpenAIServer() as server:
        with (home / "reverie.toml").open("a", encoding="utf-8") as handle:
            handle.write(f'[llm]\nprovider = "openai"\nendpoint = "{server.url}"\nmodel = "m"\nmax_retries = 0\n')
            handle.write("[memory]\nexpansion_enabled = false\n")
            handle.write('[graph]\nextraction = "off"\n')
            handle.write("[conversation]\ncompaction_threshold = 8\ncompaction_keep_recent = 2\n")
        run(home, "create", "--id", "s1")
        talk(home, "s1", 9)  # auto compaction: extractive, inline
        assert run_json(home, "info", "s1")["summary_method"] == "extractive"
        server.script_chat(["The user discussed ports 8001 to 8007."])
        out = run(home, "compact", "s1")
        assert "summarised 7 turns through turn 7 (llm)" in out
        assert run_json(home, "info", "s1")["summary_method"] == "llm"
        run(home, "create", "--id", "s2")
        talk(home, "s2", 9)
        out = run(home, "compact", "s2")  # the script is empty: HTTP 500, so the extractive summary stays
        assert "(extractive)" in out and "the LLM failed" in out


def test_sessions_are_per_agent(home: Path) -> None:
    run(home, "create", "--id", "s1", "--agent", "alpha")
    assert run_json(home, "list") == []
    assert [s["session_id"] for s in run_json(home, "list", "--agent", "alpha")] == ["s1"]
    run(home, "add", "s1", "user", "hello", code=2)
    run(home, "add", "s1", "user", "hello", "-a", "alpha")
