"""The conventions of docs/api.md ("Conventions"), against real servers on 127.0.0.1: a POST that adds a
record answers 201 and the OpenAPI schema says so, every other success is 200 (202 for work started in the
background) whether or not a PUT created what it names; one error shape, REST and MCP-over-HTTP alike, with
the Bearer challenge OAuth clients read on MCP's 401 and 403."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import reverie
from reverie.api.errors import reverie_response
from reverie.errors import ERROR_KINDS, OTHER_KIND, ConfigError, ReverieError, StorageError

from ._api import Keys, client, make_keys, memory, serving

# The POST routes that add a record to a collection: 201 Created. Every other POST is an action (200) or
# starts work in the background (202). A new POST route must be put on one side here.
CREATES = {
    "/api/keys",
    "/api/memory/agents/{agent_id}/entries",
    "/api/memory/agents/{agent_id}/entries/batch",
    "/api/memory/agents/{agent_id}/sessions",
    "/api/memory/agents/{agent_id}/sessions/{session_id}/turns",
    "/api/memory/agents/{agent_id}/kg/entities",
    "/api/memory/agents/{agent_id}/kg/relations",
    "/api/memory/agents/{agent_id}/skills:usage",
    "/api/memory/agents/{agent_id}/feedback",
    "/api/memory/agents/{agent_id}/executions",
    "/api/memory/agents/{agent_id}/tool-calls",
}
ERROR_FIELDS = {"error", "message", "field", "details"}


@pytest.fixture
def keys(rv: reverie.Reverie) -> Keys:
    return make_keys(rv)


@pytest.fixture
def origin(rv: reverie.Reverie, keys: Keys) -> Iterator[str]:
    with serving(rv) as started:
        yield started


def _success(operation: dict[str, object]) -> set[str]:
    responses = operation["responses"]
    assert isinstance(responses, dict)
    return {code for code in responses if code.startswith("2")}


def test_the_schema_documents_201_for_every_create_and_200_or_202_for_the_rest(origin: str) -> None:
    schema = httpx.get(f"{origin}/openapi.json", timeout=30).json()
    created: set[str] = set()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = _success(operation)
            # One success code per operation; a dream trigger is 202 (started), or 200 with wait=true (it ran).
            assert len(codes) == 1 or codes == {"200", "202"}, (method, path, codes)
            if codes == {"201"}:
                assert method == "post", (method, path)  # a PUT answers 200 whether or not it created
                created.add(path)
            else:
                assert codes <= {"200", "202"}, (method, path, codes)
    assert created == CREATES


def test_every_create_answers_201(origin: str, keys: Keys) -> None:
    with client(origin, keys.a) as a, client(origin, keys.admin) as admin:
        assert a.post(memory("a", "/entries"), json={"content": "Ana lives in Porto"}).status_code == 201
        again = a.post(memory("a", "/entries"), json={"content": "Ana lives in Porto"})
        assert again.status_code == 201 and again.json()["outcome"] == "reinforced"  # the body says what happened
        batch = a.post(memory("a", "/entries/batch"), json={"items": [{"content": "Bo likes tea"}]})
        assert batch.status_code == 201, batch.text
        assert a.post(memory("a", "/sessions"), json={"session_id": "s1"}).status_code == 201
        turn = a.post(memory("a", "/sessions/s1/turns"), json={"role": "user", "content": "hello"})
        assert turn.status_code == 201, turn.text
        assert a.post(memory("a", "/kg/entities"), json={"type": "person", "name": "Ana"}).status_code == 201
        relation = {"from": "person:ana", "relation": "lives_in", "to": "city:porto"}
        assert a.post(memory("a", "/kg/relations"), json=relation).status_code == 201
        skill = {"summary": "Send an email", "content": "Open the client, write, send."}
        assert a.put(memory("a", "/skills/mcp/email"), json=skill).status_code == 200  # a PUT: 200, created or not
        used = a.post(memory("a", "/skills:usage"), json={"session_id": "s1", "names": ["mcp/email"]})
        assert used.status_code == 201, used.text
        feedback = a.post(memory("a", "/feedback"), json={"kind": "stale", "session_id": "s1"})
        assert feedback.status_code == 201, feedback.text
        execution = {"description": "deploy", "success": True}
        assert a.post(memory("a", "/executions"), json=execution).status_code == 201
        assert a.post(memory("a", "/tool-calls"), json={"tool": "web_search", "ok": True}).status_code == 201
        made = admin.post("/api/keys", json={"name": "ci", "agent_id": "a", "scopes": ["memory_read"]})
        assert made.status_code == 201, made.text
        assert a.put(memory("a", "/kv/theme"), json={"value": "dark"}).status_code == 200
        assert a.put(memory("a", "/kv/theme"), json={"value": "light"}).status_code == 200


def test_rest_errors_have_one_shape(origin: str, keys: Keys) -> None:
    with client(origin, keys.a) as a, client(origin) as anonymous:
        for response, status, kind in (
            (anonymous.get(memory("a", "/entries")), 401, "unauthorized"),
            (a.get(memory("b", "/entries")), 403, "forbidden"),
            (a.get(memory("a", "/entries/000000000000")), 404, "not_found"),
            (a.post(memory("a", "/entries"), json={"content": ""}), 422, "validation"),
        ):
            assert response.status_code == status, response.text
            body = response.json()
            assert set(body) == ERROR_FIELDS and body["error"] == kind, body


def test_a_query_parameter_the_route_does_not_take_is_refused_not_ignored(origin: str, keys: Keys) -> None:
    """``?q=`` for ``?query=`` used to browse every entry as if nothing had been asked: now a 422 naming the
    parameter and what the route takes, on every GET route of the schema, while the parameters a route does
    take (its own and its dependencies', like ``user_id``) still pass."""
    with client(origin, keys.admin) as admin:
        admin.post(memory("a", "/entries"), json={"content": "the kettle at work is broken"})
        guessed = admin.get(memory("a", "/search"), params={"q": "kettle"})
        assert guessed.status_code == 422, guessed.text
        body = guessed.json()
        assert body["field"] == "q" and "query" in body["message"] and "limit" in body["message"], body
        fine = admin.get(memory("a", "/search"), params={"query": "kettle", "limit": 3, "user_id": "u1"})
        assert fine.status_code == 200 and len(fine.json()["hits"]) == 1, fine.text
        schema = admin.get("/openapi.json").json()
        checked = 0
        for path, operations in schema["paths"].items():
            if "get" not in operations or not path.startswith("/api/"):
                continue
            concrete = re.sub(r"\{agent_id\}", "a", re.sub(r"\{[a-z_]+\}", "x1", path))
            response = admin.get(concrete, params={"no_such_parameter": "1"})
            assert response.status_code == 422, (path, response.text)
            assert response.json()["field"] == "no_such_parameter", (path, response.text)
            checked += 1
        assert checked >= 20, checked


@pytest.mark.parametrize("error", [kind for kind, _ in ERROR_KINDS] + [StorageError, ConfigError])
def test_the_cli_and_the_api_name_every_error_alike(error: type[ReverieError]) -> None:
    """The CLI's ``--json`` errors take their kind from ``reverie.errors.error_kind``; so does the API."""
    import json

    from reverie.cli.common import error_json

    exc = error("what went wrong")
    api = json.loads(bytes(reverie_response(exc, "GET", "/").body))
    cli = error_json(exc)
    assert set(api) == set(cli) == ERROR_FIELDS
    assert api["error"] == cli["error"]
    if error in (StorageError, ConfigError):
        assert cli["error"] == OTHER_KIND


# -- MCP over HTTP ------------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A keyed ``reverie mcp --transport http`` process: its URL and agent a's secret."""
    home = tmp_path_factory.mktemp("mcp-conventions") / "home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    with reverie.open(home) as rv:
        secret = rv.keys.create("a", agent_id="a", scopes=["memory_read", "memory_write"])[1]
    port = _free_port()
    log = home.parent / "server.log"
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "mcp", "--transport", "http", "--port", str(port)],
            env={**os.environ, "REVERIE_HOME": str(home), "HF_HUB_OFFLINE": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}/mcp", secret
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(encoding="utf-8")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"reverie mcp did not listen on {port}:\n{log.read_text(encoding='utf-8')}")


_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def test_mcp_over_http_refusals_have_the_rest_shape_and_the_bearer_challenge(mcp_server: tuple[str, str]) -> None:
    url, secret = mcp_server
    keyless = httpx.post(url, json=_PING, timeout=30)
    assert keyless.status_code == 401
    assert keyless.json() == {
        "error": "unauthorized",
        "message": "an API key is required (Authorization: Bearer <key>)",
        "field": None,
        "details": [],
    }
    assert keyless.headers["www-authenticate"] == "Bearer"  # no key sent: no error code (RFC 6750 3.1)

    bad = httpx.post(url, json=_PING, headers={"Authorization": "Bearer rv_000000000000_" + "x" * 43}, timeout=30)
    assert bad.status_code == 401 and bad.json()["error"] == "unauthorized"
    assert bad.headers["www-authenticate"].startswith('Bearer error="invalid_token", error_description="')

    other = httpx.post(url, json=_PING, headers={"Authorization": f"Bearer {secret}", "X-Reverie-Agent": "b"})
    assert other.status_code == 403
    assert set(other.json()) == ERROR_FIELDS and other.json()["error"] == "forbidden"
    assert other.headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')

    malformed = httpx.post(url, json=_PING, headers={"Authorization": f"Bearer {secret}", "X-Reverie-Agent": "x" * 300})
    assert malformed.status_code == 422
    body = malformed.json()
    assert body["error"] == "validation" and body["field"] == "X-Reverie-Agent" and set(body) == ERROR_FIELDS
