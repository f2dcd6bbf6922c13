"""The pure grouping and thresholds of the execution-failure and tool-success passes, at every boundary."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reverie.core.execution_patterns import (
    Call,
    Run,
    Step,
    argument_shape,
    failure_patterns,
    group_runs,
    normalise,
    success_patterns,
    summarise_tools,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def runs(description: str, outcomes: str, *, skill: str | None = None, start: int = 0) -> list[Run]:
    """One run per character of ``outcomes`` ("s" success, "f" failure), an hour apart from ``start``."""
    return [
        Run(T0 + timedelta(hours=start + i), description, c == "s", (Step("pay", c == "s", None),), skill)
        for i, c in enumerate(outcomes)
    ]


def test_descriptions_group_case_and_space_insensitively() -> None:
    assert normalise("  Book a  flight.\n") == normalise("book a flight") == "book a flight"
    patterns = group_runs([*runs("Book a flight.", "ff"), *runs("book a  FLIGHT", "f", start=5), *runs("x", "s")])
    assert [(p.key, len(p.runs)) for p in patterns] == [("book a flight", 3), ("x", 1)]
    assert patterns[0].description == "book a  FLIGHT"  # the latest wording
    assert group_runs(runs("   ", "f")) == []


def test_failure_threshold_is_three_failures() -> None:
    two = group_runs(runs("a", "ffs"))
    three = group_runs(runs("a", "fff"))
    assert failure_patterns(two, since=None) == []
    assert [p.key for p in failure_patterns(three, since=None)] == ["a"]


def test_a_failure_pattern_needs_a_failure_newer_than_the_stamp() -> None:
    patterns = group_runs(runs("a", "fffs"))  # failures at +0h..+2h, the success at +3h
    assert failure_patterns(patterns, since=T0 + timedelta(hours=1, minutes=30))  # the +2h failure is new
    assert failure_patterns(patterns, since=T0 + timedelta(hours=2)) == []  # only the success is newer


def test_success_threshold_is_five_runs_above_eighty_percent() -> None:
    assert success_patterns(group_runs(runs("a", "ssssf"))) == []  # 5 runs at 80%: not above
    assert success_patterns(group_runs(runs("a", "ssss"))) == []  # 4 runs at 100%: too few
    flagged = success_patterns(group_runs(runs("a", "sssss", skill="s1")))
    assert [(p.key, p.success_rate, p.skills) for p in flagged] == [("a", 1.0, ("s1",))]
    assert success_patterns(group_runs(runs("a", "sssssssssf")))[0].success_rate == 0.9


def test_producing_skills_are_ordered_by_frequency() -> None:
    mixed = [*runs("a", "ff", skill="two"), *runs("a", "f", skill="one", start=3), *runs("a", "f", start=4)]
    assert group_runs(mixed)[0].skills == ("two", "one")


def test_argument_shapes_show_keys_and_types_never_values() -> None:
    shape = argument_shape({"query": "secret", "limit": 5, "x": 1.5, "f": True, "o": {}, "l": [], "n": None})
    assert shape == "{f: boolean, l: array, limit: integer, n: null, o: object, query: string, x: number}"
    assert "secret" not in shape
    assert argument_shape(None) == argument_shape({}) == "{}"


def test_tools_need_three_calls_and_a_new_one() -> None:
    calls = [
        Call(T0, "search", True, None, {"q": "a"}),
        Call(T0 + timedelta(hours=1), "search", False, "missing q", {}),
        Call(T0 + timedelta(hours=2), "search", True, None, {"q": "b"}),
        Call(T0, "rare", True),
        Call(T0 + timedelta(hours=1), "rare", False, "boom"),
    ]
    (search,) = summarise_tools(calls, since=None)
    assert (search.tool, search.calls, search.successes, search.new_calls) == ("search", 3, 2, 3)
    assert search.ok_shapes == ("{q: string}",) and search.failures == (("{}", "missing q"),)
    assert round(search.success_rate, 3) == 0.667
    assert [s.new_calls for s in summarise_tools(calls, since=T0 + timedelta(hours=1))] == [1]
    assert summarise_tools(calls, since=T0 + timedelta(hours=2)) == []  # nothing new: not shown
