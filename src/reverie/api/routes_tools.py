"""The agent tools over HTTP: ``GET /api/memory/agents/{agent_id}/tools`` lists them (name, description,
JSON Schema of the arguments, the scope a caller needs), ``POST …/tools/{name}`` calls one.

A call answers 200 with the tool's result whether the tool succeeded or refused (``is_error``: the refusal
is for the model to read, as MCP answers it). The HTTP statuses are for the caller: 404 for a tool that does
not exist, 403 when the key lacks the tool's scope for this agent, 422 for a body that is not the call shape.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import ReadAgent, require_user, tool_permitted
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND, Forbidden
from reverie.api.schemas import Flag, RequestModel, ValueOut
from reverie.errors import NotFound
from reverie.tools import ToolContext, ToolRegistry

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}/tools", tags=["tools"], responses=COMMON_ERRORS, route_class=AgentRoute
)


class ToolSpecOut(ValueOut):
    name: str
    description: str
    input_schema: dict[str, Any] = Field(description="JSON Schema (Draft 2020-12) of the arguments")
    scope: str = Field(description="the scope a key needs to call it")


class ToolCallIn(RequestModel):
    arguments: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments")
    user_id: str | None = None
    session_id: str | None = None
    namespace: str | None = Field(None, description="the own working-memory namespace (default session/{session_id})")
    background: Flag = Field(False, description="a subagent or worker")


class ToolResultOut(ValueOut):
    text: str = Field(description="for the model")
    data: dict[str, Any] = Field(description="plain JSON for programs; data.error on a refusal")
    is_error: bool


def _registry(request: Request) -> ToolRegistry:
    registry: ToolRegistry = request.app.state.tools
    return registry


@router.get("", response_model=list[ToolSpecOut], summary="List the tools")
def list_tools(request: Request, agent: ReadAgent) -> list[ToolSpecOut]:
    """The tools the agent may call, each with the scope a key needs for it."""
    return [ToolSpecOut.model_validate(s) for s in _registry(request).specs(agent)]


@router.post("/{name}", response_model=ToolResultOut, responses=NOT_FOUND, summary="Call a tool")
def call_tool(
    request: Request, agent: ReadAgent, name: Annotated[str, Path(description="the tool's name")], body: ToolCallIn
) -> ToolResultOut:
    """Run the tool for the agent (scoped further by ``user_id`` / ``session_id``) and answer its result."""
    registry = _registry(request)
    spec = registry.spec(name)
    if spec is None:
        raise NotFound(f"no tool {name[:80]!r}; GET the tools listing for the names")
    if not tool_permitted(request, spec.scope, agent):
        raise Forbidden(f"{spec.name} needs the {spec.scope} scope for agent {agent!r}")
    require_user(request, body.user_id)
    context = ToolContext(
        agent_id=agent,
        user_id=body.user_id,
        session_id=body.session_id,
        namespace=body.namespace,
        background=body.background,
    )
    return ToolResultOut.model_validate(registry.call(spec.name, body.arguments, context))
