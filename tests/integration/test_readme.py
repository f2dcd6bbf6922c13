"""The README's quickstart is executed, so it cannot drift from the code; `.ci/run` runs the README's
test command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
_BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _blocks(text: str, language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(text) if lang == language]


def test_quickstart_has_both_faces() -> None:
    quickstart = _section("Quickstart")
    assert _blocks(quickstart, "python"), "the quickstart shows the library"
    assert _blocks(quickstart, "bash"), "the quickstart shows the CLI"


@pytest.mark.parametrize("index", range(len(_blocks(_section("Quickstart"), "python"))))
def test_library_quickstart_runs(index: int, tmp_path: Path) -> None:
    code = _blocks(_section("Quickstart"), "python")[index]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "every block prints something to look at"


def test_the_first_library_block_shows_versions(tmp_path: Path) -> None:
    code = _blocks(_section("Quickstart"), "python")[0]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert "created" in result.stdout and "reverted" in result.stdout


def test_cli_quickstart_runs(tmp_path: Path) -> None:
    script = _blocks(_section("Quickstart"), "bash")[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("REVERIE_HOME", None)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"archived": true' in result.stdout  # get --json after delete
    assert "healthy" in result.stdout  # doctor


def test_ci_runs_the_readme_test_command() -> None:
    commands = _blocks(README[: README.index("\n## ")], "bash")
    assert len(commands) == 2, "the README starts with exactly two commands"
    test_command = commands[1].strip()
    assert "pytest" in test_command and "ruff" in test_command and "mypy" in test_command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
