"""`reverie bench latency`'s long-text row: 250-character turns saved and embedded beside the 15-word facts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from reverie.bench.latency import LONG_CHARS, run_latency, synthetic_turns
from reverie.cli import app
from reverie.errors import ValidationError

HASH = {"embedding": {"provider": "hash"}}


def test_synthetic_turns_are_chat_length_deterministic_and_distinct() -> None:
    turns = synthetic_turns(200, seed=3)
    assert turns == synthetic_turns(200, seed=3) and len(set(turns)) == 200
    assert all(LONG_CHARS - 40 <= len(t) <= LONG_CHARS for t in turns)
    assert all(not t.endswith(" ") for t in turns)


def test_the_latency_run_has_a_long_text_row_and_can_leave_it_out() -> None:
    report = run_latency([50], searches=3, warmup=0, long_texts=40, overrides=HASH)
    row = report.long_texts
    assert row is not None and row.n == 40 and row.texts == "250-character turns"
    assert row.save_rate and row.embed_rate and row.total_rate and row.model_rate and row.model_sample == 40
    assert 200 < row.mean_chars <= LONG_CHARS
    with pytest.raises(ValidationError):
        run_latency([50], long_texts=-1, overrides=HASH)


def test_the_cli_prints_and_emits_the_long_text_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_EMBEDDING__PROVIDER", "hash")
    args = ["bench", "latency", "--n", "30", "--searches", "2", "--warmup", "0", "--long-texts", "20"]
    printed = CliRunner().invoke(app, args)
    assert printed.exit_code == 0, printed.stdout
    assert "250-character turns" in printed.stdout and "15-word facts" in printed.stdout
    emitted = CliRunner().invoke(app, [*args[:-1], "0", "--json"])  # --long-texts 0: no such row
    assert emitted.exit_code == 0, emitted.stdout
    assert json.loads(emitted.stdout)["long_texts"] is None
