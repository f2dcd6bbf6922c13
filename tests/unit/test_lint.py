"""The pure parts of memory_lint: which specifics two texts disagree on, and confidence from an entry."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reverie.core.aging import ConfidenceParams, confidence
from reverie.core.coverage import DEFAULT_VOCABULARY, ROUTING_EXEMPT_CATEGORY
from reverie.memory.lint import LintFinding, LintReport, confidence_of, differing_specifics
from reverie.types import MemoryEntry, Scope, Tier

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _differ(newer: str, older: str, category: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return differing_specifics(newer, older, category=category, vocabulary=DEFAULT_VOCABULARY)


@pytest.mark.parametrize(
    ("newer", "older", "expected"),
    [
        ("Maya's flight leaves on May 5", "Maya's flight leaves on May 3", (("May 5",), ("May 3",))),
        ("The flight leaves on May 5, 2026", "The flight leaves on May 3, 2026", (("May 5, 2026",), ("May 3, 2026",))),
        ("Bob manages the Berlin office", "Alice manages the Berlin office", (("Bob",), ("Alice",))),
        ("The standup is at 10:00 in room 4B", "The standup is at 09:30 in room 4B", (("10:00",), ("09:30",))),
        ("We keep 4 spare keys", "We keep 3 spare keys", (("4",), ("3",))),
        ("Maya flies to Lisbon", "MAYA FLIES TO LISBON", ((), ())),  # shouting is not a new specific
        ("Maya flies to Lisbon from gate 12", "Maya flies to Lisbon", (("12",), ())),
    ],
)
def test_differing_specifics(newer: str, older: str, expected: tuple[tuple[str, ...], tuple[str, ...]]) -> None:
    assert _differ(newer, older) == expected


def test_numbers_do_not_differ_in_a_numeric_exempt_category() -> None:
    # Telemetry that moves every cycle: a changed number there is no contradiction.
    assert _differ("Route 4 wins", "Route 3 wins", category=ROUTING_EXEMPT_CATEGORY) == ((), ())


def _entry(count: int, last_seen: datetime) -> MemoryEntry:
    return MemoryEntry(
        id="0123456789ab",
        content="x",
        category="general",
        tags=(),
        tier=Tier.SEMANTIC,
        scope=Scope(),
        created_at=last_seen,
        last_seen_at=last_seen,
        reinforcement_count=count,
    )


def test_confidence_of_reads_observations_and_the_last_one() -> None:
    entry = _entry(3, NOW - timedelta(days=30))
    got = confidence_of(entry, 1, NOW)
    assert (got.supporting_sessions, got.last_support_at, got.contradictions) == (3, entry.last_seen_at, 1)
    assert got.value == confidence(supporting_sessions=3, last_support_at=entry.last_seen_at, contradictions=1, now=NOW)
    params = ConfidenceParams(ceiling=0.5)
    assert confidence_of(entry, 0, NOW, params).value <= 0.5


def test_confidence_of_is_monotone_and_bounded() -> None:
    base = _entry(2, NOW)
    assert confidence_of(replace(base, reinforcement_count=3), 0, NOW).value > confidence_of(base, 0, NOW).value
    assert confidence_of(base, 0, NOW + timedelta(days=90)).value < confidence_of(base, 0, NOW).value
    assert confidence_of(base, 2, NOW).value < confidence_of(base, 1, NOW).value < confidence_of(base, 0, NOW).value
    assert 0 < confidence_of(replace(base, reinforcement_count=10_000), 0, NOW).value <= 0.95


def test_a_report_lists_the_findings_involving_an_entry() -> None:
    one = LintFinding("aaaaaaaaaaaa", "bbbbbbbbbbbb", "travel", 0.9, "cosine", ("May 5",), ("May 3",))
    two = LintFinding("cccccccccccc", "aaaaaaaaaaaa", "travel", 0.8, "cosine", ("Porto",), ("Lisbon",))
    report = LintReport((one, two), examined=3, truncated=False)
    assert report.involving("aaaaaaaaaaaa") == (one, two)
    assert report.involving("bbbbbbbbbbbb") == (one,) and report.involving("dddddddddddd") == ()
