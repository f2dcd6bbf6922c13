"""Reverie as an MCP server: the agent tools of ``reverie.tools`` over stdio or streamable HTTP.

Invariants:
- The tool list is the registry's, asked per request: nothing here names a tool.
- A caller is an agent id and, over HTTP with keys, the API key that made the request. A tool the key's
  scopes do not allow is absent from the list and refused on call; a caller without a key (stdio, whose
  parent process owns the pipe, or HTTP with ``--no-auth`` on loopback) may use every tool.
- A tool's failure is a result with ``isError`` (the model reads it and corrects itself), never a protocol
  error; the server keeps serving.
- Nothing here writes to stdout: on stdio it is the transport. Logs go to stderr.

This package is ``reverie.mcp``; the SDK is the top-level ``mcp``. Every import here is absolute, so
``import mcp`` always means the SDK.

Each name loads its module on first access (PEP 562 ``__getattr__``): the stdio server (``reverie.mcp.server``)
does not pay for the HTTP transport (Starlette, uvicorn, the SDK's auth), nor the HTTP transport for stdio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.types.lazy import exports as _exports

if TYPE_CHECKING:
    from reverie.api.serving import is_loopback
    from reverie.mcp.http import KeyAuth, http_app, http_caller, serve_http
    from reverie.mcp.server import Caller, Opening, ToolServer, serve_stdio

_LAZY = {
    "is_loopback": "reverie.api.serving",
    "KeyAuth": "reverie.mcp.http",
    "http_app": "reverie.mcp.http",
    "http_caller": "reverie.mcp.http",
    "serve_http": "reverie.mcp.http",
    "Caller": "reverie.mcp.server",
    "Opening": "reverie.mcp.server",
    "ToolServer": "reverie.mcp.server",
    "serve_stdio": "reverie.mcp.server",
}

__all__ = [
    "Caller",
    "KeyAuth",
    "Opening",
    "ToolServer",
    "http_app",
    "http_caller",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]


__getattr__, __dir__ = _exports("reverie.mcp", _LAZY, globals())
