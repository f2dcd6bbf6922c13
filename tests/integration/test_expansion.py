"""The background expansion of saves (seed 000) against the real loopback chat-completions server: the
original is saved at once, the LLM's facts are saved inferred and through deduplication, a bad answer or a
failing endpoint applies nothing, a user turn is never queued behind, and the queue survives a restart."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from _template import new_store_file
from reverie import LLMError, Scope
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.memory.expansion import ExpansionConfig, ExpansionQueue
from reverie.prompts import MEMORY_RULES, default_prompt
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.types import MemoryEntry

CHAT = "/v1/chat/completions"
NOTE = "Met Dana Okafor at the Lisbon meetup on 2024-05-03; she works at Norhaven as a nurse and has two daughters."


def answer(*entries: dict[str, Any]) -> str:
    return json.dumps({"entries": list(entries)})


FACTS = answer(
    {
        "content": "Dana Okafor works at Norhaven as a nurse.",
        "category": "people/dana",
        "tags": ["work"],
        "importance": 0.7,
    },
    {
        "content": "The user met Dana Okafor at the Lisbon meetup.",
        "category": "people/dana",
        "subjectTime": "2024-05-03",
        "subjectTimeEnd": "someday",  # malformed: dropped, the fact kept
    },
)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as running:
        yield running


def open_engine(home: Path, clock: FakeClock, server: ScriptedOpenAIServer, **memory: Any) -> reverie.Reverie:
    """An engine with the hash embedder and the scripted LLM (no retries), expanding only on demand."""
    return reverie.open(
        home,
        clock=clock,
        embedding={"provider": "hash", "background": False},
        llm={"provider": "openai", "endpoint": server.url, "model": "test-model", "max_retries": 0},
        memory={"expansion_background": False, **memory},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
    )


@pytest.fixture
def rv(
    tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer, sqlite_template: Path
) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with open_engine(tmp_path / "home", clock, server) as engine:
        yield engine


def chat_requests(server: ScriptedOpenAIServer) -> list[Any]:
    return [r.body for r in server.requests if r.path == CHAT]


def all_entries(rv: reverie.Reverie) -> list[MemoryEntry]:
    return list(rv.store.facts.iter_all())


def expanded_from(rv: reverie.Reverie, original_id: str) -> list[MemoryEntry]:
    return [e for e in all_entries(rv) if e.metadata.get("expandedFrom") == original_id]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# -- saving -------------------------------------------------------------------------------------------------
def test_a_save_returns_at_once_with_the_original_saved_and_the_background_expands_it(
    tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.script_chat([ChatReply(FACTS, delay=1.0)])  # a slow model
    with open_engine(tmp_path / "home", clock, server, expansion_background=True) as rv:
        started = time.monotonic()
        saved = rv.memory.save(NOTE, category="people", source="user")
        assert time.monotonic() - started < 0.5
        assert saved.outcome == "created" and saved.entry.expand_pending
        assert rv.memory.get(saved.id).content == NOTE
        wait_for(lambda: not rv.memory.get(saved.id).expand_pending)
        assert len(expanded_from(rv, saved.id)) == 2


def test_expand_pending_saves_the_facts_inferred_with_their_origin(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    original = rv.memory.save(NOTE, category="people", tags=["meetup"], source="user", importance=0.4)
    server.script_chat([FACTS])
    assert rv.expand_pending() == 1
    facts = sorted(expanded_from(rv, original.id), key=lambda e: e.content)
    assert [f.content for f in facts] == [
        "Dana Okafor works at Norhaven as a nurse.",
        "The user met Dana Okafor at the Lisbon meetup.",
    ]
    work, met = facts
    assert {f.source for f in facts} == {"inferred"}  # the LLM's reading never reads as user
    assert work.category == "people/dana" and work.tags == ("meetup", "work") and work.importance == 0.7
    assert met.importance == 0.4  # none proposed: the original's
    assert met.metadata == {"expandedFrom": original.id, "source": "inferred", "subjectTime": "2024-05-03"}
    assert not any(f.expand_pending for f in facts)  # expansions are never expanded again
    kept = rv.memory.get(original.id)
    assert (kept.content, kept.source, kept.reinforcement_count, kept.expand_pending) == (NOTE, "user", 1, False)
    assert {hit.entry.id for hit in rv.memory.search("Norhaven nurse")} >= {work.id, original.id}
    assert rv.expand_pending() == 0  # nothing left
    (request,) = chat_requests(server)
    system, user = request["messages"]
    assert system == {"role": "system", "content": default_prompt(MEMORY_RULES)}
    assert NOTE in user["content"] and "people" in user["content"]
    assert [r.purpose for r in rv.llm.ledger.records()] == ["expansion"]


def test_a_fact_restating_an_existing_entry_reinforces_it(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    (known,) = rv.memory.save_many([{"content": "The user is allergic to peanuts", "category": "health"}])
    assert not known.entry.expand_pending  # bulk ingestion is not expanded
    original = rv.memory.save("Dinner with Sam tonight; remember I'm allergic to peanuts!", source="user")
    server.script_chat(
        [
            answer(
                {"content": "The user is allergic to peanuts.", "category": "health/allergies"},
                {"content": "The user has dinner with Sam.", "category": "plans"},
            )
        ]
    )
    assert rv.expand_pending() == 1
    reinforced = rv.memory.get(known.id)
    assert reinforced.reinforcement_count == 2 and reinforced.content == "The user is allergic to peanuts"
    assert [e.content for e in expanded_from(rv, original.id)] == ["The user has dinner with Sam."]


def test_a_fact_never_folds_into_its_own_original(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    original = rv.memory.save("Dana works at Norhaven as a nurse since 2019", category="people", source="user")
    server.script_chat(
        [
            answer(
                {"content": "  dana works at norhaven as a nurse since 2019.  ", "category": "people"},  # the same
                {"content": "Dana works at Norhaven as a nurse.", "category": "people"},  # lexically a restatement
            )
        ]
    )
    assert rv.expand_pending() == 1
    assert [e.content for e in expanded_from(rv, original.id)] == ["Dana works at Norhaven as a nurse."]
    kept = rv.memory.get(original.id)
    assert (kept.reinforcement_count, kept.source, kept.content) == (1, "user", original.entry.content)


def test_an_extended_note_is_read_again_and_its_earlier_facts_are_reinforced(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    original = rv.memory.save("Dana Okafor works at Norhaven", category="people", source="user")
    server.script_chat([answer({"content": "Dana Okafor is employed by Norhaven."})])
    assert rv.expand_pending() == 1
    (employed,) = expanded_from(rv, original.id)
    extended = rv.memory.save("Dana Okafor works at Norhaven in Porto", category="people", source="user")
    assert (extended.outcome, extended.id, extended.entry.expand_pending) == ("extended", original.id, True)
    server.script_chat(
        [answer({"content": "Dana Okafor is employed by Norhaven."}, {"content": "Norhaven is in Porto."})]
    )
    assert rv.expand_pending() == 1  # the note was restated: its facts were seen again
    assert rv.memory.get(employed.id).reinforcement_count == 2
    assert sorted(e.content for e in expanded_from(rv, original.id)) == [
        "Dana Okafor is employed by Norhaven.",
        "Norhaven is in Porto.",
    ]
    assert rv.memory.get(original.id).reinforcement_count == 2  # the user's restatement only


def test_an_empty_answer_clears_the_flag_and_saves_nothing(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    original = rv.memory.save("ok thanks")
    server.script_chat(['<think>nothing to keep</think>{"entries": []}'])
    assert rv.expand_pending() == 1
    assert not rv.memory.get(original.id).expand_pending
    assert len(all_entries(rv)) == 1


# -- what is queued -----------------------------------------------------------------------------------------
def test_only_saves_of_new_text_are_queued(rv: reverie.Reverie) -> None:
    first = rv.memory.save("The user lives in Lisbon", category="home")
    assert first.entry.expand_pending
    again = rv.memory.save("the user lives in lisbon", category="home")
    extended = rv.memory.save("The user lives in Lisbon, in Alfama", category="home")
    assert again.outcome == "reinforced" and extended.outcome == "extended" and extended.entry.expand_pending
    assert rv.memory.get(first.id).expand_pending
    assert not rv.memory.save("a contradiction note", category="feedback/x").entry.expand_pending
    turn = rv.memory.save("turn one", metadata={"thread": "t1", "position": 1})
    assert not turn.entry.expand_pending
    assert not rv.memory.save_many([{"content": "ingested"}])[0].entry.expand_pending


def test_no_llm_means_no_queue(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path / "plain", clock=clock, embedding={"provider": "hash", "background": False}) as rv:
        assert rv.llm is None and rv.expansion is None
        saved = rv.memory.save(NOTE, source="user")
        assert saved.outcome == "created" and not saved.entry.expand_pending
        assert rv.expand_pending() == 0


def test_expansion_can_be_switched_off(tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    with open_engine(tmp_path / "off", clock, server, expansion_enabled=False) as rv:
        assert rv.llm is not None and rv.expansion is None
        assert not rv.memory.save(NOTE).entry.expand_pending
    assert chat_requests(server) == []


# -- failures -----------------------------------------------------------------------------------------------
MALFORMED = [
    pytest.param(ChatReply("Sure! Dana is a nurse."), id="prose"),
    pytest.param(ChatReply('{"entries": [{"content": "Dana wor', finish_reason="length"), id="truncated"),
    pytest.param(ChatReply('{"entries": "Dana is a nurse"}'), id="schema"),
]


@pytest.mark.parametrize("reply", MALFORMED)
def test_a_malformed_answer_applies_nothing_and_gives_up_after_three(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, reply: ChatReply
) -> None:
    original = rv.memory.save(NOTE, source="user")
    server.script_chat([reply, reply])
    for _ in range(2):
        assert rv.expand_pending() == 0
        assert rv.memory.get(original.id).expand_pending  # kept for another try
        assert all_entries(rv) == [rv.memory.get(original.id)]
    server.script_chat([reply])
    assert rv.expand_pending() == 0
    kept = rv.memory.get(original.id)
    assert not kept.expand_pending and kept.content == NOTE and len(all_entries(rv)) == 1
    assert len(chat_requests(server)) == 3


@pytest.mark.parametrize(
    "reply",
    [pytest.param(ChatReply(status=500), id="http-500"), pytest.param(ChatReply(body="<html>oops"), id="garbage")],
)
def test_a_failing_llm_leaves_everything_pending_for_a_later_run(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, reply: ChatReply
) -> None:
    first = rv.memory.save(NOTE, category="people")
    second = rv.memory.save("The user's sister is called Ines", category="family")
    server.script_chat([reply])
    with pytest.raises(LLMError):
        rv.expand_pending()
    assert rv.memory.get(first.id).expand_pending and rv.memory.get(second.id).expand_pending
    assert len(all_entries(rv)) == 2
    for _ in range(5):  # failures of the endpoint never count towards giving up
        server.script_chat([reply])
        with pytest.raises(LLMError):
            rv.expand_pending()
    server.script_chat([FACTS, answer({"content": "Ines is the user's sister.", "category": "family"})])
    assert rv.expand_pending() == 2
    assert len(expanded_from(rv, first.id)) == 2 and len(expanded_from(rv, second.id)) == 1


def test_an_original_edited_while_the_llm_reads_it_is_read_again(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    original = rv.memory.save("Dana works at Norhaven", category="people")
    server.script_chat([ChatReply(answer({"content": "Dana is employed by Norhaven."}), delay=0.5)])
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(rv.expand_pending()))
    worker.start()
    wait_for(lambda: len(server.requests) == 1)
    rv.memory.edit(original.id, content="Dana works at Ostara")
    worker.join(5)
    assert result == [0] and expanded_from(rv, original.id) == []
    assert rv.memory.get(original.id).expand_pending
    server.script_chat([answer({"content": "Dana is employed by Ostara."})])
    assert rv.expand_pending() == 1
    assert [e.content for e in expanded_from(rv, original.id)] == ["Dana is employed by Ostara."]
    assert "Ostara" in chat_requests(server)[-1]["messages"][1]["content"]


def test_a_deleted_original_leaves_the_queue_unread(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    original = rv.memory.save(NOTE)
    rv.memory.archive(original.id)
    assert rv.expand_pending() == 0
    assert not rv.memory.get(original.id).expand_pending and chat_requests(server) == []


def test_an_original_a_later_save_contradicts_is_not_expanded(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    """Facts read out of a belief that no longer holds would contradict the current one back."""
    old = rv.memory.save("Priya is allergic to peanuts.", category="people")
    new = rv.memory.save("Priya is not allergic to peanuts.", category="people")
    assert new.outcome == "superseded"
    server.script_chat([answer({"content": "Priya has a peanut allergy.", "category": "people"})] * 2)
    rv.expand_pending()
    assert expanded_from(rv, old.id) == [] and not rv.memory.get(old.id).expand_pending
    assert rv.memory.get(new.id).current and not rv.memory.get(old.id).current


# -- the busy signal ----------------------------------------------------------------------------------------
def test_the_background_queue_waits_while_a_user_turn_holds_the_llm(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    assert rv.llm is not None
    queue = ExpansionQueue(
        rv.store,
        rv.llm,
        rv.clock,
        rv.memory,
        rules=rv.memory_rules,
        config=ExpansionConfig(busy_poll_seconds=0.05, poll_seconds=0.05),
    )
    server.script_chat([FACTS])
    try:
        with rv.llm.foreground():
            original = rv.memory.save(NOTE)
            queue.start()
            time.sleep(0.4)
            assert chat_requests(server) == []  # never queued behind the turn
            assert queue.expand_pending() == 0  # on demand too: it stops while busy
        wait_for(lambda: not rv.memory.get(original.id).expand_pending)
    finally:
        queue.stop()
    assert len(expanded_from(rv, original.id)) == 2


# -- restarts and overrides ---------------------------------------------------------------------------------
def test_the_queue_survives_a_restart(tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    home = tmp_path / "home"
    with open_engine(home, clock, server) as rv:
        saved = rv.memory.save(NOTE, scope=Scope(user_id="u1"))
    with open_engine(home, clock, server) as rv:
        assert rv.memory.get(saved.id, scope=Scope(user_id="u1")).expand_pending
        server.script_chat([FACTS])
        assert rv.expand_pending() == 1
        facts = expanded_from(rv, saved.id)
        assert len(facts) == 2 and {f.scope for f in facts} == {Scope(user_id="u1")}  # the original's scope


def test_the_prompt_file_in_home_overrides_the_built_in_one(
    tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    home = tmp_path / "home"
    with open_engine(home, clock, server) as rv:
        rv.memory.save("first note")
        (home / MEMORY_RULES).write_text('Custom rules: answer {"entries": []}.', encoding="utf-8")
        server.script_chat([answer()])
        rv.expand_pending()
        rv.memory.save("second note")
        (home / MEMORY_RULES).write_text("  \n", encoding="utf-8")  # blank: the built-in one again
        server.script_chat([answer()])
        rv.expand_pending()
    first, second = (body["messages"][0]["content"] for body in chat_requests(server))
    assert first == 'Custom rules: answer {"entries": []}.'
    assert second == default_prompt(MEMORY_RULES)


def test_a_cli_save_expands_before_the_command_exits(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    home = tmp_path / "cli"
    home.mkdir()
    (home / "reverie.toml").write_text(
        f'[embedding]\nprovider = "none"\n[llm]\nprovider = "openai"\nendpoint = "{server.url}"\nmodel = "m"\n'
        'max_retries = 0\n[graph]\nextraction = "off"\n',
        encoding="utf-8",
    )
    server.script_chat([FACTS])
    result = CliRunner().invoke(app, ["--home", str(home), "memory", "save", NOTE, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    saved_id = json.loads(result.stdout)["entry"]["id"]
    with reverie.open(home) as rv:
        assert not rv.memory.get(saved_id).expand_pending
        assert len(expanded_from(rv, saved_id)) == 2
