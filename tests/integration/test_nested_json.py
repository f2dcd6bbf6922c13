"""Deeply nested JSON on every write path that takes a caller's JSON (issue 20): the one limit, 64 levels, is
a ``ValidationError`` naming the field from the library, a 422 ``validation`` from the HTTP API (on a real
uvicorn server, the keep-alive connection still usable after it), a one-line error with exit code 2 from the
CLI (a real subprocess), and a ``validation`` tool result through the agent tools. Nothing is written.

Two depths matter over HTTP: 300 levels decode fine and reach the services' check; 50,000 levels exhaust the
JSON decoder's recursion before any route runs, and must get the same documented answer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import reverie
from reverie import ValidationError
from reverie.tools import ToolContext, ToolRegistry
from reverie.tools.specs import KNOWLEDGE_ADD_ENTITY, KV_SET

from ._api import client, memory, serving

LIMIT = 64
DEEP = 300  # decodes; past the limit and past pydantic's serialiser (~255): the check must come first
ABSURD = 50_000  # past the JSON decoder's recursion


def nested(levels: int) -> Any:
    """``levels`` arrays, one inside the next, around 1."""
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def nested_text(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _object_with(levels: int) -> str:
    """A JSON object ``levels`` deep in all: ``{"k": [[…[1]…]]}``."""
    return '{"k":' + nested_text(levels - 1) + "}"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with reverie.open(tmp_path / "home", embedding={"provider": "hash", "background": False}) as rv:
        yield rv


# -- the HTTP API ---------------------------------------------------------------------------------------------

# (method, path, the body around the deep value, the field a 300-deep value is refused as)
ROUTES = {
    "entries": ("POST", memory("a", "/entries"), '{"content": "Ana lives in Porto", "metadata": %s}', "metadata"),
    "skills": ("PUT", memory("a", "/skills/deploy"), '{"summary": "s", "content": "c", "metadata": %s}', "metadata"),
    "tool-calls": ("POST", memory("a", "/tool-calls"), '{"tool": "t", "ok": true, "arguments": %s}', "arguments"),
    "turns": (
        "POST",
        memory("a", "/sessions/s1/turns"),
        '{"role": "assistant", "content": "", "create": true, "tool_calls": [%s]}',
        "tool_calls",
    ),
}


def _written(c: httpx.Client) -> list[int]:
    """How much the routes above have stored: entries, skills, tool calls, sessions."""
    return [
        len(c.get(memory("a", "/entries")).json()["entries"]),
        len(c.get(memory("a", "/skills")).json()["skills"]),
        len(c.get(memory("a", "/tool-calls")).json()),
        len(c.get(memory("a", "/sessions")).json()),
    ]


@pytest.mark.parametrize("levels", [LIMIT + 1, DEEP, ABSURD])
@pytest.mark.parametrize("route", list(ROUTES))
def test_a_too_deep_body_is_a_422_and_the_connection_stays_usable(
    engine: reverie.Reverie, route: str, levels: int
) -> None:
    secret = engine.keys.create("a", agent_id="a", scopes=["memory_read", "memory_write"])[1]
    method, path, template, field = ROUTES[route]
    wrapper = 1 if field == "tool_calls" else 0  # the list around the tool call: a level of the field too
    with serving(engine) as origin, client(origin, secret) as c:
        streams: list[object] = []  # the connection each answer came on
        c.event_hooks = {"response": [lambda r: streams.append(r.extensions.get("network_stream"))]}
        before = _written(c)
        refused = c.request(method, path, content=template % _object_with(levels - wrapper), headers=_JSON)
        assert refused.status_code == 422, refused.text
        body = refused.json()
        assert body["error"] == "validation"
        assert body["field"] == (field if levels < ABSURD else "body")
        assert "nested" in body["message"] and "64 levels" in body["message"]
        assert _written(c) == before
        shallow = c.request(method, path, content=template % _object_with(LIMIT - wrapper), headers=_JSON)
        assert shallow.status_code in (200, 201), shallow.text
        # One keep-alive connection answered them all: the refusal neither reset it nor made the client reconnect.
        assert streams[0] is not None and all(s is streams[0] for s in streams)


_JSON = {"content-type": "application/json"}


def test_a_body_the_decoder_cannot_read_gets_the_documented_kind(engine: reverie.Reverie) -> None:
    """Not only depth: no answer is the undocumented 400 ``bad_request``."""
    secret = engine.keys.create("a", agent_id="a", scopes=["memory_read", "memory_write"])[1]
    with serving(engine) as origin, client(origin, secret) as c:
        refused = c.post(memory("a", "/entries"), content=b'{"content": "\xff\xfe"}', headers=_JSON)
        assert (refused.status_code, refused.json()["error"], refused.json()["field"]) == (422, "validation", "body")


# -- the library ------------------------------------------------------------------------------------------


def _library_writes(rv: reverie.Reverie, value: Any) -> dict[str, Any]:
    """Every library write of caller JSON, each with ``value`` where the JSON goes, and the field it names."""
    return {
        "metadata": lambda: rv.memory.save("Ana lives in Porto", metadata={"k": value}),
        "metadata ": lambda: rv.memory.save_many([{"content": "Ana lives in Porto", "metadata": {"k": value}}]),
        " metadata": lambda: rv.skills.save("default", "deploy", "s", "c", metadata={"k": value}),
        "arguments": lambda: rv.tool_calls.record("default", "t", True, arguments={"k": value}),
        "tool_calls": lambda: rv.conversation.add_turn("s1", "assistant", "", tool_calls=[{"k": value}], create=True),
        "value": lambda: rv.kv.set("default", "k", value),
        "properties": lambda: rv.graph.add_entity("default", "person", "Ana", {"k": value}),
        "properties ": lambda: rv.graph.add_relation("default", "person:Ana", "knows", "person:Bo", {"k": value}),
    }


def _stored(rv: reverie.Reverie) -> tuple[int, ...]:
    return (
        len(rv.memory.browse().entries),
        len(rv.skills.list("default")),
        len(rv.tool_calls.list("default")),
        len(rv.conversation.list()),
        len(rv.kv.list("default")),
        len(rv.graph.list_entities("default")),
    )


@pytest.mark.parametrize("levels", [LIMIT + 1, DEEP, 100_000])
def test_library_writes_refuse_too_deep_json_naming_the_field(engine: reverie.Reverie, levels: int) -> None:
    before = _stored(engine)
    for field, write in _library_writes(engine, nested(levels)).items():
        with pytest.raises(ValidationError, match="nested deeper than 64 levels") as exc:
            write()
        assert exc.value.field == field.strip()
    assert _stored(engine) == before


def test_library_writes_take_json_nested_64_levels(engine: reverie.Reverie) -> None:
    for write in _library_writes(engine, nested(LIMIT - 2)).values():  # {"k": …} and, for tool_calls, the list
        write()


# -- the agent tools (what MCP serves) ----------------------------------------------------------------------


@pytest.mark.parametrize("levels", [DEEP, 100_000])
def test_tools_refuse_too_deep_json_as_a_validation_result(engine: reverie.Reverie, levels: int) -> None:
    tools = ToolRegistry(engine)
    ctx = ToolContext(session_id="s1")
    for name, arguments, field in (
        (KNOWLEDGE_ADD_ENTITY, {"type": "person", "name": "Ana", "properties": {"k": nested(levels)}}, "properties"),
        (KV_SET, {"key": "k", "value": nested(levels)}, "value"),
    ):
        result = tools.call(name, arguments, ctx)
        assert result.is_error, result.text
        assert result.data["error"]["kind"] == "validation", result.data
        assert "nested deeper than 64 levels" in result.text and result.data["error"].get("field") == field
    assert engine.graph.list_entities("default") == [] and engine.kv.list("default") == []


# -- the CLI ----------------------------------------------------------------------------------------------

# (the arguments after --home, with {} where the deep JSON goes, and the field it names)
COMMANDS = {
    "kv set": (["memory", "kv", "set", "k", "--json-value", "{}"], "value"),
    "kv set (plain)": (["memory", "kv", "set", "k", "{}"], "value"),
    "kg add-entity": (["kg", "add-entity", "--type", "person", "--name", "Ana", "--properties", "{}"], "properties"),
    "tool-calls record": (["tool-calls", "record", "t", "--ok", "--arguments", "{}"], "arguments"),
    "session add": (["session", "add", "s1", "assistant", "", "--create", "--tool-calls", "{}"], "tool_calls"),
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "cli-home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "none"\n', encoding="utf-8")
    return home


@pytest.mark.parametrize("levels", [DEEP, ABSURD])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_refuses_too_deep_json_in_one_line_with_exit_2(home: Path, command: str, levels: int) -> None:
    args, field = COMMANDS[command]
    shapes = {"value": nested_text(levels), "tool_calls": f"[{_object_with(levels - 1)}]"}
    deep = shapes.get(field, _object_with(levels))
    argv = [sys.executable, "-m", "reverie", "--home", str(home), *(deep if a == "{}" else a for a in args)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr[-2000:]
    message = " ".join(done.stderr.split())
    assert "nested deeper than 64 levels" in message, message
    with reverie.open(home) as rv:
        assert rv.kv.list("default") == [] and rv.graph.list_entities("default") == []
        assert rv.tool_calls.list("default") == [] and rv.conversation.list() == []
