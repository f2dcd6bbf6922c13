"""``reverie bench recall --dataset everyday`` end to end, on a slice of the bundled set and the hash embedder."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.bench.everyday import ALL_ON_TOPIC, NEARMISS, OFFTOPIC, bundled_text, load_everyday
from reverie.bench.everyday_recall import run_everyday
from reverie.bench.recall import MODES
from reverie.cli import app

HASH = {"embedding": {"provider": "hash"}}
runner = CliRunner()
# A slice of the bundled set: every kind, with the facts its queries expect and a few more (f111 is Beacon's,
# which the nearmiss q284 "which database does Beacon use?" names).
QUERIES = ("q001", "q003", "q037", "q092", "q155", "q180", "q213", "q236", "q256", "q279", "q284")


@pytest.fixture
def slice_path(tmp_path: Path) -> Path:
    raw: dict[str, Any] = json.loads(bundled_text())
    queries = [q for q in raw["queries"] if q["id"] in QUERIES]
    wanted = {fact_id for q in queries for fact_id in q["expected"]} | {"f001", "f087", "f111", "f164"}
    raw["facts"] = [f for f in raw["facts"] if f["id"] in wanted]
    raw["queries"] = queries
    path = tmp_path / "everyday-slice.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def test_harness_saves_each_fact_at_its_time_and_scores_every_mode(slice_path: Path, tmp_path: Path) -> None:
    data = load_everyday(slice_path)
    kept = tmp_path / "kept"
    report = run_everyday(data, store=kept, source=str(slice_path), overrides=HASH)
    assert report.dataset.facts == len(data.facts) and sum(report.dataset.queries.values()) == len(QUERIES)
    assert report.ingestion.memories == len(data.facts) == report.ingestion.embedded
    assert [m.mode for m in report.modes] == list(MODES) and report.k == 5
    for result in report.modes:
        assert result.ran_as == {result.mode: len(QUERIES)}, result.notes
        assert len(result.scores) == len(QUERIES)
        rows = {row.label: row for row in result.rows}
        assert rows[ALL_ON_TOPIC].n == 8 and rows[OFFTOPIC].n == 2 and rows[NEARMISS].n == 1
        assert rows[NEARMISS].precision_at_1 is None and rows[NEARMISS].empty in (0.0, 1.0)
        assert result.latency_p95_ms >= result.latency_p50_ms > 0
    bm25 = {row.label: row for row in report.modes[0].rows}
    assert bm25["exact"].precision_at_1 == 1.0 and bm25["exact"].recall_at_k == 1.0  # the fact's own words
    assert bm25["name"].recall_at_k == 1.0  # "Biscuit": all four facts about him
    with reverie.open(kept, embedding={"provider": "hash", "background": False}) as rv:
        (hit,) = rv.memory.search("peanuts EpiPen", scope=reverie.Scope(agent_id="everyday"), mode="bm25", limit=1)
        assert hit.entry.metadata["fact_id"] == "f058"
        assert hit.entry.created_at == datetime(2025, 2, 11, tzinfo=UTC)  # saved_at
        assert hit.entry.category == "people/priya"
        (outage,) = rv.memory.search("TLS certificate expired", scope=reverie.Scope(agent_id="everyday"), limit=1)
        assert (outage.entry.metadata["fact_id"], outage.entry.metadata["subjectTime"]) == ("f091", "2026-03-14")
        assert rv.stats().live == len(data.facts)  # dedup off: one entry per fact


def test_cli_prints_the_everyday_table_with_figures(slice_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_EMBEDDING__PROVIDER", "hash")
    text = runner.invoke(app, ["bench", "recall", "--dataset", "everyday", str(slice_path)])
    assert text.exit_code == 0, text.stderr
    out = text.stdout
    needles = (
        "p@1",
        "r@5",
        "on target",
        "empty",
        "all on-topic",
        "offtopic",
        "nearmiss",
        "paraphrase",
        "mode bm25",
        "mode hybrid",
    )
    for needle in needles:
        assert needle in out
    assert "every mode on the same store" in out and "nearmiss empty (info)" in out
    exact_rows = [line.split() for line in out.splitlines() if line.strip().startswith("exact")]
    assert len(exact_rows) == 3  # one per mode
    # bm25 finds both exact queries first; on target is the share of their hits that are expected
    assert exact_rows[0][1:3] == ["1.000", "1.000"] and exact_rows[0][4:] == ["—", "2"]
    assert 0.0 < float(exact_rows[0][3]) <= 1.0
    offtopic = [line.split() for line in out.splitlines() if line.strip().startswith("offtopic")]
    assert all(row[1:4] == ["—", "—", "—"] and row[-1] == "2" for row in offtopic)
    assert all(0.0 <= float(row[4]) <= 1.0 for row in offtopic)
    nearmiss = [line.split() for line in out.splitlines() if line.strip().startswith("nearmiss")]
    assert len(nearmiss) == 3 and all(row[1:4] == ["—", "—", "—"] and row[-1] == "1" for row in nearmiss)

    as_json = runner.invoke(
        app, ["bench", "recall", "--dataset", "everyday", str(slice_path), "--mode", "bm25", "--json"]
    )
    assert as_json.exit_code == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["dataset"]["source"] == str(slice_path)
    ((mode),) = report["modes"]
    assert mode["mode"] == "bm25"
    assert [row["label"] for row in mode["rows"]][-3:] == [ALL_ON_TOPIC, OFFTOPIC, NEARMISS]
    assert {s["query_id"] for s in mode["scores"]} == set(QUERIES)


def test_cli_everyday_refuses_bad_arguments(slice_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_EMBEDDING__PROVIDER", "hash")
    no_file = runner.invoke(app, ["bench", "recall", "--dataset", "locomo"])
    assert no_file.exit_code == 2 and "needs the dataset file" in no_file.stderr
    limited = runner.invoke(app, ["bench", "recall", "--dataset", "everyday", "--limit-conversations", "1"])
    assert limited.exit_code == 2 and "locomo only" in limited.stderr
    broken = slice_path.with_name("broken.json")
    raw = json.loads(slice_path.read_text(encoding="utf-8"))
    raw["queries"][0]["expected"] = ["f999"]
    broken.write_text(json.dumps(raw), encoding="utf-8")
    refused = runner.invoke(app, ["bench", "recall", "--dataset", "everyday", str(broken)])
    assert refused.exit_code == 2 and "f999" in refused.stderr
