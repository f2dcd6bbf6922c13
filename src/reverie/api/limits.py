"""The request body limit: a body over ``max_body_bytes`` is answered 413 before any route sees it.

The declared ``Content-Length`` is checked first (a 413 without reading a byte); a body sent without one
(chunked) is read up to the limit and refused as soon as it passes it. A body within the limit is buffered
and replayed to the application, so a route never reads an unchecked byte.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reverie.api.errors import error_response


class BodyLimit:
    """ASGI middleware: 413 for request bodies over ``max_body_bytes``."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        if max_body_bytes < 0:
            raise ValueError("max_body_bytes must not be negative")
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(chunks), receive), send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, "too_large", f"the request body is over the limit of {self.max_body_bytes:,} bytes"
        )
        response.headers["Connection"] = "close"  # the rest of the body is not read
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length before we see it
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the buffered body once, then whatever the client sends next (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
