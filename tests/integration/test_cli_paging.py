"""`reverie memory list` and `memory search` with the filter flags and paging, through Typer's runner against a
real store: `-n` beyond one page, `--all` streaming JSON Lines, `--cursor` going on where a listing stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app

runner = CliRunner()
COUNT = 2500


def run(home: Path, *args: str, code: int = 0) -> Any:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of 2,500 entries (every tenth pinned, tagged by parity), saved through the library."""
    path = tmp_path_factory.mktemp("paging") / "home"
    with reverie.open(path, embedding={"provider": "none"}) as rv:
        items = [
            {"content": f"note {n}", "tags": ["even" if n % 2 == 0 else "odd"], "pinned": n % 10 == 0}
            for n in range(COUNT)
        ]
        rv.memory.save_many(items, dedup=False)
    return path


def test_list_n_walks_past_the_page_cap_and_all_streams_json_lines(home: Path) -> None:
    listed = json.loads(run(home, "memory", "list", "-n", "1500", "--json").stdout)
    assert len(listed["entries"]) == 1500 and listed["next_cursor"]
    rest = json.loads(run(home, "memory", "list", "-n", "5000", "--cursor", listed["next_cursor"], "--json").stdout)
    assert rest["next_cursor"] is None
    ids = [e["id"] for e in listed["entries"] + rest["entries"]]
    assert len(ids) == len(set(ids)) == COUNT
    lines = run(home, "memory", "list", "--all", "--json").stdout.splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(ids)


def test_list_filter_flags(home: Path) -> None:
    lines = run(home, "memory", "list", "--all", "--json", "--tag", "even", "--pinned").stdout.splitlines()
    contents = {json.loads(line)["content"] for line in lines}
    assert contents == {f"note {n}" for n in range(0, COUNT, 10)}
    text = run(home, "memory", "list", "-n", "3", "--tag-all", "odd", "--order", "oldest")
    notes = [int(line.split("note ")[1].split()[0]) for line in text.stdout.splitlines() if "note " in line]
    assert len(notes) == 3 and all(n % 2 == 1 for n in notes)
    assert "more: reverie memory list --cursor" in text.stderr


def test_search_takes_the_filter_flags(home: Path) -> None:
    result = json.loads(
        run(home, "memory", "search", "note", "--unpinned", "--tag", "odd", "-n", "50", "--json").stdout
    )
    assert result["hits"] and all("odd" in h["entry"]["tags"] and not h["entry"]["pinned"] for h in result["hits"])


def test_a_bad_flag_value_names_its_field(home: Path) -> None:
    for args, field in (
        (["--min-importance", "0.9", "--max-importance", "0.1"], "--min-importance must be at most --max-importance"),
        (["--meta", "novalue"], "--meta must be KEY=VALUE"),
        (["--order", "sideways"], "order"),
        (["--cursor", "garbage"], "cursor"),
        (["--tier", "cosmic"], "--tier must be one of"),
        (["--created-from", "yesterday"], "--created-from must be"),
    ):
        result = run(home, "memory", "list", *args, code=2)
        assert field in result.stderr, (args, result.stderr)
    # Under --json the error object names the flag too (the field the user typed, not the library's name).
    failed = json.loads(run(home, "memory", "list", "--json", "--min-importance", "2", code=2).stdout)
    assert failed["error"] == "validation" and failed["field"] == "--min-importance", failed


def test_session_list_pages_with_a_cursor(tmp_path: Path) -> None:
    home = tmp_path / "sessions"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        made = {rv.conversation.create(None).session_id for _ in range(5)}
    first = run(home, "session", "list", "-n", "3", "--json")
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = run(home, "session", "list", "-n", "3", "--cursor", cursor, "--json")
    assert "more:" not in rest.stderr
    seen = [s["session_id"] for s in json.loads(first.stdout) + json.loads(rest.stdout)]
    assert sorted(seen) == sorted(made)
    assert len(json.loads(run(home, "session", "list", "--json").stdout)) == 5


def test_dream_history_pages_with_a_cursor(tmp_path: Path) -> None:
    from reverie.types import DreamRun

    home = tmp_path / "dreams"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        for n in range(4):
            run_record = DreamRun(
                run_id=f"run-{n}", agent_id="default", trigger="manual", started_at=rv.clock.now(), phase="completed"
            )
            rv.store.dream.save_run(run_record)
    first = run(home, "dream", "history", "--limit", "3", "--json")
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = run(home, "dream", "history", "--limit", "3", "--cursor", cursor, "--json")
    seen = [r["run_id"] for r in json.loads(first.stdout) + json.loads(rest.stdout)]
    assert seen == ["run-3", "run-2", "run-1", "run-0"]


def test_entities_page_in_the_cli_and_over_http(tmp_path: Path) -> None:
    home = tmp_path / "graph"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        made = {rv.graph.add_entity("default", "person", f"Person {n}").entity.entity_id for n in range(7)}
    every = json.loads(run(home, "kg", "list-entities", "--all", "-n", "3", "--json").stdout)
    assert sorted(e["entity_id"] for e in every) == sorted(made)
    first = run(home, "kg", "list-entities", "--cursor", "", "-n", "5", "--json")
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = json.loads(run(home, "kg", "list-entities", "--cursor", cursor, "-n", "5", "--json").stdout)
    assert sorted(e["entity_id"] for e in json.loads(first.stdout) + rest) == sorted(made)


def test_memory_history_pages_with_a_cursor(tmp_path: Path) -> None:
    home = tmp_path / "history"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        entry = rv.memory.save("version 0", dedup=False)
        for n in range(1, 5):
            rv.memory.edit(entry.id, content=f"version {n}")
        every = [v.version for v in rv.memory.history(entry.id)]
    first = run(home, "memory", "history", entry.id, "-n", "3", "--json")
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = run(home, "memory", "history", entry.id, "-n", "3", "--cursor", cursor, "--json")
    assert "more:" not in rest.stderr
    assert [v["version"] for v in json.loads(first.stdout) + json.loads(rest.stdout)] == every
    assert len(json.loads(run(home, "memory", "history", entry.id, "--json").stdout)) == len(every)
    assert "cursor" in run(home, "memory", "history", entry.id, "--cursor", "garbage", code=2).stderr
