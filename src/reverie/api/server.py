"""Running the API with uvicorn: in the foreground (``reverie serve``) or on a background thread
(``ApiServer``: tests, and programs that embed the API beside their own work).

    with ApiServer(create_app(rv)) as server:      # a free port on 127.0.0.1
        httpx.get(f"{server.origin}/health")
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

import uvicorn
from fastapi import FastAPI

from reverie.api.serving import serve_until_signalled

START_TIMEOUT = 10.0


def serve(
    app: FastAPI, *, host: str, port: int, log_level: str = "info", on_started: Callable[[], object] | None = None
) -> bool:
    """Serve until SIGINT or SIGTERM, then finish the requests in flight and return; False when the server
    could not start (the port taken: uvicorn has logged why). ``on_started`` runs once it listens."""
    return serve_until_signalled(
        app, host=host, port=port, thread_name="reverie-api", log_level=log_level, on_started=on_started
    )


class ApiServer:
    """The app served by uvicorn on a background thread, on ``host`` and ``port`` (0: a free port)."""

    def __init__(self, app: FastAPI, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        self.app = app
        self.host = host
        self.port = port
        self.log_level = log_level
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("the server is already running")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without it
        # every keep-alive response waits out the client's delayed ACK (about 40 ms).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        config = uvicorn.Config(self.app, log_level=self.log_level, lifespan="on", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="reverie-api", daemon=True)
        self._server, self._thread, self._socket = server, thread, sock
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the API server did not start")
            time.sleep(0.01)
        return self

    def close(self) -> None:
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is None or thread is None or sock is None:
            return
        server.should_exit = True
        thread.join()
        sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._socket is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        host, port = self._socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
