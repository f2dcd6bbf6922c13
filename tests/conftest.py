"""Shared fixtures and the network guard.

The guard refuses any socket connection that is not to loopback or a Unix socket, so no test can reach
the network by accident (the brief allows only 127.0.0.1).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reverie
from _postgres import PgServer
from _template import make_template, new_store_file
from reverie.clock import FakeClock
from reverie.storage import open_store, store_url
from reverie.storage.base import Store

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(sock: socket.socket, address: Any) -> None:
    if sock.family == getattr(socket, "AF_UNIX", None):
        return
    host = address[0] if isinstance(address, tuple) else address
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise RuntimeError(f"tests may only connect to loopback; refused {address!r}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check_address(self, address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check_address(self, address)
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]

# Backends the contract suite runs on.
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One embedded PostgreSQL (with pgvector) for the whole session, stopped at its end."""
    server = PgServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test, dropped afterwards."""
    yield from pg_server.database()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new, migrated SQLite store file, made once per test process; see ``_template``."""
    return make_template(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[Store]:
    """A fresh, migrated store of each backend (SQLite: a copy of the template, when made at the same moment)."""
    if request.param == "sqlite":
        path = new_store_file(sqlite_template, tmp_path / "store.db", clock.now())
        opened = open_store(store_url(path), now=clock.now())
    else:
        opened = open_store(request.getfixturevalue("pg_url"), now=clock.now())
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    """An engine on a temp directory with a fake clock and the deterministic hash embedder, embedding
    only when a test calls ``rv.embed_pending()`` (no background thread). Its new store is a template copy."""
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with reverie.open(tmp_path / "home", clock=clock, embedding={"provider": "hash", "background": False}) as engine:
        yield engine


@pytest.fixture
def rv_local(tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    """An engine with the real bundled embedder (MiniLM on onnxruntime), embedding on demand."""
    new_store_file(sqlite_template, tmp_path / "local" / "reverie.db", clock.now())
    with reverie.open(tmp_path / "local", clock=clock, embedding={"background": False}) as engine:
        yield engine
