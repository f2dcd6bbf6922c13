"""Serving before warm: ``reverie serve`` and ``reverie mcp`` answer before the embedding model and the recall
indexes are loaded, warm them on a background thread afterwards, and a request that comes during the warm-up
succeeds (issue 21). Real parts: a real engine and store, the HTTP API on uvicorn, an embedder behind the
scripted OpenAI-compatible server (which can hold one request back, so "during" is certain), a real
``reverie mcp`` process."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import reverie
from reverie import Scope
from reverie.api import create_app
from reverie.api.serving import serve_until_signalled
from reverie.engine.warmup import WarmUp
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._api import client, make_keys, memory, serving

FACT = "The user is allergic to peanuts"


def _until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Wait for something another thread or process does, that signals no event of its own."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        threading.Event().wait(0.01)


def test_a_search_during_the_warm_up_succeeds_without_waiting_for_it(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        embedding = {"provider": "openai", "endpoint": server.url, "model": "test", "dim": server.dim}
        with reverie.open(tmp_path / "home", embedding={**embedding, "background": False}) as rv:
            rv.memory.save(FACT)
            assert rv.embed_pending() == 1
            admin = make_keys(rv).admin
            asked = len(server.requests)
            server.delay_next(60)  # the warm-up's query embedding is held until the server closes
            warm = WarmUp(rv).start()
            _until(lambda: len(server.requests) > asked, "the warm-up's embedding request")
            with serving(rv) as origin, client(origin, admin) as api:
                found = api.get(memory("default", "/search"), params={"query": "peanuts"})
            assert found.status_code == 200, found.text
            assert [hit["entry"]["content"] for hit in found.json()["hits"]] == [FACT]
            assert found.json()["mode"] == "hybrid"  # the embedder answered the search's own query
            assert not warm.done.is_set()  # the search neither waited for the warm-up nor failed beside it
            server.close()  # the held request is answered at once
            assert warm.join(timeout=30) and warm.error is None
    assert [r.body["input"] for r in server.requests[asked:]][0] == ["warm-up"]


def test_the_warm_up_searches_every_agent_once_and_a_delayed_one_can_be_called_off(rv: reverie.Reverie) -> None:
    rv.memory.save(FACT)
    rv.memory.save("Agent b keeps its keys in the vault", scope=Scope(agent_id="b"))
    rv.embed_pending()
    waiting = WarmUp(rv, delay=60).start()
    assert waiting.join(timeout=10) and waiting.error is None  # called off while it waited: nothing ran
    assert sum(rv.recall.fetches.values()) == 0
    warm = WarmUp(rv)
    warm.run()
    assert warm.done.is_set() and warm.error is None
    assert rv.recall.fetches == {"lexical": 2, "vector": 2}  # each agent's indexes, loaded by one search


def test_the_warm_up_starts_once_the_server_listens(rv: reverie.Reverie) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    seen: list[str] = []

    def started() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            seen.append("listening")
        os.kill(os.getpid(), signal.SIGINT)  # serve_until_signalled's own handler: a graceful stop

    app = create_app(rv, auth=False)
    served = serve_until_signalled(
        app, host="127.0.0.1", port=port, thread_name="test-api", on_started=started, log_level="warning"
    )
    assert served and seen == ["listening"]


def test_mcp_over_stdio_answers_initialize_before_opening_and_stops_on_a_store_it_cannot_open(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    (home / "reverie.db").touch()  # an empty file: refused, never written
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERIE_")} | {"REVERIE_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie", "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        proc.stdin.write(json.dumps(initialize).encode() + b"\n")
        proc.stdin.flush()
        assert select.select([proc.stdout], [], [], 60)[0], "no answer to initialize"
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "reverie"
        assert proc.wait(timeout=60) == 1  # by itself, stdin still open: the store cannot be opened
        assert proc.stderr is not None
        errors = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert "empty" in errors and "error:" in errors
    assert (home / "reverie.db").stat().st_size == 0
