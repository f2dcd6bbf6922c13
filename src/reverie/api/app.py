"""The HTTP API's application: ``create_app(rv)`` wires the routes, authentication, the body limit, the
error handlers and the OpenAPI schema (``/openapi.json``) over one open engine.

The app does not own the engine: whoever opened it closes it (``reverie serve`` does, after the server
stops); with ``owns_engine`` (a worker process of ``reverie serve --workers``) the app warms it up once it
serves and closes it when it stops. Routes are sync functions, so their store work runs in the server's
threadpool, never on the event loop. See docs/api.md for every endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from reverie import __version__
from reverie.api import console, errors
from reverie.api.auth import PUBLIC_PATHS, Authenticate, LoopbackGuard, user_access
from reverie.api.limits import BodyLimit
from reverie.api.params import known_query
from reverie.api.routes_dream import DreamRunner
from reverie.api.routes_dream import router as dream_router
from reverie.api.routes_graph import router as graph_router
from reverie.api.routes_keys import router as keys_router
from reverie.api.routes_kv import router as kv_router
from reverie.api.routes_logs import router as logs_router
from reverie.api.routes_memory import router as memory_router
from reverie.api.routes_proactive import router as proactive_router
from reverie.api.routes_proactive import users_router as proactive_users_router
from reverie.api.routes_sessions import router as sessions_router
from reverie.api.routes_skills import router as skills_router
from reverie.api.routes_tools import router as tools_router
from reverie.api.routes_usage import router as usage_router
from reverie.api.routes_working import router as working_router
from reverie.engine.root import Reverie
from reverie.engine.warmup import WarmUp
from reverie.tools import ToolRegistry

DEFAULT_MAX_BODY_BYTES = 1_048_576
DESCRIPTION = """Reverie's memory engine over HTTP: long-term, working and conversation memory per agent,
the knowledge graph, the per-turn context, the agent tools, dream control, the audit, and LLM usage and cost.

Every route but `/health` needs an API key: `Authorization: Bearer <secret>` or `X-API-Key: <secret>`.
See docs/api.md."""


class Health(BaseModel):
    status: str
    version: str


def create_app(
    rv: Reverie, *, auth: bool = True, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, owns_engine: bool = False
) -> FastAPI:
    """The API over the open engine ``rv``.

    Args:
        rv: the engine; the app uses it and never closes it.
        auth: require an API key on every route but the public ones (``False``: ``reverie serve --no-auth``,
            which only a loopback host may use).
        max_body_bytes: request bodies over this size are answered 413.
        owns_engine: the app warms ``rv`` up once it serves (``engine.warmup``) and closes it at shutdown.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warm = WarmUp(rv).start() if owns_engine else None
        try:
            yield
            await run_in_threadpool(app.state.dreams.stop)  # manual dreams still running: abort, then wait
        finally:
            if warm is not None:
                await run_in_threadpool(warm.join)  # the warm-up must not search a closed store
                await run_in_threadpool(rv.close)

    app = FastAPI(
        title="Reverie",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        redoc_url=None,
        docs_url=None,  # the console serves /docs from bundled assets (FastAPI's own page loads a CDN)
        default_response_class=errors.AsciiJSONResponse,
        # A user named in a path or query: the key must be bound to it; a query parameter the route does not
        # take is refused rather than ignored.
        dependencies=[Depends(user_access), Depends(known_query)],
    )
    app.state.rv = rv
    app.state.tools = ToolRegistry(rv)
    app.state.dreams = DreamRunner(rv)
    errors.install(app)
    # Starlette runs the middleware added last first: the console's security headers, (without keys) the
    # loopback guard, authentication, the console's CSRF guard, then the body limit.
    app.add_middleware(BodyLimit, max_body_bytes=max_body_bytes)
    app.add_middleware(console.CsrfGuard)  # after authentication: the CSRF token is the signed-in key's
    app.add_middleware(Authenticate, rv=rv, enabled=auth, public=console.is_public)
    if not auth:
        app.add_middleware(LoopbackGuard)
    app.add_middleware(console.SecurityHeaders)
    for router in (memory_router, working_router, sessions_router, tools_router, dream_router, usage_router):
        app.include_router(router)
    app.include_router(kv_router)
    app.include_router(graph_router)
    app.include_router(skills_router)
    app.include_router(logs_router)
    app.include_router(proactive_router)
    app.include_router(proactive_users_router)
    app.include_router(keys_router)
    console.install(app)  # the web console (/console): its shell, its fragments and its bundled assets

    @app.get("/health", response_model=Health, tags=["health"], summary="Liveness (no key needed)")
    def health() -> Health:
        return Health(status="ok", version=__version__)

    app.openapi = lambda: _openapi(app, auth)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI, auth: bool) -> dict[str, Any]:
    """FastAPI's schema plus the two ways to send a key, required on every operation but the public ones."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, description=app.description, routes=app.routes, tags=app.openapi_tags
    )
    if auth:
        schema.setdefault("components", {})["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"},
            "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
        for path, operations in schema.get("paths", {}).items():
            for operation in operations.values():
                operation["security"] = [] if path in PUBLIC_PATHS else [{"bearer": []}, {"apiKey": []}]
    app.openapi_schema = schema
    return schema
