"""Key-value memory (seed 004) end to end: the service on both backends (validation that writes nothing,
compare-and-set, update never creating, delete and revive, listing by prefix and cursor, the key limit, the
purge), the engine on PostgreSQL, the CLI through Typer's runner, the HTTP API on real uvicorn, and the
agent tools through the registry."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.kv.service import MAX_DEPTH, KvConfig, KvMemory
from reverie.mcp.server import Caller, ToolServer
from reverie.storage.base import Store
from reverie.tools import ToolContext, ToolRegistry, ToolResult

from ._api import Keys, client, make_keys, memory, serving

JSON_VALUES: list[Any] = [
    "dark",
    "",
    "1.0",
    0,
    -7,
    2**70,
    3.25,
    True,
    False,
    None,
    [],
    [1, "two", [3.5, None]],
    {},
    {"theme": "dark", "sizes": [12, 14], "nested": {"on": True, "note": "naïve ☕ 𝄞"}},
]


@pytest.fixture
def kv(store: Store, clock: FakeClock) -> KvMemory:
    return KvMemory(store, clock, KvConfig(max_value_bytes=1000, max_keys_per_agent=5, deleted_retention_days=30))


# -- the service, on both backends --------------------------------------------------------------------------


@pytest.mark.parametrize("value", JSON_VALUES, ids=repr)
def test_every_json_value_round_trips(kv: KvMemory, value: Any) -> None:
    item = kv.set("a", "user:preference:theme", value)
    assert (item.agent_id, item.key, item.value, item.version) == ("a", "user:preference:theme", value, 1)
    assert kv.get("a", "user:preference:theme").value == value


def test_a_tuple_is_stored_as_the_list_json_reads_back(kv: KvMemory) -> None:
    assert kv.set("a", "k", (1, (2, 3))).value == [1, [2, 3]]
    assert kv.get("a", "k").value == [1, [2, 3]]


def _bad_inputs() -> list[tuple[str, dict[str, Any], str]]:
    nested: Any = "deep"
    for _ in range(MAX_DEPTH + 1):
        nested = [nested]
    return [
        ("empty key", {"key": ""}, "key"),
        ("key too long", {"key": "k" * 257}, "key"),
        ("key with NUL", {"key": "a\x00b"}, "key"),
        ("key with newline", {"key": "a\nb"}, "key"),
        ("key with DEL", {"key": "a\x7f"}, "key"),
        ("key with lone surrogate", {"key": "a\ud800"}, "key"),
        ("key not a string", {"key": 42}, "key"),
        ("empty agent", {"agent_id": ""}, "agent_id"),
        ("agent with spaces around", {"agent_id": " a "}, "agent_id"),
        ("NaN", {"value": math.nan}, "value"),
        ("infinity inside", {"value": {"x": [math.inf]}}, "value"),
        ("NUL in a string", {"value": "a\x00b"}, "value"),
        ("NUL in an object key", {"value": {"a\x00": 1}}, "value"),
        ("lone surrogate", {"value": ["\udfff"]}, "value"),
        ("non-string object key", {"value": {1: "one"}}, "value"),
        ("a set", {"value": {1, 2}}, "value"),
        ("bytes", {"value": b"raw"}, "value"),
        ("an object", {"value": object()}, "value"),
        ("too large", {"value": "x" * 1000}, "value"),  # 1,002 bytes as JSON, over the 1,000 of the fixture
        ("too deep", {"value": nested}, "value"),
        ("negative expected_version", {"expected_version": -1}, "expected_version"),
        ("boolean expected_version", {"expected_version": True}, "expected_version"),
        ("string expected_version", {"expected_version": "1"}, "expected_version"),
    ]


@pytest.mark.parametrize("case", _bad_inputs(), ids=lambda c: c[0])
def test_bad_input_is_a_validation_error_naming_the_field_and_writes_nothing(
    kv: KvMemory, case: tuple[str, dict[str, Any], str]
) -> None:
    _, bad, field = case
    kv.set("a", "existing", "kept")
    for write in (kv.set, kv.update):
        args: dict[str, Any] = {"agent_id": "a", "key": "existing", "value": "new", **bad}
        with pytest.raises(ValidationError) as caught:
            write(args.pop("agent_id"), args.pop("key"), args.pop("value"), **args)
        assert caught.value.field == field
    assert [(i.key, i.value, i.version) for i in kv.list("a")] == [("existing", "kept", 1)]


def test_the_largest_allowed_value_is_accepted(kv: KvMemory) -> None:
    value = "é" * 498  # 996 bytes of UTF-8 plus two quotes: exactly the 1,000-byte limit
    assert kv.set("a", "big", value).value == value


def test_compare_and_set(kv: KvMemory) -> None:
    assert kv.set("a", "k", 1, expected_version=0).version == 1  # 0: only when absent
    with pytest.raises(Conflict):
        kv.set("a", "k", 2, expected_version=0)
    assert kv.set("a", "k", 2, expected_version=1).version == 2
    with pytest.raises(Conflict):
        kv.set("a", "k", 3, expected_version=1)  # stale
    with pytest.raises(Conflict):
        kv.update("a", "k", 3, expected_version=7)
    assert (kv.get("a", "k").value, kv.get("a", "k").version) == (2, 2)
    assert kv.update("a", "k", 3, expected_version=2).version == 3


def test_update_never_creates(kv: KvMemory) -> None:
    with pytest.raises(NotFound, match="never creates"):
        kv.update("a", "missing", "x")
    with pytest.raises(NotFound):
        kv.update("a", "missing", "x", expected_version=0)
    assert kv.list("a") == []
    first = kv.set("a", "k", "one")
    updated = kv.update("a", "k", {"now": "two"})
    assert (updated.value, updated.version, updated.created_at) == ({"now": "two"}, 2, first.created_at)
    kv.delete("a", "k")
    with pytest.raises(NotFound):
        kv.update("a", "k", "three")  # a deleted key is not revived by an update
    assert kv.list("a") == []


def test_delete_then_get_and_revive(kv: KvMemory, clock: FakeClock) -> None:
    kv.set("a", "project:version", "1.0")
    kv.update("a", "project:version", "1.1")
    assert kv.delete("a", "project:version") is True
    with pytest.raises(NotFound, match="project:version"):
        kv.get("a", "project:version")
    assert kv.delete("a", "project:version") is False  # nothing live to delete
    assert kv.list("a") == [] and kv.count("a") == 0
    clock.advance(timedelta(minutes=5))
    revived = kv.set("a", "project:version", "2.0")
    assert revived.value == "2.0" and revived.version > 2  # the version goes on from the deleted item
    assert kv.get("a", "project:version").version == revived.version


def test_list_by_prefix_in_key_order_with_a_cursor(kv: KvMemory) -> None:
    for key in ("user:preference:theme", "user:preference:font", "project:version", "user%x", "use_"):
        kv.set("a", key, key.upper())
    kv.set("b", "user:preference:theme", "b's")
    assert [i.key for i in kv.list("a", "user:preference:")] == ["user:preference:font", "user:preference:theme"]
    assert [i.key for i in kv.list("a", "user%")] == ["user%x"]  # % and _ are plain characters
    assert [i.key for i in kv.list("a", "use_")] == ["use_"]
    keys = [i.key for i in kv.list("a")]
    assert keys == ["project:version", "use_", "user%x", "user:preference:font", "user:preference:theme"]
    page = kv.list("a", "user", limit=2)
    rest = kv.list("a", "user", limit=10, after=page[-1].key)
    assert [i.key for i in page + rest] == [k for k in keys if k.startswith("user")]
    assert kv.count("a", "user:") == 2 and kv.count("b") == 1
    assert [i.value for i in kv.list("b")] == ["b's"]


@pytest.mark.parametrize(
    "kwargs, field",
    [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"after": ""}, "after"), ({"prefix": "\x01"}, "prefix")],
)
def test_bad_listing_arguments(kv: KvMemory, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        kv.list("a", **kwargs)
    assert caught.value.field == field


def test_the_key_limit_refuses_only_new_keys(kv: KvMemory) -> None:
    for n in range(5):
        kv.set("a", f"k{n}", n)
    with pytest.raises(ValidationError, match="max_keys_per_agent"):
        kv.set("a", "one-too-many", 5)
    assert kv.set("a", "k0", "overwritten").version == 2  # an existing key may always be written
    assert kv.set("b", "other-agent", 1).version == 1  # the limit is per agent
    kv.delete("a", "k1")
    assert kv.set("a", "now-there-is-room", 6).value == 6
    assert kv.count("a") == 5


def test_purge_removes_keys_deleted_longer_than_the_retention(kv: KvMemory, clock: FakeClock) -> None:
    kv.set("a", "old", 1)
    kv.set("a", "kept", 2)
    kv.delete("a", "old")
    clock.advance(timedelta(days=29))
    assert kv.purge_deleted() == 0
    clock.advance(timedelta(days=2))
    assert kv.purge_deleted() == 1
    assert [i.key for i in kv.list("a")] == ["kept"]
    assert kv.set("a", "old", 3).value == 3  # the name is free again
    kv.delete("a", "old")
    clock.advance(timedelta(days=31))
    kv.purge_job(clock.now())  # the dream's serve loop: purges at most hourly
    assert kv.set("a", "old", 4).version == 1  # purged: a new life from version 1


# -- the engine on PostgreSQL -------------------------------------------------------------------------------


def test_the_engine_on_postgresql_round_trips(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))
    with reverie.open(pg_url, clock=FakeClock(), embedding={"provider": "none"}, kv={"max_keys_per_agent": 2}) as rv:
        rv.kv.set("pg", "user:preference:theme", {"mode": "dark", "contrast": 1.5})
        rv.kv.set("pg", "project:version", "1.0")
        assert rv.kv.get("pg", "user:preference:theme").value == {"mode": "dark", "contrast": 1.5}
        assert rv.kv.update("pg", "project:version", "1.1").version == 2
        with pytest.raises(ValidationError, match="max_keys_per_agent"):
            rv.kv.set("pg", "third", True)
        with pytest.raises(ValidationError):
            rv.kv.set("pg", "project:version", "nul\x00")
        assert rv.kv.delete("pg", "user:preference:theme")
        assert [(i.key, i.value) for i in rv.kv.list("pg")] == [("project:version", "1.1")]


# -- the CLI -------------------------------------------------------------------------------------------------

runner = CliRunner()


def cli(home: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = runner.invoke(app, ["--home", str(home), "memory", "kv", *args], input=stdin)
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout if code == 0 else " ".join(result.stderr.split())  # Rich wraps long messages


def cli_json(home: Path, *args: str) -> Any:
    return json.loads(cli(home, *args, "--json"))


@pytest.mark.parametrize(
    "args, stored",
    [
        (["dark"], "dark"),
        (["Important note"], "Important note"),
        (["42"], 42),
        (["1.0"], 1.0),
        (["--string", "1.0"], "1.0"),
        (["true"], True),
        (["null"], None),
        (['"quoted"'], "quoted"),
        (['{"a": [1, 2]}'], {"a": [1, 2]}),
        (["--json-value", "[1]"], [1]),
        (["NaN"], "NaN"),  # not JSON here: a string
        (["--value", "7"], 7),
    ],
)
def test_cli_set_reads_json_when_it_parses_else_a_string(home: Path, args: list[str], stored: Any) -> None:
    item = cli_json(home, "set", "k", *args, "--agent", "coder")
    assert item["value"] == stored and item["version"] == 1 and item["agent_id"] == "coder"
    assert cli_json(home, "get", "k", "-a", "coder")["value"] == stored


def test_cli_get_update_delete_and_list(home: Path) -> None:
    out = cli(home, "set", "user:preference:theme", "dark", "-a", "coder")
    assert "user:preference:theme" in out and "dark" in out
    cli(home, "set", "project:version", "--string", "1.0", "-a", "coder")
    cli(home, "set", "note:1", "-", "-a", "coder", stdin="Important note")
    assert cli(home, "get", "project:version", "-a", "coder") == "1.0\n"
    assert cli(home, "get", "note:1", "-a", "coder") == "Important note\n"
    updated = cli_json(home, "update", "project:version", "--value", "2", "-a", "coder")
    assert updated["value"] == 2 and updated["version"] == 2
    assert cli(home, "get", "project:version", "-a", "coder") == "2\n"  # not a string: shown as JSON
    listed = cli_json(home, "list", "--prefix", "user:", "-a", "coder")
    assert [i["key"] for i in listed] == ["user:preference:theme"]
    text = cli(home, "list", "-a", "coder")
    assert text.index("note:1") < text.index("project:version") < text.index("user:preference:theme")
    assert cli_json(home, "list") == []  # another agent ("default") has none
    assert cli_json(home, "delete", "note:1", "-a", "coder") == {"key": "note:1", "deleted": True}
    assert "nothing to delete" in cli(home, "delete", "note:1", "-a", "coder")
    assert "no key" in cli(home, "get", "note:1", "-a", "coder", code=2)


def test_cli_refusals(home: Path) -> None:
    assert "never creates" in cli(home, "update", "missing", "x", code=2)
    assert "not JSON" in cli(home, "set", "k", "--json-value", "not json", code=2)
    assert "exclude" in cli(home, "set", "k", "--json-value", "--string", "1", code=2)
    assert "once" in cli(home, "set", "k", "1", "--value", "2", code=2)
    assert "once" in cli(home, "set", "k", code=2)
    assert "control character" in cli(home, "set", "a\x01b", "1", code=2)
    cli(home, "set", "k", "1")
    assert "version" in cli(home, "set", "k", "2", "--expected-version", "5", code=1).lower()
    assert cli_json(home, "get", "k")["value"] == 1
    assert "limit" in cli(home, "list", "--limit", "0", code=2)


# -- the HTTP API --------------------------------------------------------------------------------------------


@pytest.fixture
def keys(rv: reverie.Reverie) -> Keys:
    return make_keys(rv)


@pytest.fixture
def origin(rv: reverie.Reverie, keys: Keys) -> Iterator[str]:
    with serving(rv) as started:
        yield started


def kv_path(agent: str, key: str = "") -> str:
    return memory(agent, "/kv" + (f"/{quote(key, safe='/:')}" if key else ""))


def test_api_crud(origin: str, keys: Keys) -> None:
    key = "user:preference:theme/with slash ü"
    with client(origin, keys.a) as a:
        created = a.put(kv_path("a", key), json={"value": {"mode": "dark"}})
        assert created.status_code == 200, created.text
        assert created.json()["key"] == key and created.json()["version"] == 1
        assert a.get(kv_path("a", key)).json()["value"] == {"mode": "dark"}
        patched = a.patch(kv_path("a", key), json={"value": None, "expected_version": 1})
        assert patched.status_code == 200 and patched.json()["value"] is None and patched.json()["version"] == 2
        stale = a.put(kv_path("a", key), json={"value": 1, "expected_version": 1})
        assert stale.status_code == 409 and stale.json()["error"] == "conflict"
        for n in range(3):
            a.put(kv_path("a", f"project:{n}"), json={"value": n})
        page = a.get(kv_path("a"), params={"prefix": "project:", "limit": 2}).json()
        assert [i["key"] for i in page["items"]] == ["project:0", "project:1"] and page["next_after"] == "project:1"
        rest = a.get(kv_path("a"), params={"prefix": "project:", "after": page["next_after"]}).json()
        assert [i["key"] for i in rest["items"]] == ["project:2"] and rest["next_after"] is None
        assert a.delete(kv_path("a", key)).json() == {"deleted": True}
        assert a.delete(kv_path("a", key)).json() == {"deleted": False}
        gone = a.get(kv_path("a", key))
        assert gone.status_code == 404 and gone.json()["error"] == "not_found"
        missing = a.patch(kv_path("a", key), json={"value": 1})
        assert missing.status_code == 404  # an update never creates
        assert a.put(kv_path("a", key), json={"value": "back"}).json()["version"] > 2  # revived


def test_api_another_agents_key_is_unknown(origin: str, keys: Keys) -> None:
    with client(origin, keys.b) as b, client(origin, keys.a) as a, client(origin, keys.admin) as admin:
        assert b.put(kv_path("b", "secret"), json={"value": "b's"}).status_code == 200
        assert a.get(kv_path("a", "secret")).status_code == 404  # under its own agent: not there
        assert a.get(kv_path("a")).json()["items"] == []
        assert a.patch(kv_path("a", "secret"), json={"value": "x"}).status_code == 404
        for method, body in (("GET", None), ("PUT", {"value": "x"}), ("PATCH", {"value": "x"}), ("DELETE", None)):
            response = a.request(method, kv_path("b", "secret"), json=body)
            assert response.status_code == 403, (method, response.text)  # another agent's path: refused
        assert admin.get(kv_path("b", "secret")).json()["value"] == "b's"  # an admin reaches every agent
        assert b.get(kv_path("b", "secret")).json()["value"] == "b's"  # and nothing above changed it
    with client(origin, keys.a_read) as reader:
        assert reader.get(kv_path("a")).status_code == 200
        assert reader.put(kv_path("a", "k"), json={"value": 1}).status_code == 403  # memory_read only


@pytest.mark.parametrize(
    "method, path, body, field",
    [
        ("PUT", kv_path("a", "k"), b'{"value": NaN}', "value"),
        ("PUT", kv_path("a", "k"), b'{"value": 1e999}', "value"),
        ("PUT", kv_path("a", "k"), b'{"value": "a\\u0000b"}', "value"),
        ("PUT", kv_path("a", "k"), b'{"value": "\\ud800"}', "value"),
        ("PUT", kv_path("a", "k"), b'{"value": "' + b"x" * 70_000 + b'"}', "value"),
        ("PUT", kv_path("a", "k"), b'{"value": ' + b"[" * 100 + b"]" * 100 + b"}", "value"),
        ("PUT", kv_path("a", "k"), b"{}", "value"),
        ("PUT", kv_path("a", "k"), b'{"value": 1, "extra": 2}', "extra"),
        ("PUT", kv_path("a", "k"), b'{"value": 1, "expected_version": -1}', "expected_version"),
        ("PUT", kv_path("a", "k"), b'{"value": 1, "expected_version": "1"}', "expected_version"),
        ("PUT", kv_path("a", "k"), b"{bad json", "body"),
        ("PUT", memory("a", "/kv/a%01b"), b'{"value": 1}', "key"),
        ("PUT", memory("a", "/kv/a%00b"), b'{"value": 1}', "key"),
        ("PUT", memory("a", "/kv/" + "k" * 257), b'{"value": 1}', "key"),
        ("GET", memory("a", "/kv/a%09b"), None, "key"),
        ("GET", memory("a", "/kv?limit=0"), None, "limit"),
        ("GET", memory("a", "/kv?prefix=%01"), None, "prefix"),
        ("GET", memory("a", "/kv?after="), None, "after"),
    ],
)
def test_api_bad_input_is_a_422_and_writes_nothing(
    rv: reverie.Reverie, origin: str, keys: Keys, method: str, path: str, body: bytes | None, field: str
) -> None:
    with client(origin, keys.a) as a:
        headers = {"Content-Type": "application/json"}
        response = a.request(method, path, content=body, headers=headers)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "validation" and response.json()["field"] == field, response.text
    assert rv.kv.list("a") == []


def test_api_a_path_with_a_line_break_names_no_route(origin: str, keys: Keys) -> None:
    # Starlette's path parameters do not span a line break: no route (404), never a server error.
    with client(origin, keys.a) as a:
        assert a.put(memory("a", "/kv/a%0Ab"), json={"value": 1}).status_code == 404
        assert a.get(kv_path("a")).json()["items"] == []


# -- the agent tools -----------------------------------------------------------------------------------------


def ok(result: ToolResult) -> ToolResult:
    assert not result.is_error, result.text
    json.dumps(result.data)
    return result


def refused(result: ToolResult, kind: str) -> ToolResult:
    assert result.is_error and result.data["error"]["kind"] == kind, result.data
    return result


def test_tools_set_get_list_delete(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    me = ToolContext(agent_id="coder", user_id="u1", session_id="s1")
    assert {"kv_get", "kv_set", "kv_delete", "kv_list"} <= {s.name for s in tools.specs("coder")}
    created = ok(tools.call("kv_set", {"key": "user:preference:theme", "value": "dark"}, me))
    assert created.data["version"] == 1 and "Created" in created.text
    ok(tools.call("kv_set", {"key": "user:preference:font", "value": {"size": 14}}, me))
    got = ok(tools.call("kv_get", {"key": "user:preference:theme"}, me))
    assert got.data["value"] == "dark" and '"dark"' in got.text
    listed = ok(tools.call("kv_list", {"prefix": "user:"}, me))
    assert [i["key"] for i in listed.data["items"]] == ["user:preference:font", "user:preference:theme"]
    assert '{"size": 14}' in listed.text
    page = ok(tools.call("kv_list", {"limit": 1}, me))
    assert page.data["next_after"] == "user:preference:font" and "after=" in page.text
    # Key-value memory is per agent: another user or session of the same agent sees the same keys.
    assert ok(tools.call("kv_get", {"key": "user:preference:theme"}, ToolContext(agent_id="coder"))).data["value"]
    refused(tools.call("kv_get", {"key": "user:preference:theme"}, ToolContext(agent_id="other")), "not_found")
    assert ok(tools.call("kv_list", {}, ToolContext(agent_id="other"))).data["items"] == []
    deleted = ok(tools.call("kv_delete", {"key": "user:preference:theme"}, me))
    assert deleted.data == {"key": "user:preference:theme", "deleted": True}
    assert ok(tools.call("kv_delete", {"key": "user:preference:theme"}, me)).data["deleted"] is False
    refused(tools.call("kv_get", {"key": "user:preference:theme"}, me), "not_found")


def test_the_mcp_server_serves_the_kv_tools(rv: reverie.Reverie) -> None:
    server = ToolServer(ToolRegistry(rv), rv.keys, lambda _ctx: Caller("coder"))
    assert {"kv_get", "kv_set", "kv_delete", "kv_list"} <= {s.name for s in server.specs(Caller("coder"))}
    stored = server.call(Caller("coder"), "kv_set", {"key": "project:version", "value": "1.0"})
    assert not stored.is_error and stored.structured_content is not None
    assert stored.structured_content["version"] == 1
    read = server.call(Caller("coder"), "kv_get", {"key": "project:version"})
    assert read.structured_content is not None and read.structured_content["value"] == "1.0"
    _, reader_secret = rv.keys.create("reader", agent_id="coder", scopes=["memory_read"])
    reader = rv.keys.authenticate(reader_secret)
    names = {s.name for s in server.specs(Caller("coder", reader))}
    assert {"kv_get", "kv_list"} <= names and not {"kv_set", "kv_delete"} & names  # scopes apply


def test_tools_refusals_write_nothing(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    me = ToolContext(agent_id="coder")
    ok(tools.call("kv_set", {"key": "k", "value": 1}, me))
    conflict = refused(tools.call("kv_set", {"key": "k", "value": 2, "expected_version": 0}, me), "conflict")
    assert "kv_get" in conflict.text
    for args in (
        {"key": "k", "value": None},  # null counts as omitted: value is required
        {"key": "", "value": 1},
        {"key": "a\x00", "value": 1},
        {"key": "k", "value": "x" * 70_000},
        {"key": "k", "value": {"a": "\x00"}},
        {"key": "k", "value": 1, "other": 1},
        {"key": "k" * 257, "value": 1},
    ):
        refused(tools.call("kv_set", args, me), "validation")
    refused(tools.call("kv_list", {"limit": 0}, me), "validation")
    assert [(i.key, i.value, i.version) for i in rv.kv.list("coder")] == [("k", 1, 1)]
