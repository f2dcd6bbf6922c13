"""Filters and cursor paging over HTTP (real uvicorn on 127.0.0.1): GET /entries/list walks every page with the
filter's query parameters, GET /search takes the same parameters, and a bad value is a 422 naming its field."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

import reverie

from ._api import client, make_keys, memory, serving


@pytest.fixture
def agent_a(rv: reverie.Reverie) -> Iterator[httpx.Client]:
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.a) as c:
        yield c


def save(c: httpx.Client, content: str, **fields: object) -> str:
    response = c.post(memory("a", "/entries"), json={"content": content, "dedup": False, **fields})
    assert response.status_code == 201, response.text
    entry_id: str = response.json()["entry"]["id"]
    return entry_id


def walk(c: httpx.Client, **params: object) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = c.get(memory("a", "/entries/list"), params=query)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        body = response.json()
        items.extend(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return items


def test_list_walks_every_page_and_filters(agent_a: httpx.Client) -> None:
    ids = [save(agent_a, f"fact {n} about kettles", tags=["even"] if n % 2 == 0 else ["odd"]) for n in range(25)]
    pinned = save(agent_a, "a pinned note", pinned=True, importance=0.9, source="user", metadata={"project": "x"})
    assert sorted(e["id"] for e in walk(agent_a, limit=7)) == sorted([*ids, pinned])  # type: ignore[type-var]
    evens = walk(agent_a, limit=4, tags_any="even")
    assert sorted(e["id"] for e in evens) == sorted(ids[0::2])  # type: ignore[type-var]
    for params in (
        {"pinned": "true"},
        {"importance_min": 0.8},
        {"source": "user"},
        {"metadata": "project=x"},
        {"metadata": ["project=x"], "pinned": "true"},
    ):
        assert [e["id"] for e in walk(agent_a, **params)] == [pinned], params
    # The existing browse answer is unchanged.
    browse = agent_a.get(memory("a", "/entries"), params={"limit": 3}).json()
    assert set(browse) == {"entries", "taxonomy", "category"} and len(browse["entries"]) == 3


def test_search_takes_the_same_filter(agent_a: httpx.Client) -> None:
    work = save(agent_a, "the kettle at work is broken", tags=["work"])
    save(agent_a, "the kettle at home is fine", tags=["home"])
    hits = agent_a.get(memory("a", "/search"), params={"query": "kettle", "tags_any": "work"}).json()["hits"]
    assert [h["entry"]["id"] for h in hits] == [work]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"importance_min": 0.9, "importance_max": 0.1}, "importance_min"),
        ({"tier": "cosmic"}, "tier"),
        ({"created_from": "yesterday"}, "created_from"),
        ({"subject_to": "2025-13"}, "subject_to"),
        ({"metadata": "no-equals-sign"}, "metadata"),
        ({"order": "sideways"}, "order"),
        ({"cursor": "garbage"}, "cursor"),
        ({"limit": 1001}, "limit"),
    ],
)
def test_a_bad_filter_or_cursor_is_a_422_naming_its_field(
    agent_a: httpx.Client, params: dict[str, object], field: str
) -> None:
    for route in ("/entries/list", "/search"):
        if route == "/search" and field in ("order", "cursor"):
            continue
        asked = {**params, "query": "x"} if route == "/search" else params  # /entries/list takes no query
        response = agent_a.get(memory("a", route), params=asked)  # type: ignore[arg-type]
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field, response.text


def test_sessions_page_with_a_cursor_header(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    made = {rv.conversation.create(None, agent_id="a").session_id for _ in range(7)}
    assert len(agent_a.get(memory("a", "/sessions")).json()) == 7  # unpaged: as before
    seen: list[str] = []
    params: dict[str, object] = {"limit": 3}
    while True:
        response = agent_a.get(memory("a", "/sessions"), params=params)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        seen.extend(s["session_id"] for s in response.json())
        if "x-next-cursor" not in response.headers:
            break
        params = {"limit": 3, "cursor": response.headers["x-next-cursor"]}
    assert sorted(seen) == sorted(made)
    bad = agent_a.get(memory("a", "/sessions"), params={"cursor": "garbage"})
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"


def test_dream_runs_page_for_an_admin(rv: reverie.Reverie) -> None:
    from reverie.types import DreamRun

    start = rv.clock.now()
    for n in range(5):
        rv.store.dream.save_run(
            DreamRun(run_id=f"run-{n}", agent_id="a", trigger="manual", started_at=start, phase="completed")
        )
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.admin) as admin:
        seen: list[str] = []
        params: dict[str, object] = {"limit": 2}
        while True:
            body = admin.get("/api/dream/agents/a/runs", params=params).json()  # type: ignore[arg-type]
            seen.extend(r["run_id"] for r in body["items"])
            if body["next_cursor"] is None:
                break
            params = {"limit": 2, "cursor": body["next_cursor"]}
        assert seen == [f"run-{n}" for n in reversed(range(5))]


def test_entities_page_with_a_cursor_header(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    made = {rv.graph.add_entity("a", "person", f"Person {n}").entity.entity_id for n in range(7)}
    seen: list[str] = []
    params: dict[str, object] = {"paged": True, "limit": 3}
    while True:
        response = agent_a.get(memory("a", "/kg/entities"), params=params)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        seen.extend(e["entity_id"] for e in response.json())
        if "x-next-cursor" not in response.headers:
            break
        params = {"limit": 3, "cursor": response.headers["x-next-cursor"]}
    assert sorted(seen) == sorted(made)


def test_history_pages_with_a_cursor_header(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    from reverie.types import Scope

    entry_id = save(agent_a, "version 1")
    for n in range(2, 8):
        rv.memory.edit(entry_id, content=f"version {n}", scope=Scope(agent_id="a"))
    assert len(agent_a.get(memory("a", f"/entries/{entry_id}/history")).json()) == 7  # unpaged: as before
    seen: list[int] = []
    params: dict[str, object] = {"limit": 3}
    while True:
        response = agent_a.get(memory("a", f"/entries/{entry_id}/history"), params=params)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        seen.extend(v["version"] for v in response.json())
        if "x-next-cursor" not in response.headers:
            break
        params = {"limit": 3, "cursor": response.headers["x-next-cursor"]}
    assert seen == list(range(1, 8))


def test_working_memory_lists_page_by_cursor(agent_a: httpx.Client) -> None:
    where = memory("a", "/working")
    for n in range(9):
        response = agent_a.put(f"{where}/k{n}", params={"namespace": "session/p"}, json={"value": f"v{n}"})
        assert response.status_code == 200, response.text
    unpaged = agent_a.get(where, params={"namespace": "session/p"}).json()
    assert len(unpaged["entries"]) == 9 and unpaged["next_cursor"] is None  # as before: no limit, no cursor
    seen: list[str] = []
    params: dict[str, object] = {"namespace": "session/p", "limit": 4}
    while True:
        response = agent_a.get(where, params=params)  # type: ignore[arg-type]
        assert response.status_code == 200, response.text
        body = response.json()
        seen.extend(e["key"] for e in body["entries"])
        if body["next_cursor"] is None:
            break
        agent_a.put(f"{where}/k0", params={"namespace": "session/p"}, json={"value": "rewritten"})
        params = {"namespace": "session/p", "limit": 4, "cursor": body["next_cursor"]}
    assert seen == [f"session/p/k{n}" for n in range(9)]
    for params, field in (
        ({"namespace": "session/p", "cursor": "garbage"}, "cursor"),
        ({"namespace": "session/p", "limit": 2, "query": "v1"}, "query"),
        ({"namespace": "session/p", "limit": 0}, "limit"),
    ):
        response = agent_a.get(where, params=params)  # type: ignore[arg-type]
        assert response.status_code == 422 and response.json()["field"] == field, response.text
