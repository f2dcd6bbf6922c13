"""The ``archived`` and ``superseded`` filter parameters over HTTP (real uvicorn on 127.0.0.1): GET /entries/list
and GET /search list only archived / only superseded entries without ``include_archived``, ``false`` narrows, and
a value that is not a boolean is a 422."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import httpx
import pytest

import reverie

from ._api import client, make_keys, memory, serving


class States(NamedTuple):
    current: str
    corrected: str  # contradicted by ``correction``: superseded_by set, not archived
    correction: str
    archived: str


@pytest.fixture
def states(rv: reverie.Reverie) -> States:
    scope = reverie.Scope(agent_id="a")
    current = rv.memory.save("The kettle descaler is citric acid.", category="home", scope=scope).id
    corrected = rv.memory.save("Priya's editor is Neovim.", category="people/priya", scope=scope).id
    correction = rv.memory.save("Priya's editor is not Neovim.", category="people/priya", scope=scope)
    assert correction.outcome == "superseded"
    archived = rv.memory.save("The old wiki is on the editor host.", category="reference", scope=scope).id
    rv.memory.archive(archived, scope=scope)
    return States(current, corrected, correction.id, archived)


@pytest.fixture
def agent_a(rv: reverie.Reverie) -> Iterator[httpx.Client]:
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.a) as c:
        yield c


def listed(c: httpx.Client, **params: object) -> set[str]:
    response = c.get(memory("a", "/entries/list"), params=params)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return {item["id"] for item in response.json()["items"]}


def found(c: httpx.Client, query: str, **params: object) -> set[str]:
    response = c.get(memory("a", "/search"), params={"query": query, "mode": "bm25", **params})  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    return {hit["entry"]["id"] for hit in response.json()["hits"]}


def test_list_only_archived_and_only_superseded(agent_a: httpx.Client, states: States) -> None:
    assert listed(agent_a) == {states.current, states.correction}
    assert listed(agent_a, archived="true") == {states.archived}
    assert listed(agent_a, superseded="true") == {states.corrected}
    assert listed(agent_a, archived="false") == {states.current, states.correction}
    assert listed(agent_a, superseded="false", include_archived="true") == {
        states.current,
        states.correction,
        states.archived,
    }
    assert listed(agent_a, archived="false", include_archived="true") == {
        states.current,
        states.corrected,
        states.correction,
    }


def test_search_only_superseded_and_only_archived(agent_a: httpx.Client, states: States) -> None:
    assert found(agent_a, "editor") == {states.correction}
    assert found(agent_a, "editor", superseded="true") == {states.corrected}
    assert found(agent_a, "editor", archived="true") == {states.archived}
    assert found(agent_a, "editor", superseded="false", include_archived="true") == {states.correction, states.archived}


def test_a_flag_that_is_not_a_boolean_is_a_422(agent_a: httpx.Client, states: States) -> None:
    response = agent_a.get(memory("a", "/entries/list"), params={"superseded": "maybe"})
    assert response.status_code == 422, response.text
    assert "superseded" in response.text
