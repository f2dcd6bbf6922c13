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
"""

from reverie.api.serving import is_loopback
from reverie.mcp.http import KeyAuth, http_app, http_caller, serve_http
from reverie.mcp.server import Caller, ToolServer, serve_stdio

__all__ = ["Caller", "KeyAuth", "ToolServer", "http_app", "http_caller", "is_loopback", "serve_http", "serve_stdio"]
