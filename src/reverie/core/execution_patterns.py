"""Pure grouping and thresholds of the learning passes that read the execution and tool-call logs (seed 001,
"Wisp failure analysis"; issue 10's tool-success learning). No I/O, no clock: the callers pass ``since``.

Rules:
- Executions are grouped by their normalised description (``normalise``: case-folded, whitespace collapsed,
  trailing punctuation dropped), so "Book a flight." and "book a  flight" are one pattern.
- A failure pattern is a group with at least ``FAILURE_MIN`` (3) failures in the window, at least one of them
  newer than ``since`` (new evidence; ``since`` None: every failure is new).
- A success pattern is a group with at least ``SUCCESS_MIN_RUNS`` (5) runs and a success rate strictly above
  ``SUCCESS_MIN_RATE`` (0.8): 5 runs at 80% is not one, 5 at 100% is, 4 at 100% is not.
- A tool is summarised when it has at least ``TOOL_MIN_CALLS`` (3) calls in the window and at least one newer
  than ``since``. Its samples show argument *shapes* (keys and JSON types), never argument values.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

WINDOW_DAYS = 14.0
FAILURE_MIN = 3
SUCCESS_MIN_RUNS = 5
SUCCESS_MIN_RATE = 0.8
TOOL_MIN_CALLS = 3
_SPACE = re.compile(r"\s+")
_TRAILING = ".!?;:, \t"


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """One logged multi-step execution as the passes see it."""

    at: datetime
    description: str
    success: bool
    steps: tuple[Step, ...] = ()
    skill: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Pattern:
    """A group of runs sharing a normalised description (``key``), oldest run first; ``description`` is the
    latest run's wording. ``skills``: the producing skills named by its runs, most frequent first."""

    key: str
    description: str
    runs: tuple[Run, ...]
    skills: tuple[str, ...]

    @property
    def failures(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if not r.success)

    @property
    def success_rate(self) -> float:
        return sum(1 for r in self.runs if r.success) / len(self.runs)

    def newest(self, failures_only: bool = False) -> datetime:
        runs = self.failures if failures_only else self.runs
        return max(r.at for r in runs)


def normalise(description: str) -> str:
    """The grouping key of an execution description."""
    return _SPACE.sub(" ", description).strip().rstrip(_TRAILING).casefold()


def group_runs(runs: Iterable[Run]) -> list[Pattern]:
    """Runs grouped by normalised description, groups in order of first appearance, runs oldest first."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        key = normalise(run.description)
        if key:
            groups.setdefault(key, []).append(run)
    patterns = []
    for key, members in groups.items():
        ordered = tuple(sorted(members, key=lambda r: r.at))
        counts = Counter(r.skill for r in ordered if r.skill)
        skills = tuple(name for name, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
        patterns.append(Pattern(key, ordered[-1].description, ordered, skills))
    return patterns


def failure_patterns(
    patterns: Sequence[Pattern], *, since: datetime | None, min_failures: int = FAILURE_MIN
) -> list[Pattern]:
    """The groups with at least ``min_failures`` failures, at least one of them newer than ``since``."""
    return [
        p
        for p in patterns
        if len(p.failures) >= min_failures and (since is None or p.newest(failures_only=True) > since)
    ]


def success_patterns(
    patterns: Sequence[Pattern], *, min_runs: int = SUCCESS_MIN_RUNS, min_rate: float = SUCCESS_MIN_RATE
) -> list[Pattern]:
    """The groups with at least ``min_runs`` runs and a success rate strictly above ``min_rate``."""
    return [p for p in patterns if len(p.runs) >= min_runs and p.success_rate > min_rate]


# -- tool calls -------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Call:
    """One logged tool call as the tool-success pass sees it."""

    at: datetime
    tool: str
    ok: bool
    error: str | None = None
    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolSummary:
    """One tool's calls in the window: counts, the share that succeeded, and up to ``samples`` distinct
    argument shapes of successful calls and (shape, error) pairs of failed ones, newest first."""

    tool: str
    calls: int
    successes: int
    new_calls: int
    ok_shapes: tuple[str, ...]
    failures: tuple[tuple[str, str], ...]

    @property
    def success_rate(self) -> float:
        return self.successes / self.calls if self.calls else 0.0


def argument_shape(arguments: Mapping[str, Any] | None) -> str:
    """The keys and JSON types of a call's arguments, keys sorted: ``{limit: integer, query: string}``."""
    if not arguments:
        return "{}"
    return "{" + ", ".join(f"{key}: {_json_type(arguments[key])}" for key in sorted(arguments)) + "}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, list | tuple) else "unknown"


def summarise_tools(
    calls: Iterable[Call], *, since: datetime | None, min_calls: int = TOOL_MIN_CALLS, samples: int = 3
) -> list[ToolSummary]:
    """The tools worth showing: at least ``min_calls`` calls, at least one newer than ``since``; by name."""
    by_tool: dict[str, list[Call]] = {}
    for call in calls:
        by_tool.setdefault(call.tool, []).append(call)
    out = []
    for tool in sorted(by_tool):
        members = sorted(by_tool[tool], key=lambda c: c.at, reverse=True)
        new = sum(1 for c in members if since is None or c.at > since)
        if len(members) < min_calls or new == 0:
            continue
        ok_shapes = list(dict.fromkeys(argument_shape(c.arguments) for c in members if c.ok))
        failed = list(dict.fromkeys((argument_shape(c.arguments), c.error or "") for c in members if not c.ok))
        out.append(
            ToolSummary(
                tool=tool,
                calls=len(members),
                successes=sum(1 for c in members if c.ok),
                new_calls=new,
                ok_shapes=tuple(ok_shapes[:samples]),
                failures=tuple(failed[:samples]),
            )
        )
    return out
