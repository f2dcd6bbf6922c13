"""Helpers shared by the dream and audit integration tests: the LLM settings for the loopback scripted
OpenAI server, an engine opener on a temp home (SQLite or PostgreSQL), the chat endpoint's bookkeeping and a
scripted model that answers each dream pass from its own queue. The ``server`` and ``home`` fixtures they go
with live in ``conftest.py``."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import reverie
from reverie.clock import FakeClock
from reverie.testing.openai_server import ChatReply, ScriptedOpenAIServer

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
    database, with ``home`` for settings and logs; ``request`` is the pytest request)."""
    store = {} if backend == "sqlite" else {"store": {"url": request.getfixturevalue("pg_url")}}
    return open_engine(home, clock, server, dream=dream or {}, **store)


class Router:
    """The scripted model of the dream tests, told apart by each prompt's first line (``TASK: <task>``): it
    answers each task from its own queue (scripted answers in order, then ``default``) and records every
    prompt per task (``prompts[task]``)."""

    def __init__(self, server: ScriptedOpenAIServer, default: str = EMPTY) -> None:
        self.default = default
        self.queues: dict[str, list[str | ChatReply]] = defaultdict(list)
        self.prompts: dict[str, list[str]] = defaultdict(list)
        server.answer_chat_with(self)

    def __call__(self, body: dict[str, Any]) -> str | ChatReply:
        prompt = str(body["messages"][-1]["content"])
        task = prompt.split("\n", 1)[0].removeprefix("TASK:").strip()
        self.prompts[task].append(prompt)
        queue = self.queues[task]
        return queue.pop(0) if queue else self.default

    def script(self, task: str, *answers: str | ChatReply | dict[str, Any]) -> None:
        """Queue ``answers`` for ``task`` (a dict is sent as its JSON)."""
        self.queues[task].extend(a if isinstance(a, str | ChatReply) else json.dumps(a) for a in answers)

    def calls(self, task: str) -> int:
        return len(self.prompts[task])

    def last(self, task: str) -> str:
        return self.prompts[task][-1]
