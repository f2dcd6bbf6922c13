"""Conversation memory and session compaction through the engine: real SQLite, a fake clock, and for the LLM
summary the loopback scripted OpenAI server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from _template import new_store_file
from reverie import Conflict, NotFound, ValidationError
from reverie.clock import FakeClock
from reverie.conversation.service import ConversationMemory
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.types import TurnRecord

CHAT = "/v1/chat/completions"
LLM_SUMMARY = "The user, Dana, is planning a trip to Lisbon on 2026-03-14 and prefers window seats."


def open_rv(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer | None = None, **conversation: Any
) -> reverie.Reverie:
    llm: dict[str, Any] = {"provider": "none"}
    if server is not None:
        llm = {"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0}
    return reverie.open(
        home,
        clock=clock,
        embedding={"provider": "none"},
        llm=llm,
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # extraction would ask the scripted LLM too
        conversation=conversation,
    )


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with open_rv(tmp_path / "home", clock) as engine:
        yield engine


@pytest.fixture
def manual(tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    """An engine without auto compaction, so compaction runs only when a test asks."""
    with open_rv(tmp_path / "manual", clock, auto_compact=False) as engine:
        yield engine


def talk(conv: ConversationMemory, n: int, session: str = "s1", clock: FakeClock | None = None, **kw: Any) -> None:
    """``n`` turns, alternating user and assistant, a minute apart; every 10th assistant turn calls a tool."""
    for i in range(1, n + 1):
        if i % 2:
            conv.add_turn(session, "user", f"Question {i} about port {8000 + i}. Please answer fully.", **kw)
        else:
            calls = None
            if i % 10 == 0:
                arguments = json.dumps({"query": f"port {i}"})
                calls = [
                    {"id": f"call_{i}", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
                ]
            conv.add_turn(
                session, "assistant", f"Answer {i}. The value is {i * 3}. Filler words.", tool_calls=calls, **kw
            )
        if clock is not None:
            clock.advance(minutes=1)


def contents(turns: list[TurnRecord]) -> list[str]:
    return [t.content for t in turns]


def indexes(turns: list[TurnRecord]) -> list[int]:
    return [t.index for t in turns]


def chats(server: ScriptedOpenAIServer) -> int:
    return sum(1 for r in server.requests if r.path == CHAT)


# -- window, retention and the archive ---------------------------------------------------------------------
def test_window_replays_the_last_20_turns(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    conv.create("s1")
    talk(conv, 30)
    assert indexes(conv.window("s1")) == list(range(11, 31))
    assert indexes(conv.window("s1", 5)) == list(range(26, 31))
    assert indexes(conv.window("s1", 100)) == list(range(1, 31))
    for bad in (0, -1, True, 2.5, 10_001):
        with pytest.raises(ValidationError) as caught:
            conv.window("s1", bad)  # type: ignore[arg-type]
        assert caught.value.field == "n"


def test_retention_keeps_50_and_evicts_older_turns_into_the_archive(manual: reverie.Reverie) -> None:
    conv = manual.conversation
    conv.create("s1")
    talk(conv, 60)
    assert indexes(conv.retained("s1")) == list(range(11, 61))
    live = conv.live("s1")
    assert indexes(live) == list(range(1, 61))
    assert [t.archived for t in live] == [True] * 10 + [False] * 50
    info = conv.info("s1")
    assert (info.retained, info.archived, info.live, info.expired) == (50, 10, 60, False)


def test_the_archive_is_capped_at_500_dropping_the_oldest(tmp_path: Path, clock: FakeClock) -> None:
    with open_rv(tmp_path / "home", clock, auto_compact=False) as rv:
        rv.conversation.create("s1")
        talk(rv.conversation, 560)
        live = rv.conversation.live("s1")
        assert indexes(live) == list(range(11, 561))  # 500 archived + 50 retained: turns 1-10 dropped
        assert sum(t.archived for t in live) == 500


def test_an_archive_cap_of_zero_discards_evicted_turns(tmp_path: Path, clock: FakeClock) -> None:
    with open_rv(tmp_path / "home", clock, max_turns_per_session=5, max_archived_turns_per_session=0) as rv:
        rv.conversation.create("s1")
        talk(rv.conversation, 12)
        assert indexes(rv.conversation.live("s1")) == [8, 9, 10, 11, 12]
        assert rv.conversation.info("s1").archived == 0


def test_turns_keep_their_fields_and_content_exactly(rv: reverie.Reverie, clock: FakeClock) -> None:
    conv = rv.conversation
    conv.create("s1")
    calls = [{"id": "call_1", "type": "function", "function": {"name": "web", "arguments": '{"q": "café 🎉"}'}}]
    conv.add_turn("s1", "system", "You are helpful.")
    conv.add_turn("s1", "user", "  Café naïve 👩‍👩‍👧\n\ttabs  ", name="dana")
    conv.add_turn("s1", "assistant", "", tool_calls=calls)
    conv.add_turn("s1", "tool", "result text", tool_call_id="call_1", name="web")
    turns = conv.live("s1")
    assert [(t.role, t.name, t.tool_call_id) for t in turns] == [
        ("system", None, None),
        ("user", "dana", None),
        ("assistant", None, None),
        ("tool", "web", "call_1"),
    ]
    assert turns[1].content == "  Café naïve 👩‍👩‍👧\n\ttabs  "
    assert turns[2].tool_calls == calls
    assert all(t.at == clock.now() for t in turns)


# -- fresh starts and expiry -------------------------------------------------------------------------------
def test_the_first_turn_moves_started_at(rv: reverie.Reverie, clock: FakeClock) -> None:
    created = rv.conversation.create("s1", name="Trip planning")
    clock.advance(hours=2)
    rv.conversation.add_turn("s1", "user", "hello")
    session = rv.conversation.get("s1")
    assert session.created_at == created.created_at
    assert session.started_at == session.last_active_at == clock.now()
    assert session.name == "Trip planning"


def test_an_expired_session_reads_empty_then_starts_afresh(manual: reverie.Reverie, clock: FakeClock) -> None:
    conv = manual.conversation
    conv.create("s1")
    talk(conv, 60)
    clock.advance(minutes=1440)
    assert not conv.expired("s1")  # exactly the timeout: still live
    assert len(conv.live("s1")) == 60
    clock.advance(seconds=1)
    assert conv.expired("s1")
    # Expired: its archive is never recalled, even before the next turn.
    assert conv.live("s1") == [] and conv.window("s1") == [] and conv.retained("s1") == []
    info = conv.info("s1")
    assert (info.live, info.expired, info.retained, info.archived) == (0, True, 50, 10)
    turn = conv.add_turn("s1", "user", "a new conversation")
    assert turn.index == 1
    assert contents(conv.live("s1")) == ["a new conversation"]
    assert conv.get("s1").started_at == clock.now()
    assert not conv.expired("s1")


def test_an_idle_timeout_of_zero_never_expires(tmp_path: Path, clock: FakeClock) -> None:
    with open_rv(tmp_path / "home", clock, session_idle_timeout_minutes=0) as rv:
        rv.conversation.add_turn("s1", "user", "hello", create=True)
        clock.advance(days=400)
        assert not rv.conversation.expired("s1")
        assert rv.conversation.info("s1").expires_at is None
        assert indexes(rv.conversation.live("s1")) == [1]


def test_clear_discards_turns_archive_and_summary_and_keeps_the_session(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    conv.create("s1", name="kept")
    talk(conv, 90)
    assert conv.get("s1").summary is not None
    assert conv.clear("s1") == 90
    session = conv.get("s1")
    assert (session.name, session.summary, session.compacted_through) == ("kept", None, 0)
    assert conv.live("s1") == []
    assert conv.add_turn("s1", "user", "again").index == 1


# -- errors change nothing -----------------------------------------------------------------------------------
def test_an_unknown_session_is_not_found_unless_created(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    with pytest.raises(NotFound):
        conv.add_turn("nope", "user", "hello")
    assert conv.list() == [] and list(conv.log_records()) == []
    for read in (conv.window, conv.live, conv.retained, conv.info, conv.export, conv.expired, conv.delete):
        with pytest.raises(NotFound):
            read("nope")
    turn = conv.add_turn("nope", "user", "hello", create=True)
    assert turn.index == 1 and [s.session_id for s in conv.list()] == ["nope"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role": "narrator"}, "role"),
        ({"role": "USER"}, "role"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": 42}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"content": "x" * 100_001}, "content"),
        ({"content": "\ud800"}, "content"),
        ({"session_id": "has space"}, "session_id"),
        ({"session_id": "../escape"}, "session_id"),
        ({"session_id": "x" * 129}, "session_id"),
        ({"agent_id": ""}, "agent_id"),
        ({"role": "user", "tool_calls": [{"id": "c"}]}, "tool_calls"),
        ({"role": "assistant", "tool_calls": "not a list"}, "tool_calls"),
        ({"role": "assistant", "tool_calls": [{"x": float("nan")}]}, "tool_calls"),
        ({"role": "user", "tool_call_id": "c"}, "tool_call_id"),
        ({"name": " padded "}, "name"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(rv: reverie.Reverie, kwargs: dict[str, Any], field: str) -> None:
    conv = rv.conversation
    conv.create("s1")
    conv.add_turn("s1", "user", "the only turn")
    before = conv.get("s1")
    args: dict[str, Any] = {"session_id": "s1", "role": "user", "content": "hello", **kwargs}
    with pytest.raises(ValidationError) as caught:
        conv.add_turn(args.pop("session_id"), args.pop("role"), args.pop("content"), create=True, **args)
    assert caught.value.field == field
    assert contents(conv.live("s1")) == ["the only turn"]
    assert conv.get("s1") == before
    assert [s.session_id for s in conv.list()] == ["s1"]
    assert len(list(conv.log_records())) == 1


def test_create_validates_and_refuses_a_taken_id(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    drawn = conv.create(name="auto")
    assert drawn.session_id.startswith("s-") and drawn.name == "auto"
    conv.create("s1")
    with pytest.raises(Conflict):
        conv.create("s1")
    with pytest.raises(ValidationError) as caught:
        conv.create("bad id")
    assert caught.value.field == "session_id"
    with pytest.raises(ValidationError):
        conv.create("s2", name="")
    assert {s.session_id for s in conv.list()} == {drawn.session_id, "s1"}


def test_sessions_are_per_agent(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    conv.add_turn("s1", "user", "alpha's turn", create=True, agent_id="alpha")
    conv.add_turn("s1", "user", "beta's turn", create=True, agent_id="beta")
    assert contents(conv.live("s1", agent_id="alpha")) == ["alpha's turn"]
    assert contents(conv.live("s1", agent_id="beta")) == ["beta's turn"]
    assert conv.list() == []
    with pytest.raises(NotFound):
        conv.live("s1")
    assert [r["content"] for _, r in conv.log_records(agent_id="beta")] == ["beta's turn"]


# -- delete, purge, export -------------------------------------------------------------------------------------
def test_delete_hides_the_session_until_the_purge(rv: reverie.Reverie, clock: FakeClock) -> None:
    conv = rv.conversation
    conv.create("gone")
    conv.add_turn("gone", "user", "secret")
    conv.create("kept")
    conv.delete("gone")
    assert [s.session_id for s in conv.list()] == ["kept"]
    for read in (conv.live, conv.window, conv.info, conv.export):
        with pytest.raises(NotFound):
            read("gone")
    with pytest.raises(NotFound):
        conv.add_turn("gone", "user", "more")
    with pytest.raises(NotFound):
        conv.delete("gone")
    with pytest.raises(Conflict):
        conv.add_turn("gone", "user", "more", create=True)
    with pytest.raises(Conflict):
        conv.create("gone")
    assert rv.store.sessions.turn_counts("default", "gone").retained == 1  # still stored, only hidden
    clock.advance(days=89)
    assert conv.purge_deleted() == 0
    clock.advance(days=2)
    assert conv.purge_deleted() == 1
    assert rv.store.sessions.get("default", "gone") is None
    assert conv.create("gone").session_id == "gone"
    assert conv.live("gone") == []


def test_export_round_trips_every_live_turn_through_json(manual: reverie.Reverie, clock: FakeClock) -> None:
    conv = manual.conversation
    conv.create("s1", name="export me")
    talk(conv, 60, clock=clock)
    conv.add_turn("s1", "user", "emoji 🎉 and \u2028 separators\n")
    exported = json.loads(json.dumps(conv.export("s1")))
    assert exported["format"] == "reverie.session/1"
    assert exported["session"]["name"] == "export me" and exported["expired"] is False
    turns = [
        TurnRecord(
            **{**t, "at": datetime.fromisoformat(t["at"])},
        )
        for t in exported["turns"]
    ]
    assert turns == conv.live("s1")
    assert len(turns) == 61 and sum(t.archived for t in turns) == 11


# -- the conversation log ---------------------------------------------------------------------------------------
def test_every_turn_goes_to_the_conversation_log_and_clear_log_empties_it(rv: reverie.Reverie) -> None:
    conv = rv.conversation
    conv.add_turn("s1", "user", "first", create=True)
    conv.add_turn("s1", "assistant", "second")
    conv.add_turn("s2", "user", "other session", create=True, agent_id="alpha")
    records = list(conv.log_records())
    assert [(sid, r["role"], r["content"], r["agent"]) for sid, r in records] == [
        ("s1", "user", "first", "default"),
        ("s1", "assistant", "second", "default"),
        ("s2", "user", "other session", "alpha"),
    ]
    assert records[0][1]["at"] == "2026-01-01T09:00:00Z"
    assert [r.session_id for r in rv.store.logs.read("conversation")] == ["s1", "s1", "s2"]  # kept in the store
    assert not (rv.settings.home / "logs" / "conversation").exists()  # not in a file of this host's home
    assert rv.conversation_log in rv.logs()  # under the dream's log retention
    conv.clear_log(session_id="s2")
    assert [sid for sid, _ in conv.log_records()] == ["s1", "s1"]
    conv.clear_log()
    assert list(conv.log_records()) == []
    assert contents(conv.live("s1")) == ["first", "second"]  # the store keeps the turns


# -- compaction ----------------------------------------------------------------------------------------------
def test_compaction_waits_for_the_threshold(manual: reverie.Reverie) -> None:
    conv = manual.conversation
    conv.create("s1")
    talk(conv, 80)
    [status] = conv.compaction_status()
    assert (status.live_messages, status.uncovered, status.threshold, status.needs_compaction) == (80, 80, 80, False)
    result = conv.compact("s1")
    assert not result.compacted and "80" in (result.reason or "")
    assert conv.get("s1").summary is None
    forced = conv.compact("s1", force=True)
    assert forced.compacted and forced.compacted_through == 60


def test_extractive_compaction_keeps_20_recent_and_the_tool_calls(manual: reverie.Reverie) -> None:
    conv = manual.conversation
    conv.create("s1")
    talk(conv, 81)
    assert conv.compaction_status()[0].needs_compaction
    result = conv.compact("s1")
    assert result.compacted and result.method == "extractive" and not result.fallback
    assert (result.compacted_through, result.turns_summarised) == (61, 61)
    summary = conv.get("s1").summary
    assert summary is not None and summary == result.summary
    assert summary.startswith("Summary of turns 1–61, ")
    assert "- (turn 1) Question 1 about port 8001." in summary
    assert "Answer 2. The value is 6." in summary
    assert "Please answer fully" not in summary  # only the first sentence of a user turn
    tools = summary.split("Tool calls:\n", 1)[1].splitlines()
    assert [line.split()[4] for line in tools] == [f"[call_{i}]" for i in range(10, 61, 10)]
    assert 'lookup [call_10] {"query": "port 10"}' in tools[0]
    assert len(conv.live("s1")) == 81  # nothing is deleted: the archive keeps the summarised turns
    status = conv.compaction_status()[0]
    assert (status.compacted_through, status.uncovered, status.needs_compaction) == (61, 20, False)
    assert status.summary_method == "extractive"


def test_compaction_folds_the_previous_summary_in(manual: reverie.Reverie) -> None:
    conv = manual.conversation
    conv.create("s1")
    talk(conv, 81)
    conv.compact("s1")
    talk(conv, 62)  # turns 82-143: 82 uncovered
    result = conv.compact("s1")
    assert result.compacted and result.compacted_through == 123
    summary = result.summary or ""
    assert summary.startswith("Summary of turns 1–123, ")
    assert summary.count("Tool calls:") == 1 and summary.count("User said:") == 1
    # The earlier tool calls are carried over, the new ones appended (talk() numbers its calls from 10 again).
    assert "(turn 10) lookup [call_10]" in summary and "(turn 121) lookup [call_40]" in summary
    assert len(summary) < 12_000


def test_auto_compaction_runs_inline_without_the_llm(tmp_path: Path, clock: FakeClock) -> None:
    with ScriptedOpenAIServer() as server, open_rv(tmp_path / "home", clock, server) as rv:
        conv = rv.conversation
        conv.create("s1")
        talk(conv, 80)
        assert conv.get("s1").summary is None
        talk(conv, 1, clock=clock)  # the 81st message crosses the threshold
        session = conv.get("s1")
        assert session.compacted_through == 61 and session.metadata["summary_method"] == "extractive"
        assert chats(server) == 0  # a user's turn never waits for an LLM
        # compact() then makes the LLM summary, replacing the extractive one.
        server.script_chat([LLM_SUMMARY])
        result = conv.compact("s1")
        assert result.compacted and result.method == "llm" and chats(server) == 1
        assert result.compacted_through == 61
        stored = conv.get("s1")
        assert LLM_SUMMARY in (stored.summary or "") and stored.metadata["summary_method"] == "llm"
        assert not conv.compact("s1").compacted  # nothing left to do


def test_the_llm_summary_is_used_with_the_tool_calls_appended(tmp_path: Path, clock: FakeClock) -> None:
    home = tmp_path / "home"
    with ScriptedOpenAIServer() as server, open_rv(home, clock, server, auto_compact=False) as rv:
        conv = rv.conversation
        conv.create("s1")
        talk(conv, 81)
        server.script_chat([ChatReply(content=f"<think>hmm</think>\n{LLM_SUMMARY}")])
        result = conv.compact("s1")
        assert result.compacted and result.method == "llm" and not result.fallback
        summary = result.summary or ""
        lines = summary.splitlines()
        assert lines[0].startswith("Summary of turns 1–61, ") and lines[0].endswith("(llm):")
        assert lines[1] == LLM_SUMMARY and "<think>" not in summary
        assert "Tool calls:" in lines and "[call_60]" in summary
        body = next(r.body for r in server.requests if r.path == CHAT)
        system, user = body["messages"]
        assert "summarise the older part of a conversation" in system["content"]
        assert "[turn 1 · user · 2026-01-01 09:00]" in user["content"]
        assert "[turn 62 " not in user["content"]  # the 20 most recent stay verbatim, out of the summary
        assert rv.llm is not None and "session.compaction" in rv.llm.ledger.totals().by_purpose


def test_the_prompt_file_in_the_home_overrides_the_built_in_one(tmp_path: Path, clock: FakeClock) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "session-compaction.md").write_text("Summarise like a pirate.", encoding="utf-8")
    with ScriptedOpenAIServer() as server, open_rv(home, clock, server, auto_compact=False) as rv:
        rv.conversation.create("s1")
        talk(rv.conversation, 81)
        server.script_chat(["Arr."])
        assert rv.conversation.compact("s1").method == "llm"
        body = next(r.body for r in server.requests if r.path == CHAT)
        assert body["messages"][0]["content"] == "Summarise like a pirate."


@pytest.mark.parametrize("reply", [ChatReply(status=500), ChatReply(content="   "), ChatReply(content="<think>cut")])
def test_an_llm_failure_falls_back_to_the_extractive_summary(
    tmp_path: Path, clock: FakeClock, reply: ChatReply
) -> None:
    with ScriptedOpenAIServer() as server, open_rv(tmp_path / "home", clock, server, auto_compact=False) as rv:
        rv.conversation.create("s1")
        talk(rv.conversation, 81)
        server.script_chat([reply])
        result = rv.conversation.compact("s1")
        assert result.compacted and result.method == "extractive" and result.fallback
        assert "the LLM failed" in (result.reason or "")
        assert rv.conversation.get("s1").metadata["summary_method"] == "extractive"
        # The next compact() tries the LLM again and replaces the extractive summary.
        server.script_chat([LLM_SUMMARY])
        again = rv.conversation.compact("s1")
        assert again.method == "llm" and LLM_SUMMARY in (again.summary or "")


def test_compaction_persists_across_reopening(tmp_path: Path, clock: FakeClock) -> None:
    home = tmp_path / "home"
    with open_rv(home, clock) as rv:
        rv.conversation.create("s1")
        talk(rv.conversation, 81)
        summary = rv.conversation.get("s1").summary
    with open_rv(home, clock) as rv:
        session = rv.conversation.get("s1")
        assert session.summary == summary and session.compacted_through == 61
        assert rv.conversation.compaction_status()[0].summary_method == "extractive"
        assert len(rv.conversation.live("s1")) == 81


def test_compact_all_skips_expired_sessions_and_a_fresh_start_drops_the_summary(
    manual: reverie.Reverie, clock: FakeClock
) -> None:
    conv = manual.conversation
    for sid in ("a", "b"):
        conv.create(sid)
        talk(conv, 81, session=sid)
    results = conv.compact_all()
    assert sorted((r.session_id, r.compacted) for r in results) == [("a", True), ("b", True)]
    clock.advance(timedelta(days=2))
    assert conv.compact_all() == []
    assert not conv.compact("a").compacted
    assert [s.expired for s in conv.compaction_status()] == [True, True]
    conv.add_turn("a", "user", "fresh")
    session = conv.get("a")
    assert (session.summary, session.compacted_through, session.metadata) == (None, 0, {})


def test_concurrent_turns_get_contiguous_indexes(manual: reverie.Reverie) -> None:
    conv = manual.conversation
    conv.create("s1")

    def speak(worker: int) -> None:
        for i in range(15):
            conv.add_turn("s1", "user", f"worker {worker} turn {i}")

    threads = [threading.Thread(target=speak, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    live = conv.live("s1")
    assert indexes(live) == list(range(1, 61))
    assert len(set(contents(live))) == 60
    assert [t.archived for t in live] == [True] * 10 + [False] * 50


def test_the_dream_serve_loop_purges_deleted_sessions_hourly(rv: reverie.Reverie, clock: FakeClock) -> None:
    conv = rv.conversation
    conv.create("gone")
    conv.delete("gone")
    clock.advance(days=91)
    first = clock.now()
    conv.purge_job(first)
    assert rv.store.sessions.get("default", "gone") is None
    conv.create("later")
    conv.delete("later")
    clock.advance(days=91)
    conv.purge_job(first + timedelta(minutes=30))  # within an hour of the last purge: skipped
    assert rv.store.sessions.get("default", "later") is not None
    conv.purge_job(clock.now())
    assert rv.store.sessions.get("default", "later") is None


def test_replacing_an_extractive_summary_again_starts_from_the_last_llm_summary(
    tmp_path: Path, clock: FakeClock
) -> None:
    with ScriptedOpenAIServer() as server, open_rv(tmp_path / "home", clock, server) as rv:
        conv = rv.conversation
        conv.create("s1")
        talk(conv, 81)  # inline: extractive through 61
        server.script_chat([LLM_SUMMARY])
        assert conv.compact("s1").method == "llm"
        assert conv.get("s1").metadata["llm_through"] == 61
        talk(conv, 61)  # turns 82-142; inline at 142: extractive through 122, the LLM's text carried
        session = conv.get("s1")
        assert session.metadata["summary_method"] == "extractive" and session.compacted_through == 122
        assert LLM_SUMMARY in (session.summary or "")
        server.script_chat(["Later: ports up to 8061 were discussed again."])
        result = conv.compact("s1")
        assert result.method == "llm" and result.compacted_through == 122
        assert (result.summary or "").startswith("Summary of turns 1–122, ")
        user = [r.body for r in server.requests if r.path == CHAT][-1]["messages"][1]["content"]
        assert LLM_SUMMARY in user  # the previous LLM summary is folded in ...
        assert "[turn 61 " not in user and "[turn 62 · assistant" in user and "[turn 122 " in user  # ... not re-read
        assert "[turn 123 " not in user
        assert "[call_10]" in (result.summary or "") and "[call_60]" in (result.summary or "")
