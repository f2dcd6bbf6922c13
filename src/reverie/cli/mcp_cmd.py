"""``reverie mcp``: the agent tools as an MCP server, over stdio (one agent, no keys) or streamable HTTP
(API keys decide agent and tools).

The MCP SDK takes more than a second to import, so it is imported only when this command runs.
"""

from __future__ import annotations

import logging
import sys
from enum import StrEnum

import typer

import reverie
from reverie.cli.common import AgentOption, engine, err_console, fail
from reverie.core import validate
from reverie.errors import ValidationError


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def mcp(
    ctx: typer.Context,
    agent: str = AgentOption,
    transport: Transport = typer.Option(
        Transport.stdio, "--transport", "-t", help="stdio (a client starts this command) or http (streamable HTTP)."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP: the address to listen on."),
    port: int = typer.Option(4546, "--port", help="HTTP: the port to listen on."),
    no_auth: bool = typer.Option(
        False, "--no-auth", help="HTTP: accept requests without an API key (loopback addresses only)."
    ),
) -> None:
    """Serve the memory tools over MCP. stdio: for the agent --agent, to the process that started it.
    http: at http://HOST:PORT/mcp, each request with `Authorization: Bearer <key>` (`reverie keys create`);
    the key decides the agent and which tools it sees."""
    _log_to_stderr()
    # Imported here: the SDK is slow to import and no other command needs it.
    from reverie.mcp import is_loopback

    try:
        agent = validate.identifier(agent, name="agent")
    except ValidationError as exc:
        fail(exc)
    if transport is Transport.http and no_auth and not is_loopback(host):
        message = f"--no-auth is allowed only on a loopback address (127.0.0.1, ::1, localhost), not {host}"
        fail(ValidationError(message, field="host"))
    with engine(ctx, background=True, verify=True) as rv:  # a damaged store is refused before any write
        if transport is Transport.stdio:
            _serve_stdio(rv, agent)
        else:
            _serve_http(rv, agent, host, port, auth=not no_auth)


def _serve_stdio(rv: reverie.Reverie, agent: str) -> None:
    import anyio

    from reverie.mcp import Caller, ToolServer, serve_stdio
    from reverie.tools import ToolRegistry

    caller = Caller(agent)
    tools = ToolServer(ToolRegistry(rv), rv.keys, lambda _ctx: caller)
    err_console.print(f"reverie mcp: serving agent {agent!r} on stdio", markup=False, soft_wrap=True)
    anyio.run(serve_stdio, tools.server)


def _serve_http(rv: reverie.Reverie, agent: str, host: str, port: int, *, auth: bool) -> None:
    from reverie.mcp import ToolServer, http_app, http_caller, serve_http
    from reverie.tools import ToolRegistry

    tools = ToolServer(ToolRegistry(rv), rv.keys, http_caller)
    app = http_app(tools, rv.keys, agent, auth=auth, host=host)
    shown = f"[{host}]" if ":" in host else host
    if not auth:
        err_console.print(
            f"[bold red]WARNING: --no-auth: every process on this machine can read and write the memory of any "
            f"agent through http://{shown}:{port}/mcp without a key.[/]",
            soft_wrap=True,
        )
    elif not rv.keys.has_keys():
        err_console.print(
            "[yellow]warning:[/] no API key exists yet: create one with `reverie keys create`", soft_wrap=True
        )
    how = "each request's API key decides the agent" if auth else "no keys: X-Reverie-Agent picks the agent"
    err_console.print(
        f"reverie mcp: streamable HTTP on http://{shown}:{port}/mcp; {how} (default {agent!r})",
        markup=False,
        soft_wrap=True,
    )
    if not serve_http(app, host, port):
        fail(f"could not serve on {shown}:{port}")


def _log_to_stderr() -> None:
    """stdout is the stdio transport: every log line goes to stderr."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("reverie.mcp").setLevel(logging.INFO)
