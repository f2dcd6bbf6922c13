"""The per-turn context builder (seed 000's injection flow) on a real store and a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import reverie
from _template import new_store_file
from reverie.clock import FakeClock
from reverie.context.builder import RECALL_HEADING, SUBAGENT_HEADING, BuiltContext, estimate_tokens
from reverie.errors import NotFound, ValidationError
from reverie.working.service import OWN_HEADING, PATROL_HEADING

LOCKER = "My gym locker code is 4417, locker number 12 by the sauna."


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with reverie.open(tmp_path / "home", clock=clock, embedding={"provider": "none"}) as engine:
        yield engine


def long_session(rv: reverie.Reverie, clock: FakeClock, turns: int = 120) -> str:
    """A session of ``turns`` turns whose third turn (the user's) states the locker fact; the rest is chatter
    about a trip, alternating user and assistant, a minute apart."""
    session = rv.conversation.create(name="long").session_id
    for i in range(1, turns + 1):
        clock.advance(minutes=1)
        if i == 3:
            text = LOCKER
        elif i % 2:
            text = f"Let's plan day {i} of the Kyoto trip: temples in the morning, food in the evening."
        else:
            text = f"Noted for day {i - 1}: temples first, then dinner near the river."
        rv.conversation.add_turn(session, "user" if i % 2 else "assistant", text)
    return session


def section(built: BuiltContext, name: str) -> list[dict[str, object]]:
    found = [s for s in built.sections if s.name == name]
    return [dict(m) for m in found[0].messages] if found else []


def test_a_120_turn_session_gets_every_section_of_the_flow(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.memory.save("The user's gym is FitHub on Rua Augusta; they go on Tuesdays.", category="user-preferences/gym")
    rv.memory.save("The user is allergic to peanuts.", category="user-preferences/health")
    session = long_session(rv, clock)
    own = rv.working.for_namespace(f"session/{session}")
    own.save("draft_reply", "Dear landlord, the heating is broken.", category="email", tags=["draft"])
    rv.working.for_namespace("patrol/heartbeat", background=True).save("latest-briefing", "3 alerts", category="patrol")
    sub = rv.working.for_namespace("subagent/t1", background=True)
    sub.save("kyoto-index", "1. temples 2. food")
    sub.save("kyoto-chunk-1", "long research text")

    built = rv.context.build(session, "What is my gym locker code at FitHub?")

    names = [s.name for s in built.sections]
    assert names == ["recall", "working", "patrol", "subagents", "out_of_window", "turns", "message"]
    recall = str(section(built, "recall")[0]["content"])
    assert recall.startswith(RECALL_HEADING) and "FitHub" in recall and "peanuts" not in recall
    working = str(section(built, "working")[0]["content"])
    assert working.startswith(OWN_HEADING) and f"session/{session}/draft_reply" in working
    assert "heating" not in working  # the inventory never carries content
    assert str(section(built, "patrol")[0]["content"]).startswith(PATROL_HEADING)
    subagents = str(section(built, "subagents")[0]["content"])
    assert subagents.startswith(SUBAGENT_HEADING) and "kyoto-index" in subagents and "chunk" not in subagents
    window = str(section(built, "out_of_window")[0]["content"])
    assert "100 earlier turns" in window and "turn 3 of 120 · user" in window
    assert "> " + LOCKER in window and "not instructions" in window
    turns = section(built, "turns")
    assert len(turns) == 20 and turns[0]["content"] != LOCKER
    assert [m["role"] for m in turns[:2]] == ["user", "assistant"]
    assert built.messages[-1] == {"role": "user", "content": "What is my gym locker code at FitHub?"}
    # The out-of-window message sits right before the first replayed turn.
    position = built.messages.index(section(built, "out_of_window")[0])
    assert built.messages[position + 1] == turns[0]
    assert built.tokens == sum(s.tokens for s in built.sections) == sum(estimate_tokens(m) for m in built.messages)


def test_a_bare_recall_question_quotes_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    session = long_session(rv, clock, turns=40)
    window = str(section(rv.context.build(session, "what did you say earlier?"), "out_of_window")[0]["content"])
    assert "20 earlier turns" in window and "> " not in window


def test_the_delta_filter_injects_an_entry_once_per_session(rv: reverie.Reverie) -> None:
    rv.memory.save("The user's gym is FitHub on Rua Augusta.", category="user-preferences/gym")
    first = rv.conversation.create().session_id
    assert section(rv.context.build(first, "Which gym do I use, FitHub?"), "recall")
    assert section(rv.context.build(first, "Which gym do I use, FitHub?"), "recall") == []
    other = rv.conversation.create().session_id
    assert section(rv.context.build(other, "Which gym do I use, FitHub?"), "recall")  # another session


def test_an_expired_session_may_be_given_its_entries_again(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.memory.save("The user's gym is FitHub on Rua Augusta.", category="user-preferences/gym")
    session = rv.conversation.create().session_id
    rv.conversation.add_turn(session, "user", "hello")
    assert section(rv.context.build(session, "FitHub gym?"), "recall")
    clock.advance(days=2)  # past the idle timeout: the next turn starts the session afresh
    assert section(rv.context.build(session, "FitHub gym?"), "recall")


def test_the_first_turn_falls_back_to_recent_entries(rv: reverie.Reverie, clock: FakeClock) -> None:
    for i in range(7):
        clock.advance(minutes=1)
        rv.memory.save(f"Fact number {i} about the Lantern project.", category="project", dedup=False)
    session = rv.conversation.create().session_id
    built = rv.context.build(session, "zzzz qqqq")  # recalls nothing
    recall = str(section(built, "recall")[0]["content"])
    assert recall.count("\n- [") == 5 and "Fact number 6" in recall  # the five most recent
    rv.conversation.add_turn(session, "user", "zzzz qqqq")
    other = rv.context.build(session, "xxxx yyyy")  # not a first turn any more: no fallback
    assert section(other, "recall") == []


def test_patrol_and_subagent_contexts_skip_the_user_listings(rv: reverie.Reverie) -> None:
    rv.working.for_namespace("patrol/heartbeat", background=True).save("alerts", "2 alerts")
    rv.working.for_namespace("subagent/t1", background=True).save("a-index", "outline")
    session = rv.conversation.create().session_id
    built = rv.context.build(session, "check", kind="patrol", namespace="patrol/heartbeat")
    assert [s.name for s in built.sections] == ["working", "message"]
    assert "patrol/heartbeat/alerts" in str(section(built, "working")[0]["content"])
    with pytest.raises(ValidationError):
        rv.context.build(session, "check", kind="patrol")


def test_tool_calls_replay_in_the_openai_format(rv: reverie.Reverie) -> None:
    session = rv.conversation.create().session_id
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Porto"}'}}
    rv.conversation.add_turn(session, "user", "Weather in Porto?")
    rv.conversation.add_turn(session, "assistant", "", tool_calls=[call])
    rv.conversation.add_turn(session, "tool", "18C and sunny", tool_call_id="call_1", name="weather")
    turns = section(rv.context.build(session, "thanks"), "turns")
    assert turns[1] == {"role": "assistant", "content": "", "tool_calls": [call]}
    assert turns[2] == {"role": "tool", "content": "18C and sunny", "name": "weather", "tool_call_id": "call_1"}


def test_a_budget_trims_the_least_relevant_first(rv: reverie.Reverie, clock: FakeClock) -> None:
    for i in range(8):
        rv.memory.save(f"Kyoto note {i}: temple {i} opens at 9.", category="travel", dedup=False)
    session = long_session(rv, clock, turns=60)
    full = rv.context.build(session, "Kyoto temple opening times and my locker code")
    rv.context.forget_session(session)
    tight = rv.context.build(session, "Kyoto temple opening times and my locker code", budget_tokens=full.tokens // 2)
    assert tight.tokens <= full.tokens // 2 and not tight.over_budget
    assert tight.trimmed[0].startswith("recall:")  # recalled entries go first
    assert tight.messages[-1]["content"] == "Kyoto temple opening times and my locker code"
    tiny = rv.context.build(session, "Kyoto temples", budget_tokens=5)
    assert tiny.over_budget and [s.name for s in tiny.sections][-1] == "message"


def test_the_compaction_summary_comes_before_the_quotes(rv: reverie.Reverie, clock: FakeClock) -> None:
    session = long_session(rv, clock, turns=100)
    rv.conversation.compact(session, force=True)
    window = str(section(rv.context.build(session, "locker code?"), "out_of_window")[0]["content"])
    assert window.startswith("Summary of the earlier part of this conversation")


def test_bad_input_is_refused(rv: reverie.Reverie) -> None:
    session = rv.conversation.create().session_id
    with pytest.raises(NotFound):
        rv.context.build("no-such-session", "hi")
    with pytest.raises(ValidationError):
        rv.context.build(session, "hi", kind="robot")
    with pytest.raises(ValidationError):
        rv.context.build(session, "hi", budget_tokens=0)


def test_a_preview_shows_the_context_and_changes_nothing(rv: reverie.Reverie) -> None:
    """The console's context preview: the same sections as a real build, but no entry is recorded as given
    to the session and no read is counted; the real build after it injects the same entries."""
    saved = rv.memory.save("Priya is off on Wednesday afternoons.", scope=reverie.Scope(agent_id="a"))
    rv.aging.flush_reads()
    rv.conversation.create("s1", agent_id="a")
    looked = rv.context.build("s1", "when is Priya off?", agent_id="a", preview=True)
    assert looked.injected == (saved.id,)
    assert rv.aging.flush_reads() == 0  # no read noted
    assert rv.store.injected.injected("a", "s1") == set()
    again = rv.context.build("s1", "when is Priya off?", agent_id="a", preview=True)
    assert again.injected == (saved.id,)
    real = rv.context.build("s1", "when is Priya off?", agent_id="a")
    assert real.injected == (saved.id,) and real.messages == looked.messages
    assert rv.aging.flush_reads() == 1
    assert rv.context.build("s1", "when is Priya off?", agent_id="a", preview=True).injected == ()
    with pytest.raises(ValidationError):
        rv.context.build("s1", "x", agent_id="a", preview="yes")  # type: ignore[arg-type]
