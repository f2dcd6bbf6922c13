"""``reverie bench load``, in short: a real ``reverie serve`` subprocess driven by two clients for a second, then
the same mix through the library; the report's shape, and nothing acknowledged lost."""

from __future__ import annotations

import pytest

from reverie.bench.load import format_report, run_load
from reverie.bench.load_drive import MIX, OPS
from reverie.errors import ValidationError


@pytest.mark.slow  # three processes start (the parent, two workers): a few seconds on an idle machine
def test_a_short_run_reports_every_operation_and_loses_nothing() -> None:
    """Served by two processes (``reverie serve --workers 2``): both start, and what either acknowledged is
    found afterwards."""
    report = run_load(clients=2, seconds=0.5, agents=1, workers=2, settings={"embedding": {"provider": "hash"}})
    assert report.backend == "sqlite"
    assert (report.workers, report.server_processes) == (2, 2)
    assert report.seeded_entries > 150  # the everyday facts
    assert report.embedder is not None and report.embedder.startswith("hash")
    assert sum(report.mix.values()) == 100
    for run, loss in ((report.api, report.api_loss), (report.library, report.library_loss)):
        assert run is not None and loss is not None
        assert run.clients == 2
        assert [op.op for op in run.ops] == list(OPS)
        assert run.requests == sum(op.count for op in run.ops) > 0
        assert run.errors == 0, run.first_errors
        assert run.throughput > 0
        assert loss.acknowledged == run.acknowledged_saves
        assert (loss.missing_by_id, loss.missing_by_search) == (0, 0), loss.examples
    assert report.ratio is not None and report.ratio > 0
    text = format_report(report)
    assert "API / library throughput" in text
    assert all(op in text for op in MIX)


@pytest.mark.parametrize(
    ("option", "value"), [("clients", 0), ("seconds", 0.0), ("agents", 0), ("workers", 0), ("backend", "mysql")]
)
def test_bad_options_are_refused_before_any_work(option: str, value: object) -> None:
    with pytest.raises(ValidationError):
        run_load(**{option: value})  # type: ignore[arg-type]
