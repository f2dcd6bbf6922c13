"""The conversation-log learning passes (issue 10, parts 3 and 4) end to end, with the scripted loopback LLM:
memory mining, episode extraction, preference inference, and anti-pattern mining in consolidation. Each pass
has one scenario on both backends; the failure paths run on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.types import MemoryEntry, Tier

from ._dream import Router, open_on

MINING, EPISODES, PREFS = "memory mining", "episode extraction", "preference inference"
CONSOLIDATION = "memory consolidation"
BACKENDS = ["sqlite", "postgresql"]
QUIET = {"memory_mining_enabled": False, "episode_extraction_enabled": False, "preference_inference_enabled": False}


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> Iterator[Any]:
    """``opener(backend, **dream)``: an engine on that backend whose LLM is the scripted server."""
    opened: list[reverie.Reverie] = []

    def open_(backend: str = "sqlite", **dream: Any) -> reverie.Reverie:
        opened.append(open_on(backend, request, tmp_path / "home", clock, server, dream=dream))
        return opened[-1]

    try:
        yield open_
    finally:
        for rv in opened:
            rv.close()


def talk(rv: reverie.Reverie, clock: FakeClock, session: str, *turns: str, agent: str = "default") -> None:
    """A conversation in ``session``: turns alternate user / assistant, a minute apart."""
    for i, text in enumerate(turns):
        clock.advance(minutes=1)
        rv.conversation.add_turn(session, "user" if i % 2 == 0 else "assistant", text, create=True, agent_id=agent)


def dream(rv: reverie.Reverie, agent: str = "default") -> dict[str, Any]:
    report = rv.dream.run(agent)
    return {name: p for name, p in report.passes.items()}


def entries(rv: reverie.Reverie, agent: str = "default") -> list[MemoryEntry]:
    return [e for e in rv.store.facts.iter_all(agent) if not e.archived]


def logged(rv: reverie.Reverie, agent: str) -> list[str]:
    return [str(r["content"]) for _, r in rv.conversation.log_records(agent_id=agent)]


# -- preference inference -----------------------------------------------------------------------------------
def test_preferences_follow_the_thresholds_and_clear_only_this_agents_log(
    opener: Any, backend: str, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    rv = opener(backend, memory_mining_enabled=False, episode_extraction_enabled=False)
    router = Router(server)
    talk(rv, clock, "s1", "Summarise the incident report.", "- point one\n- point two", "NO bullet points. Ever!")
    talk(rv, clock, "s1", "I am the other agent's user.", "Noted.", agent="other")
    talk(rv, clock, "s2", "Maybe add an emoji?", "Sure 🙂", "Please never keep my bank password in notes.")
    router.script(
        PREFS,
        {
            "toDelete": ["abc123"],
            "toSave": [
                {"content": "Answer in plain paragraphs, never bullet points.", "category": "formatting",
                 "tags": ["format"], "sentiment": "very irritated", "occurrences": 1},
                {"content": "The user likes emojis.", "sentiment": "minor", "occurrences": 2},
                {"content": "Never store the user's passwords in notes.", "sentiment": "mildly_frustrated",
                 "occurrences": 2, "category": "user-preferences/inferred/privacy"},
                {"content": "Ask before booking anything non-refundable.", "sentiment": "very_irritated",
                 "occurrences": 1, "requiresUserPermission": True},
                {"content": "Reply within the hour.", "occurrences": 2},
            ],
        },
    )  # fmt: skip
    report = dream(rv)["preference_inference"]
    assert report.status == "ran", report.as_dict()
    assert report.counts["refused"] == 2 and report.counts["created"] == 3 and report.counts["deletions_ignored"] == 1
    prompt = router.prompts[PREFS][0]
    assert "## Session s1" in prompt and "## Session s2" in prompt and "other agent" not in prompt
    saved = {e.content: e for e in entries(rv)}
    bullets = saved["Answer in plain paragraphs, never bullet points."]
    assert bullets.category == "user-preferences/inferred" and "inferred" in bullets.tags and "format" in bullets.tags
    assert bullets.source == "inferred" and bullets.metadata["sentiment"] == "very_irritated"
    assert "requires_user_permission" not in bullets.metadata
    passwords = saved["Never store the user's passwords in notes."]
    assert passwords.category == "user-preferences/inferred/privacy"
    assert passwords.metadata["requires_user_permission"] == "true"  # the keyword check
    assert saved["Ask before booking anything non-refundable."].metadata["requires_user_permission"] == "true"
    assert "The user likes emojis." not in saved and "Reply within the hour." not in saved
    assert logged(rv, "default") == [] and report.counts["log_cleared"] == 6
    assert logged(rv, "other") == ["I am the other agent's user.", "Noted."]  # same session file, kept
    again = dream(rv)["preference_inference"]
    assert again.status == "skipped" and len(router.prompts[PREFS]) == 1


def test_the_log_is_cleared_after_invalid_json_and_after_an_endpoint_failure(
    opener: Any, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    rv = opener(memory_mining_enabled=False, episode_extraction_enabled=False, consolidation_enabled=False)
    router = Router(server)
    talk(rv, clock, "s1", "I told you: no bullet points!", "Sorry.")
    router.script(PREFS, "this is not JSON")
    report = dream(rv)["preference_inference"]
    assert report.status == "ran" and report.counts["malformed"] == 1 and report.counts["created"] == 0
    assert entries(rv) == [] and logged(rv, "default") == []

    talk(rv, clock, "s2", "Stop using UTC, I am in Lisbon.", "Understood.")
    router.script(PREFS, ChatReply(status=500))
    run = rv.dream.run()
    assert run.phase == "failed" and run.passes["preference_inference"].status == "failed"
    assert entries(rv) == [] and logged(rv, "default") == []


# -- memory mining ------------------------------------------------------------------------------------------
def test_mining_saves_with_provenance_reinforces_on_repeat_and_reads_a_window(
    opener: Any, backend: str, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    rv = opener(backend, episode_extraction_enabled=False, preference_inference_enabled=False)
    router = Router(server)
    fact = "Maya's team deploys Lantern to production every Friday."
    talk(rv, clock, "s1", "We ship Lantern every Friday, by the way.", "Got it.")
    router.script(
        MINING,
        {"toSave": [
            {"content": fact, "category": "project-context/lantern", "tags": ["lantern"], "sessionId": "s1"},
            {"content": "Invented elsewhere.", "sessionId": "s-unknown"},
        ]},
    )  # fmt: skip
    first = dream(rv)["memory_mining"]
    assert first.counts["created"] == 1 and first.counts["ignored_sessions"] == 1
    (entry,) = [e for e in entries(rv) if e.content == fact]
    assert entry.category == "project-context/lantern" and entry.source == "inferred"
    assert entry.metadata["dreamPass"] == "memory_mining" and entry.metadata["sessionIds"] == ["s1"]
    assert "## Session s1" in router.prompts[MINING][0]

    quiet = dream(rv)["memory_mining"]  # the log was not cleared (preference inference off): nothing new
    assert quiet.status == "skipped" and len(router.prompts[MINING]) == 1

    talk(rv, clock, "s2", "Reminder: Lantern goes out on Fridays.", "Yes, every Friday.")
    router.script(MINING, {"toSave": [{"content": fact, "category": "project-context/lantern", "sessionId": "s2"}]})
    second = dream(rv)["memory_mining"]
    assert second.counts["reinforced"] == 1 and second.counts["created"] == 0
    assert "## Session s1" not in router.prompts[MINING][1] and "## Session s2" in router.prompts[MINING][1]
    (entry,) = [e for e in entries(rv) if "Lantern" in e.content]
    assert entry.reinforcement_count == 2 and entry.metadata["sessionIds"] == ["s1", "s2"]

    talk(rv, clock, "s3", "Our office moved to Porto.", "Noted.")
    router.script(MINING, "{not json", {"toSave": []})
    assert dream(rv)["memory_mining"].counts["malformed"] == 1
    retried = dream(rv)["memory_mining"]  # nothing was stamped: the same turns are read again
    assert retried.status == "ran" and "Porto" in router.prompts[MINING][3]
    assert len(entries(rv)) == 1


# -- episode extraction -------------------------------------------------------------------------------------
def test_one_episode_per_session_and_a_revisit_reinforces(
    opener: Any, backend: str, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    rv = opener(backend, memory_mining_enabled=False, preference_inference_enabled=False, consolidation_enabled=False)
    router = Router(server)
    talk(rv, clock, "s1", "Plan my Kyoto trip for April.", "Temples first, then food.")
    talk(rv, clock, "s2", "The staging database is down.", "Restarting it now.")
    kyoto, outage = "The user planned a Kyoto trip for April.", "Staging database outage; it was restarted."
    router.script(
        EPISODES,
        {"episodes": [
            {"sessionId": "s1", "content": kyoto, "revisits": None},
            {"sessionId": "s2", "content": outage},
            {"sessionId": "s1", "content": "A second episode for s1."},
            {"sessionId": "s9", "content": "A session never shown."},
        ]},
    )  # fmt: skip
    first = dream(rv)["episode_extraction"]
    assert first.counts["created"] == 2 and first.counts["duplicates"] == 1 and first.counts["ignored_sessions"] == 1
    episodes = {e.content: e for e in entries(rv)}
    assert set(episodes) == {kyoto, outage}
    trip = episodes[kyoto]
    assert trip.tier is Tier.EPISODIC and trip.source == "inferred" and trip.metadata["sessionIds"] == ["s1"]

    clock.advance(days=2)
    talk(rv, clock, "s3", "Back to Kyoto: add Nara as a day trip.", "Added Nara.")
    router.script(EPISODES, {"episodes": [{"sessionId": "s3", "content": "More Kyoto.", "revisits": trip.id}]})
    second = dream(rv)["episode_extraction"]
    assert second.counts["revisits"] == 1 and second.counts["created"] == 0
    assert f"[{trip.id}]" in router.prompts[EPISODES][1] and "## Session s1" not in router.prompts[EPISODES][1]
    again = rv.memory.get(trip.id)
    assert again.reinforcement_count == 2 and again.last_seen_at == clock.now() and again.content == kyoto
    assert again.metadata["sessionIds"] == ["s1", "s3"] and len(entries(rv)) == 2

    talk(rv, clock, "s4", "Draft the Q3 roadmap.", "Drafted.")
    router.script(EPISODES, {"episodes": [{"sessionId": "s4", "content": "Q3 roadmap drafted.", "revisits": "nope"}]})
    third = dream(rv)["episode_extraction"]
    assert third.counts["unknown_revisits"] == 1 and third.counts["created"] == 1 and len(entries(rv)) == 3

    talk(rv, clock, "s5", "Nothing much.", "Ok.")
    router.script(EPISODES, "no json here")
    assert dream(rv)["episode_extraction"].counts["malformed"] == 1 and len(entries(rv)) == 3


# -- anti-patterns ------------------------------------------------------------------------------------------
def test_a_correction_becomes_an_anti_pattern_with_no_entries_to_review(
    opener: Any, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    rv = opener(**QUIET)
    router = Router(server)
    assert dream(rv)["consolidation"].llm_calls == 0  # no entries, no corrections: no call
    rv.feedback.record("default", "correction", "s1", comment="search_files missed it; grep found the string")
    rule = "Don't use search_files for content search — instead use grep."
    router.script(
        CONSOLIDATION,
        {"toDelete": [], "toSave": [{"content": rule, "category": "anti-patterns/file-operations"}]},
    )
    report = dream(rv)["consolidation"]
    assert report.llm_calls == 1 and "corrections" in report.reason
    prompt = router.prompts[CONSOLIDATION][0]
    assert "## Entries (0)" in prompt and "correction" in prompt and "grep found the string" in prompt
    (entry,) = entries(rv)
    assert entry.content == rule and entry.category == "anti-patterns/file-operations"
    assert "anti-pattern" in entry.tags and entry.source == "inferred"

    clock.advance(hours=7)
    assert dream(rv)["consolidation"].llm_calls == 0  # that correction was learned from already
