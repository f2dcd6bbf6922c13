"""The agent tools' filter and paging: list_memories walks every page with its cursor through the filter, and
search_memory takes the same filter; a bad filter is an error result, never an exception."""

from __future__ import annotations

from typing import Any

import reverie
from reverie.tools import ToolContext, ToolRegistry

CTX = ToolContext(agent_id="default")


def call(tools: ToolRegistry, name: str, args: dict[str, Any]) -> Any:
    result = tools.call(name, args, CTX)
    assert not result.is_error, result.text
    return result


def test_list_memories_walks_every_page_through_the_filter(rv: reverie.Reverie) -> None:
    saved = rv.memory.save_many(
        [{"content": f"kettle note {n}", "tags": ["even" if n % 2 == 0 else "odd"]} for n in range(45)], dedup=False
    )
    evens = {r.id for n, r in enumerate(saved) if n % 2 == 0}
    tools = ToolRegistry(rv)
    seen: list[str] = []
    args: dict[str, Any] = {"filter": {"tags_any": ["even"]}, "limit": 10}
    while True:
        result = call(tools, "list_memories", args)
        seen.extend(item["id"] for item in result.data["items"])
        if result.data["next_cursor"] is None:
            break
        assert "cursor=" in result.text
        args = {**args, "cursor": result.data["next_cursor"]}
    assert sorted(seen) == sorted(evens)


def test_search_memory_takes_the_filter(rv: reverie.Reverie) -> None:
    work = rv.memory.save("the kettle at work is broken", tags=["work"], source="user", dedup=False).id
    rv.memory.save("the kettle at home is fine", tags=["home"], dedup=False)
    tools = ToolRegistry(rv)
    found = call(tools, "search_memory", {"query": "kettle", "filter": {"tags_all": ["work"], "source": "user"}})
    assert [hit["id"] for hit in found.data["results"]] == [work]
    browsed = call(tools, "search_memory", {"filter": {"metadata": {"source": "user"}}})
    assert [hit["id"] for hit in browsed.data["results"]] == [work]


def test_a_bad_filter_is_an_error_result(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    for args in (
        {"filter": {"importance_min": 0.9, "importance_max": 0.1}},
        {"filter": {"created_from": "last week"}},
        {"filter": {"colour": "red"}},
        {"cursor": "garbage"},
    ):
        result = tools.call("list_memories", args, CTX)
        assert result.is_error, (args, result.text)


def test_the_tools_filter_reaches_archived_and_superseded_memories(rv: reverie.Reverie) -> None:
    old = rv.memory.save("Maya lives in Lisbon.").id
    new = rv.memory.save("Maya lives in Porto now.").id  # a replaced value: supersedes the first
    gone = rv.memory.save("The old wiki is at wiki.example.internal.").id
    rv.memory.archive(gone)
    tools = ToolRegistry(rv)
    listed = call(tools, "list_memories", {"filter": {"superseded": True}})
    assert [item["id"] for item in listed.data["items"]] == [old]
    listed = call(tools, "list_memories", {"filter": {"archived": True}})
    assert [item["id"] for item in listed.data["items"]] == [gone]
    current = call(tools, "list_memories", {"filter": {"superseded": False, "archived": False}})
    assert {item["id"] for item in current.data["items"]} == {new}
