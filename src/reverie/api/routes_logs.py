"""The execution log and the tool-call log over HTTP: ``/api/memory/agents/{agent_id}/executions`` and
``…/tool-calls`` (seed 001's wisp-executions and tool-call logs). ``POST`` appends one record (a write scope),
``GET`` lists the agent's records of the last ``days`` (14 by default), newest first (a read scope).

The logs are append-only: no record can be changed or deleted here (the dream's log retention caps them).
Every call works in the path agent's records only; another agent's are simply not there.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field, field_validator

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS
from reverie.api.schemas import Flag, Number, RequestModel, ValueOut
from reverie.core.execution_patterns import WINDOW_DAYS, Step
from reverie.skills.activity_logs import (
    MAX_DESCRIPTION_CHARS,
    MAX_ERROR_CHARS,
    MAX_STEP_NAME_CHARS,
    MAX_STEPS,
    MAX_TOOL_CHARS,
)
from reverie.skills.inputs import MAX_LIST_LIMIT, MAX_NAME_CHARS

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}", tags=["execution and tool-call logs"], responses=COMMON_ERRORS,
    route_class=AgentRoute,
)  # fmt: skip
Days = Annotated[float, Query(gt=0, le=36_525, description=f"look back this many days (default: {WINDOW_DAYS:g})")]
Limit = Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="at most this many")]


class StepIo(RequestModel):
    name: str = Field(min_length=1, max_length=MAX_STEP_NAME_CHARS, description="the step")
    ok: Flag = Field(description="whether the step succeeded")
    error: str | None = Field(None, max_length=MAX_ERROR_CHARS, description="why it failed")


class ExecutionIn(RequestModel):
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS, description="what was attempted")
    success: Flag = Field(description="whether the execution as a whole succeeded")
    steps: list[StepIo] = Field(default_factory=list, max_length=MAX_STEPS, description="its steps, in order")
    session_id: str | None = Field(None, min_length=1, max_length=200, description="the session it ran in")
    skill: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS, description="the skill that planned it")
    error: str | None = Field(None, max_length=MAX_ERROR_CHARS, description="why it failed")


class ExecutionOut(ValueOut):
    at: datetime
    agent_id: str
    description: str
    success: bool
    steps: list[dict[str, Any]]
    session_id: str | None
    skill: str | None
    error: str | None

    @field_validator("steps", mode="before")
    @classmethod
    def _plain_steps(cls, steps: Any) -> Any:
        # A step is a value (name, ok, error); the answer shows each as a plain object of those fields.
        return [dataclasses.asdict(s) if isinstance(s, Step) else s for s in steps]


@router.post("/executions", status_code=201, response_model=ExecutionOut, summary="Log an execution")
def record_execution(rv: Engine, agent: WriteAgent, body: ExecutionIn) -> ExecutionOut:
    """Append one multi-step execution to the agent's execution log."""
    record = rv.executions.record(
        agent,
        body.description,
        body.success,
        steps=[s.model_dump() for s in body.steps],
        session_id=body.session_id,
        skill=body.skill,
        error=body.error,
    )
    return ExecutionOut.model_validate(record)


@router.get("/executions", response_model=list[ExecutionOut], summary="List executions")
def list_executions(rv: Engine, agent: ReadAgent, days: Days = WINDOW_DAYS, limit: Limit = 100) -> list[ExecutionOut]:
    """The agent's executions of the last ``days``, newest first."""
    return [ExecutionOut.model_validate(r) for r in rv.executions.list(agent, days=days, limit=limit)]


class ToolCallIn(RequestModel):
    tool: str = Field(min_length=1, max_length=MAX_TOOL_CHARS, description="the tool's name")
    ok: Flag = Field(description="whether the call succeeded")
    session_id: str | None = Field(None, min_length=1, max_length=200, description="the session it ran in")
    error: str | None = Field(None, max_length=MAX_ERROR_CHARS, description="why it failed")
    arguments: dict[str, Any] | None = Field(None, description="the call's arguments (a JSON object, 16 KB at most)")
    duration_ms: Number | None = Field(None, ge=0, description="how long it took, in milliseconds")


class ToolCallOut(ValueOut):
    at: datetime
    agent_id: str
    tool: str
    ok: bool
    session_id: str | None
    error: str | None
    arguments: dict[str, Any] | None
    duration_ms: float | None


@router.post("/tool-calls", status_code=201, response_model=ToolCallOut, summary="Log a tool call")
def record_tool_call(rv: Engine, agent: WriteAgent, body: ToolCallIn) -> ToolCallOut:
    """Append one tool call to the agent's tool-call log (the agent tools served here are logged already)."""
    record = rv.tool_calls.record(
        agent,
        body.tool,
        body.ok,
        session_id=body.session_id,
        error=body.error,
        arguments=body.arguments,
        duration_ms=body.duration_ms,
    )
    return ToolCallOut.model_validate(record)


@router.get("/tool-calls", response_model=list[ToolCallOut], summary="List tool calls")
def list_tool_calls(
    rv: Engine,
    agent: ReadAgent,
    days: Days = WINDOW_DAYS,
    tool: Annotated[str | None, Query(min_length=1, max_length=MAX_TOOL_CHARS, description="only this tool")] = None,
    limit: Limit = 100,
) -> list[ToolCallOut]:
    """The agent's tool calls of the last ``days``, newest first."""
    return [ToolCallOut.model_validate(r) for r in rv.tool_calls.list(agent, days=days, tool=tool, limit=limit)]
