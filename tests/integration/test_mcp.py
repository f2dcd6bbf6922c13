"""``reverie mcp`` through the MCP SDK's own client: a real server process over stdio and over streamable
HTTP, with API keys deciding agent and tools. BM25 only (``embedding.provider = "none"``) so the servers
start fast."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from typer.testing import CliRunner

import reverie
from reverie import Scope
from reverie.cli import app

pytestmark = pytest.mark.slow

AGENT_B_FACT = "Agent b keeps its deploy keys in the Hadrian vault"
_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def _make_home(path: Path) -> Path:
    path.mkdir()
    (path / "reverie.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return _make_home(tmp_path / "home")


def _env(home: Path) -> dict[str, str]:
    return {"REVERIE_HOME": str(home), "HF_HUB_OFFLINE": "1"}


def _contents(result: CallToolResult) -> list[str]:
    """The contents of the entries a search_memory result found."""
    assert not result.is_error, _text(result)
    return [hit["content"] for hit in result.structured_content["results"]]


def _text(result: CallToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


# -- stdio --------------------------------------------------------------------------------------------------


def test_stdio_serves_the_tools_of_one_agent(home: Path, tmp_path: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "reverie", "mcp", "--agent", "a"], env=_env(home)
    )
    with (tmp_path / "stderr.log").open("w+", encoding="utf-8") as errlog:
        anyio.run(_stdio_conversation, server, errlog)
        errlog.seek(0)
        log = errlog.read()
    assert "serving agent 'a' on stdio" in log
    with reverie.open(home) as rv:  # the server wrote into agent a's scope, and nowhere else
        assert rv.memory.search("Lisbon", scope=Scope(agent_id="a"), include_archived=True)
        assert rv.memory.search("Lisbon", include_archived=True) == []


async def _stdio_conversation(server: StdioServerParameters, errlog: Any) -> None:
    async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        assert {"save_memory", "search_memory", "delete_memory", "search_working_memory"} <= names
        assert "memory_semantic_consolidate" not in names  # withheld unless the agent's settings allow it

        saved = await session.call_tool(
            "save_memory", {"content": "Maya keeps Europe/Lisbon hours", "category": "user-preferences/timezone"}
        )
        assert not saved.is_error, _text(saved)
        entry_id = saved.structured_content["id"]
        assert entry_id in _text(saved)

        found = await session.call_tool("search_memory", {"query": "Lisbon hours"})
        assert _contents(found) == ["Maya keeps Europe/Lisbon hours"]
        assert f"[{entry_id}]" in _text(found)

        deleted = await session.call_tool("delete_memory", {"id": entry_id})
        assert not deleted.is_error
        assert "Archived" in _text(deleted) and "can be restored" in _text(deleted)
        assert deleted.structured_content["archived"] is True

        bad = await session.call_tool("save_memory", {"content": 42, "tags": "not-a-list"})
        assert bad.is_error
        assert "must be of type" in _text(bad)
        unknown = await session.call_tool("no_such_tool", {})
        assert unknown.is_error

        # Still serving; the archived entry is gone from search.
        assert _contents(await session.call_tool("search_memory", {"query": "Lisbon hours"})) == []


# -- streamable HTTP ----------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_listening(proc: subprocess.Popen[str], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"reverie mcp exited {proc.returncode}:\n{log.read_text(encoding='utf-8')}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"reverie mcp did not listen on {port}:\n{log.read_text(encoding='utf-8')}")


@pytest.fixture(scope="module")
def http_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make_home(tmp_path_factory.mktemp("mcp-http") / "home")


@pytest.fixture(scope="module")
def keys(http_home: Path) -> dict[str, str]:
    """Keys made before the server starts (same home), and an entry of agent b's for a to not see."""
    with reverie.open(http_home) as rv:
        rv.memory.save(AGENT_B_FACT, category="ops", scope=Scope(agent_id="b"))
        secrets = {
            "a": rv.keys.create("agent-a", agent_id="a", scopes=["memory_read", "memory_write"])[1],
            "a_read": rv.keys.create("agent-a-read", agent_id="a", scopes=["memory_read"])[1],
            "admin": rv.keys.create("ops", agent_id=None, scopes=["admin"])[1],
        }
        revoked, secrets["revoked"] = rv.keys.create("old", agent_id="a", scopes=["memory_read"])
        rv.keys.revoke(revoked.key_id)
    return secrets


@contextmanager
def _serving(home: Path, *options: str) -> Iterator[tuple[str, Path]]:
    """A ``reverie mcp --transport http`` process: yields its URL and its log; it must stop cleanly on
    SIGTERM."""
    port = _free_port()
    log = home.parent / f"server-{port}.log"
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "mcp", "--transport", "http", "--port", str(port), *options],
            env={**os.environ, **_env(home)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        _wait_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown is a failure in itself
            proc.kill()
            raise AssertionError(f"reverie mcp did not stop on SIGTERM:\n{log.read_text(encoding='utf-8')}") from None
    assert proc.returncode == 0, log.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def http_server(http_home: Path, keys: dict[str, str]) -> Iterator[str]:
    """One keyed server for the module's tests."""
    with _serving(http_home) as (url, _):
        yield url


@asynccontextmanager
async def _session(url: str, headers: dict[str, str]) -> Any:
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _bearer(secret: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", **extra}


def test_http_key_fixes_the_agent(http_server: str, keys: dict[str, str]) -> None:
    async def run() -> None:
        async with _session(http_server, _bearer(keys["a"])) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"save_memory", "search_memory", "delete_memory"} <= names
            saved = await session.call_tool("save_memory", {"content": "Agent a prefers the Tagus office"})
            assert not saved.is_error, _text(saved)
            found = await session.call_tool("search_memory", {"query": "Tagus office"})
            assert _contents(found) == ["Agent a prefers the Tagus office"]
            # Agent b's entry, saved before the server started, does not exist for agent a's key.
            assert _contents(await session.call_tool("search_memory", {"query": "Hadrian vault deploy keys"})) == []

        # An admin key picks the agent per request.
        async with _session(http_server, _bearer(keys["admin"], **{"X-Reverie-Agent": "b"})) as session:
            found = await session.call_tool("search_memory", {"query": "Hadrian vault deploy keys"})
            assert _contents(found) == [AGENT_B_FACT]
            assert _contents(await session.call_tool("search_memory", {"query": "Tagus office"})) == []

    anyio.run(run)
    # Agent a's key may not name another agent.
    forged = httpx.post(http_server, headers=_bearer(keys["a"], **{"X-Reverie-Agent": "b"}), json=_PING)
    assert forged.status_code == 403


def test_http_read_only_key_neither_lists_nor_calls_writes(http_server: str, keys: dict[str, str]) -> None:
    async def run() -> None:
        async with _session(http_server, _bearer(keys["a_read"])) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert "search_memory" in names
            assert not names & {"save_memory", "delete_memory", "update_memory_importance", "save_to_working_memory"}
            refused = await session.call_tool("save_memory", {"content": "should not be written"})
            assert refused.is_error
            assert "memory_write" in _text(refused)
            found = await session.call_tool("search_memory", {"query": "should not be written"})
            assert _contents(found) == []

    anyio.run(run)


def test_http_refuses_requests_without_a_live_key(http_server: str, keys: dict[str, str]) -> None:
    for headers in (
        {},
        {"Authorization": "Basic abc"},
        _bearer("rv_000000000000_" + "x" * 43),
        _bearer(keys["revoked"]),
    ):
        response = httpx.post(http_server, headers=headers, json=_PING)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_client_with_a_bad_key_cannot_connect(http_server: str) -> None:
    async def run() -> None:
        async with _session(http_server, _bearer("rv_000000000000_" + "x" * 43)):
            raise AssertionError("connected with a bad key")  # pragma: no cover

    with pytest.raises(BaseExceptionGroup) as caught:
        anyio.run(run)
    assert caught.group_contains(MCPError, depth=None)


def test_http_without_keys_only_on_loopback_and_loudly(home: Path) -> None:
    refused = CliRunner().invoke(
        app, ["--home", str(home), "mcp", "--transport", "http", "--host", "0.0.0.0", "--no-auth"]
    )
    assert refused.exit_code == 2
    assert "loopback" in refused.output

    with reverie.open(home) as rv:
        rv.memory.save(AGENT_B_FACT, category="ops", scope=Scope(agent_id="b"))

    async def run(url: str) -> None:
        async with _session(url, {"X-Reverie-Agent": "b"}) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"save_memory", "search_memory"} <= names  # keyless: every tool
            found = await session.call_tool("search_memory", {"query": "Hadrian vault"})
            assert _contents(found) == [AGENT_B_FACT]

    with _serving(home, "--no-auth") as (url, log):
        anyio.run(run, url)
        assert "WARNING: --no-auth" in log.read_text(encoding="utf-8")


def test_http_session_belongs_to_the_key_that_opened_it(http_server: str, keys: dict[str, str]) -> None:
    accept = {"Accept": "application/json, text/event-stream"}
    opened = httpx.post(
        http_server,
        headers={**_bearer(keys["a"]), **accept},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
    )
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25", **accept}
    assert httpx.post(http_server, headers={**_bearer(keys["a"]), **session}, json=_PING).status_code == 200
    # Another valid key, even an admin one, cannot ride on it.
    assert httpx.post(http_server, headers={**_bearer(keys["admin"]), **session}, json=_PING).status_code == 404
