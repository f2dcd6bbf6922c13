"""What Reverie's loopback test servers share: a real HTTP server on 127.0.0.1 (a free port) serving POSTs
from a background thread, started and stopped as a context manager, with no thread or socket left behind.

A subclass answers requests in ``_answer`` and may write unusual replies itself in ``_write``.
"""

from __future__ import annotations

import contextlib
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple, Self, cast


class RecordedRequest(NamedTuple):
    """One request a server received. Header names are lower-cased; ``body`` is ``None`` if not JSON."""

    path: str
    headers: dict[str, str]
    body: Any


class Reply(NamedTuple):
    status: int
    body: bytes


class LoopbackServer:
    """Base class: lifecycle and plumbing. ``_lock`` guards subclass state; ``_closing`` is set on close
    so a reply held back on purpose (a delay) returns at once."""

    thread_name = "reverie-loopback"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._httpd is not None:
            raise RuntimeError("the server is already running")
        httpd = _HTTPServer(self)
        self._closing.clear()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        httpd, thread, self._httpd, self._thread = self._httpd, self._thread, None, None
        if httpd is None or thread is None:
            return
        self._closing.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    # -- for subclasses ------------------------------------------------------------------------------
    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> Any:
        raise NotImplementedError

    def _write(self, handler: BaseHTTPRequestHandler, reply: Any) -> None:
        """Write a ``Reply`` as JSON with its length; subclasses override for unusual replies."""
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(reply.body)))
        handler.end_headers()
        handler.wfile.write(reply.body)


class _HTTPServer(ThreadingHTTPServer):
    """Binds 127.0.0.1 on a free port; ``server_close`` joins the request threads (they are not daemons)."""

    daemon_threads = False

    def __init__(self, owner: LoopbackServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # HTTPServer's version adds a reverse DNS lookup
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]


class _Handler(BaseHTTPRequestHandler):
    """Reads one POST, asks the owning server for the reply, writes it. Logs nothing."""

    def do_POST(self) -> None:  # the name http.server dispatches to
        owner = cast(_HTTPServer, self.server).owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = owner._answer(self.path, headers, raw)
        # The client may have given up (a timeout or a size cap): then there is nothing to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            owner._write(self, reply)

    def log_message(self, format: str, *args: Any) -> None:  # silence the stdlib's stderr log
        return
