"""The HTTP API's save path for imports against real uvicorn on 127.0.0.1: the batch route with per-item
results (``on_error``), ``observed_at`` on both save routes, and subject-time metadata checked at save."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock

from ._api import Keys, client, make_keys, memory, serving

MAY_8 = "2023-05-08T13:56:00Z"
BATCH = memory("a", "/entries/batch")


@pytest.fixture
def keys(rv: reverie.Reverie) -> Keys:
    return make_keys(rv)


@pytest.fixture
def agent_a(rv: reverie.Reverie, keys: Keys) -> Iterator[httpx.Client]:
    with serving(rv) as origin, client(origin, keys.a) as c:
        yield c


def live(rv: reverie.Reverie, agent: str = "a") -> list[str]:
    return sorted(e.content for e in rv.memory.browse(limit=1000, scope=Scope(agent_id=agent)).entries)


def mixed_items() -> list[dict[str, Any]]:
    return [
        {"content": "Ana lives in Porto", "category": "people"},
        {"content": ""},
        {"content": "Bruno plays the cello", "tags": ["music"]},
        {"content": "x" * 20_001},
        {"content": "Carla works at the harbour", "category": "Not A Path"},
        {"content": "Dora sails on Sundays", "observed_at": MAY_8},
    ]


# -- the batch route ---------------------------------------------------------------------------------------
def test_batch_with_skip_saves_the_good_items_and_lists_every_result(
    rv: reverie.Reverie, agent_a: httpx.Client
) -> None:
    response = agent_a.post(BATCH, json={"items": mixed_items(), "on_error": "skip"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["saved"], body["rejected"]) == (3, 3)
    results = body["results"]
    assert [r["position"] for r in results] == list(range(6))
    assert [r["outcome"] for r in results] == ["created", "rejected", "created", "rejected", "rejected", "created"]
    rejected = {r["position"]: (r["field"], r["error"]) for r in results if r["outcome"] == "rejected"}
    assert rejected[1] == ("content", "content is empty")
    assert rejected[3][0] == "content" and "20,001 characters" in rejected[3][1]
    assert rejected[4][0] == "category" and "Not A Path" in rejected[4][1]
    assert all(results[p]["entry"] is None and results[p]["notes"] == [] for p in rejected)
    assert all(r["error"] is None and r["field"] is None for r in results if r["outcome"] != "rejected")
    assert results[5]["entry"]["created_at"] == "2023-05-08T13:56:00Z"
    assert results[2]["entry"]["tags"] == ["music"] and results[0]["entry"]["agent_id"] == "a"
    assert live(rv) == ["Ana lives in Porto", "Bruno plays the cello", "Dora sails on Sundays"]


def test_batch_with_raise_is_a_422_naming_the_item_and_saves_nothing(
    rv: reverie.Reverie, agent_a: httpx.Client
) -> None:
    for body in ({"items": mixed_items()}, {"items": mixed_items(), "on_error": "raise"}):
        response = agent_a.post(BATCH, json=body)
        assert response.status_code == 422, response.text
        error = response.json()
        assert (error["error"], error["field"], error["message"]) == (
            "validation",
            "content",
            "item 1: content is empty",
        )
    assert live(rv) == []


def test_a_batch_without_bad_items_answers_as_before(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    fact = "The user prefers green tea in the morning"
    response = agent_a.post(BATCH, json={"items": [{"content": fact}, {"content": fact.lower()}]})
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["saved"], body["rejected"]) == (2, 0)
    assert [r["outcome"] for r in body["results"]] == ["created", "reinforced"]
    assert body["results"][0]["entry"]["id"] == body["results"][1]["entry"]["id"]
    assert live(rv) == [fact]


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "items"),
        ({"items": "Ana lives in Porto"}, "items"),
        ({"items": [{"content": 5}]}, "content"),
        ({"items": [{"text": "Ana lives in Porto"}]}, "content"),
        ({"items": [{"content": "fine", "colour": "red"}], "on_error": "skip"}, "colour"),
        ({"items": [{"content": "fine"}], "on_error": "ignore"}, "on_error"),
        ({"items": [{"content": "fine"}], "on_error": "skip", "dedup": "no"}, "dedup"),
    ],
)
def test_a_wholly_invalid_batch_body_is_a_422(
    rv: reverie.Reverie, agent_a: httpx.Client, body: dict[str, Any], field: str
) -> None:
    response = agent_a.post(BATCH, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field  # the API names the last key of the location: "items.0.content"
    assert live(rv) == []


def test_a_bad_batch_observed_at_is_a_422_even_when_skipping(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    body = {"items": [{"content": "fine"}], "on_error": "skip", "observed_at": "2023-05-08T13:56:00"}
    response = agent_a.post(BATCH, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "observed_at"
    assert live(rv) == []


def test_the_batch_observed_at_is_every_items_default(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    items = [
        {"content": "Ana lives in Porto"},
        {"content": "Bruno plays the cello", "observed_at": "2024-01-02T03:04:05+01:00"},
    ]
    response = agent_a.post(BATCH, json={"items": items, "observed_at": MAY_8})
    assert response.status_code == 201, response.text
    created = [r["entry"]["created_at"] for r in response.json()["results"]]
    assert created == ["2023-05-08T13:56:00Z", "2024-01-02T02:04:05Z"]


def test_the_batch_route_needs_write_access_and_is_in_the_schema(
    rv: reverie.Reverie, keys: Keys, agent_a: httpx.Client
) -> None:
    origin = str(agent_a.base_url)
    with client(origin, keys.a_read) as reader:
        assert reader.post(BATCH, json={"items": [{"content": "fine"}]}).status_code == 403
    with client(origin, keys.b) as other:
        assert other.post(BATCH, json={"items": [{"content": "fine"}]}).status_code == 403
    schema = agent_a.get("/openapi.json").json()
    assert "post" in schema["paths"]["/api/memory/agents/{agent_id}/entries/batch"]
    assert live(rv) == []


# -- observed_at and subject time on the single save -----------------------------------------------------
def test_save_with_observed_at_sets_created_at(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    response = agent_a.post(memory("a", "/entries"), json={"content": "Ana moved to Porto", "observed_at": MAY_8})
    assert response.status_code == 201, response.text
    entry = response.json()["entry"]
    assert entry["created_at"] == entry["last_seen_at"] == "2023-05-08T13:56:00Z"
    history = agent_a.get(memory("a", f"/entries/{entry['id']}/history")).json()
    assert [v["recorded_at"] for v in history] == ["2023-05-08T13:56:00Z"]


def test_a_dated_restatement_reinforces_over_http(rv: reverie.Reverie, agent_a: httpx.Client) -> None:
    fact = "The user prefers green tea in the morning"
    first = agent_a.post(memory("a", "/entries"), json={"content": fact, "observed_at": MAY_8}).json()
    again = agent_a.post(memory("a", "/entries"), json={"content": fact, "observed_at": "2023-06-01T00:00:00Z"})
    assert again.status_code == 201, again.text
    body = again.json()
    assert body["outcome"] == "reinforced" and body["entry"]["id"] == first["entry"]["id"]
    assert body["entry"]["created_at"] == "2023-05-08T13:56:00Z"
    assert body["entry"]["last_seen_at"] == "2023-06-01T00:00:00Z"


@pytest.mark.parametrize(
    "observed_at, why",
    [
        ("2023-05-08T13:56:00", "no timezone"),
        ("2023-05-08", "no timezone"),
        ("last tuesday", "ISO 8601"),
        ("", "ISO 8601"),
    ],
)
def test_save_refuses_a_naive_or_malformed_observed_at(
    rv: reverie.Reverie, agent_a: httpx.Client, observed_at: str, why: str
) -> None:
    response = agent_a.post(memory("a", "/entries"), json={"content": "When?", "observed_at": observed_at})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "observed_at" and why in response.json()["message"]
    assert live(rv) == []


def test_save_refuses_a_future_observed_at(rv: reverie.Reverie, clock: FakeClock, agent_a: httpx.Client) -> None:
    ahead = (clock.now() + timedelta(hours=1)).isoformat()
    response = agent_a.post(memory("a", "/entries"), json={"content": "From the future", "observed_at": ahead})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "observed_at" and "future" in response.json()["message"]
    assert live(rv) == []


@pytest.mark.parametrize(
    "metadata, field",
    [
        ({"subjectTime": "last summer"}, "metadata.subjectTime"),
        ({"subjectTime": 2019}, "metadata.subjectTime"),
        ({"subjectTimeEnd": "2019-13"}, "metadata.subjectTimeEnd"),
        ({"subjectTimeStart": "2021", "subjectTimeEnd": "2020"}, "metadata.subjectTimeStart"),
    ],
)
def test_save_refuses_a_bad_subject_time_with_its_field(
    rv: reverie.Reverie, agent_a: httpx.Client, metadata: dict[str, Any], field: str
) -> None:
    response = agent_a.post(memory("a", "/entries"), json={"content": "Ana lived in Oslo", "metadata": metadata})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    skipped = agent_a.post(
        BATCH, json={"items": [{"content": "Ana lived in Oslo", "metadata": metadata}], "on_error": "skip"}
    ).json()
    assert [(r["outcome"], r["field"]) for r in skipped["results"]] == [("rejected", field)]
    assert live(rv) == []
    # A date and time (what the LoCoMo benchmark writes) is well formed, and kept as written.
    kept = {"subjectTime": "2023-05-08T13:56:00+00:00"}
    response = agent_a.post(memory("a", "/entries"), json={"content": "Ana lived in Oslo", "metadata": kept})
    assert response.status_code == 201, response.text
    assert response.json()["entry"]["metadata"] == kept
