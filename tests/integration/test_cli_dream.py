"""``reverie dream ...`` and ``reverie audit ...`` through Typer's runner (and ``dream serve`` as a real
process), against a real store in a temp directory; the LLM is configured in ``<home>/reverie.toml`` and
points at the loopback scripted server."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._dream import EMPTY, chats, llm_settings

runner = CliRunner()


def configure(home: Path, server: ScriptedOpenAIServer | None = None, **sections: dict[str, Any]) -> None:
    """Write ``<home>/reverie.toml``: no embedder, no expansion, the scripted LLM (when given), and more."""
    tables: dict[str, dict[str, Any]] = {
        "embedding": {"provider": "none"},
        "memory": {"expansion_enabled": False},
        "graph": {"extraction": "off"},  # extraction would ask the scripted LLM too
    }
    if server is not None:
        tables["llm"] = llm_settings(server)
    for name, values in sections.items():
        tables[name] = {**tables.get(name, {}), **values}
    lines: list[str] = []
    for name, values in tables.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
    home.mkdir(parents=True, exist_ok=True)
    (home / "reverie.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(home: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.exception)
    return result.stdout


def run_json(home: Path, *args: str) -> Any:
    return json.loads(run(home, *args, "--json"))


def words(text: str) -> str:
    return " ".join(text.split())


def save(home: Path, *texts: str) -> list[str]:
    return [run(home, "memory", "save", "-q", text).strip() for text in texts]


def test_dream_run_json_uses_the_llm_from_the_settings_file(home: Path, server: ScriptedOpenAIServer) -> None:
    configure(home, server)
    save(home, "Alice moved to Porto in March", "The Lantern service runs on PostgreSQL")
    server.script_chat([EMPTY])
    report = run_json(home, "dream", "run")
    assert report["phase"] == "completed" and report["trigger"] == "manual" and report["agent_id"] == "default"
    assert report["llm_calls"] == 1 and report["tokens"] > 0
    assert report["passes"]["consolidation"]["status"] == "ran"
    assert report["passes"]["consolidation"]["counts"]["reviewed"] == 2
    assert set(report["passes"]) >= {
        "log_retention", "archive_purge", "importance_decay", "forget", "consolidation", "graph_consolidation",
        "memory_mining", "episode_extraction", "preference_inference", "agent_curation",
    }  # fmt: skip
    assert report["passes"]["preference_inference"]["status"] == "skipped"  # an empty conversation log: no call
    assert chats(server) == 1
    text = words(run(home, "dream", "run"))  # consolidation ran minutes ago: its own interval skips it
    assert "dream of default completed" in text
    assert "memory consolidation skipped" in text
    assert chats(server) == 1


def test_dream_status_abort_and_history(home: Path, server: ScriptedOpenAIServer) -> None:
    configure(home, server)
    assert "agent default: idle, enabled, last dream never" in words(run(home, "dream", "status"))
    assert run_json(home, "dream", "status")["run"] is None
    assert "no dream of default is running" in run(home, "dream", "abort")
    assert run_json(home, "dream", "abort") == {"aborting": False, "interrupted": False}
    assert run_json(home, "dream", "history") == []

    report = run_json(home, "dream", "run")
    status = run_json(home, "dream", "status")
    assert status["enabled"] is True and status["running"] is False
    assert status["last_dream_at"] is not None
    assert status["run"]["run_id"] == report["run_id"] and status["run"]["phase"] == "completed"
    assert f"latest run {report['run_id'][:12]} (manual) completed" in words(run(home, "dream", "status"))

    (recorded,) = run_json(home, "dream", "history")
    assert recorded["run_id"] == report["run_id"] and recorded["trigger"] == "manual"
    assert recorded["phase"] == "completed" and recorded["report"]["consolidation"]["status"] == "ran"
    assert "manual" in run(home, "dream", "history") and "completed" in run(home, "dream", "history")
    assert run_json(home, "dream", "history", "--agent", "someone-else") == []


def test_dream_disable_and_enable(home: Path) -> None:
    configure(home)
    assert "dreaming disabled for b" in run(home, "dream", "disable", "--agent", "b")
    skipped = run_json(home, "dream", "run", "--agent", "b")
    assert skipped["phase"] == "skipped" and "disabled for agent 'b'" in skipped["reason"]
    assert "skipped" in run(home, "dream", "run", "--agent", "b")
    assert run_json(home, "dream", "status", "--agent", "b")["enabled"] is False
    assert run_json(home, "dream", "run")["phase"] == "completed"  # other agents still dream
    assert "dreaming enabled for b" in run(home, "dream", "enable", "--agent", "b")
    assert run_json(home, "dream", "run", "--agent", "b")["phase"] == "completed"
    assert [r["agent_id"] for r in run_json(home, "dream", "history", "--agent", "b")] == ["b"]


def test_audit_run_trend_and_resume(home: Path) -> None:
    configure(home, audit={"pause_on_loss": True})
    assert "no audit yet" in run(home, "audit")
    kept, doomed = save(home, "The user keeps bees", "The user plays the violin")
    expected = "default: live 2, archived 0, merged 0, destroyed outside the purge 0"
    assert expected in words(run(home, "audit", "run"))
    assert "consolidation was not paused" in run(home, "audit", "resume")

    with closing(sqlite3.connect(home / "reverie.db")) as conn, conn:
        conn.execute("DELETE FROM facts WHERE id = ?", (doomed,))
    (record,) = run_json(home, "audit", "run")
    assert record["destroyed_outside_purge"] == 1 and record["destroyed_ids"] == [doomed]
    assert record["live"] == 1
    assert [r["destroyed_outside_purge"] for r in run_json(home, "audit")] == [0, 1]
    trend = words(run(home, "audit"))  # Rich wraps long lines at the runner's width
    assert "destroyed 0" in trend and "destroyed 1" in trend and "consolidation is paused" in trend

    consolidation = run_json(home, "dream", "run")["passes"]["consolidation"]
    assert consolidation["status"] == "skipped"  # no LLM here either, but the pause is checked first
    assert "consolidation resumed" in run(home, "audit", "resume")
    assert not (home / "memory-audit" / "consolidation-paused.json").exists()
    assert "consolidation is paused" not in words(run(home, "audit"))
    assert kept in {e["id"] for e in run_json(home, "memory", "list")["entries"]}


@pytest.mark.slow
def test_dream_serve_runs_scheduled_cycles_until_sigterm(home: Path) -> None:
    configure(home, dream={"initial_delay_minutes": 0.001, "interval_hours": 0.0001, "min_hours": 0})
    save(home, "a fact to dream about")
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie", "--home", str(home), "dream", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while _scheduled_runs(home) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no scheduled runs"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "dream scheduler running" in out and "stopping" in out
    runs = run_json(home, "dream", "history")
    assert len(runs) >= 2
    assert {r["trigger"] for r in runs} == {"scheduled"}
    assert {r["phase"] for r in runs} == {"completed"}
    assert len(run_json(home, "audit")) >= 1  # the audit job ran in the scheduler too


def _scheduled_runs(home: Path) -> int:
    with reverie.open(home) as rv:
        return sum(1 for r in rv.dream.history() if r.trigger == "scheduled" and r.phase == "completed")
