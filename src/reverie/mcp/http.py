"""Streamable HTTP: the SDK's ASGI app for the MCP endpoint (``/mcp``) behind API keys, served by uvicorn.

Invariants:
- ``KeyAuth`` resolves the ``Caller`` of every HTTP request before the SDK sees it, and refuses the request
  (401) without a live key (``Authorization: Bearer <key>``, or ``X-API-Key`` as the HTTP API accepts).
  The handlers read the caller from the request, so it is per request, never per session: a revoked key
  stops working on its next request.
- The agent is the key's. An admin key (no agent) acts for the agent in ``X-Reverie-Agent``, else the
  server's default agent; a header naming another agent than a key's own is refused (403), not ignored.
- A session belongs to the key that opened it: the SDK answers another key's request for it with 404.
- Without keys (``auth=False``, loopback only, enforced by the CLI) every request is a keyless caller for
  ``X-Reverie-Agent`` or the default agent.
- A refusal has the HTTP API's error shape (``{error, message, field, details}``, kinds ``unauthorized``,
  ``forbidden``, ``validation``) and a 401 or 403 also the RFC 6750 ``WWW-Authenticate: Bearer`` challenge
  (``error="invalid_token"`` / ``"insufficient_scope"`` and an ``error_description``), as OAuth clients read it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from reverie.api.errors import error_response
from reverie.api.serving import serve_until_signalled
from reverie.core import validate
from reverie.errors import ValidationError
from reverie.keys.service import ApiKeys
from reverie.mcp.server import Caller, ToolServer
from reverie.types import ApiKey

log = logging.getLogger("reverie.mcp")

CALLER_KEY = "reverie.caller"  # the ASGI scope entry KeyAuth sets and http_caller reads
AGENT_HEADER = "x-reverie-agent"
MCP_PATH = "/mcp"


class KeyAuth:
    """ASGI middleware: authenticate the bearer key of every HTTP request and put its ``Caller`` in the
    scope (``CALLER_KEY``); anything else (the lifespan) passes through."""

    def __init__(self, app: ASGIApp, keys: ApiKeys, default_agent: str, *, auth: bool = True) -> None:
        self._app = app
        self._keys = keys
        self._default_agent = default_agent
        self._auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            named = _agent_header(headers)
        except ValidationError as exc:
            await _refuse(422, "validation", str(exc), field="X-Reverie-Agent")(scope, receive, send)
            return
        if not self._auth:
            await self._app({**scope, CALLER_KEY: Caller(named or self._default_agent)}, receive, send)
            return
        secret = _secret(headers)
        key = None if secret is None else await anyio.to_thread.run_sync(self._keys.authenticate, secret)
        if key is None:
            message = "the API key is not valid" if secret else "an API key is required (Authorization: Bearer <key>)"
            await _refuse(401, "unauthorized", message, challenge="invalid_token" if secret else None)(
                scope, receive, send
            )
            return
        if key.agent_id is not None and named not in (None, key.agent_id):
            message = f"this key acts for agent {key.agent_id!r} only, not {named!r}"
            await _refuse(403, "forbidden", message, challenge="insufficient_scope")(scope, receive, send)
            return
        caller = Caller(key.agent_id or named or self._default_agent, key)
        await self._app({**scope, CALLER_KEY: caller, "user": _user(key)}, receive, send)


def http_caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The ``Caller`` ``KeyAuth`` resolved for the HTTP request that carried this MCP request."""
    request = ctx.request
    caller = getattr(request, "scope", {}).get(CALLER_KEY)
    if not isinstance(caller, Caller):  # only if the app is served without KeyAuth: a wiring bug
        raise MCPError(INTERNAL_ERROR, "the request reached the MCP server without a caller")
    return caller


def http_app(tools: ToolServer, keys: ApiKeys, default_agent: str, *, auth: bool, host: str) -> ASGIApp:
    """The ASGI app: ``KeyAuth`` in front of the SDK's streamable HTTP app (endpoint ``/mcp``). ``tools``
    must have been built with ``http_caller``. On a loopback ``host`` the SDK also checks the Host and
    Origin headers (DNS rebinding)."""
    app = tools.server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return KeyAuth(app, keys, default_agent, auth=auth)


def serve_http(app: ASGIApp, host: str, port: int, *, on_started: Callable[[], object] | None = None) -> bool:
    """Serve ``app`` until SIGINT / SIGTERM, then shut down gracefully and return; False when it could not
    start (the port taken: uvicorn has logged why). Logs go through ``logging``, none to stdout.
    ``on_started`` runs once it listens (the engine's warm-up)."""
    return serve_until_signalled(
        app,
        host=host,
        port=port,
        thread_name="reverie-mcp-http",
        on_started=on_started,
        log_config=None,
        access_log=False,
    )


def _agent_header(headers: Headers) -> str | None:
    value = headers.get(AGENT_HEADER)
    return None if value is None else validate.identifier(value.strip(), name=AGENT_HEADER)


def _secret(headers: Headers) -> str | None:
    """The key a request carries: ``Authorization: Bearer <key>``, else ``X-API-Key`` (as the HTTP API)."""
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key", "").strip() or None


def _user(key: ApiKey) -> AuthenticatedUser:
    # The SDK binds a stateful session to the identity of the user that opened it; the key id is that
    # identity (the secret itself goes no further than authenticate).
    return AuthenticatedUser(AccessToken(token=key.key_id, client_id=key.key_id, scopes=list(key.scopes)))


def _refuse(
    status: int, kind: str, message: str, *, field: str | None = None, challenge: str | None = None
) -> Response:
    """The HTTP API's error body; a 401 or 403 also carries the Bearer challenge. ``challenge`` is RFC 6750's
    error code, left out when the request sent no key at all (as RFC 6750 section 3.1 asks)."""
    log.info("refused an MCP request (%d): %s", status, message)
    response = error_response(status, kind, message, field=field)
    if status in (401, 403):
        params = "" if challenge is None else f' error="{challenge}", error_description="{_quotable(message)}"'
        response.headers["WWW-Authenticate"] = f"Bearer{params}"
    return response


def _quotable(text: str) -> str:
    """``text`` as RFC 6750 allows inside a quoted ``error_description``: printable ASCII without ``"`` or ``\\``."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text)
