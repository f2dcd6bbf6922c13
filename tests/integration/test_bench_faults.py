"""``reverie bench faults`` in small, so CI keeps the fault harness working: five SIGKILLed writers, every kind
of damaged store file, and 200 generated API requests and tool calls, through the real command in a real
process. The full suite (200 kills, every dream pass, the full disk, a PostgreSQL outage, 10,000 inputs) is
in docs/benchmarks.md#faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from reverie.cli import app

SMALL = ["--rounds", "5", "--inputs", "200", "--families", "kill-writers,corruption,fuzz", "--seed", "7"]


@pytest.mark.slow  # about a minute: every case starts real processes
def test_a_small_fault_run_finds_nothing_and_reports_every_family() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERIE_")}
    proc = subprocess.run(
        [sys.executable, "-m", "reverie", "bench", "faults", *SMALL, "--json"],
        capture_output=True, text=True, encoding="utf-8", env=env, timeout=600, check=False,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    families = {f["family"]: f for f in report["families"]}
    assert list(families) == ["kill-writers", "corruption", "fuzz"]
    problems = {name: f["notes"] for name, f in families.items() if f["failures"] or f["lost"]}
    assert not problems, problems
    assert proc.returncode == 0, proc.stderr
    assert families["kill-writers"]["cases"] == 6  # a case per round, and the final reading of every id
    assert families["corruption"]["cases"] == 15  # five kinds: status, serve, the file untouched
    assert families["fuzz"]["cases"] >= 200
    assert report["seed"] == 7 and report["lost"] == 0


def test_unknown_families_and_bad_counts_are_refused_in_one_line() -> None:
    runner = CliRunner()
    for args in (["--families", "kill-writers,nope"], ["--rounds", "0"], ["--backend", "mysql"]):
        result = runner.invoke(app, ["bench", "faults", *args])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
