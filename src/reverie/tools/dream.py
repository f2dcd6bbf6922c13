"""The agent tools as the auto-dream calls them (``reverie.dream.passes.curation.DreamTools``): the engine's
tool registry, called as the dreaming agent from a background worker.

Invariant: this adapter decides nothing. The dream pass checks its allowlist before every call; the
registry validates, refuses what the agent's settings withhold and never raises for what a model sends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from reverie.tools.base import ToolContext, ToolResult, ToolSpec
from reverie.tools.registry import ToolRegistry
from reverie.tools.services import ToolServices


class DreamToolRunner:
    """The tools of one engine for its dream (one registry, made once)."""

    def __init__(self, rv: ToolServices) -> None:
        self._registry = ToolRegistry(rv)

    def describe(self, agent_id: str) -> Sequence[ToolSpec]:
        return self._registry.specs(agent_id)

    def call(self, agent_id: str, name: str, arguments: object) -> ToolResult:
        # A worker, not a live session: no session id, so saves and reads are the agent's own scope.
        ctx = ToolContext(agent_id=agent_id, background=True)
        # The model's arguments are whatever JSON it sent; the registry checks them (an object, then the schema).
        return self._registry.call(name, cast(Mapping[str, Any] | None, arguments), ctx)
