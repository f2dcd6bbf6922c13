"""Helpers shared by the dream and audit integration tests: the LLM settings for the loopback scripted
OpenAI server, an engine opener on a temp home and the chat endpoint's bookkeeping. The ``server`` and
``home`` fixtures they go with live in ``conftest.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import reverie
from reverie.clock import FakeClock
from reverie.testing.openai_server import ScriptedOpenAIServer

CHAT = "/v1/chat/completions"
EMPTY = '{"toDelete": [], "toSave": []}'  # a usable consolidation answer that changes nothing
NO_LLM_PASSES = ("log_retention", "archive_purge", "importance_decay", "forget")


def llm_settings(server: ScriptedOpenAIServer | None) -> dict[str, Any]:
    """The ``[llm]`` settings for ``server`` (None: no LLM)."""
    if server is None:
        return {"provider": "none"}
    return {"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0}


def open_engine(
    home: Path,
    clock: FakeClock,
    server: ScriptedOpenAIServer | None = None,
    *,
    embedding: dict[str, Any] | None = None,
    memory: dict[str, Any] | None = None,
    **sections: Any,
) -> reverie.Reverie:
    """An engine on ``home`` whose LLM is ``server`` (None: no LLM), without query expansion; no embedder
    unless ``embedding`` says otherwise. ``memory`` adds to the memory settings, ``sections`` are further
    settings sections (``dream=``, ``audit=``, ...)."""
    return reverie.open(
        home,
        clock=clock,
        embedding={"provider": "none"} if embedding is None else embedding,
        llm=llm_settings(server),
        memory={"expansion_enabled": False, **(memory or {})},
        **{"graph": {"extraction": "off"}, **sections},  # extraction would ask the scripted LLM too
    )


def chats(server: ScriptedOpenAIServer) -> int:
    """How many chat completions ``server`` was asked for."""
    return sum(1 for r in server.requests if r.path == CHAT)


def open_on(
    backend: str,
    request: Any,
    home: Path,
    clock: FakeClock,
    server: ScriptedOpenAIServer | None,
    *,
    dream: dict[str, Any] | None = None,
) -> reverie.Reverie:
    """``open_engine`` on ``backend``: "sqlite" (a store under ``home``) or "postgresql" (the test's ``pg_url``
    database, with ``home`` as REVERIE_HOME for settings and logs; ``request`` is the pytest request)."""
    if backend == "sqlite":
        return open_engine(home, clock, server, dream=dream or {})
    request.getfixturevalue("monkeypatch").setenv("REVERIE_HOME", str(home))  # a URL keeps the default home
    return reverie.open(
        request.getfixturevalue("pg_url"),
        clock=clock,
        embedding={"provider": "none"},
        llm=llm_settings(server),
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},
        dream=dream or {},
    )
