"""The CLI through Typer's runner, against a real store in a temp directory."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app

runner = CliRunner()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run(home: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = runner.invoke(app, ["--home", str(home), *args], input=stdin)
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout


def run_json(home: Path, *args: str) -> Any:
    return json.loads(run(home, *args, "--json"))


def search_json(home: Path, *args: str) -> Any:
    """The hits of `reverie memory search --json` (which also reports the mode and notes)."""
    result = run_json(home, "memory", "search", *args)
    assert set(result) == {"mode", "notes", "hits"}
    return result["hits"]


def save(home: Path, content: str, *args: str) -> str:
    return run(home, "memory", "save", "-q", content, *args).strip()


def test_save_search_get_roundtrip(home: Path) -> None:
    entry_id = save(home, "Maya keeps Europe/Lisbon hours 🕰️", "-c", "user-preferences/timezone", "-t", "tz")
    assert len(entry_id) == 12
    hits = search_json(home, "Lisbon hours")
    assert [h["entry"]["id"] for h in hits] == [entry_id]
    entry = run_json(home, "memory", "get", entry_id)
    assert entry["content"] == "Maya keeps Europe/Lisbon hours 🕰️"
    assert entry["tags"] == ["tz"] and entry["category"] == "user-preferences/timezone"
    assert "Lisbon" in run(home, "memory", "search", "Lisbon")


def test_save_json_reports_outcome_and_dropped_source(home: Path) -> None:
    result = run_json(home, "memory", "save", "A fact", "--source", "rumour")
    assert result["outcome"] == "created"
    assert "dropped" in result["notes"][0]
    assert "source" not in result["entry"]["metadata"]


def test_save_reads_stdin(home: Path) -> None:
    entry_id = run(home, "memory", "save", "-q", "-", stdin="from standard input\n").strip()
    assert run_json(home, "memory", "get", entry_id)["content"] == "from standard input"  # no trailing newline


def test_list_shows_recent_entries_and_taxonomy(home: Path) -> None:
    save(home, "first", "-c", "a/b")
    save(home, "second", "-c", "c")
    view = run_json(home, "memory", "list", "--category", "nothing-here")
    assert view["entries"] == []
    assert [c["category"] for c in view["taxonomy"]] == ["a/b", "c"]
    text = run(home, "memory", "list")
    assert "second" in text and "categories" in text


def test_delete_archives_and_restore_brings_back(home: Path) -> None:
    entry_id = save(home, "Lantern uses PostgreSQL")
    out = run(home, "memory", "delete", entry_id)
    assert "archived" in out and "restorable" in out
    assert search_json(home, "Lantern") == []
    assert run_json(home, "memory", "get", entry_id)["archived"] is True
    assert [h["entry"]["id"] for h in search_json(home, "Lantern", "--archived")] == [entry_id]
    run(home, "memory", "restore", entry_id)
    assert [h["entry"]["id"] for h in search_json(home, "Lantern")] == [entry_id]


def test_edit_history_and_restore_version(home: Path) -> None:
    entry_id = save(home, "version one")
    run(home, "memory", "edit", entry_id, "--content", "version two")
    versions = run_json(home, "memory", "history", entry_id)
    assert [(v["version"], v["change"], v["content"]) for v in versions] == [
        (1, "created", "version one"),
        (2, "edited", "version two"),
    ]
    versions = run_json(home, "memory", "history", entry_id, "--restore", "1")
    assert versions[-1]["change"] == "reverted" and versions[-1]["content"] == "version one"
    assert run_json(home, "memory", "get", entry_id)["content"] == "version one"


def test_importance(home: Path) -> None:
    entry_id = save(home, "important")
    assert run_json(home, "memory", "importance", entry_id, "0.9")["importance"] == 0.9
    run(home, "memory", "importance", entry_id, "1.5", code=2)
    assert run_json(home, "memory", "get", entry_id)["importance"] == 0.9


def test_scope_options_isolate_agents(home: Path) -> None:
    save(home, "belongs to alpha", "--agent", "alpha")
    assert search_json(home, "alpha", "--agent", "beta") == []
    assert len(search_json(home, "alpha", "--agent", "alpha")) == 1
    save(home, "for user u1 only", "--user", "u1")
    assert search_json(home, "only", "--user", "u2") == []
    assert len(search_json(home, "only", "--user", "u1")) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory", "save", "   "], "content is empty"),
        (["memory", "save", "x", "-c", "../etc"], "category"),
        (["memory", "save", "x", "--importance", "2"], "importance"),
        (["memory", "save", "x", "--tier", "cosmic"], "tier"),
        (["memory", "get", "nope"], "no memory"),
        (["memory", "delete", "nope"], "no memory"),
        (["memory", "history", "nope"], "no memory"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(home: Path, args: list[str], message: str) -> None:
    save(home, "existing")
    before = run_json(home, "status")
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output + result.stderr
    after = run_json(home, "status")
    assert (after["live"], after["archived"]) == (before["live"], before["archived"])


def test_fts_syntax_in_queries_never_errors(home: Path) -> None:
    save(home, 'He said "NEAR(this)" and -that: *star*')
    for query in ['"', "*", "NEAR(", "-that", "a:b", "(((", "AND OR NOT", '"NEAR(this)"']:
        # "--" ends the options, as in any CLI, so a query may start with "-".
        assert isinstance(json.loads(run(home, "memory", "search", "--json", "--", query))["hits"], list)


def test_status_counts(home: Path) -> None:
    save(home, "one", "-c", "a")
    gone = save(home, "two", "-c", "a/b", "--tier", "procedural")
    run(home, "memory", "delete", gone)
    status = run_json(home, "status")
    assert (status["live"], status["archived"]) == (1, 1)
    assert status["by_category"] == {"a": 1}
    assert status["location"].endswith("reverie.db")
    assert "1 live, 1 archived" in run(home, "status")


def test_doctor_finds_and_repairs_a_broken_fts_index(home: Path) -> None:
    entry_id = save(home, "the lighthouse schedule")
    assert run_json(home, "doctor")["ok"] is True
    # Break the index the way a bug or a bad manual edit would: drop the row's postings.
    with sqlite3.connect(home / "reverie.db") as conn:
        conn.execute(
            "INSERT INTO facts_fts (facts_fts, rowid, content, tags, category, agent_id) "
            "SELECT 'delete', seq, content, tags, category, agent_id FROM facts WHERE id = ?",
            (entry_id,),
        )
    conn.close()
    result = runner.invoke(app, ["--home", str(home), "doctor", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["checks"]["fts"] != "ok"
    repaired = run_json(home, "doctor", "--repair")
    assert repaired["ok"] is True and repaired["repaired"]
    assert [h["entry"]["id"] for h in search_json(home, "lighthouse")] == [entry_id]


def test_backup_and_restore_backup(home: Path, tmp_path: Path) -> None:
    kept = save(home, "saved before the backup")
    target = tmp_path / "backups" / "copy.db"
    run(home, "backup", str(target))
    assert target.is_file()
    later = save(home, "saved after the backup")
    result = run_json(home, "restore-backup", str(target))
    assert Path(result["previous_contents"]).is_file()
    run(home, "memory", "get", kept)
    run(home, "memory", "get", later, code=2)
    # The pre-restore copy still holds the later entry: a restore loses nothing.
    with reverie.open(Path(result["previous_contents"])) as old:
        assert old.memory.get(later).content == "saved after the backup"


def test_restore_backup_refuses_a_file_that_is_not_a_store(home: Path, tmp_path: Path) -> None:
    kept = save(home, "still here")
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"not a database at all" * 100)
    result = runner.invoke(app, ["--home", str(home), "restore-backup", str(bogus)])
    assert result.exit_code == 1 and "error" in result.stderr
    run(home, "memory", "get", kept)


def test_vacuum_and_purge(home: Path) -> None:
    entry_id = save(home, "to be vacuumed")
    assert "vacuumed" in run(home, "vacuum")
    run(home, "memory", "get", entry_id)
    report = run_json(home, "memory", "purge")
    assert report == {"purged": [], "protected": []}


def test_home_from_environment(tmp_path: Path) -> None:
    env_home = tmp_path / "from-env"
    result = runner.invoke(app, ["memory", "save", "-q", "via env"], env={"REVERIE_HOME": str(env_home)})
    assert result.exit_code == 0, result.output
    assert (env_home / "reverie.db").is_file()


def test_invalid_settings_file_is_reported(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "reverie.toml").write_text("[memory]\nmax_content_chars = 'lots'\n")
    result = runner.invoke(app, ["--home", str(home), "status"])
    assert result.exit_code == 1
    assert "max_content_chars" in result.stderr


def test_demo_runs_the_tour(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--keep", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    for step in ("1. Save", "2. Recall", "3. Browse", "4. Archive", "5. Restore", "6. Edit and history"):
        assert step in result.stdout
    assert "Tour complete" in result.stdout
    summary = " ".join(result.stdout.split())  # Rich wraps long lines
    assert "consolidation summary — live 11" in summary
    assert "merged 1, repaired 0, rejected 1, ephemeral 1, protected 1" in summary
    assert "12. Conversation" in result.stdout and "turn 3 of 60 · user" in summary
    assert "> Before I forget: my gym locker code is 4417" in summary
    assert "finds" in result.stdout and ": False" in result.stdout and ": True" in result.stdout
    assert "13. Knowledge graph" in result.stdout and "path from Ana Costa to New York, 3 hops" in summary
    assert "thing:Acme Corp -mentioned_with-> thing:Northwind Labs" in summary
    assert "also names thing:Acme Corp" in summary
    assert "14. Learning from conversations" in result.stdout
    assert "preference inference — 8 turns of 2 sessions, saved 1, refused 1" in summary
    assert "inferred preference" in summary and "never bullet points" in summary
    assert "(category user-preferences/inferred/format, tags format, inferred, source inferred)" in summary
    assert "conversation log of 'assistant': 8 records before the dream, 0 after" in summary
    with reverie.open(tmp_path / "demo") as rv:
        assert rv.stats().live == 17  # the sample's 11, the graph step's three notes, the learning step's three
        assert sum(1 for _ in rv.conversation.log_records(agent_id="default")) == 60  # another agent's: kept


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and reverie.__version__ in result.stdout
