"""The execution log and the tool-call log (seed 001's wisp-executions and tool-call logs): append-only
telemetry, kept in the store (``logs.StoredLog``: ``Store.logs``), that the learning passes of the dream read
through a window (14 days by default).

- ``ExecutionLog`` (the ``executions`` log): one record per logged multi-step execution: what was attempted,
  whether it succeeded, its steps (name, ok, error), the skill whose plan it ran, the error.
- ``ToolCallLog`` (the ``tool-calls`` log): one record per tool call: the tool, ok, the error, the arguments
  (a JSON object, size-capped) and the duration.

Invariants:
- Every argument is validated before the store is touched; a refused call writes nothing (``ValidationError``
  naming the field).
- Both logs are shared by every agent, process and host of a store; each record names its agent and every
  read filters by it, so an agent never sees another's records.
- Reads never fail on a bad record: one that is not what this module writes (hand-made, imported from an
  edited file) is skipped. The logs are capped by the dream's log retention (the engine registers them).
- Time comes from the clock: ``at`` is the clock's now at the append.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.execution_patterns import WINDOW_DAYS, Call, Run, Step
from reverie.errors import ValidationError
from reverie.logs import StoredLog
from reverie.skills import inputs

MAX_DESCRIPTION_CHARS: Final = 2000
MAX_STEPS: Final = 200
MAX_STEP_NAME_CHARS: Final = 200
MAX_ERROR_CHARS: Final = 4000
MAX_TOOL_CHARS: Final = 200
MAX_ARGUMENT_BYTES: Final = 16_384
MAX_DURATION_MS: Final = 86_400_000.0  # a day
MAX_DAYS: Final = 36_525.0
_R = TypeVar("_R", "ExecutionRecord", "ToolCallRecord")


@dataclass(frozen=True, slots=True)
class ExecutionRecord:
    """One logged execution. ``steps`` are ``Step`` values (name, ok, error)."""

    at: datetime
    agent_id: str
    description: str
    success: bool
    steps: tuple[Step, ...] = ()
    session_id: str | None = None
    skill: str | None = None
    error: str | None = None

    def run(self) -> Run:
        return Run(self.at, self.description, self.success, self.steps, self.skill, self.error)

    def as_record(self) -> dict[str, Any]:
        steps = [{"name": s.name, "ok": s.ok, **({"error": s.error} if s.error else {})} for s in self.steps]
        record: dict[str, Any] = {
            "at": self.at.isoformat(),
            "agent": self.agent_id,
            "session_id": self.session_id,
            "description": self.description,
            "success": self.success,
            "steps": steps,
            "skill": self.skill,
            "error": self.error,
        }
        return record


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One logged tool call."""

    at: datetime
    agent_id: str
    tool: str
    ok: bool
    session_id: str | None = None
    error: str | None = None
    arguments: dict[str, Any] | None = None
    duration_ms: float | None = None

    def call(self) -> Call:
        return Call(self.at, self.tool, self.ok, self.error, self.arguments)

    def as_record(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "agent": self.agent_id,
            "session_id": self.session_id,
            "tool": self.tool,
            "ok": self.ok,
            "error": self.error,
            "arguments": self.arguments,
            "duration_ms": self.duration_ms,
        }


# -- validation ---------------------------------------------------------------------------------------------


def _text(value: object, field: str, max_chars: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} must be a non-empty string", field=field)
    if "\x00" in value:
        raise ValidationError(f"{field} contains a NUL character", field=field)
    if len(value) > max_chars:
        raise ValidationError(f"{field} is {len(value):,} characters; the maximum is {max_chars:,}", field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{field} is not valid Unicode text", field=field) from None
    return value


def _optional_text(value: object, field: str, max_chars: int) -> str | None:
    return None if value is None else _text(value, field, max_chars)


def _session(value: object) -> str | None:
    return None if value is None else validate.identifier(value, name="session_id")


def _steps(value: object) -> tuple[Step, ...]:
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ValidationError("steps must be a list of {name, ok, error?} objects", field="steps")
    if len(value) > MAX_STEPS:
        raise ValidationError(f"steps has {len(value)} items; the maximum is {MAX_STEPS}", field="steps")
    out = []
    for i, raw in enumerate(value):
        if isinstance(raw, Step):
            raw = {"name": raw.name, "ok": raw.ok, "error": raw.error}
        if not isinstance(raw, Mapping) or "name" not in raw or "ok" not in raw:
            raise ValidationError(f"steps[{i}] must be an object with name and ok", field="steps")
        unknown = set(raw) - {"name", "ok", "error"}
        if unknown:
            raise ValidationError(f"steps[{i}] has unknown keys {sorted(map(str, unknown))}", field="steps")
        name = _text(raw["name"], f"steps[{i}].name", MAX_STEP_NAME_CHARS)
        ok = validate.flag(raw["ok"], name=f"steps[{i}].ok")
        error = _optional_text(raw.get("error"), f"steps[{i}].error", MAX_ERROR_CHARS)
        out.append(Step(name, ok, error))
    return tuple(out)


def tool_arguments(value: object) -> dict[str, Any] | None:
    """A tool call's arguments: None or a JSON object of at most ``MAX_ARGUMENT_BYTES``."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValidationError("arguments must be a JSON object with string keys", field="arguments")
    encoded = validate.json_text(value, field="arguments").encode("utf-8")  # the one check of caller JSON
    if len(encoded) > MAX_ARGUMENT_BYTES:
        raise ValidationError(f"arguments are larger than {MAX_ARGUMENT_BYTES:,} bytes", field="arguments")
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


def placeholder_arguments(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value``'s keys with each value replaced by an empty one of its JSON type ("", 0, 0.0, false, [], {},
    null): what the engine logs of its own tool calls, so the log keeps the calls' shapes (what tool-success
    learning reads) and never a copy of the memories, queries and keys they carried."""
    placeholders: list[tuple[type | tuple[type, ...], Any]] = [
        (bool, False),
        (int, 0),
        (float, 0.0),
        (str, ""),
        ((list, tuple), []),
        (Mapping, {}),
    ]
    out: dict[str, Any] = {}
    for key in [k for k in value if isinstance(k, str)][:50]:
        item = value[key]
        out[key[:100].replace("\x00", "")] = next(
            (empty for kind, empty in placeholders if isinstance(item, kind)), None
        )
    return out


def _duration(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_DURATION_MS:
        raise ValidationError(f"duration_ms must be a number from 0 to {MAX_DURATION_MS:.0f}", field="duration_ms")
    return float(value)


def _days(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_DAYS:
        raise ValidationError(f"days must be a number above 0 and at most {MAX_DAYS:.0f}", field="days")
    return float(value)


def _moment(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


# -- the logs -------------------------------------------------------------------------------------------------
class _WindowedLog:
    """What both logs share: the stored log, the clock, and reading one agent's records since a moment."""

    def __init__(self, log: StoredLog, clock: Clock) -> None:
        self.log = log
        self._clock = clock

    def _since(self, days: object) -> datetime:
        return self._clock.now() - timedelta(days=_days(days))

    def _raw(self, agent_id: str, since: datetime | None) -> Iterator[tuple[datetime, dict[str, Any]]]:
        for row in self.log.rows(agent_id=agent_id, since=since):
            record = row.record
            at = _moment(record.get("at"))
            if at is None or record.get("agent") != agent_id or (since is not None and at < since):
                continue
            yield at, record


class ExecutionLog(_WindowedLog):
    """The execution log of a store (all agents)."""

    def record(
        self,
        agent_id: str,
        description: str,
        success: bool,
        *,
        steps: Sequence[Mapping[str, Any] | Step] | None = None,
        session_id: str | None = None,
        skill: str | None = None,
        error: str | None = None,
    ) -> ExecutionRecord:
        """Append one execution; returns it as stored. Raises ``ValidationError`` (nothing written)."""
        record = ExecutionRecord(
            at=self._clock.now(),
            agent_id=validate.agent_id(agent_id),
            description=_text(description, "description", MAX_DESCRIPTION_CHARS),
            success=validate.flag(success, name="success"),
            steps=_steps(steps),
            session_id=_session(session_id),
            skill=None if skill is None else inputs.name(skill, field="skill"),
            error=_optional_text(error, "error", MAX_ERROR_CHARS),
        )
        self.log.append(record.agent_id, record.session_id, record.at, record.as_record())
        return record

    def list(self, agent_id: str, *, days: float = WINDOW_DAYS, limit: int = 100) -> list[ExecutionRecord]:
        """The agent's executions of the last ``days``, newest first, at most ``limit`` (1 to 1000)."""
        agent_id = validate.agent_id(agent_id)
        since, limit = self._since(days), validate.limit(limit)
        return _newest_first(self.window(agent_id, since))[:limit]

    def window(self, agent_id: str, since: datetime) -> builtins.list[ExecutionRecord]:
        """Every execution of the agent at or after ``since``, oldest first (the dream pass's read)."""
        out = []
        for at, raw in self._raw(agent_id, since):
            try:
                out.append(
                    ExecutionRecord(
                        at=at,
                        agent_id=agent_id,
                        description=_text(raw.get("description"), "description", MAX_DESCRIPTION_CHARS),
                        success=validate.flag(raw.get("success"), name="success"),
                        steps=_steps(raw.get("steps")),
                        session_id=_session(raw.get("session_id")),
                        skill=None if raw.get("skill") is None else inputs.name(raw.get("skill"), field="skill"),
                        error=_optional_text(raw.get("error"), "error", MAX_ERROR_CHARS),
                    )
                )
            except ValidationError:
                continue  # not a record this module wrote: skipped, as a torn line is
        return sorted(out, key=lambda r: r.at)


class ToolCallLog(_WindowedLog):
    """The tool-call log of a store (all agents)."""

    def record(
        self,
        agent_id: str,
        tool: str,
        ok: bool,
        *,
        session_id: str | None = None,
        error: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        duration_ms: float | None = None,
    ) -> ToolCallRecord:
        """Append one tool call; returns it as stored. Raises ``ValidationError`` (nothing written)."""
        record = ToolCallRecord(
            at=self._clock.now(),
            agent_id=validate.agent_id(agent_id),
            tool=_tool(tool),
            ok=validate.flag(ok, name="ok"),
            session_id=_session(session_id),
            error=_optional_text(error, "error", MAX_ERROR_CHARS),
            arguments=tool_arguments(arguments),
            duration_ms=_duration(duration_ms),
        )
        self.log.append(record.agent_id, record.session_id, record.at, record.as_record())
        return record

    def list(
        self, agent_id: str, *, days: float = WINDOW_DAYS, tool: str | None = None, limit: int = 100
    ) -> list[ToolCallRecord]:
        """The agent's tool calls of the last ``days`` (of one tool), newest first, at most ``limit``."""
        agent_id = validate.agent_id(agent_id)
        since, limit = self._since(days), validate.limit(limit)
        wanted = None if tool is None else _tool(tool)
        found = [r for r in self.window(agent_id, since) if wanted is None or r.tool == wanted]
        return _newest_first(found)[:limit]

    def window(self, agent_id: str, since: datetime) -> builtins.list[ToolCallRecord]:
        """Every tool call of the agent at or after ``since``, oldest first (the dream pass's read)."""
        out = []
        for at, raw in self._raw(agent_id, since):
            try:
                out.append(
                    ToolCallRecord(
                        at=at,
                        agent_id=agent_id,
                        tool=_tool(raw.get("tool")),
                        ok=validate.flag(raw.get("ok"), name="ok"),
                        session_id=_session(raw.get("session_id")),
                        error=_optional_text(raw.get("error"), "error", MAX_ERROR_CHARS),
                        arguments=_stored_arguments(raw.get("arguments")),
                        duration_ms=_duration(raw.get("duration_ms")),
                    )
                )
            except ValidationError:
                continue
        return sorted(out, key=lambda r: r.at)


def _stored_arguments(value: object) -> dict[str, Any] | None:
    """A logged call's arguments as read back: the writer checked them (``tool_arguments``), so a read only
    makes sure the line holds an object or nothing (a hand-edited line with anything else is skipped)."""
    if value is None or isinstance(value, dict):
        return value
    raise ValidationError("arguments must be an object", field="arguments")


def _newest_first(records: builtins.list[_R]) -> builtins.list[_R]:
    """Newest first; records of the same instant in reverse order of appending (the later append first)."""
    return sorted(reversed(records), key=lambda r: r.at, reverse=True)


def _tool(value: object) -> str:
    return validate.identifier(_text(value, "tool", MAX_TOOL_CHARS), name="tool")
