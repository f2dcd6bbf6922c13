"""The console's security: which console paths are public, the response headers (a strict
Content-Security-Policy), and CSRF protection of every state-changing console request.

Invariants:
- Only the shell (``/console``, ``/console/<page>``), the bundled assets (``/console/static/...``) and the
  docs page's assets are public; they hold no data. ``/console/ui/...`` needs a key like any API route.
- Every response under ``/console`` and ``/docs`` carries ``CSP`` below: scripts and styles only from this
  origin (no inline script, no inline style, no ``eval``), no framing, no plugins, forms only to this origin.
- A console request that changes anything (any method but GET/HEAD/OPTIONS) must carry ``X-CSRF-Token`` equal
  to ``csrf_token`` of the key it authenticates with, and, when the browser names its origin (``Origin`` or
  ``Sec-Fetch-Site``), come from this origin. The token is an HMAC of the key's stored hash, so it is the same
  in every worker process and changes with the key; a page of another site can neither read nor forge it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reverie.api.auth import STATE_KEY
from reverie.api.errors import error_response
from reverie.types import ApiKey

CONSOLE = "/console"
UI = "/console/ui/"
PUBLIC_PREFIXES = ("/console/static/", "/docs/static/")
CSRF_HEADER = b"x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
# Without keys (``reverie serve --no-auth``, loopback only) there is no key to derive the token from: one per
# process. (With ``--workers`` and no keys a token from one worker is refused by another: sign in again.)
_NO_AUTH_SECRET = secrets.token_bytes(32)


def is_public(path: str) -> bool:
    """Whether ``path`` is a console or docs path served without a key (the shell and the bundled assets)."""
    if path.startswith(PUBLIC_PREFIXES):
        return True
    return path == CONSOLE or (path.startswith(CONSOLE + "/") and not path.startswith(UI))


def csrf_token(key: ApiKey | None) -> str:
    """The CSRF token of the console signed in with ``key`` (None: no keys, ``--no-auth``)."""
    secret = _NO_AUTH_SECRET if key is None else bytes.fromhex(key.key_hash)
    return hmac.new(secret, b"reverie-console-csrf", hashlib.sha256).hexdigest()


def signed_in(request: HTTPConnection) -> ApiKey | None:
    """The key the request authenticated with (set by the API's middleware); None without keys."""
    key = request.scope.get("state", {}).get(STATE_KEY)
    return key if isinstance(key, ApiKey) else None


def _same_origin(headers: dict[bytes, str]) -> bool:
    site = headers.get(b"sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = headers.get(b"origin")
    if origin is None:
        return True  # not a browser's cross-site request: browsers name the origin of every such POST
    return origin.split("://", 1)[-1].rstrip("/") == headers.get(b"host", "")


def csrf_refusal(scope: Scope) -> str | None:
    """Why the console refuses this state-changing request (None: it may go on). Call after authentication."""
    headers = {name.lower(): value.decode("latin-1") for name, value in scope["headers"]}
    if not _same_origin(headers):
        return "cross-origin requests are refused by the console"
    key = scope.get("state", {}).get(STATE_KEY)
    expected = csrf_token(key if isinstance(key, ApiKey) else None)
    if not hmac.compare_digest(headers.get(CSRF_HEADER, "").encode(), expected.encode()):
        return "a missing or wrong CSRF token: reload the console and sign in again"
    return None


class CsrfGuard:
    """ASGI middleware, after authentication and before routing: a console request that is not GET, HEAD or
    OPTIONS is answered 403 unless ``csrf_refusal`` finds nothing wrong, whatever route it names."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS and scope["path"].startswith(UI):
            refusal = csrf_refusal(scope)
            if refusal is not None:
                await error_response(403, "forbidden", refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """ASGI middleware: the console's security headers on every response under ``/console`` and ``/docs``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not (path == CONSOLE or path.startswith((CONSOLE + "/", "/docs"))):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(name, value) for name, value in _HEADERS if name not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
