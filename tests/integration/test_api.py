"""The HTTP API against real uvicorn on 127.0.0.1: every route group's happy path, authentication (401),
authorization (403, another agent's ids answered 404 like unknown ones), the body limit (413), malformed
input (422) and the error shape."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import reverie
from reverie.clock import FakeClock
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._api import Keys, client, make_keys, memory, serving


@pytest.fixture
def keys(rv: reverie.Reverie) -> Keys:
    return make_keys(rv)


@pytest.fixture
def origin(rv: reverie.Reverie, keys: Keys) -> Iterator[str]:
    with serving(rv) as started:
        yield started


@pytest.fixture
def admin(origin: str, keys: Keys) -> Iterator[httpx.Client]:
    with client(origin, keys.admin) as c:
        yield c


@pytest.fixture
def agent_a(origin: str, keys: Keys) -> Iterator[httpx.Client]:
    with client(origin, keys.a) as c:
        yield c


def save(c: httpx.Client, agent: str, content: str, **fields: object) -> str:
    response = c.post(memory(agent, "/entries"), json={"content": content, "dedup": False, **fields})
    assert response.status_code == 201, response.text
    entry_id: str = response.json()["entry"]["id"]
    return entry_id


# -- public routes and authentication ------------------------------------------------------------------------


def test_health_and_the_schema_need_no_key(origin: str) -> None:
    with client(origin) as anonymous:
        assert anonymous.get("/health").json() == {"status": "ok", "version": reverie.__version__}
        schema = anonymous.get("/openapi.json").json()
    assert "/api/memory/agents/{agent_id}/entries" in schema["paths"]
    assert set(schema["components"]["securitySchemes"]) == {"bearer", "apiKey"}
    assert schema["paths"]["/health"]["get"]["security"] == []


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", memory("a", "/entries")),
        ("POST", memory("a", "/entries")),
        ("GET", "/api/usage"),
        ("GET", "/api/dream/status"),
        ("GET", "/no/such/route"),
    ],
)
def test_every_route_but_health_needs_a_live_key(
    rv: reverie.Reverie, origin: str, keys: Keys, method: str, path: str
) -> None:
    revoked, revoked_secret = rv.keys.create("old", agent_id="a", scopes=["memory_read"])
    rv.keys.revoke(revoked.key_id)
    for secret in (None, "rv_not-a-key", keys.a + "x", revoked_secret):
        with client(origin, secret) as c:
            # Without a key the request is refused before its body is even parsed.
            response = c.request(method, path, content=b"{bad json", headers={"Content-Type": "application/json"})
        assert response.status_code == 401, (secret, response.text)
        assert response.json()["error"] == "unauthorized"
        assert response.headers["WWW-Authenticate"] == "Bearer"


def test_the_key_may_come_as_bearer_or_as_x_api_key(origin: str, keys: Keys) -> None:
    for header in ("bearer", "x-api-key"):
        with client(origin, keys.a, header=header) as c:
            assert c.get(memory("a", "/entries")).status_code == 200


def test_a_key_reaches_only_its_own_agent_and_only_its_scopes(origin: str, keys: Keys, agent_a: httpx.Client) -> None:
    entry = save(agent_a, "a", "a's fact about Lisbon")
    assert agent_a.get(memory("b", "/entries")).status_code == 403
    assert agent_a.post(memory("b", "/entries"), json={"content": "x"}).status_code == 403
    assert agent_a.get(memory("b", f"/entries/{entry}")).status_code == 403
    with client(origin, keys.a_read) as reader:
        assert reader.get(memory("a", f"/entries/{entry}")).status_code == 200
        refused = reader.delete(memory("a", f"/entries/{entry}"))
        assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
        assert reader.post(memory("a", "/entries"), json={"content": "x"}).status_code == 403
    for path in ("/api/usage", "/api/usage/export.csv", "/api/dream/status", "/api/audit/trend", "/api/keys"):
        assert agent_a.get(path).status_code == 403, path
    for path in ("/api/dream/agents/a/trigger", "/api/dream/agents/a/abort", "/api/audit/run"):
        assert agent_a.post(path).status_code == 403, path
    assert agent_a.put("/api/dream/agents/a/enabled", json={"enabled": False}).status_code == 403
    assert agent_a.get(memory("a", f"/entries/{entry}")).json()["archived"] is False


def test_another_agents_entry_id_is_answered_exactly_like_an_unknown_id(
    admin: httpx.Client, agent_a: httpx.Client
) -> None:
    theirs = save(admin, "b", "b's private fact", category="secrets")
    for method, rest, body in [
        ("GET", "", None),
        ("PATCH", "", {"content": "overwritten"}),
        ("DELETE", "", None),
        ("POST", "/restore", None),
        ("PUT", "/importance", {"importance": 0.9}),
        ("GET", "/history", None),
        ("POST", "/versions/1/restore", None),
    ]:
        responses = [
            agent_a.request(method, memory("a", f"/entries/{entry_id}{rest}"), json=body)
            for entry_id in (theirs, "000000000000")
        ]
        assert [r.status_code for r in responses] == [404, 404], (method, rest)
        first, second = (r.json() for r in responses)
        assert first["message"].replace(theirs, "X") == second["message"].replace("000000000000", "X")
        assert first["error"] == second["error"] == "not_found"
    entry = admin.get(memory("b", f"/entries/{theirs}")).json()
    assert (entry["content"], entry["archived"], entry["importance"]) == ("b's private fact", False, 0.5)
    assert agent_a.get(memory("a", "/search"), params={"query": "private fact"}).json()["hits"] == []


def test_an_admin_key_reaches_every_agent(admin: httpx.Client) -> None:
    for agent in ("a", "b", "someone-else"):
        entry = save(admin, agent, f"a fact of {agent}")
        assert admin.get(memory(agent, f"/entries/{entry}")).json()["agent_id"] == agent
        other = "b" if agent == "a" else "a"
        assert admin.get(memory(other, f"/entries/{entry}")).status_code == 404


# -- long-term memory ---------------------------------------------------------------------------------------


def test_memory_crud_history_and_archive(agent_a: httpx.Client) -> None:
    saved = agent_a.post(
        memory("a", "/entries"),
        json={"content": "Maya works from Lisbon", "category": "user-preferences/location", "tags": ["tz"]},
    ).json()
    assert saved["outcome"] == "created"
    entry_id = saved["entry"]["id"]
    episodic = agent_a.post(memory("a", "/entries"), json={"content": "Met Maya at 9", "tier": "episodic"}).json()
    assert episodic["entry"]["tier"] == "episodic"
    again = agent_a.post(
        memory("a", "/entries"), json={"content": "Maya works from Lisbon", "category": "user-preferences/location"}
    ).json()
    assert again["outcome"] == "reinforced" and again["entry"]["id"] == entry_id

    edited = agent_a.patch(memory("a", f"/entries/{entry_id}"), json={"content": "Maya moved to Porto"}).json()
    assert edited["content"] == "Maya moved to Porto" and edited["tags"] == ["tz"]
    history = agent_a.get(memory("a", f"/entries/{entry_id}/history")).json()
    assert [v["change"] for v in history] == ["created", "edited"]
    restored = agent_a.post(memory("a", f"/entries/{entry_id}/versions/1/restore")).json()
    assert restored["content"] == "Maya works from Lisbon"

    scored = agent_a.put(memory("a", f"/entries/{entry_id}/importance"), json={"importance": 0.9}).json()
    assert scored["importance"] == 0.9

    deleted = agent_a.delete(memory("a", f"/entries/{entry_id}")).json()
    assert deleted["archived"] is True  # delete archives
    assert agent_a.get(memory("a", "/search"), params={"query": "Lisbon"}).json()["hits"] == []
    assert agent_a.get(memory("a", f"/entries/{entry_id}")).json()["archived"] is True
    back = agent_a.post(memory("a", f"/entries/{entry_id}/restore")).json()
    assert back["archived"] is False
    hits = agent_a.get(memory("a", "/search"), params={"query": "Lisbon", "limit": 5}).json()
    assert [h["entry"]["id"] for h in hits["hits"]] == [entry_id]
    assert agent_a.post(memory("a", f"/entries/{entry_id}/versions/99/restore")).status_code == 404


def test_search_options_browse_and_user_scope(agent_a: httpx.Client) -> None:
    pinned = save(agent_a, "a", "Always answer in English", category="style", pinned=True)
    db = save(agent_a, "a", "Lantern stores schedules in PostgreSQL 16", category="project/lantern")
    mine = save(agent_a, "a", "User one's private note about Lantern", category="notes", tags=[])
    agent_a.post(memory("a", "/entries"), params={"user_id": "u1"}, json={"content": "u1 likes tea", "dedup": False})
    found = agent_a.get(
        memory("a", "/search"), params={"query": "Lantern PostgreSQL", "pin_first": True, "mode": "bm25"}
    ).json()
    assert found["mode"] == "bm25"
    assert found["hits"][0]["entry"]["id"] == pinned and found["hits"][0]["matched_by"] == "pinned"
    assert {h["entry"]["id"] for h in found["hits"][1:]} >= {db}
    by_category = agent_a.get(memory("a", "/search"), params={"query": "Lantern", "category": "project"}).json()
    assert [h["entry"]["id"] for h in by_category["hits"]] == [db]
    browse = agent_a.get(memory("a", "/entries"), params={"limit": 2}).json()
    assert len(browse["entries"]) == 2
    assert {c["category"] for c in browse["taxonomy"]} == {"style", "project/lantern", "notes"}
    assert mine in {e["id"] for e in agent_a.get(memory("a", "/entries")).json()["entries"]}
    tea = agent_a.get(memory("a", "/search"), params={"query": "tea"}).json()["hits"]
    assert tea == []  # a user-scoped entry is invisible without its user
    tea = agent_a.get(memory("a", "/search"), params={"query": "tea", "user_id": "u1"}).json()["hits"]
    assert [h["entry"]["user_id"] for h in tea] == ["u1"]


def test_a_hit_found_by_asking_again_by_name_says_how_it_was_asked(agent_a: httpx.Client, rv: reverie.Reverie) -> None:
    """matched_by ``introduction`` and ``evidence.asked_as`` reach the API (docs/concepts.md, "Asking again by
    name")."""
    save(agent_a, "a", "Leo is Dan's son; he started primary school in September.")
    allergy = save(agent_a, "a", "Leo is allergic to penicillin; doctors prescribe clarithromycin.")
    rv.embed_pending()
    hits = agent_a.get(memory("a", "/search"), params={"query": "son's drug allergy"}).json()["hits"]
    asked = {h["entry"]["id"]: h["evidence"]["asked_as"] for h in hits if h["matched_by"] == "introduction"}
    assert asked.get(allergy) == "Leo's drug allergy"
    plain = agent_a.get(memory("a", "/search"), params={"query": "Leo penicillin"}).json()["hits"]
    assert plain[0]["entry"]["id"] == allergy and plain[0]["evidence"]["asked_as"] is None


def test_rejected_input_is_a_422_naming_the_field(agent_a: httpx.Client) -> None:
    cases = [
        ({"content": ""}, "content"),
        ({"content": "x", "importance": 2}, "importance"),
        ({"content": "x", "category": "Not A Path"}, "category"),
        ({"content": "x", "tier": "legendary"}, "tier"),
        ({"content": "x", "surprise": 1}, "surprise"),
        ({"content": 42}, "content"),
        ({"content": "x", "pinned": 1}, "pinned"),  # JSON types are taken strictly: 1 is not true
    ]
    for body, field in cases:
        response = agent_a.post(memory("a", "/entries"), json=body)
        assert response.status_code == 422, (body, response.text)
        assert response.json()["error"] == "validation" and response.json()["field"] == field, response.text
    # JSON may carry a lone surrogate (\ud800), which no store can hold: refused, and echoed back safely.
    for raw, field in [
        (b'{"content": "x", "metadata": {"k": "\\ud800"}}', "metadata"),
        (b'{"content": "\\ud800"}', "content"),
    ]:
        response = agent_a.post(memory("a", "/entries"), content=raw, headers={"Content-Type": "application/json"})
        assert response.status_code == 422 and response.json()["field"] == field, response.text
    bad_limit = agent_a.get(memory("a", "/search"), params={"query": "x", "limit": 0})
    assert bad_limit.status_code == 422 and bad_limit.json()["field"] == "limit"
    bad_mode = agent_a.get(memory("a", "/search"), params={"query": "x", "mode": "psychic"})
    assert bad_mode.status_code == 422 and bad_mode.json()["field"] == "mode"


def test_malformed_json_is_a_422(agent_a: httpx.Client) -> None:
    for raw in (b"{bad json", b"", b"[1, 2", b"\xff\xfe", b'{"content": "\xe9t\xe9"}'):
        response = agent_a.post(memory("a", "/entries"), content=raw, headers={"Content-Type": "application/json"})
        assert response.status_code == 422, (raw, response.text)
        assert response.json()["error"] == "validation"


def test_a_body_over_the_limit_is_a_413(rv: reverie.Reverie, keys: Keys) -> None:
    with serving(rv, max_body_bytes=1000) as small, client(small, keys.a) as c:
        big = {"content": "x" * 2000}
        declared = c.post(memory("a", "/entries"), json=big)
        assert declared.status_code == 413 and declared.json()["error"] == "too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, refused once past the limit
            yield b'{"content": "'
            for _ in range(20):
                yield b"y" * 100
            yield b'"}'

        streamed = c.post(memory("a", "/entries"), content=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413
        assert c.post(memory("a", "/entries"), json={"content": "small enough"}).status_code == 201
    assert [e.content for e in rv.memory.browse(scope=reverie.Scope("a")).entries] == ["small enough"]


# -- working memory -----------------------------------------------------------------------------------------


def test_working_memory_save_get_search_delete(agent_a: httpx.Client) -> None:
    ns = {"namespace": "session/s1"}
    stored = agent_a.put(
        memory("a", "/working/inbox"), params=ns, json={"value": "3 unread from Lantern CI", "category": "email"}
    ).json()
    assert stored["entry"]["key"] == "session/s1/inbox"
    assert agent_a.get(memory("a", "/working/inbox"), params=ns).json()["value"] == "3 unread from Lantern CI"
    full = agent_a.get(memory("a", "/working/session/s1/inbox"), params={"namespace": "patrol/p"}).json()
    assert full["key"] == "session/s1/inbox"  # reads cross namespaces by full key
    found = agent_a.get(memory("a", "/working"), params={**ns, "query": "Lantern"}).json()
    assert [h["entry"]["key"] for h in found["hits"]] == ["session/s1/inbox"]
    listed = agent_a.get(memory("a", "/working"), params=ns).json()
    assert [e["key"] for e in listed["entries"]] == ["session/s1/inbox"]
    outside = agent_a.put(memory("a", "/working/patrol/p/x"), params=ns, json={"value": "v"})
    assert outside.status_code == 422 and outside.json()["field"] == "key"
    assert agent_a.delete(memory("a", "/working/inbox"), params=ns).json() == {"deleted": True}
    assert agent_a.delete(memory("a", "/working/inbox"), params=ns).json() == {"deleted": False}
    assert agent_a.get(memory("a", "/working/inbox"), params=ns).status_code == 404


def test_working_memory_of_another_agent_is_unknown(admin: httpx.Client, agent_a: httpx.Client) -> None:
    ns = {"namespace": "session/s1"}
    admin.put(memory("b", "/working/secret"), params=ns, json={"value": "b's scratch"})
    assert agent_a.get(memory("a", "/working/secret"), params=ns).status_code == 404
    assert agent_a.get(memory("b", "/working/secret"), params=ns).status_code == 403
    assert agent_a.get(memory("a", "/working"), params={**ns, "query": "scratch"}).json()["hits"] == []


# -- sessions and the context -------------------------------------------------------------------------------


def test_sessions_turns_export_compaction_and_context(agent_a: httpx.Client) -> None:
    created = agent_a.post(memory("a", "/sessions"), json={"session_id": "chat-1", "name": "support"})
    assert created.status_code == 201 and created.json()["session_id"] == "chat-1"
    assert agent_a.post(memory("a", "/sessions"), json={"session_id": "chat-1"}).status_code == 409
    save(agent_a, "a", "Maya keeps Europe/Lisbon hours", category="user-preferences/timezone")
    for role, text in [("user", "hello"), ("assistant", "hi, how can I help?")]:
        turn = agent_a.post(memory("a", "/sessions/chat-1/turns"), json={"role": role, "content": text})
        assert turn.status_code == 201 and turn.json()["role"] == role
    assert agent_a.post(memory("a", "/sessions/nope/turns"), json={"role": "user", "content": "x"}).status_code == 404
    made = agent_a.post(memory("a", "/sessions/new-1/turns"), json={"role": "user", "content": "x", "create": True})
    assert made.status_code == 201
    assert {s["session_id"] for s in agent_a.get(memory("a", "/sessions")).json()} == {"new-1", "chat-1"}
    info = agent_a.get(memory("a", "/sessions/chat-1")).json()
    assert (info["live"], info["expired"], info["session"]["name"]) == (2, False, "support")
    export = agent_a.get(memory("a", "/sessions/chat-1/export")).json()
    assert [t["content"] for t in export["turns"]] == ["hello", "hi, how can I help?"]

    context = agent_a.post(
        memory("a", "/sessions/chat-1/context"), json={"message": "Which hours does Maya keep?", "budget_tokens": 500}
    ).json()
    assert [s["name"] for s in context["sections"]][-1] == "message"
    assert "Europe/Lisbon" in context["messages"][0]["content"]
    assert context["messages"][-1] == {"role": "user", "content": "Which hours does Maya keep?"}
    assert len(context["injected"]) == 1 and context["over_budget"] is False

    compacted = agent_a.post(memory("a", "/sessions/chat-1/compact"), params={"force": True}).json()
    assert compacted["session_id"] == "chat-1" and compacted["method"] in ("extractive", None)
    status = agent_a.get(memory("a", "/compaction-status")).json()
    assert {s["session_id"] for s in status} == {"chat-1", "new-1"}

    assert agent_a.delete(memory("a", "/sessions/chat-1")).json() == {"deleted": True}
    assert agent_a.get(memory("a", "/sessions/chat-1")).status_code == 404
    bad = agent_a.post(memory("a", "/sessions/new-1/context"), json={"message": "x", "kind": "patrol"})
    assert bad.status_code == 422 and bad.json()["field"] == "namespace"


def test_another_agents_session_is_unknown(admin: httpx.Client, agent_a: httpx.Client) -> None:
    admin.post(memory("b", "/sessions"), json={"session_id": "b-chat"})
    admin.post(memory("b", "/sessions/b-chat/turns"), json={"role": "user", "content": "b's words"})
    for method, rest, body in [
        ("GET", "", None),
        ("GET", "/export", None),
        ("POST", "/turns", {"role": "user", "content": "intrusion"}),
        ("POST", "/compact", None),
        ("POST", "/context", {"message": "hi"}),
        ("DELETE", "", None),
    ]:
        response = agent_a.request(method, memory("a", f"/sessions/b-chat{rest}"), json=body)
        assert response.status_code == 404, (method, rest, response.text)
    assert [t["content"] for t in admin.get(memory("b", "/sessions/b-chat/export")).json()["turns"]] == ["b's words"]


# -- tools --------------------------------------------------------------------------------------------------


def test_tools_listing_and_calls(origin: str, keys: Keys, agent_a: httpx.Client) -> None:
    specs = agent_a.get(memory("a", "/tools")).json()
    by_name = {s["name"]: s for s in specs}
    assert {"save_memory", "search_memory", "delete_memory"} <= set(by_name)
    assert by_name["save_memory"]["scope"] == "memory_write" and by_name["search_memory"]["scope"] == "memory_read"
    assert by_name["search_memory"]["input_schema"]["type"] == "object"

    saved = agent_a.post(
        memory("a", "/tools/save_memory"), json={"arguments": {"content": "Maya drinks green tea", "category": "food"}}
    ).json()
    assert saved["is_error"] is False
    found = agent_a.post(memory("a", "/tools/search_memory"), json={"arguments": {"query": "green tea"}}).json()
    assert found["is_error"] is False and "green tea" in found["text"]

    refused = agent_a.post(memory("a", "/tools/save_memory"), json={"arguments": {"content": 42}}).json()
    assert refused["is_error"] is True and refused["data"]["error"]["kind"] == "validation"
    assert agent_a.post(memory("a", "/tools/no_such_tool"), json={}).status_code == 404
    assert agent_a.post(memory("b", "/tools/search_memory"), json={"arguments": {"query": "x"}}).status_code == 403
    assert agent_a.get(memory("b", "/tools")).status_code == 403
    with client(origin, keys.a_read) as reader:
        assert reader.post(memory("a", "/tools/search_memory"), json={"arguments": {"query": "tea"}}).status_code == 200
        write = reader.post(memory("a", "/tools/save_memory"), json={"arguments": {"content": "x"}})
        assert write.status_code == 403
    with client(origin, keys.b) as b:
        theirs = b.post(memory("b", "/tools/search_memory"), json={"arguments": {"query": "green tea"}}).json()
    assert "Maya drinks" not in theirs["text"] and "Maya drinks" not in str(theirs["data"])


# -- dream, audit, usage, keys ------------------------------------------------------------------------------


def test_dream_status_trigger_abort_and_opt_out(admin: httpx.Client) -> None:
    save(admin, "a", "a fact to dream about")
    ran = admin.post("/api/dream/agents/a/trigger", params={"wait": True})
    assert ran.status_code == 200
    report = ran.json()["report"]
    assert report["phase"] == "completed" and "forget" in report["passes"]
    started = admin.post("/api/dream/agents/a/trigger")
    assert started.status_code == 202 and started.json()["started"] is True
    deadline = time.monotonic() + 30
    while True:  # until the background dream has recorded its run and let go of the lock
        (status,) = admin.get("/api/dream/status", params={"agent": "a"}).json()
        if status["run"]["run_id"] != report["run_id"] and status["run"]["phase"] != "running":
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert not status["running"] and status["run"]["phase"] == "completed"
    assert admin.post("/api/dream/agents/a/abort").json() == {"aborting": False, "interrupted": False}  # nothing runs
    statuses = admin.get("/api/dream/status").json()
    assert {s["agent_id"] for s in statuses} == {"a"}
    assert statuses[0]["run"]["trigger"] == "manual"
    off = admin.put("/api/dream/agents/a/enabled", json={"enabled": False}).json()
    assert off["enabled"] is False
    skipped = admin.post("/api/dream/agents/a/trigger", params={"wait": True}).json()
    assert skipped["started"] is False and skipped["report"]["phase"] == "skipped"


def test_audit_run_and_trend(admin: httpx.Client) -> None:
    save(admin, "a", "one fact")
    save(admin, "b", "another fact")
    records = admin.post("/api/audit/run").json()
    assert {r["agent_id"] for r in records} == {"a", "b"} and all(r["live"] == 1 for r in records)
    assert [r["agent_id"] for r in admin.get("/api/audit/trend", params={"agent": "b"}).json()] == ["b"]


def test_keys_create_list_and_revoke(origin: str, admin: httpx.Client) -> None:
    made = admin.post("/api/keys", json={"name": "bot", "agent_id": "c", "scopes": ["memory_read"]})
    assert made.status_code == 201
    secret, key_id = made.json()["secret"], made.json()["key"]["key_id"]
    with client(origin, secret) as bot:
        assert bot.get(memory("c", "/entries")).status_code == 200
        listed = {k["key_id"]: k for k in admin.get("/api/keys").json()}
        assert listed[key_id]["agent_id"] == "c" and "secret" not in listed[key_id]
        assert admin.delete(f"/api/keys/{key_id}").json()["revoked_at"] is not None
        assert bot.get(memory("c", "/entries")).status_code == 401
    bad = admin.post("/api/keys", json={"name": "x", "agent_id": "c", "scopes": ["admin"]})
    assert bad.status_code == 422 and bad.json()["field"] == "agent_id"
    assert admin.delete("/api/keys/000000000000").status_code == 404


@pytest.fixture
def llm_rv(tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> Iterator[reverie.Reverie]:
    prices = {"price_input_per_mtok": 1_000_000.0, "price_output_per_mtok": 2_000_000.0}
    with reverie.open(
        tmp_path / "llm-home",
        clock=clock,
        embedding={"provider": "hash", "background": False},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        conversation={"compaction_keep_recent": 1},
        llm={"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0, **prices},
    ) as engine:
        yield engine


def test_usage_is_attributed_to_the_path_agent_and_exported(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    keys = make_keys(llm_rv)
    with serving(llm_rv) as origin, client(origin, keys.a) as a, client(origin, keys.admin) as admin:
        a.post(memory("a", "/sessions/s/turns"), json={"role": "user", "content": "hello there", "create": True})
        a.post(memory("a", "/sessions/s/turns"), json={"role": "assistant", "content": "hi"})
        a.post(memory("a", "/sessions/s/turns"), json={"role": "user", "content": "bye"})
        server.script_chat(["They greeted each other."])
        compacted = a.post(memory("a", "/sessions/s/compact"), params={"force": True}).json()
        assert compacted["compacted"] is True, compacted
        usage = admin.get("/api/usage", params={"from": "2026-01-01", "to": "2026-01-01"}).json()
        assert [row["agent_id"] for row in usage["agents"]] == ["a"]
        row = usage["agents"][0]
        assert row["calls"] >= 1 and row["models"][0]["model"] == "m"
        assert row["cost"] == row["prompt_tokens"] * 1.0 + row["completion_tokens"] * 2.0
        assert usage["cost"] == row["cost"]
        assert admin.get("/api/usage", params={"from": "2026-01-02"}).json()["agents"] == []
        assert admin.get("/api/usage", params={"agent": "b"}).json()["calls"] == 0
        exported = admin.get("/api/usage/export.csv", params={"agent": "a"})
        assert exported.headers["content-type"].startswith("text/csv")
        lines = list(csv.DictReader(io.StringIO(exported.text)))
        assert [line["agent_id"] for line in lines] == ["a"] * row["calls"]
        bad = admin.get("/api/usage", params={"from": "yesterday"})
        assert bad.status_code == 422 and bad.json()["field"] == "from"


# -- without keys -------------------------------------------------------------------------------------------


def test_without_auth_local_requests_pass_and_browser_tricks_do_not(rv: reverie.Reverie) -> None:
    with serving(rv, auth=False) as origin, client(origin) as c:
        assert c.post(memory("x", "/entries"), json={"content": "open fact"}).status_code == 201
        assert c.get("/api/usage").status_code == 200
        rebound = c.get(memory("x", "/entries"), headers={"Host": "evil.example:4545"})
        assert rebound.status_code == 403  # DNS rebinding: a page's own name resolved to loopback
        cross_site = c.post(memory("x", "/entries/abc/restore"), headers={"Origin": "https://evil.example"})
        assert cross_site.status_code == 403
        local = c.get(memory("x", "/entries"), headers={"Origin": origin})
        assert local.status_code == 200
