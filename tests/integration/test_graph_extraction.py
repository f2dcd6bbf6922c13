"""Extraction into the knowledge graph (issue 9, part 3) on both backends: the rules learn names, dates and
numbers from saved text and a path joins two of them; the LLM path against the real loopback chat server (typed
entities and relations, one call per saved entry, a malformed answer learns nothing, a failing LLM keeps the
queue, a user turn is never queued behind, an entry edited meanwhile is read again); a save returns before
extraction runs; the queue survives a restart; include_related and memory_explore walk shared entities through
the caller's scope; the settings; the one-shot CLI."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie import LLMError, Scope
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.errors import ConfigError
from reverie.graph.extraction import PURPOSE, extractable
from reverie.memory.dedup import EXPANDED_FROM
from reverie.prompts import GRAPH_EXTRACT, default_prompt
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.tools import ToolContext, ToolRegistry
from reverie.types import MemoryEntry

BACKENDS = ["sqlite", "postgresql"]
A = "default"
CHAT = "/v1/chat/completions"
NOTES = (
    "Ana Costa runs the Porto office of Acme Corp.",
    "Acme Corp signed a contract with Northwind Labs on March 14, 2026.",
    "Bruno from Northwind Labs ships the 3 kiosks to New York.",
)
NOTE = "Ana Costa works at Acme Corp in Porto."
ANSWER = json.dumps(
    {
        "entities": [
            {"type": "person", "name": "Ana Costa"},
            {"type": "organisation", "name": "Acme Corp"},
            {"type": "place", "name": "Porto"},
        ],
        "relations": [
            {"from": "Ana Costa", "relation": "works_at", "to": "Acme Corp"},
            {"from": "Acme Corp", "relation": "located_in", "to": "Porto"},
        ],
    }
)


def _open(backend: str, request: pytest.FixtureRequest, home: Path, clock: FakeClock, **overrides: Any) -> Any:
    graph = {"extraction_background": False, **overrides.pop("graph", {})}
    options: dict[str, Any] = {"clock": clock, "embedding": {"provider": "none"}, "graph": graph, **overrides}
    if backend == "sqlite":
        return reverie.open(home, **options)
    request.getfixturevalue("monkeypatch").setenv("REVERIE_HOME", str(home))  # a URL keeps the default home
    return reverie.open(request.getfixturevalue("pg_url"), **options)


def _llm(server: ScriptedOpenAIServer) -> dict[str, Any]:
    return {"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def rv(backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    """Rules (no LLM), extracting only on demand."""
    with _open(backend, request, tmp_path / "home", clock) as engine:
        yield engine


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


@pytest.fixture
def llm_rv(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> Iterator[reverie.Reverie]:
    """The scripted LLM (no expansion), extracting only on demand."""
    with _open(
        backend, request, tmp_path / "llm", clock, llm=_llm(server), memory={"expansion_enabled": False}
    ) as engine:
        yield engine


def queued(rv: reverie.Reverie) -> list[str]:
    return [entry_id for _, entry_id in rv.store.facts.graph_extraction_pending(1000)]


def chats(server: ScriptedOpenAIServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests if r.path == CHAT]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- rules ---------------------------------------------------------------------------------------------------
def test_rules_learn_from_saved_text_and_a_path_joins_two_entities(rv: reverie.Reverie) -> None:
    assert rv.graph_extraction is not None and rv.graph_extraction.mode == "rules"
    saved = [rv.memory.save(note).entry for note in NOTES]
    assert queued(rv) == [e.id for e in saved]
    assert rv.extract_pending() == 3 and queued(rv) == []
    kinds = {(e.type, e.name): e.sources for e in rv.graph.list_entities(A)}
    assert kinds[("thing", "Acme Corp")] == (saved[0].id, saved[1].id)
    assert kinds[("date", "2026-03-14")] == (saved[1].id,) and kinds[("number", "3 kiosks")] == (saved[2].id,)
    path = rv.graph.path(A, "Ana Costa", "New York")
    assert path is not None
    assert [e.name for e in path.entities] == ["Ana Costa", "Acme Corp", "Northwind Labs", "New York"]
    assert [t.relation.relation for t in path.triples] == ["mentioned_with"] * 3
    assert [t.relation.sources for t in path.triples] == [(s.id,) for s in saved]
    assert rv.extract_pending() == 0  # nothing left


def test_a_known_name_is_recognised_at_a_sentence_start(rv: reverie.Reverie) -> None:
    rv.memory.save("Yesterday I had lunch with Bruno.")
    rv.extract_pending()
    later = rv.memory.save("Bruno moved to Lisbon.").entry
    rv.extract_pending()
    bruno = rv.graph.resolve(A, "Bruno")
    assert later.id in bruno.sources
    assert rv.graph.path(A, "Bruno", "Lisbon") is not None


def test_only_new_text_of_agent_wide_entries_is_queued(rv: reverie.Reverie) -> None:
    first = rv.memory.save("I met Dana Okafor at Norhaven", category="people").entry
    assert queued(rv) == [first.id]
    again = rv.memory.save("I met Dana Okafor at Norhaven", category="people")
    assert again.outcome == "reinforced" and queued(rv) == [first.id]  # no new text: nothing more to read
    rv.memory.save_many([{"content": "Bulk: Dana Okafor visited Porto."}])  # bulk ingestion is not extracted
    rv.memory.save("Dana Okafor has a private note.", scope=Scope(A, user_id="u1"))  # the graph is agent-wide
    rv.memory.save("A turn naming Porto.", metadata={"thread": "t", "position": 1})  # a sequence member
    rv.memory.save("Feedback naming Porto.", category="feedback/x")
    assert queued(rv) == [first.id]
    assert rv.extract_pending() == 1 and queued(rv) == []
    extended = rv.memory.save("I met Dana Okafor at Norhaven in Porto", category="people")
    assert (extended.outcome, extended.id) == ("extended", first.id) and queued(rv) == [first.id]
    assert rv.extract_pending() == 1
    assert rv.graph.resolve(A, "thing:Porto").sources == (first.id,)
    assert rv.graph.resolve(A, "thing:Dana Okafor").sources == (first.id,)  # learned again, not twice
    expanded = MemoryEntry(**{**_fields(first), "metadata": {EXPANDED_FROM: first.id}})
    assert extractable(first) and not extractable(expanded)


def _fields(entry: MemoryEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in entry.__dataclass_fields__}


def test_a_save_returns_with_the_entry_queued_before_anything_is_learned(rv: reverie.Reverie) -> None:
    saved = rv.memory.save(NOTES[0]).entry
    assert queued(rv) == [saved.id] and rv.graph.list_entities(A) == []  # never on the caller's thread


def test_a_deleted_or_purged_entry_teaches_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    deleted = rv.memory.save(NOTES[0]).entry
    rv.memory.archive(deleted.id)
    purged = rv.memory.save(NOTES[1]).entry
    rv.memory.archive(purged.id)
    rv.store.facts.queue_graph_extraction("000000000000", A, at=clock.now())  # an id of nothing at all
    assert rv.extract_pending() == 3 and queued(rv) == []
    assert rv.graph.list_entities(A) == []


def test_an_entry_a_later_save_contradicts_teaches_nothing(rv: reverie.Reverie) -> None:
    old = rv.memory.save("Ana Costa runs the Porto office of Acme Corp.").entry
    new = rv.memory.save("Ana Costa no longer runs the Porto office of Acme Corp.")
    assert new.outcome == "superseded"
    rv.extract_pending()
    assert queued(rv) == []
    learned = {source for entity in rv.graph.list_entities(A) for source in entity.sources}
    assert old.id not in learned and new.id in learned


def test_the_queue_survives_a_restart(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    clock = FakeClock()
    with _open(backend, request, tmp_path / "home", clock) as first:
        saved = [first.memory.save(note).entry.id for note in NOTES]
    with _open(backend, request, tmp_path / "home", clock) as second:
        assert queued(second) == saved
        assert second.extract_pending() == 3
        assert second.graph.path(A, "Ana Costa", "New York") is not None


def test_the_background_thread_extracts_after_the_save_returned(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> None:
    with _open(backend, request, tmp_path / "bg", clock, graph={"extraction_background": True}) as engine:
        for note in NOTES:
            engine.memory.save(note)
        wait_for(lambda: engine.graph.list_entities(A) != [] and queued(engine) == [])
        assert engine.graph.path(A, "Ana Costa", "New York") is not None


# -- the LLM -------------------------------------------------------------------------------------------------
def test_the_llm_learns_typed_entities_and_relations_citing_the_entry(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    assert llm_rv.graph_extraction is not None and llm_rv.graph_extraction.mode == "llm"
    saved = llm_rv.memory.save(NOTE, category="people/ana").entry
    server.script_chat([f"<think>who is where</think>{ANSWER}"])
    assert llm_rv.extract_pending() == 1 and queued(llm_rv) == []
    (request,) = chats(server)
    assert request["messages"][0]["content"] == default_prompt(GRAPH_EXTRACT)
    assert NOTE in request["messages"][1]["content"] and "Category: people/ana" in request["messages"][1]["content"]
    (works,) = llm_rv.graph.relations(A, from_ref="person:Ana Costa", relation="works_at")
    assert works.text == "person:Ana Costa -works_at-> organisation:Acme Corp"
    assert works.relation.sources == (saved.id,) and works.source.sources == (saved.id,)
    assert llm_rv.graph.path(A, "Ana Costa", "Porto") is not None
    assert [u.purpose for u in llm_rv.usage_calls()] == [PURPOSE]  # booked to the entry's agent
    moved = llm_rv.memory.save("Ana Costa now works at Northwind Labs.", category="people/moves").entry
    server.script_chat(
        [
            json.dumps(
                {
                    "entities": [
                        {"type": "person", "name": "Ana Costa"},
                        {"type": "organization", "name": "Northwind"},
                    ],
                    "relations": [{"from": "Ana Costa", "relation": "Works At", "to": "Northwind"}],
                }
            )
        ]
    )
    assert llm_rv.extract_pending() == 1
    history = llm_rv.graph.relations(A, from_ref="person:Ana Costa", relation="works_at", include_invalid=True)
    assert [(t.target.name, t.relation.invalid_at is None) for t in history] == [
        ("Acme Corp", False),
        ("Northwind", True),
    ]
    assert history[1].relation.sources == (moved.id,)


def test_one_llm_call_per_saved_entry(llm_rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    server.answer_chat_with(lambda _body: '{"entities": [], "relations": []}')
    for note in NOTES:
        llm_rv.memory.save(note)
    llm_rv.memory.save(NOTES[0])  # reinforced: no new text
    assert llm_rv.extract_pending() == 3 and len(chats(server)) == 3
    assert llm_rv.extract_pending() == 0 and len(chats(server)) == 3


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(ChatReply("Sure! Ana works at Acme."), id="prose"),
        pytest.param(ChatReply('{"entities": [{"type": "person", "name": "An', finish_reason="length"), id="cut"),
        pytest.param(ChatReply('{"entities": [{"type": "person", "name": "Ana"}]}'), id="no-relations"),
        pytest.param(ChatReply('{"entities": "Ana", "relations": []}'), id="schema"),
    ],
)
def test_a_malformed_answer_takes_the_entry_out_with_nothing_learned(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer, reply: ChatReply, caplog: pytest.LogCaptureFixture
) -> None:
    saved = llm_rv.memory.save(NOTE).entry
    server.script_chat([reply])
    with caplog.at_level(logging.WARNING, logger="reverie.graph.extraction"):
        assert llm_rv.extract_pending() == 1  # handled, never raised
    assert queued(llm_rv) == [] and llm_rv.graph.list_entities(A) == [] and len(chats(server)) == 1
    assert any(saved.id in r.getMessage() and "malformed" in r.getMessage() for r in caplog.records)
    assert llm_rv.memory.get(saved.id).content == NOTE  # the entry itself is untouched


def test_a_bad_item_costs_only_itself(llm_rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    llm_rv.memory.save(NOTE)
    answer = {
        "entities": [{"type": "person", "name": "Ana Costa"}, {"type": "person", "name": "x" * 300}, "Porto"],
        "relations": [
            {"from": "Ana Costa", "relation": "works_at", "to": "Acme Corp"},
            {"from": "Ana Costa", "relation": "is", "to": "Ana Costa"},
            {"from": "Ana Costa", "relation": "knows", "to": "y" * 300},
        ],
    }
    server.script_chat([json.dumps(answer)])
    assert llm_rv.extract_pending() == 1
    assert sorted(e.name for e in llm_rv.graph.list_entities(A)) == ["Acme Corp", "Ana Costa"]
    assert [t.text for t in llm_rv.graph.relations(A)] == ["person:Ana Costa -works_at-> thing:Acme Corp"]


@pytest.mark.parametrize(
    "reply",
    [pytest.param(ChatReply(status=500), id="http-500"), pytest.param(ChatReply(body="<html>oops"), id="garbage")],
)
def test_a_failing_llm_keeps_every_entry_queued(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer, reply: ChatReply
) -> None:
    saved = [llm_rv.memory.save(note).entry.id for note in NOTES[:2]]
    server.script_chat([reply])
    with pytest.raises(LLMError):
        llm_rv.extract_pending()
    assert queued(llm_rv) == saved and llm_rv.graph.list_entities(A) == []
    server.script_chat([ANSWER, '{"entities": [], "relations": []}'])
    assert llm_rv.extract_pending() == 2 and queued(llm_rv) == []


def test_a_user_turn_is_never_queued_behind_extraction(llm_rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    assert llm_rv.llm is not None
    saved = llm_rv.memory.save(NOTE).entry
    server.script_chat([ANSWER])
    with llm_rv.llm.foreground():
        assert llm_rv.extract_pending() == 0 and chats(server) == []
    assert queued(llm_rv) == [saved.id]
    assert llm_rv.extract_pending() == 1


def test_an_entry_edited_while_the_llm_reads_it_is_read_again(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    saved = llm_rv.memory.save("Ana Costa works at Acme Corp.").entry
    server.script_chat([ChatReply(ANSWER, delay=0.5)])
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(llm_rv.extract_pending()))
    worker.start()
    wait_for(lambda: len(chats(server)) == 1)
    llm_rv.memory.edit(saved.id, content="Ana Costa works at Northwind Labs.")
    worker.join(5)
    assert result == [0] and queued(llm_rv) == [saved.id] and llm_rv.graph.list_entities(A) == []
    server.script_chat(['{"entities": [{"type": "organisation", "name": "Northwind Labs"}], "relations": []}'])
    assert llm_rv.extract_pending() == 1
    assert "Northwind Labs" in chats(server)[-1]["messages"][1]["content"]
    assert [e.name for e in llm_rv.graph.list_entities(A)] == ["Northwind Labs"]


def test_an_entry_another_worker_took_meanwhile_is_not_written_twice(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    llm_rv.memory.save(NOTE)
    (entry_id,) = queued(llm_rv)
    server.script_chat([ChatReply(ANSWER, delay=0.5)])
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(llm_rv.extract_pending()))
    worker.start()
    wait_for(lambda: len(chats(server)) == 1)
    assert llm_rv.store.facts.graph_extraction_done(entry_id)  # the other worker's claim
    worker.join(5)
    assert result == [0] and llm_rv.graph.list_entities(A) == []


def test_a_save_returns_before_a_slow_llm_has_answered(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.script_chat([ChatReply(ANSWER, delay=1.5)])
    with _open(
        backend,
        request,
        tmp_path / "slow",
        clock,
        llm=_llm(server),
        memory={"expansion_enabled": False},
        graph={"extraction_background": True},
    ) as engine:
        started = time.monotonic()
        saved = engine.memory.save(NOTE).entry
        assert time.monotonic() - started < 1.0  # the LLM is still thinking
        assert engine.graph.list_entities(A) == []
        wait_for(lambda: queued(engine) == [])
        assert engine.graph.resolve(A, "person:Ana Costa").sources == (saved.id,)


def test_a_prompt_file_in_the_home_replaces_the_shipped_one(
    llm_rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    (llm_rv.settings.home / GRAPH_EXTRACT).write_text("List the entities. JSON only.", encoding="utf-8")
    llm_rv.memory.save(NOTE)
    server.script_chat(['{"entities": [], "relations": []}'])
    llm_rv.extract_pending()
    assert chats(server)[0]["messages"][0]["content"] == "List the entities. JSON only."


# -- include_related and memory_explore ----------------------------------------------------------------------
def test_memory_explore_and_include_related_walk_shared_entities_in_the_callers_scope(rv: reverie.Reverie) -> None:
    tools = ToolRegistry(rv)
    porto, contract, kiosks = (rv.memory.save(n, category=c).entry for n, c in zip(NOTES, ("a", "b", "c"), strict=True))
    gone = rv.memory.save("Acme Corp had a stand at the old fair.", category="d").entry
    other_agent = rv.memory.save("Acme Corp is also a client of agent b.", scope=Scope("agent-b")).entry
    rv.extract_pending()
    rv.memory.archive(gone.id)
    private = rv.memory.save("u1 privately notes the Acme Corp budget.", scope=Scope(A, user_id="u1")).entry
    rv.graph.add_entity(A, "thing", "Acme Corp", sources=[private.id])  # a source only u1 may read

    def related(ctx: ToolContext, entry_id: str, depth: int = 1) -> list[dict[str, Any]]:
        result = tools.call("memory_explore", {"id": entry_id, "depth": depth}, ctx)
        assert not result.is_error, result.text
        return [r for r in result.data["related"] if r["relation"] == "shared_entity"]

    shared = related(ToolContext(), porto.id)
    assert [(r["id"], r["entity"], r["via"], r["hop"]) for r in shared] == [
        (contract.id, "thing:Acme Corp", porto.id, 1)
    ]
    text = tools.call("memory_explore", {"id": porto.id}, ToolContext()).text
    assert f"names thing:Acme Corp as [{porto.id}] does" in text
    two = {r["id"]: r["hop"] for r in related(ToolContext(), porto.id, depth=2)}
    assert two == {contract.id: 1, kiosks.id: 2}  # Northwind Labs, one note further
    seen_by_u1 = {r["id"] for r in related(ToolContext(user_id="u1"), porto.id)}
    assert seen_by_u1 == {contract.id, private.id}
    for ctx in (ToolContext(), ToolContext(user_id="u2")):  # never the archived, the private or another agent's
        assert {r["id"] for r in related(ctx, porto.id)} == {contract.id}
    assert other_agent.id not in {r["id"] for r in related(ToolContext(agent_id="agent-b"), other_agent.id)}
    query = tools.call("memory_query", {"query": "Porto office", "include_related": 1}, ToolContext())
    assert not query.is_error, query.text
    hits = {r["id"] for r in query.data["results"]}
    assert porto.id in hits
    linked = {r["id"]: r for r in query.data["related"] if r["relation"] == "shared_entity"}
    assert contract.id in linked or contract.id in hits
    assert gone.id not in linked and private.id not in linked


# -- settings and the CLI ------------------------------------------------------------------------------------
def test_the_extraction_setting(tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    base: dict[str, Any] = {"clock": clock, "embedding": {"provider": "none"}}
    with reverie.open(tmp_path / "off", graph={"extraction": "off"}, **base) as off:
        assert off.graph_extraction is None
        off.memory.save(NOTE)
        assert queued(off) == [] and off.extract_pending() == 0
    with pytest.raises(ConfigError, match="needs an LLM"):
        reverie.open(tmp_path / "llm", graph={"extraction": "llm"}, **base)
    llm = _llm(server)
    memory = {"expansion_enabled": False}
    graph = {"extraction": "rules", "extraction_background": False}
    with reverie.open(tmp_path / "rules", llm=llm, memory=memory, graph=graph, **base) as rules:
        assert rules.graph_extraction is not None and rules.graph_extraction.mode == "rules"
        rules.memory.save(NOTES[0])
        assert rules.extract_pending() == 1 and chats(server) == []
    graph = {"extraction_background": False, "extraction_max_entities": 2, "extraction_max_relations": 0}
    with reverie.open(tmp_path / "capped", graph=graph, **base) as capped:
        capped.memory.save("I met Ana, Bruno and Carla in Porto.")
        capped.extract_pending()
        assert sorted(e.name for e in capped.graph.list_entities(A)) == ["Ana", "Bruno"]
        assert capped.graph.relations(A) == []


def test_one_shot_cli_commands_extract_before_they_exit(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    env = {"REVERIE_EMBEDDING__PROVIDER": "none"}
    if backend == "postgresql":
        env["REVERIE_STORE__URL"] = request.getfixturevalue("pg_url")
    runner = CliRunner()

    def cli(*args: str) -> str:
        result = runner.invoke(app, ["--home", str(tmp_path / "cli"), *args], env=env)
        assert result.exit_code == 0, (result.output, result.exception)
        return result.stdout

    for note in NOTES:
        cli("memory", "save", note)
    found = json.loads(cli("kg", "path", "--from", "Ana Costa", "--to", "New York", "--json"))
    assert found["found"] and len(found["path"]["triples"]) == 3
