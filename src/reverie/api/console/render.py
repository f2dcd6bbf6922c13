"""Rendering the console's fragments: one Jinja2 environment over the package's templates, with autoescaping
on for every template (a memory's content, a tag, an entity name are untrusted text), and the filters the
templates share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined

from reverie.api.console.security import csrf_token, signed_in
from reverie.errors import ValidationError
from reverie.keys.service import ADMIN, MEMORY_WRITE


def _when(value: datetime | None) -> str:
    """A time as the console shows it: ``2026-03-14 12:00 UTC`` (empty for None)."""
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def _short(value: str | None, width: int = 8) -> str:
    return "" if value is None else value[:width]


def _number(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return ""
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


ENV = Environment(
    loader=PackageLoader("reverie.api.console", "templates"),
    autoescape=True,  # every template, whatever its name: nothing a user saved is ever markup
    undefined=StrictUndefined,  # a misspelt name in a template fails its test instead of rendering empty
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters.update(when=_when, short=_short, number=_number)


class Viewer:
    """Who is looking: what the templates need to decide which buttons exist."""

    def __init__(self, request: Request) -> None:
        self.key = signed_in(request)
        self.rv = request.app.state.rv

    @property
    def admin(self) -> bool:
        return self.key is None or ADMIN in self.key.scopes

    def may_write(self, agent_id: str) -> bool:
        """Whether the viewer may change ``agent_id``'s memory (``memory_write``)."""
        if self.key is None:
            return True
        try:
            return bool(self.rv.keys.allows(self.key, MEMORY_WRITE, agent_id))
        except ValidationError:  # a malformed agent id: no button; the route itself answers the error
            return False


def fragment(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context``, the viewer (``viewer``) and the CSRF token (``csrf``)."""
    html = ENV.get_template(template).render(viewer=Viewer(request), csrf=csrf_token(signed_in(request)), **context)
    return HTMLResponse(html, status_code=status_code)
