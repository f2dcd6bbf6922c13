"""What the two network faces (``reverie serve``, ``reverie mcp --transport http``) share: serving an ASGI app
with uvicorn until a signal, and telling a loopback address from any other.

``on_started`` runs once the server accepts connections (the engine's warm-up starts there, so the first
answers never wait for the model)."""

from __future__ import annotations

import ipaddress
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import uvicorn

GRACE_SECONDS = 5


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) names this machine only:
    ``localhost``, 127.0.0.0/8 or ::1."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def serve_until_signalled(
    app: Any, *, host: str, port: int, thread_name: str, on_started: Callable[[], object] | None = None, **options: Any
) -> bool:
    """Serve ``app`` until SIGINT or SIGTERM, then finish the requests in flight (at most ``GRACE_SECONDS``) and
    return; False when the server could not start (the port taken: uvicorn has logged why). ``on_started`` is
    called on this thread once the server listens. ``options`` go to ``uvicorn.Config``."""
    config = uvicorn.Config(
        app, host=host, port=port, lifespan="on", timeout_graceful_shutdown=GRACE_SECONDS, **options
    )
    server = uvicorn.Server(config)

    def stop(signum: int, frame: FrameType | None) -> None:
        server.force_exit = server.should_exit and signum == signal.SIGINT  # a second Ctrl-C: do not wait
        server.should_exit = True

    # Trigger: uvicorn on the main thread re-raises the signal that stopped it once it has shut down.
    # Why: that would kill the process before the engine closes. Outcome: uvicorn runs on a thread (where
    # it leaves signals alone) and the main thread turns SIGINT and SIGTERM into its graceful stop.
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=server.run, name=thread_name)
    try:
        thread.start()
        if on_started is not None and _started(server, thread):
            on_started()
        while thread.is_alive():
            thread.join(0.5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server.started


def _started(server: uvicorn.Server, thread: threading.Thread) -> bool:
    """Wait until ``server`` listens (True) or its thread ends first (False: it could not start)."""
    while not server.started:
        if not thread.is_alive():
            return False
        thread.join(0.01)  # uvicorn sets a flag, no event: look every 10 ms
    return True
