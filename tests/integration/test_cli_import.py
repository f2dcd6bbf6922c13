"""``reverie memory save --observed-at``: importing a dated fact from the shell, against a real store."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from reverie.cli import app

runner = CliRunner()


def test_save_with_observed_at_sets_created_at(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    args = ["--home", home, "memory", "save", "Ana moved to Porto", "--observed-at", "2023-05-08T13:56:00+00:00"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    entry = json.loads(result.stdout)["entry"]
    assert entry["created_at"].startswith("2023-05-08T13:56:00") and entry["last_seen_at"] == entry["created_at"]
    shown = runner.invoke(app, ["--home", home, "memory", "get", entry["id"], "--json"])
    assert json.loads(shown.stdout)["created_at"] == entry["created_at"]


def test_save_refuses_a_naive_or_future_observed_at(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    for when, why in (("2023-05-08T13:56:00", "no timezone"), ("2999-01-01T00:00:00Z", "in the future")):
        result = runner.invoke(app, ["--home", home, "memory", "save", "When?", "--observed-at", when])
        assert result.exit_code == 2, (result.output, result.exception)
        assert "observed_at" in result.stderr and why in result.stderr
    listed = runner.invoke(app, ["--home", home, "memory", "list", "--json"])
    assert json.loads(listed.stdout)["entries"] == []
