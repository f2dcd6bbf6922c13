"""What the HTTP API tests share: the API served by real uvicorn on 127.0.0.1 (a free port, a background
thread) over an engine the test holds, and keys for a few agents."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import httpx

import reverie
from reverie.api import ApiServer, create_app

READ_WRITE = ["memory_read", "memory_write"]
ANY = ["*"]  # a key that may name any user


@contextmanager
def serving(rv: reverie.Reverie, **options: Any) -> Iterator[str]:
    """``create_app(rv, **options)`` on a live loopback server; yields its origin."""
    with ApiServer(create_app(rv, **options)) as server:
        yield server.origin


def client(origin: str, secret: str | None = None, *, header: str = "bearer") -> httpx.Client:
    """An HTTP client for the API, sending ``secret`` as a Bearer token or (``header="x-api-key"``) as
    ``X-API-Key``."""
    headers = {}
    if secret is not None:
        headers = {"Authorization": f"Bearer {secret}"} if header == "bearer" else {"X-API-Key": secret}
    return httpx.Client(base_url=origin, headers=headers, timeout=30)


class Keys(NamedTuple):
    admin: str
    a: str  # agent a: read and write
    a_read: str  # agent a: read only
    b: str  # agent b: read and write


def make_keys(rv: reverie.Reverie) -> Keys:
    """The agents' keys may name any user (``*``); tests/integration/test_user_binding.py binds keys to users."""
    return Keys(
        admin=rv.keys.create("admin", agent_id=None, scopes=["admin"])[1],
        a=rv.keys.create("a", agent_id="a", scopes=READ_WRITE, users=ANY)[1],
        a_read=rv.keys.create("a-read", agent_id="a", scopes=["memory_read"], users=ANY)[1],
        b=rv.keys.create("b", agent_id="b", scopes=READ_WRITE, users=ANY)[1],
    )


def memory(agent: str, rest: str = "") -> str:
    """``/api/memory/agents/{agent}`` + ``rest``."""
    return f"/api/memory/agents/{agent}{rest}"
