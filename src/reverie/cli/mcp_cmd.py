"""``reverie mcp``: the agent tools as an MCP server, over stdio (one agent, no keys) or streamable HTTP
(API keys decide agent and tools).

The MCP SDK takes more than a second to import, so it is imported only when this command runs.

Start-up over stdio: the server answers ``initialize`` first; the engine opens on a thread meanwhile (the store
checked, then the tool registry built), and the embedding model and the agent's indexes warm after it. A
request that comes before the engine is open waits for it; a store that cannot be opened is reported on stderr
and the process exits 1, as before. Over HTTP the store is opened before listening, as ``reverie serve`` does,
and warmed after.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from contextlib import ExitStack
from enum import StrEnum
from typing import TYPE_CHECKING, NoReturn

import typer

import reverie
from reverie.cli.common import AgentOption, engine, err_console, fail
from reverie.errors import ValidationError

if TYPE_CHECKING:
    from reverie.mcp.server import Opening


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
    from reverie.core import validate

    try:
        agent = validate.identifier(agent, name="agent")
    except ValidationError as exc:
        fail(exc)
    if transport is Transport.stdio:
        _serve_stdio(ctx, agent)
        return
    from reverie.api.serving import is_loopback

    if no_auth and not is_loopback(host):
        message = f"--no-auth is allowed only on a loopback address (127.0.0.1, ::1, localhost), not {host}"
        fail(ValidationError(message, field="host"))
    with engine(ctx, background=True, verify=True) as rv:  # a damaged store is refused before any write
        _serve_http(rv, agent, host, port, auth=not no_auth)


def _serve_stdio(ctx: typer.Context, agent: str) -> None:
    # Imported here: the SDK is slow to import and no other command needs it.
    import anyio

    from reverie.mcp.server import Caller, Opening, ToolServer, serve_stdio

    caller = Caller(agent)
    opening = Opening()
    tools = ToolServer.deferred(opening, lambda _ctx: caller)
    opener = _Opener(ctx, agent, opening)
    err_console.print(f"reverie mcp: serving agent {agent!r} on stdio", markup=False, soft_wrap=True)
    try:
        anyio.run(functools.partial(serve_stdio, tools.server, on_started=opener.start))
    finally:
        opener.close()


class _Opener:
    """Opens the engine on its own thread while the stdio server already answers (a damaged store is refused
    before any write, as before), builds the tool registry, then warms the model and the agent's indexes.
    ``close`` (after serving, on the main thread) waits for it and closes the engine."""

    def __init__(self, ctx: typer.Context, agent: str, opening: Opening) -> None:
        self._ctx = ctx
        self._agent = agent
        self._opening = opening
        self._stack = ExitStack()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="reverie-mcp-open", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from reverie.engine.warmup import WarmUp
        from reverie.tools import ToolRegistry

        try:
            rv = self._stack.enter_context(engine(self._ctx, background=True, verify=True))
            self._opening.open(ToolRegistry(rv), rv.keys)
        except typer.Exit as exc:  # engine() has said why on stderr
            self._exit(exc.exit_code or 1)
        except BaseException:
            logging.getLogger("reverie.mcp").exception("reverie mcp could not open the store")
            self._exit(1)
        WarmUp(rv, [self._agent]).run()

    def _exit(self, code: int) -> NoReturn:
        """End the process now: the stdio transport is blocked reading stdin, which nothing can interrupt
        (it would wait for the client to close it), and no engine is left open to close."""
        self._stack.close()
        sys.stderr.flush()
        os._exit(code)

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()  # an opening or a warm-up in progress finishes before the engine closes
        self._stack.close()


def _serve_http(rv: reverie.Reverie, agent: str, host: str, port: int, *, auth: bool) -> None:
    from reverie.engine.warmup import SERVER_DELAY, WarmUp
    from reverie.mcp.http import http_app, http_caller, serve_http
    from reverie.mcp.server import ToolServer
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
    warm = WarmUp(rv, delay=SERVER_DELAY)
    try:
        served = serve_http(app, host, port, on_started=warm.start)
    finally:
        warm.join()  # the engine closes next: the warm-up must not search a closed store
    if not served:
        fail(f"could not serve on {shown}:{port}")


def _log_to_stderr() -> None:
    """stdout is the stdio transport: every log line goes to stderr."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("reverie.mcp").setLevel(logging.INFO)
