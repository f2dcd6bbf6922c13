"""The command line's conventions (docs/cli.md, "Conventions"), through real ``reverie`` processes where the
process matters (stdout against stderr, exit codes, the shell's completion protocol, standard input): every
command's help has an example and shows flags as flags; completion scripts and sub-command completion;
errors as the API's JSON object on stdout under ``--json``; progress on stderr; ``reindex --force``; text read
from standard input loses its trailing newline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.core
import typer.main
from typer.testing import CliRunner

from reverie.cli import app

ERROR_FIELDS = {"error", "message", "field", "details"}


def _commands(group: typer.core.TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        if isinstance(command, typer.core.TyperGroup):
            out.extend(_commands(command, (*prefix, name)))
        else:
            out.append((*prefix, name))
    return out


ROOT = typer.main.get_command(app)
assert isinstance(ROOT, typer.core.TyperGroup)
COMMANDS = _commands(ROOT)


def _help(*path: str) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_commands_help_ends_with_an_example(path: tuple[str, ...]) -> None:
    shown = _help(*path)
    assert "Example:" in shown, shown
    example = shown.split("Example:", 1)[1]
    assert f"reverie {' '.join(path)}" in example, example  # the example runs this very command


@pytest.mark.parametrize("path", [(), *sorted({c[:1] for c in COMMANDS if len(c) > 1}), *COMMANDS], ids=" ".join)
def test_flags_are_shown_without_a_type(path: tuple[str, ...]) -> None:
    shown = _help(*path)
    assert "<bool>" not in shown and "BOOLEAN" not in shown, shown
    assert "--help " in shown


# -- real processes ------------------------------------------------------------------------------------------
def _run(
    *args: str, home: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    prefix = ["--home", str(home)] if home is not None else []
    return subprocess.run(
        [sys.executable, "-m", "reverie", *prefix, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "reverie.toml").write_text('[embedding]\nprovider = "hash"\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_completion_script_prints_for_each_shell(shell: str) -> None:
    done = _run("--show-completion", shell)
    assert done.returncode == 0, done.stderr
    assert "_REVERIE_COMPLETE" in done.stdout  # the script calls back into `reverie` with the protocol's variable


def _complete_bash(words: str) -> list[str]:
    """What bash's completion function gets for the command line ``words`` (completing its last word)."""
    parts = words.split(" ")
    done = _run(env={"_REVERIE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)})
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_completion_names_the_sub_commands() -> None:
    assert _complete_bash("reverie mem") == ["memory"]
    assert set(_complete_bash("reverie memory kv ")) >= {"set", "get", "update", "delete", "list"}
    assert "--force" in _complete_bash("reverie reindex --")


def test_errors_under_json_are_the_apis_error_object_on_stdout(home: Path) -> None:
    assert _run("memory", "save", "Ana lives in Porto", "-q", home=home).returncode == 0  # the store exists
    unknown = _run("memory", "get", "000000000000", "--json", home=home)
    assert unknown.returncode == 2 and unknown.stderr == ""
    body: dict[str, Any] = json.loads(unknown.stdout)
    assert set(body) == ERROR_FIELDS and body["error"] == "not_found" and body["details"] == []

    refused = _run("memory", "save", "x", "--importance", "7", "--json", home=home)
    assert refused.returncode == 2
    body = json.loads(refused.stdout)
    assert body["error"] == "validation" and body["field"] == "importance", body

    missing = _run("status", "--json", home=home.parent / "nowhere")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"] == "server"  # what the API answers (500) for a missing store

    usage = _run("memory", "search", "tea", "-n", "many", "--json", home=home)
    assert usage.returncode == 2
    body = json.loads(usage.stdout)
    assert body["error"] == "validation" and body["field"] == "limit", body
    assert json.loads(_run("memory", "save", "--no-such-option", "--json", home=home).stdout)["error"] == "validation"


def test_errors_without_json_stay_one_line_on_stderr(home: Path) -> None:
    assert _run("memory", "save", "Ana lives in Porto", "-q", home=home).returncode == 0
    unknown = _run("memory", "get", "000000000000", home=home)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("error: ") and unknown.stderr.count("\n") == 1


def test_text_from_stdin_loses_its_trailing_newline(home: Path) -> None:
    saved = _run("memory", "save", "-", "--json", home=home, stdin="Deploys happen on Fridays\n")
    assert saved.returncode == 0, saved.stderr
    assert json.loads(saved.stdout)["entry"]["content"] == "Deploys happen on Fridays"
    assert _run("memory", "kv", "set", "theme", "-", home=home, stdin="dark\r\n").returncode == 0
    assert _run("memory", "kv", "get", "theme", home=home).stdout == "dark\n"
    skill = _run("skills", "save", "ops/deploy", "-", "-s", "Deploy", "--json", home=home, stdin="Build.\nShip.\n\n")
    assert skill.returncode == 0, skill.stderr
    assert _run("skills", "show", "ops/deploy", "--json", home=home).stdout.count('Build.\\nShip."') == 1


def test_reindex_force_re_embeds_everything_with_its_progress_on_stderr(home: Path) -> None:
    for fact in ("Ana lives in Porto", "Bo plays the cello", "Cy sails on Sundays"):
        assert _run("memory", "save", fact, "-q", home=home).returncode == 0
    unchanged = _run("reindex", "--json", home=home)
    assert unchanged.returncode == 0, unchanged.stderr
    assert json.loads(unchanged.stdout)["embedded"] == 0  # the same model: nothing is pending
    forced = _run("reindex", "--force", "--json", home=home)
    assert forced.returncode == 0, forced.stderr
    report = json.loads(forced.stdout)
    assert report["embedded"] == 3 and report["pending"] == 0 and report["vectors"] == {"hash-256": 3}
    shown = _run("reindex", "--force", home=home)
    assert shown.stdout == "re-embedded 3 entries\n"  # the data; the progress bar went to stderr


def test_copy_keeps_its_progress_off_stdout(home: Path, tmp_path: Path) -> None:
    assert _run("memory", "save", "Ana lives in Porto", "-q", home=home).returncode == 0
    copied = _run("copy", str(home), str(tmp_path / "copy.db"), "--json")
    assert copied.returncode == 0, copied.stderr
    assert json.loads(copied.stdout)["total"] >= 1  # stdout is exactly the JSON
