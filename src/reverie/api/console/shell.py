"""The console's shell, its sign-in, its home page, and ``install``: the routes every page shares.

- ``GET /console`` and ``GET /console/<page>``: the shell (public, static: no data in it).
- ``GET /docs``: the API's docs page (Swagger UI, bundled: it works offline).
- ``GET /console/ui/whoami``: who the key is, the agents it may see, and its CSRF token (the shell's sign-in).
- ``GET /console/ui/agents/{agent_id}``: an agent's overview, the first page after sign-in.

Each page of the console lives in its own module (``pages_*``) with its own router and templates; a page's
fragment URL is ``/console/ui/<page>`` and its address in the browser ``/console/<page>``.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from reverie.api.auth import read_access
from reverie.api.console import pages_dream, pages_entry, pages_graph, pages_memory, pages_usage, pages_working
from reverie.api.console.render import ENV, Viewer, fragment
from reverie.api.console.security import csrf_token, signed_in
from reverie.api.schemas import scope_of

router = APIRouter()
shell_router = APIRouter(include_in_schema=False)
PAGES = (pages_memory, pages_entry, pages_graph, pages_working, pages_dream, pages_usage)


@shell_router.get("/console", response_class=HTMLResponse)
@shell_router.get("/console/{page:path}", response_class=HTMLResponse)
def shell(page: str = "") -> HTMLResponse:
    """The same static shell for every console address: the script loads the page's fragment."""
    return HTMLResponse(_static_page("shell.html"))


@shell_router.get("/docs", response_class=HTMLResponse)
def docs() -> HTMLResponse:
    """The API's docs page, Swagger UI from the bundled assets (offline; the app's own ``/docs`` is off)."""
    return HTMLResponse(_static_page("docs.html"))


@cache
def _static_page(template: str) -> str:
    """A page without data (the shell, the docs page), rendered once per process."""
    return ENV.get_template(template).render()


@router.get("/whoami")
def whoami(request: Request) -> dict[str, Any]:
    """The signed-in key (never its secret), the agents it may look at, and its CSRF token."""
    viewer = Viewer(request)
    key = signed_in(request)
    if viewer.admin:
        agents = viewer.rv.dream.agents()
    else:
        agents = [key.agent_id] if key is not None and key.agent_id is not None else []
    return {
        "name": "no keys (--no-auth)" if key is None else key.name,
        "agent_id": None if key is None else key.agent_id,
        "scopes": ["admin"] if key is None else list(key.scopes),
        "admin": viewer.admin,
        "agents": agents,
        "csrf": csrf_token(key),
    }


@router.get("/agents/{agent_id}", response_class=HTMLResponse)
def overview(request: Request, agent_id: Annotated[str, Depends(read_access)]) -> HTMLResponse:
    """An agent at a glance: its counts and the console's pages for it."""
    rv = request.app.state.rv
    found = rv.memory.browse(limit=8, scope=scope_of(agent_id, None, None))
    return fragment(request, "overview.html", agent_id=agent_id, browse=found)


def install(app: FastAPI) -> None:
    """Add the console to ``app``: the shell, the fragments of every page, and the bundled assets."""
    app.mount("/console/static", StaticFiles(directory=str(files("reverie.api.console") / "static")), name="console")
    ui = APIRouter(prefix="/console/ui", include_in_schema=False)  # CSRF: the CsrfGuard middleware
    ui.include_router(router)
    for page in PAGES:
        ui.include_router(page.router)
    app.include_router(ui)
    app.include_router(shell_router)  # after the fragments: its /console/{page:path} would match them too
