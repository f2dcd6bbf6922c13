"""The MCP server over the tool registry: ``tools/list`` and ``tools/call`` for whoever is calling, and the
stdio transport.

The SDK's low-level ``Server`` takes one handler per method; both handlers here ask ``identify`` who the
request is for, then the registry. The registry and the engine are synchronous (SQLite), so every call runs
in a worker thread and the event loop keeps serving other requests meanwhile.

Start-up: over stdio the server answers ``initialize`` before the engine is open. ``ToolServer.deferred`` takes
an ``Opening`` that another thread fills once the store is open and the registry built; a request that comes
first waits for it in its worker thread. The tool registry (jsonschema, every service) is imported by that
thread, not by this module.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from reverie import __version__
from reverie.core.text import preview
from reverie.types import ApiKey

if TYPE_CHECKING:
    from reverie.keys.service import ApiKeys
    from reverie.tools import ToolRegistry, ToolResult, ToolSpec


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request is for: the agent whose memory the tools work in, and the API key that made the
    request. ``key`` None: no key was asked for (stdio, or HTTP with ``--no-auth``), every tool is open."""

    agent_id: str
    key: ApiKey | None = None


Identify = Callable[[ServerRequestContext[Any, Any]], Caller]
Parts = Callable[[], "tuple[ToolRegistry, ApiKeys]"]


class Opening:
    """The registry and the keys of an engine another thread is opening: ``get`` waits for them. (An opening
    that fails ends the process: ``reverie mcp`` reports it on stderr and exits.)"""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._parts: tuple[ToolRegistry, ApiKeys] | None = None

    def open(self, registry: ToolRegistry, keys: ApiKeys) -> None:
        self._parts = (registry, keys)
        self._done.set()

    def get(self) -> tuple[ToolRegistry, ApiKeys]:
        self._done.wait()
        assert self._parts is not None  # set before the event
        return self._parts


class ToolServer:
    """The registry's tools as an MCP server (``.server``, the SDK's low-level ``Server``).

    ``identify`` maps a request to its ``Caller``: a constant over stdio, the request's key over HTTP
    (``reverie.mcp.http.http_caller``).
    """

    def __init__(self, registry: ToolRegistry, keys: ApiKeys, identify: Identify) -> None:
        self._setup(lambda: (registry, keys), identify)

    @classmethod
    def deferred(cls, opening: Opening, identify: Identify) -> ToolServer:
        """A server that answers before the engine is open: each request first waits for ``opening``."""
        tools = cls.__new__(cls)
        tools._setup(opening.get, identify)
        return tools

    def _setup(self, parts: Parts, identify: Identify) -> None:
        self._parts = parts
        self._identify = identify
        self.server: Server[Any] = Server(
            "reverie",
            version=__version__,
            title="Reverie",
            description="Long-term and working memory for an LLM agent.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def specs(self, caller: Caller) -> list[ToolSpec]:
        """The tools ``caller`` may call: the registry's for its agent, less those its key does not allow."""
        registry, _ = self._parts()
        return [s for s in registry.specs(caller.agent_id) if self._allows(caller, s)]

    def call(self, caller: Caller, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run one tool for ``caller``. Never raises for what a client sends: a refusal, bad arguments and a
        failure alike are an ``isError`` result (the registry's guarantee, plus the key's refusals)."""
        from reverie.tools import ToolContext

        registry, _ = self._parts()
        refused = self._refusal(caller, name)
        if refused is not None:
            return _result(refused)
        return _result(registry.call(name, arguments, ToolContext(agent_id=caller.agent_id)))

    def _allows(self, caller: Caller, spec: ToolSpec) -> bool:
        _, keys = self._parts()
        return caller.key is None or keys.allows(caller.key, spec.scope, caller.agent_id)

    def _refusal(self, caller: Caller, name: str) -> ToolResult | None:
        """The key's refusal of ``name``, or None. A keyless caller is never refused here: the registry
        answers unknown and withheld tools itself. A key may call only what its list could show."""
        from reverie.tools.base import error_result

        if caller.key is None:
            return None
        registry, _ = self._parts()
        spec = registry.spec(name)
        if spec is None:
            allowed = ", ".join(s.name for s in self.specs(caller))
            return error_result(f"unknown tool {preview(name, 80)!r}; the tools are: {allowed}", kind="unknown_tool")
        if not self._allows(caller, spec):
            return error_result(
                f"{name} needs the {spec.scope} scope, which this API key does not have", kind="forbidden"
            )
        return None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = self._identify(ctx)
        specs = await anyio.to_thread.run_sync(self.specs, caller)
        return types.ListToolsResult(tools=[_tool(s) for s in specs])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = self._identify(ctx)
        return await anyio.to_thread.run_sync(self.call, caller, params.name, params.arguments or {})


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema)


def _result(result: ToolResult) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        # Protocol versions up to 2025-11-25 allow only an object here, and an empty one says nothing.
        structured_content=result.data or None,
        is_error=result.is_error,
    )


async def serve_stdio(server: Server[Any], *, on_started: Callable[[], object] | None = None) -> None:
    """Serve one client on this process's stdin and stdout until it closes stdin, or SIGTERM / SIGINT.
    A tool call in progress finishes first (its thread is not abandoned), so the engine closes cleanly.
    ``on_started`` is called once the transport is up (the engine's opening starts there)."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_cancel_on_signal, tasks.cancel_scope)
        async with stdio_server() as (read_stream, write_stream):
            if on_started is not None:
                on_started()
            await server.run(read_stream, write_stream, server.create_initialization_options())
        tasks.cancel_scope.cancel()


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return
