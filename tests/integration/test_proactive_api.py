"""Proactive memory over HTTP on real uvicorn: memorize (a turn by rules, or given memories), retrieve, list,
forget, sweep and consolidate per agent, and a user's user-level memory per user; keys scope every call (another
agent's path is 403, another agent's id 404), user memory is shared by the user's agents and nothing else is;
bad input is a 422 naming the field; a turn recorded with a user feeds memorize_on_turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import reverie
from reverie.types import user_agent

from ._api import Keys, client, make_keys, memory, serving


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[reverie.Reverie]:
    options: dict[str, Any] = {
        "embedding": {"provider": "hash", "background": False},
        "graph": {"extraction_background": False},
        "proactive": {"memorize_on_turn": True, "memorize_background": False},
    }
    with reverie.open(tmp_path / "home", **options) as rv:
        yield rv


@pytest.fixture
def api(engine: reverie.Reverie) -> Iterator[tuple[str, Keys]]:
    keys = make_keys(engine)
    with serving(engine) as origin:
        yield origin, keys


def _as(origin: str, secret: str | None) -> httpx.Client:
    return client(origin, secret)


def test_memorize_retrieve_and_list_share_only_user_memory(api: tuple[str, Keys]) -> None:
    origin, keys = api
    with _as(origin, keys.a) as a, _as(origin, keys.b) as b:
        said = {"user_message": "I prefer green tea. We're building Atlas.", "assistant_message": "Noted."}
        response = a.post(memory("a", "/memorize"), params={"user_id": "u1"}, json=said)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["method"] == "rules" and body["error"] is None
        assert [(s["category"], s["scope"], s["kv"]) for s in body["saved"]] == [
            ("preference", "user", False),
            ("project_context", "agent", False),
        ]
        tea, atlas = (s["id"] for s in body["saved"])
        assert body["saved"][0]["entry"]["agent_id"] == user_agent("u1")

        hits = b.post(memory("b", "/retrieve"), params={"user_id": "u1"}, json={"query": "green tea Atlas"}).json()
        assert [(h["entry"]["id"], h["scope"]) for h in hits["hits"]] == [(tea, "user")]  # never a's project
        hits = b.post(memory("b", "/retrieve"), params={"user_id": "u2"}, json={"query": "green tea"}).json()
        assert hits["hits"] == []
        listed = b.get(memory("b", "/proactive"), params={"user_id": "u1"}).json()["entries"]
        assert [e["id"] for e in listed] == [tea]
        listed = a.get(memory("a", "/proactive"), params={"user_id": "u1", "include_user": False}).json()["entries"]
        assert [e["id"] for e in listed] == [atlas]
        users = b.get("/api/memory/users/u1/memories").json()
        assert [e["id"] for e in users["entries"]] == [tea]
        assert b.get("/api/memory/users/u2/memories").json()["entries"] == []

        # another agent's id is unknown here; another agent's path is forbidden
        assert b.delete(memory("b", f"/proactive/{atlas}"), params={"user_id": "u1"}).status_code == 404
        assert b.post(memory("a", "/retrieve"), json={"query": "tea"}).status_code == 403
        assert b.post(memory("a", "/memorize"), json={"user_message": "hi"}).status_code == 403
        # the user's memory is shared, but only the agent that wrote an entry may forget it (or an admin key)
        refused = b.delete(memory("b", f"/proactive/{tea}"), params={"user_id": "u1"})
        assert refused.status_code == 403 and "written by agent 'a'" in refused.json()["message"]
        forgotten = a.delete(memory("a", f"/proactive/{tea}"), params={"user_id": "u1"})
        assert forgotten.status_code == 200 and forgotten.json()["archived"] is True


def test_given_memories_the_copy_consolidation_and_the_sweep(api: tuple[str, Keys], engine: reverie.Reverie) -> None:
    origin, keys = api
    with _as(origin, keys.a) as a:
        given = {
            "memories": [
                {"content": "The team ships on Fridays", "category": "project_context", "scope": "agent"},
                {"content": "The team ships on Fridays", "category": "work_style", "scope": "agent", "confidence": 0.9},
            ]
        }
        saved = a.post(memory("a", "/memorize"), json=given).json()
        assert saved["method"] == "given" and [s["kv"] for s in saved["saved"]] == [True, True]
        first, second = (s["id"] for s in saved["saved"])
        assert engine.kv.get("a", f"memory:{first}").value["content"] == "The team ships on Fridays"
        report = a.post(memory("a", "/consolidate"), json={}).json()
        assert report["full"] is True and len(report["merges"]) == 1
        assert report["merges"][0]["rungs"] == ["substring"]
        assert {report["merges"][0]["keep"], *report["merges"][0]["archived"]} == {first, second}
        swept = a.post(memory("a", "/proactive/sweep")).json()
        assert swept["ran"] is True and swept["agent_id"] == "a"


def test_bad_input_is_a_422_naming_the_field(api: tuple[str, Keys]) -> None:
    origin, keys = api
    with _as(origin, keys.a) as a, _as(origin, keys.admin) as admin:
        for body in (
            {},
            {"user_message": "hi", "memories": []},
            {"memories": [{"content": "User likes tea", "category": "mood"}]},
            {"memories": [{"content": "User likes tea", "category": "preference", "confidence": 2}]},
            {"user_message": "hi", "extra": 1},
        ):
            response = a.post(memory("a", "/memorize"), json=body)
            assert response.status_code == 422, (body, response.text)
        assert a.post(memory("a", "/retrieve"), json={"query": "x", "limit": 0}).status_code == 422
        assert a.get(memory("a", "/proactive"), params={"category": "Bad Category"}).status_code == 422
        reserved = admin.post(memory("@user", "/entries"), json={"content": "x"})
        assert reserved.status_code == 422 and "reserved" in reserved.json()["message"]
        assert admin.post(memory("@user", "/retrieve"), json={"query": "x"}).status_code == 422
        key = admin.post("/api/keys", json={"name": "k", "agent_id": user_agent("u1"), "scopes": ["memory_read"]})
        assert key.status_code == 422 and key.json()["field"] == "agent_id"


def test_a_users_memory_needs_a_key_that_may_read(api: tuple[str, Keys], engine: reverie.Reverie) -> None:
    origin, keys = api
    write_only = engine.keys.create("w", agent_id="a", scopes=["memory_write"])[1]
    for secret, status in ((keys.admin, 200), (keys.a_read, 200), (keys.b, 200), (write_only, 403), (None, 401)):
        with _as(origin, secret) as c:
            assert c.get("/api/memory/users/u1/memories").status_code == status


def test_a_turn_recorded_with_its_user_is_memorized(api: tuple[str, Keys], engine: reverie.Reverie) -> None:
    origin, keys = api
    with _as(origin, keys.a) as a:
        turns = memory("a", "/sessions/s1/turns")
        user = {"role": "user", "content": "I live in Porto.", "create": True}
        assert a.post(turns, params={"user_id": "u1"}, json=user).status_code == 201
        assert (
            a.post(turns, params={"user_id": "u1"}, json={"role": "assistant", "content": "Noted."}).status_code == 201
        )
    assert [e.content for e in engine.proactive.user_memories("u1")] == ["User lives in Porto"]
