"""The agent tools on a real store: each tool's happy path, the recall family's empty results, consolidation
withheld and allowed, scope isolation, and a fuzz test that ``call`` never raises and a refused call writes
nothing. No embedder (BM25 and token Jaccard), a fake clock; memory_query's answers come from the scripted
loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reverie
from reverie.clock import FakeClock
from reverie.testing import ScriptedOpenAIServer
from reverie.tools import HEADLINES, NOT_EVIDENCE, ToolContext, ToolRegistry, ToolResult, ToolSpec
from reverie.tools.specs import SPECS
from reverie.types import Scope

ALLOWED = "a"  # the agent whose own settings allow self-consolidation
A = ToolContext(agent_id=ALLOWED, session_id="s1")
DEFAULT = ToolContext(session_id="s1")


def _open(home: Path, **overrides: Any) -> reverie.Reverie:
    overrides.setdefault("embedding", {"provider": "none"})
    overrides.setdefault("agents", {ALLOWED: {"allow_self_consolidation": True}})
    # Graph extraction in a background thread would change the graph between a test's two snapshots of the
    # state; these tests extract only when they call rv.extract_pending().
    overrides.setdefault("graph", {"extraction_background": False})
    return reverie.open(home, clock=FakeClock(), **overrides)


@pytest.fixture
def rv(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with _open(tmp_path / "home") as engine:
        yield engine


@pytest.fixture
def tools(rv: reverie.Reverie) -> ToolRegistry:
    return ToolRegistry(rv)


def ok(result: ToolResult) -> ToolResult:
    assert not result.is_error, result.text
    json.dumps(result.data)  # plain JSON
    return result


def refused(result: ToolResult, kind: str) -> ToolResult:
    assert result.is_error, result.text
    assert result.data["error"]["kind"] == kind, result.data
    assert result.text.startswith("Error: ")
    return result


def _state(rv: reverie.Reverie) -> tuple[Any, ...]:
    entries = list(rv.store.facts.iter_all())
    versions = [len(rv.store.versions.history(e.id, e.scope)) for e in entries]
    working = {
        agent: rv.store.working.list(agent, "", now=rv.clock.now(), limit=10_000) for agent in ("default", ALLOWED)
    }
    stats = rv.store.stats()  # less its file size, which WAL checkpoints and activity notes move
    kv = {agent: rv.store.kv.list(agent, "", limit=1000) for agent in ("default", ALLOWED)}
    graph = [sorted(map(repr, rv.store.export_rows(table))) for table in ("kg_entities", "kg_relations")]
    skills = [list(rv.store.export_rows(t)) for t in ("skills", "skill_versions", "skill_usage", "feedback")]
    return entries, versions, working, (stats.live, stats.archived, stats.by_tier, stats.by_category), kv, graph, skills


# -- long-term memory ----------------------------------------------------------------------------------------
def test_save_memory_reports_created_reinforced_and_extended(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    fact = {"content": "The user's standup is held in the Aurora room", "category": "work", "source": "user"}
    first = ok(tools.call("save_memory", fact, DEFAULT))
    assert first.data["outcome"] == "created" and "new memory" in first.text
    again = ok(tools.call("save_memory", {"content": fact["content"], "category": "work"}, DEFAULT))
    assert again.data["outcome"] == "reinforced" and again.data["id"] == first.data["id"]
    more = {"content": "The user's standup is held in the Aurora room with Priya", "category": "work"}
    extended = ok(tools.call("save_memory", more, DEFAULT))
    assert extended.data["outcome"] == "extended" and extended.data["id"] == first.data["id"]
    assert "Priya" in rv.memory.get(first.data["id"]).content
    noted = ok(tools.call("save_memory", {"content": "Tea at five", "source": "a rumour", "tags": ["t"]}, DEFAULT))
    assert noted.data["notes"] and "Note:" in noted.text and noted.data["entry"]["source"] is None


def test_a_saved_fact_outlives_its_session(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    saved = ok(tools.call("save_memory", {"content": "The user works from Porto on Fridays"}, DEFAULT))
    assert rv.memory.get(saved.data["id"]).scope == Scope()  # agent-wide: not private to session s1
    later = ok(tools.call("search_memory", {"query": "Porto"}, ToolContext(session_id="s2")))
    assert [r["id"] for r in later.data["results"]] == [saved.data["id"]]
    mine = ok(tools.call("save_memory", {"content": "Prefers tea"}, ToolContext(user_id="u1", session_id="s1")))
    assert rv.memory.get(mine.data["id"], scope=Scope(user_id="u1")).scope == Scope(user_id="u1")


def test_search_memory_finds_browses_and_shows_the_taxonomy(tools: ToolRegistry) -> None:
    ok(tools.call("save_memory", {"content": "The user lives in Lisbon", "category": "user-preferences/location"}, A))
    ok(tools.call("save_memory", {"content": "Standup at nine", "category": "work/meetings"}, A))
    found = ok(tools.call("search_memory", {"query": "Lisbon"}, A))
    assert [r["content"] for r in found.data["results"]] == ["The user lives in Lisbon"]
    assert "The user lives in Lisbon" in found.text and "first seen today" in found.text
    browsed = ok(tools.call("search_memory", {}, A))
    assert browsed.data["mode"] == "browse" and len(browsed.data["entries"]) == 2
    assert {c["category"] for c in browsed.data["taxonomy"]} == {"user-preferences/location", "work/meetings"}
    assert "Category taxonomy" in browsed.text and "work/meetings (1)" in browsed.text
    # A category filter that matches nothing still shows which categories exist (browse and search).
    missed = ok(tools.call("search_memory", {"category": "travel", "query": None}, A))
    assert missed.data["entries"] == [] and "work/meetings (1)" in missed.text
    missed_search = ok(tools.call("search_memory", {"query": "Lisbon", "category": "travel"}, A))
    assert missed_search.data["results"] == [] and "work/meetings (1)" in missed_search.text
    bm25 = ok(tools.call("search_memory", {"query": "standup", "mode": "bm25"}, A))
    assert len(bm25.data["results"]) == 1


def test_delete_memory_archives_and_says_it_can_be_restored(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    saved = ok(tools.call("save_memory", {"content": "The wifi password is on the fridge"}, DEFAULT))
    result = ok(tools.call("delete_memory", {"id": saved.data["id"]}, DEFAULT))
    assert "archived" in result.text.lower() and "restored" in result.text and "not destroyed" in result.text
    assert result.data == {"id": saved.data["id"], "archived": True, "restorable": True, "purge_after_days": 90.0}
    entry = rv.memory.get(saved.data["id"])
    assert entry.archived and entry.content == "The wifi password is on the fridge"
    assert ok(tools.call("search_memory", {"query": "wifi"}, DEFAULT)).data["results"] == []


def test_update_memory_importance(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    saved = ok(tools.call("save_memory", {"content": "The user is allergic to peanuts"}, DEFAULT))
    result = ok(tools.call("update_memory_importance", {"id": saved.data["id"], "importance": 0.95}, DEFAULT))
    assert result.data == {"id": saved.data["id"], "importance": 0.95}
    entry = rv.memory.get(saved.data["id"])
    assert entry.importance == 0.95 and entry.content == "The user is allergic to peanuts"
    refused(tools.call("update_memory_importance", {"id": saved.data["id"], "importance": 1.5}, DEFAULT), "validation")
    refused(tools.call("update_memory_importance", {"id": saved.data["id"], "importance": True}, DEFAULT), "validation")


def test_memory_lint_reports_a_replaced_detail(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    clock = rv.clock
    assert isinstance(clock, FakeClock)
    older = ok(
        tools.call("save_memory", {"content": "Maya's flight to Lisbon leaves on May 3", "category": "travel"}, A)
    )
    clock.advance(timedelta(days=1))
    newer = ok(
        tools.call("save_memory", {"content": "Maya's flight to Lisbon leaves on May 5", "category": "travel"}, A)
    )
    result = ok(tools.call("memory_lint", None, A))
    (finding,) = result.data["findings"]
    assert (finding["newer_id"], finding["older_id"]) == (newer.data["id"], older.data["id"])
    assert (finding["newer_specifics"], finding["older_specifics"]) == (["May 5"], ["May 3"])
    assert finding["newer"].endswith("May 5") and "May 3" in result.text
    assert ok(tools.call("memory_lint", {}, DEFAULT)).data["findings"] == []  # another agent's store


# -- the recall family ---------------------------------------------------------------------------------------
def test_empty_searches_name_the_sibling_and_never_themselves(tools: ToolRegistry) -> None:
    ok(tools.call("save_memory", {"content": "The user lives in Lisbon"}, DEFAULT))
    ok(tools.call("save_to_working_memory", {"key": "inbox", "data": "three unread emails"}, DEFAULT))
    cases = {
        "search_memory": ("search_working_memory", tools.call("search_memory", {"query": "zebra"}, DEFAULT)),
        "search_working_memory": (
            "search_memory",
            tools.call("search_working_memory", {"query": "zebra"}, DEFAULT),
        ),
    }
    for name, (sibling, result) in cases.items():
        ok(result)
        assert NOT_EVIDENCE in result.text
        assert sibling in result.text and HEADLINES[sibling] in result.text
        assert not re.search(rf"\b{name}\b", result.text), result.text
    query_empty = ok(tools.call("memory_query", {"query": "zebra"}, DEFAULT))
    assert NOT_EVIDENCE in query_empty.text and "search_working_memory" in query_empty.text
    assert "memory_query" not in query_empty.text


def test_query_less_browses_are_exempt(tools: ToolRegistry) -> None:
    browse = ok(tools.call("search_memory", {}, DEFAULT))
    assert browse.text == "No long-term memories are stored in this scope yet."
    listing = ok(tools.call("search_working_memory", {}, DEFAULT))
    assert listing.text == "No live working-memory entries under session/s1."
    assert NOT_EVIDENCE not in browse.text + listing.text


# -- working memory ------------------------------------------------------------------------------------------
def test_working_memory_save_get_search_and_cross_namespace_reads(tools: ToolRegistry) -> None:
    saved = ok(tools.call("save_to_working_memory", {"key": "inbox", "data": "three unread emails from Bob"}, A))
    assert saved.data["key"] == "session/s1/inbox" and "expires in 5m00s" in saved.text
    got = ok(tools.call("get_from_working_memory", {"key": "inbox"}, A))
    assert got.data["value"] == "three unread emails from Bob" and got.text.endswith("three unread emails from Bob")
    worker = ToolContext(agent_id=ALLOWED, namespace="subagent/t1", background=True)
    floored = ok(
        tools.call("save_to_working_memory", {"key": "findings", "data": "Bob wrote twice", "ttl_minutes": 1}, worker)
    )
    assert "raised" in floored.text and floored.data["notes"]
    cross = ok(tools.call("get_from_working_memory", {"key": "subagent/t1/findings"}, A))
    assert cross.data["value"] == "Bob wrote twice"
    found = ok(tools.call("search_working_memory", {"query": "emails"}, A))
    assert [r["key"] for r in found.data["results"]] == ["session/s1/inbox"] and "three unread" in found.text
    listed = ok(tools.call("search_working_memory", {"namespace": "subagent"}, A))
    assert [e["key"] for e in listed.data["entries"]] == ["subagent/t1/findings"]
    assert "Bob wrote twice" not in listed.text  # a listing shows keys, never content
    missing = refused(tools.call("get_from_working_memory", {"key": "nope"}, A), "not_found")
    assert "session/s1/nope" in missing.text


def test_the_bare_stash_namespace_is_the_run_of_the_session(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    rv.stash.park(ALLOWED, "s1", "call_1", "web_browse", "a very long page about Lisbon trams")
    stash = ok(tools.call("search_working_memory", {"namespace": "stash"}, A))
    assert stash.data["resolved_prefix"] == "stash/s1" and "stash/s1/call_1" in stash.text
    hit = ok(tools.call("search_working_memory", {"namespace": "STASH", "query": "trams"}, A))
    assert [r["key"] for r in hit.data["results"]] == ["stash/s1/call_1"]
    no_run = ok(tools.call("search_working_memory", {"namespace": "stash"}, ToolContext(agent_id=ALLOWED)))
    assert no_run.data["resolved_prefix"] is None and "no stash is reachable" in no_run.text
    write = refused(tools.call("save_to_working_memory", {"key": "stash/s1/x", "data": "forged"}, A), "validation")
    assert "stash" in write.text
    with rv.stash.run("other-run"):  # a run the caller bound wins over the context's session
        bound = ok(tools.call("search_working_memory", {"namespace": "stash"}, A))
    assert bound.data["resolved_prefix"] == "stash/other-run"


# -- memory_explore ------------------------------------------------------------------------------------------
def test_memory_explore_walks_sequences_recall_and_merges(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    scope = Scope(ALLOWED)
    turns = [
        rv.memory.save(
            f"Turn {i} of the trip planning: {text}", metadata={"thread": "trip", "position": i}, scope=scope
        )
        for i, text in enumerate(["book flights", "pick hotels in Porto", "rent a car"], start=1)
    ]
    middle = ok(tools.call("memory_explore", {"id": turns[1].id}, A))
    relations = {(r["id"], r["relation"]) for r in middle.data["related"]}
    assert (turns[0].id, "sequence_previous") in relations and (turns[2].id, "sequence_next") in relations
    assert all(r["hop"] == 1 for r in middle.data["related"]) and "comes just before" in middle.text
    first = ok(tools.call("memory_explore", {"id": turns[0].id, "depth": 2}, A))
    hops = {r["id"]: r["hop"] for r in first.data["related"]}
    assert hops[turns[1].id] == 1 and hops[turns[2].id] in (1, 2)  # recall may reach it at once
    # Merge links: consolidate two copies, then walk from either side.
    old = rv.memory.save("Dana prefers green tea in the morning", category="home", dedup=False, scope=scope)
    rv.clock.advance(timedelta(hours=1))  # type: ignore[attr-defined]
    new = rv.memory.save("Dana prefers green tea in the morning", category="home", dedup=False, scope=scope)
    ok(tools.call("memory_semantic_consolidate", {}, A))
    from_new = ok(tools.call("memory_explore", {"id": new.id}, A))
    assert {"id": old.id, "relation": "merged_from"}.items() <= from_new.data["related"][0].items()
    from_old = ok(tools.call("memory_explore", {"id": old.id}, A))
    assert (new.id, "merged_into") in {(r["id"], r["relation"]) for r in from_old.data["related"]}


# -- memory_query --------------------------------------------------------------------------------------------
def test_search_tools_take_a_limit(tools: ToolRegistry) -> None:
    """An agent that asks for fewer (or more) hits than the default gets them; a limit out of range is refused
    by the schema, before anything is searched."""
    for city in ("Lisbon", "Porto", "Faro", "Braga", "Coimbra", "Evora", "Aveiro", "Sintra", "Cascais", "Lagos"):
        ok(tools.call("save_memory", {"content": f"The team visited {city} for the offsite"}, A))
    ok(tools.call("save_memory", {"content": "The team visited Tavira for the offsite"}, A))
    assert len(ok(tools.call("search_memory", {"query": "team offsite visited"}, A)).data["results"]) == 10
    two = ok(tools.call("search_memory", {"query": "team offsite visited", "limit": 2}, A))
    assert len(two.data["results"]) == 2 and two.text.startswith("2 memories")
    more = ok(tools.call("search_memory", {"query": "team offsite visited", "limit": 20}, A))
    assert len(more.data["results"]) == 11
    assert len(ok(tools.call("search_memory", {"limit": 3}, A)).data["entries"]) == 3  # a browse too
    assert len(ok(tools.call("memory_query", {"query": "offsite", "limit": 4}, A)).data["results"]) == 4
    for bad in (0, 101, "5", 2.5, True):
        refused(tools.call("search_memory", {"query": "offsite", "limit": bad}, A), "validation")
        refused(tools.call("memory_query", {"query": "offsite", "limit": bad}, A), "validation")


def test_memory_query_options(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    scope = Scope(ALLOWED)
    pinned = rv.memory.save("Always answer in Portuguese", pinned=True, category="style", scope=scope)
    lisbon = rv.memory.save("The user lives in Lisbon", scope=scope)
    old = rv.memory.save("The user lives in Lisbon near the river", category="home", dedup=False, scope=scope)
    rv.clock.advance(timedelta(hours=1))  # type: ignore[attr-defined]
    rv.memory.save("The user lives in Lisbon near the river", category="home", dedup=False, scope=scope)
    ok(tools.call("memory_semantic_consolidate", {}, A))
    plain = ok(tools.call("memory_query", {"query": "Lisbon"}, A))
    ids = [r["id"] for r in plain.data["results"]]
    assert lisbon.id in ids and old.id not in ids and pinned.id not in ids
    first = ok(tools.call("memory_query", {"query": "Lisbon", "pin_first": True}, A))
    assert first.data["results"][0]["id"] == pinned.id and first.data["results"][0]["matched_by"] == "pinned"
    older = ok(tools.call("memory_query", {"query": "river", "include_superseded": True}, A))
    labelled = {r["id"]: r["matched_by"] for r in older.data["results"]}
    assert labelled.get(old.id) == "superseded" and "superseded" in older.text
    related = ok(tools.call("memory_query", {"query": "river", "include_related": 1}, A))
    assert old.id in {r["id"] for r in related.data["related"]} and "Related memories" in related.text
    needs = refused(tools.call("memory_query", {"query": "Lisbon", "answer": True}, A), "needs_llm")
    assert "needs an LLM" in needs.text


def test_memory_query_answers_with_the_ids_it_was_shown(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        llm = {"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0}
        off = {"extraction": "off"}  # extraction would ask the scripted LLM too
        with _open(tmp_path / "llm", llm=llm, memory={"expansion_enabled": False}, graph=off) as rv:
            tools = ToolRegistry(rv)
            lisbon = rv.memory.save("The user lives in Lisbon", scope=Scope(ALLOWED))
            answer = {"answer": "In Lisbon.", "ids": [lisbon.id, "invented00000", lisbon.id]}
            server.script_chat([f"<think>hm</think>{json.dumps(answer)}", "no json here"])
            result = ok(tools.call("memory_query", {"query": "Lisbon", "answer": True}, A))
            assert result.data["answer"] == "In Lisbon." and result.data["ids"] == [lisbon.id]
            assert result.text.startswith("Answer: In Lisbon.") and f"[{lisbon.id}]" in result.text
            prompt = server.requests[-1].body["messages"][-1]["content"]
            assert lisbon.id in prompt and "Question: Lisbon" in prompt
            before = _state(rv)
            refused(tools.call("memory_query", {"query": "Lisbon", "answer": True}, A), "llm")
            assert _state(rv) == before
            calls = len(server.requests)
            empty = ok(tools.call("memory_query", {"query": "zebra", "answer": True}, A))
            assert empty.data["answer"] is None and len(server.requests) == calls  # nothing to ask about


# -- memory_semantic_* ---------------------------------------------------------------------------------------
def _duplicates(rv: reverie.Reverie, agent: str) -> tuple[str, str, str]:
    """Three near-duplicates: an old copy and a copy with its own specific, then the newest."""
    scope = Scope(agent)
    clock = rv.clock
    assert isinstance(clock, FakeClock)
    copy = rv.memory.save(
        "Dana prefers green tea in the morning before work", category="home", dedup=False, scope=scope
    )
    clock.advance(timedelta(hours=1))
    own = rv.memory.save(
        "Dana prefers green tea in the morning before work 2024", category="home", dedup=False, scope=scope
    )
    clock.advance(timedelta(hours=1))
    newest = rv.memory.save(
        "Dana prefers green tea in the morning before work", category="home", dedup=False, scope=scope
    )
    return copy.id, own.id, newest.id


def test_consolidation_is_withheld_unless_the_agent_allows_it(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    assert "memory_semantic_consolidate" not in {s.name for s in tools.specs()}
    assert "memory_semantic_consolidate" not in {s.name for s in tools.specs("someone")}
    assert "memory_semantic_consolidate" in {s.name for s in tools.specs(ALLOWED)}
    assert "memory_semantic_duplicates" in {s.name for s in tools.specs()}
    _duplicates(rv, "default")
    before = _state(rv)
    withheld = refused(tools.call("memory_semantic_consolidate", {}, DEFAULT), "withheld")
    assert "allow_self_consolidation" in withheld.text and "memory_semantic_duplicates" in withheld.text
    assert _state(rv) == before
    report = ok(tools.call("memory_semantic_duplicates", {}, DEFAULT))
    assert len(report.data["groups"]) == 1 and "not enabled for this agent" in report.text
    assert _state(rv) == before


def test_consolidation_archives_only_what_the_newest_covers(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    copy, own, newest = _duplicates(rv, ALLOWED)
    (group,) = ok(tools.call("memory_semantic_duplicates", {}, A)).data["groups"]
    assert group["keep"]["id"] == newest
    covered = {m["id"]: (m["covered"], m["missing"]) for m in group["members"]}
    assert covered == {copy: (True, []), own: (False, ["2024"])}
    result = ok(tools.call("memory_semantic_consolidate", {}, A))
    assert result.data["archived"] == [copy] and sorted(result.data["kept"]) == sorted([newest, own])
    gone, kept = rv.memory.get(copy, scope=Scope(ALLOWED)), rv.memory.get(newest, scope=Scope(ALLOWED))
    assert gone.archived and gone.superseded_by == newest
    assert not rv.memory.get(own, scope=Scope(ALLOWED)).archived
    assert kept.reinforcement_count == 2 and kept.metadata["mergedFrom"] == [copy]
    assert kept.created_at == gone.created_at and kept.content == gone.content
    again = ok(tools.call("memory_semantic_consolidate", {}, A))  # nothing left to do
    assert again.data["archived"] == []


# -- isolation -----------------------------------------------------------------------------------------------
def test_other_agents_ids_behave_like_unknown_ids(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    theirs = rv.memory.save("Agent b's secret plan", scope=Scope("b")).id
    users = rv.memory.save("User u1's private note", scope=Scope(ALLOWED, user_id="u1")).id
    before = _state(rv)
    for entry_id in (theirs, users, "000000000000"):
        for name, args in (
            ("delete_memory", {"id": entry_id}),
            ("update_memory_importance", {"id": entry_id, "importance": 0.1}),
            ("memory_explore", {"id": entry_id}),
        ):
            result = refused(tools.call(name, args, A), "not_found")
            assert result.text == f"Error: no memory with id {entry_id!r} in this scope"
    assert ok(tools.call("search_memory", {"query": "secret plan"}, A)).data["results"] == []
    assert ok(tools.call("search_memory", {"query": "private note"}, A)).data["results"] == []
    assert ok(tools.call("search_memory", {"query": "private note"}, ToolContext(ALLOWED, user_id="u1"))).data[
        "results"
    ]
    assert _state(rv) == before


def test_refusals_are_results_and_write_nothing(tools: ToolRegistry, rv: reverie.Reverie) -> None:
    ok(tools.call("save_memory", {"content": "Something to keep"}, DEFAULT))
    before = _state(rv)
    refused(tools.call("no_such_tool", {}, DEFAULT), "unknown_tool")
    refused(tools.call(None, {}, DEFAULT), "unknown_tool")  # type: ignore[arg-type]
    refused(tools.call("save_memory", ["content"], DEFAULT), "validation")  # type: ignore[arg-type]
    refused(tools.call("save_memory", {}, DEFAULT), "validation")
    refused(tools.call("save_memory", {"content": ""}, DEFAULT), "validation")
    refused(tools.call("save_memory", {"content": "x", "extra": 1}, DEFAULT), "validation")
    refused(tools.call("save_memory", {"content": "x", "tags": "not-a-list"}, DEFAULT), "validation")
    refused(tools.call("save_memory", {"content": "x", "category": "Bad Category!"}, DEFAULT), "validation")
    refused(tools.call("save_memory", {"content": "x" * 20_001}, DEFAULT), "validation")
    refused(tools.call("search_memory", {"mode": "psychic"}, DEFAULT), "validation")
    refused(tools.call("memory_explore", {"id": "x", "depth": 4}, DEFAULT), "validation")
    refused(tools.call("save_to_working_memory", {"key": "../x", "data": "d"}, DEFAULT), "validation")
    refused(tools.call("save_to_working_memory", {"key": "k", "data": "d", "ttl_minutes": 0}, DEFAULT), "validation")
    refused(tools.call("search_memory", {}, ToolContext(agent_id="")), "validation")
    refused(tools.call("search_working_memory", {}, ToolContext(namespace="nowhere")), "validation")
    huge = refused(
        tools.call("update_memory_importance", {"id": "x", "importance": "9" * 100_000}, DEFAULT), "validation"
    )
    assert len(huge.text) < 500
    assert _state(rv) == before


# -- fuzz ----------------------------------------------------------------------------------------------------
_HUGE = st.sampled_from(["x" * 100_000, "word " * 20_000, "\x00", "\ud800", "é" * 30_001, "../../etc", "stash", " "])
_WORDS = st.sampled_from(
    ["Dana", "green tea", "Lisbon", "stash", "STASH", "subagent", "session/s1", "home", "general", "mcp/email", "poor"]
)
_KEYS_LIKE = st.sampled_from(["inbox", "session/s1/inbox", "subagent/t1/x", "stash/s1/c", "patrol/p/x", "a/b/c"])
_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40)
)
_JSON = st.recursive(
    _SCALARS | _HUGE,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_STRINGS = st.text(max_size=60) | _HUGE | _WORDS | _KEYS_LIKE
_NUMBERS = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-10, 10) | st.integers()
_BY_TYPE = {
    "string": _STRINGS,
    "number": _NUMBERS,
    "integer": st.integers(-2, 5) | st.floats(-2, 5) | st.integers(),
    "boolean": st.booleans(),
    "array": st.lists(_STRINGS, max_size=5),
    "object": st.dictionaries(_STRINGS, _JSON, max_size=4),
}
_CONTEXTS = st.sampled_from(
    [
        A,
        DEFAULT,
        ToolContext(agent_id=ALLOWED, namespace="subagent/t1", background=True),
        ToolContext(agent_id=ALLOWED, user_id="u1", session_id="a/b"),
        ToolContext(agent_id=""),
    ]
)


def _arguments(spec: ToolSpec, ids: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly the tool's own arguments with values of the right type (often odd ones), sometimes any JSON
    under any key, so both the schema and the services' own checks are reached."""
    values: dict[str, st.SearchStrategy[Any]] = {}
    for key, schema in spec.input_schema["properties"].items():
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]  # kv_set's value: many
        typed = st.sampled_from(schema["enum"]) if "enum" in schema else st.one_of([_BY_TYPE[k] for k in kinds])
        if key == "id":
            typed = st.sampled_from(ids) | typed
        values[key] = st.one_of(typed, typed, typed, _JSON)
    required = set(spec.input_schema.get("required", []))
    shaped = st.fixed_dictionaries(
        {k: v for k, v in values.items() if k in required},
        optional={k: v for k, v in values.items() if k not in required},
    )
    anything = st.dictionaries(st.sampled_from([*values, "extra"]) | st.text(max_size=10), _JSON, max_size=5)
    return st.one_of(shaped, shaped, shaped, st.fixed_dictionaries({}, optional=values), anything)


def test_fuzz_call_never_raises_and_a_refused_call_writes_nothing() -> None:
    with tempfile.TemporaryDirectory() as home, _open(Path(home)) as rv:
        tools = ToolRegistry(rv)
        scope = Scope(ALLOWED)
        ids = [
            rv.memory.save("Dana prefers green tea in the morning", category="home", scope=scope, dedup=False).id,
            rv.memory.save("Dana prefers green tea in the morning", category="home", scope=scope, dedup=False).id,
            rv.memory.save("The user lives in Lisbon", scope=scope).id,
            rv.memory.save("Agent b's plan", scope=Scope("b")).id,
            "000000000000",
        ]
        for agent in (ALLOWED, "default"):
            rv.skills.save(agent, "mcp/email", "Send mail through MCP", "Confirm the recipient, then send.")
        calls = st.sampled_from(SPECS).flatmap(lambda spec: st.tuples(st.just(spec.name), _arguments(spec, ids)))

        @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(call=calls | st.tuples(st.text(max_size=12), _JSON), ctx=_CONTEXTS)
        def run(call: tuple[str, Any], ctx: ToolContext) -> None:
            name, args = call
            before = _state(rv)
            result = tools.call(name, args, ctx)
            assert isinstance(result, ToolResult)
            json.dumps(result.data)
            if result.is_error:
                assert result.data["error"]["kind"] != "internal", result.text
                assert _state(rv) == before, (name, args)

        run()
