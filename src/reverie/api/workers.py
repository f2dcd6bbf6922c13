"""``reverie serve --workers N``: the API in N processes on one listening socket, each with its own engine.

One Python process runs the engine's Python code on one core at a time (the GIL): a loaded server
measured at 0.95 of a core with 16 clients, and at the same throughput as with one (docs/benchmarks.md,
"Load"). N worker processes share the socket the parent binds (uvicorn's supervisor: it restarts a worker
that dies, and stops them all, each finishing its requests, on SIGINT or SIGTERM).

Invariants:
- Each worker opens the home the parent names (``REVERIE_HOME``) as ``reverie serve`` does, with its
  background workers, warms it up once it serves, and closes it when it stops. Sharing one store is what the
  store is built for: the SQLite write lock (or PostgreSQL's transactions) orders the writes, every search
  replays the change logs other processes wrote, graph extraction claims each entry before writing it, and
  two embedding workers embedding one entry is harmless. The dream scheduler is not started here.
- The parent holds no engine while the workers serve (it makes the first key before they start).
- A worker that cannot open the store exits with uvicorn's start-up failure code, so the supervisor stops
  instead of restarting it forever; the parent then reports the failure.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess

from reverie.api.serving import GRACE_SECONDS

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("reverie.api.workers")

AUTH_ENV = "REVERIE_SERVE_AUTH"  # "0": the workers serve without keys (the parent checked the host is loopback)
HOME_ENV = "REVERIE_HOME"
FACTORY = "reverie.api.workers:worker_app"


def worker_app() -> FastAPI:
    """The app of one worker process (uvicorn's factory): a new engine over the parent's home, which the app
    owns (warmed up once serving, closed at shutdown)."""
    import reverie
    from reverie.api.app import create_app
    from reverie.errors import ReverieError

    # As the parent logs (``reverie serve``): Reverie's warnings on stderr, with their time and logger.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        rv = reverie.open(
            None,
            embedding={"background": True},
            memory={"expansion_background": True},
            graph={"extraction_background": True},
            proactive={"memorize_background": True},
        )
    except ReverieError as exc:
        log.error("reverie serve worker %d could not open the store: %s", os.getpid(), exc)
        sys.exit(STARTUP_FAILURE)
    return create_app(rv, auth=os.environ.get(AUTH_ENV) != "0", owns_engine=True)


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound socket for the workers to accept on. IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only
    on sockets that say so, and without it every keep-alive answer waits out the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock


def serve_workers(home: Path, *, host: str, port: int, workers: int, auth: bool, log_level: str = "info") -> bool:
    """Serve the API from ``workers`` processes until SIGINT or SIGTERM; False when it could not start (the
    port taken, or a worker could not open the store: logged)."""
    try:
        sock = listening_socket(host, port)
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", host, port, exc)
        return False
    os.environ[HOME_ENV] = str(home)  # the spawned workers inherit the environment
    os.environ[AUTH_ENV] = "1" if auth else "0"
    config = uvicorn.Config(
        FACTORY, factory=True, host=host, port=port, workers=workers, lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS, log_level=log_level,
    )  # fmt: skip
    supervisor = Multiprocess(config, sockets=[sock])
    try:
        supervisor.run()
    finally:
        sock.close()
    return not any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes)
