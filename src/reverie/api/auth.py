"""Who may call: authentication (a middleware) and authorization (route dependencies).

A request carries its secret as ``Authorization: Bearer <secret>`` or ``X-API-Key: <secret>``.

Invariants:
- Every path but the public ones (``/health``, the OpenAPI schema and its docs page) needs a live key:
  without one, or with anything else, the answer is 401 before the request is parsed any further.
- A route under an agent (``/api/memory/agents/{agent_id}/…``, ``/api/dream/agents/{agent_id}/…``) answers
  403 unless the key may use that scope for that agent (``ApiKeys.allows``: an admin key reaches every
  agent; any other key only its own). The handler then works only in that agent's scope, so another agent's
  ids look exactly like unknown ids (404).
- A request that names a user (the ``user_id`` query parameter, the ``/api/memory/users/{user_id}`` path, or a
  body's ``user_id``) answers 403 unless the key is bound to that user (``ApiKeys.allows_user``: an admin key,
  ``*``, or the user among the key's ``users``). ``user_access`` checks the path and the query of every route
  (the app's dependency); a route with a ``user_id`` in its body calls ``require_user``.
- An agent key may archive a user memory (``@user/<id>``) only when its agent wrote it (``require_change``).
- ``auth=False`` (``reverie serve --no-auth``, loopback only) lets every request through as an admin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Path, Request
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from reverie.api.errors import Forbidden, error_response, reverie_response
from reverie.api.serving import is_loopback
from reverie.core.proactive import writer_of
from reverie.engine.root import Reverie
from reverie.errors import StorageError, ValidationError
from reverie.keys.service import ADMIN, MEMORY_READ, MEMORY_WRITE
from reverie.types import ApiKey, MemoryEntry

PUBLIC_PATHS = frozenset({"/health", "/openapi.json", "/docs"})
STATE_KEY = "reverie_api_key"
_BEARER = "bearer "


def secret_of(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The secret a request carries (Bearer first, then ``X-API-Key``), or None."""
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        found.setdefault(name.lower(), value)
    authorization = found.get(b"authorization", b"").decode("latin-1").strip()
    if authorization[: len(_BEARER)].lower() == _BEARER:
        return authorization[len(_BEARER) :].strip() or None
    api_key = found.get(b"x-api-key", b"").decode("latin-1").strip()
    return api_key or None


def _hostname(authority: str) -> str:
    """The host part of ``host[:port]`` or ``[v6]:port``."""
    if authority.startswith("["):
        return authority[1 : authority.find("]")] if "]" in authority else authority
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


class LoopbackGuard:
    """ASGI middleware for an API without keys (``--no-auth``): only requests a local program made.

    A browser can be made to reach a loopback server by any web page: through DNS rebinding (the page's own
    name resolving to 127.0.0.1: refused by the ``Host`` check) or by a cross-site form post (refused by the
    ``Origin`` check). A non-browser client sends no ``Origin``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            found = {name.lower(): value.decode("latin-1") for name, value in scope["headers"]}
            origin = found.get(b"origin")
            if not is_loopback(_hostname(found.get(b"host", ""))):
                await error_response(403, "forbidden", "without API keys only a loopback Host is served")(
                    scope, receive, send
                )
                return
            if origin is not None and not is_loopback(_hostname(origin.split("://", 1)[-1].split("/", 1)[0])):
                await error_response(403, "forbidden", "without API keys cross-origin requests are refused")(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


class Authenticate:
    """ASGI middleware: 401 unless the request carries a live key; puts the key in the request state.

    With ``enabled=False`` every request passes, with no key (the routes then allow everything)."""

    def __init__(
        self, app: ASGIApp, *, rv: Reverie, enabled: bool, public: Callable[[str], bool] = lambda path: False
    ) -> None:
        self.app = app
        self.rv = rv
        self.enabled = enabled
        self.public = public  # paths served without a key besides PUBLIC_PATHS (the console's shell and assets)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.enabled or scope["path"] in PUBLIC_PATHS or self.public(scope["path"]):
            await self.app(scope, receive, send)
            return
        secret = secret_of(scope["headers"])
        try:
            key = None if secret is None else await run_in_threadpool(self.rv.keys.authenticate, secret)
        except StorageError as exc:  # the key cannot be checked now (busy, unreachable): the client may retry
            await reverie_response(exc, scope["method"], scope["path"])(scope, receive, send)
            return
        if key is None:
            message = "an API key is required" if secret is None else "the API key is not valid"
            response = error_response(401, "unauthorized", message)
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[STATE_KEY] = key
        await self.app(scope, receive, send)


def _key(request: Request) -> ApiKey | None:
    """The caller's key; None when the API runs without authentication."""
    key = request.scope.get("state", {}).get(STATE_KEY)
    return key if isinstance(key, ApiKey) else None


def _permits(rv: Reverie, key: ApiKey | None, scope: str, agent_id: str) -> bool:
    if key is None:
        return True
    try:
        return rv.keys.allows(key, scope, agent_id)
    except ValidationError:
        if ADMIN in key.scopes:
            raise  # an admin naming a malformed agent id: a bad request (422), not a refusal
        return False


def engine(request: Request) -> Reverie:
    rv: Reverie = request.app.state.rv
    return rv


Engine = Annotated[Reverie, Depends(engine)]
AgentPath = Annotated[str, Path(description="the agent whose memory this is", max_length=200)]


async def read_access(request: Request, agent_id: AgentPath) -> str:
    """The path's agent, once the caller may read its memory (``memory_read``)."""
    if not _permits(engine(request), _key(request), MEMORY_READ, agent_id):
        raise Forbidden(f"this key may not read the memory of agent {agent_id!r}")
    return agent_id


async def write_access(request: Request, agent_id: AgentPath) -> str:
    """The path's agent, once the caller may change its memory (``memory_write``)."""
    if not _permits(engine(request), _key(request), MEMORY_WRITE, agent_id):
        raise Forbidden(f"this key may not change the memory of agent {agent_id!r}")
    return agent_id


async def admin_agent_access(request: Request, agent_id: AgentPath) -> str:
    """The path's agent, once the caller holds ``admin`` (dream control)."""
    if not _permits(engine(request), _key(request), ADMIN, agent_id):
        raise Forbidden("this needs an admin key")
    return agent_id


async def admin_access(request: Request) -> None:
    """Only an admin key (usage, audit, keys, the dream status of every agent)."""
    key = _key(request)
    if key is not None and (ADMIN not in key.scopes or key.revoked_at is not None):
        raise Forbidden("this needs an admin key")


def require_user(request: Request, user_id: str | None) -> None:
    """403 unless the caller's key may name ``user_id`` (None names no user: nothing to check)."""
    key = _key(request)
    if key is None or user_id is None or engine(request).keys.allows_user(key, user_id):
        return
    raise Forbidden(f"this key is not bound to user {user_id!r}: an admin binds it (reverie keys bind)")


async def user_access(request: Request) -> None:
    """Every route's check of the users a request names in its path or query (the app-wide dependency)."""
    named = [request.path_params.get("user_id"), *request.query_params.getlist("user_id")]
    for user_id in named:
        require_user(request, user_id)


def require_change(request: Request, entry: MemoryEntry) -> None:
    """403 unless the caller's key may archive or change ``entry`` (``ApiKeys.may_change``): another agent's
    user memory is refused to an agent key."""
    key = _key(request)
    if key is None or engine(request).keys.may_change(key, entry):
        return
    writer = writer_of(entry.metadata)
    if writer is None:
        raise Forbidden(f"user memory {entry.id} has no recorded writer (saved before writers were): an admin key may")
    raise Forbidden(f"user memory {entry.id} was written by agent {writer!r}: only that agent or an admin key may")


def tool_permitted(request: Request, scope: str, agent_id: str) -> bool:
    """Whether the caller may call a tool that needs ``scope`` for ``agent_id``."""
    return _permits(engine(request), _key(request), scope, agent_id)


ReadAgent = Annotated[str, Depends(read_access)]
WriteAgent = Annotated[str, Depends(write_access)]
AdminAgent = Annotated[str, Depends(admin_agent_access)]
