"""The dream's skill passes (seed 001, Passes 2 to 4: skill gap detection, skill consolidation, skill
optimisation) through real dream cycles, with a real store (SQLite, and PostgreSQL for one full scenario per
pass) and the scripted loopback LLM. The scripted server tells the passes apart by their prompts' first line
(``TASK: ...``) and records what each was shown."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.core.skill_signals import OPTIMISED_AT, OPTIMISED_VERSION, RECURRING_HEADER, parse_moment
from reverie.dream.passes.base import PassReport
from reverie.dream.passes.skill_optimisation import REVIEW_NOTE
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._dream import Router, open_on

AGENT = "default"
GAP, MERGE, OPTIMISE = "skill gap detection", "skill consolidation", "skill optimization"
# Other passes that read the conversation log or the activity logs: off here, so the log a test writes is
# still there for the next cycle and no other pass asks the scripted model.
OTHERS_OFF: dict[str, Any] = {
    key: False
    for key in (
        "memory_mining_enabled",
        "episode_extraction_enabled",
        "preference_inference_enabled",
        "tool_success_enabled",
        "execution_failure_analysis_enabled",
        "consolidation_enabled",
    )
}


def _open(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer,
    dream: dict[str, Any],
) -> reverie.Reverie:  # fmt: skip
    return open_on(backend, request, tmp_path / "home", clock, server, dream={**OTHERS_OFF, **dream})


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def opener(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> Iterator[Any]:
    """``opener(**dream)``: an engine on this test's backend (closed after)."""
    opened: list[reverie.Reverie] = []

    def open_(**dream: Any) -> reverie.Reverie:
        opened.append(_open(backend, request, tmp_path, clock, server, dream))
        return opened[-1]

    try:
        yield open_
    finally:
        for engine in opened:
            engine.close()


@pytest.fixture
def router(server: ScriptedOpenAIServer) -> Router:
    return Router(server)


both = pytest.mark.parametrize("backend", ["sqlite", "postgresql"])


def dream(rv: reverie.Reverie) -> dict[str, PassReport]:
    report = rv.dream.run()
    assert report.phase == "completed", report.as_dict()
    return report.passes


def talk(rv: reverie.Reverie, session: str, *messages: str) -> None:
    for text in messages:
        rv.conversation.add_turn(session, "user", text, create=True)
        rv.conversation.add_turn(session, "assistant", "Sure.")


def skill(name: str, content: str, *, summary: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "summary": summary or f"How to {name}", "content": content, **extra}


LONG = "1. Check the inputs.\n2. Do the work step by step, verifying each result.\n" * 4  # > 200 characters


# -- Pass 2: skill gap detection -------------------------------------------------------------------------------
@both
def test_a_request_recurring_across_sessions_becomes_a_skill(opener: Any, router: Router) -> None:
    rv = opener()
    rv.skills.save(AGENT, "weather/lookup", "Look up the weather", LONG)
    talk(rv, "s1", "Summarize my emails from today", "Thanks")
    talk(rv, "s2", "Can you summarize my emails?")
    talk(rv, "s3", "summarize emails from Bob")
    talk(rv, "s4", "What's the weather in Lisbon")
    router.script(
        GAP,
        {
            "toSave": [
                skill("summarize-emails", LONG, sessions=["s1", "s2", "s3"]),
                skill("one-off", LONG, sessions=["s4", "s4"]),  # one session, cited twice
                skill("invented", LONG, sessions=["s4", "s99"]),  # s99 was never shown
                skill("weather/lookup", "overwritten", sessions=["s1", "s4"]),  # exists: never overwritten
                skill("Bad Name", LONG, sessions=["s1", "s2"]),  # the store's validation refuses it
            ]
        },
    )
    gap = dream(rv)["skill_gap"]
    assert gap.status == "ran" and gap.llm_calls == 1
    assert gap.counts == {**gap.counts, "sessions": 4, "created": 1, "unrecurring": 2, "existing": 1, "invalid": 1}
    created = rv.skills.get(AGENT, "summarize-emails")
    assert created.content == LONG.strip() and created.metadata["source"] == "dream:skill_gap"
    assert {s.name for s in rv.skills.live(AGENT)} == {"summarize-emails", "weather/lookup"}
    assert rv.skills.get(AGENT, "weather/lookup").version == 1
    prompt = router.last(GAP)
    block = f'{RECURRING_HEADER}\n- "emails": 3 session(s)\n- "summarize": 3 session(s)\n'
    assert block in prompt and "weather" not in prompt.split(RECURRING_HEADER)[1].split("##")[0]
    assert "- weather/lookup: Look up the weather" in prompt  # the catalog
    assert all(f"### session {s} " in prompt for s in ("s1", "s2", "s3", "s4")) and "Sure." not in prompt
    assert sum(1 for _ in rv.conversation.log_records(agent_id=AGENT)) == 10  # read, never cleared


def test_gap_detection_skips_a_short_log_applies_nothing_from_bad_json_and_does_not_repeat(
    opener: Any, router: Router
) -> None:
    rv = opener()
    talk(rv, "s1", "Summarize my emails")
    gap = dream(rv)["skill_gap"]
    assert gap.status == "skipped" and "1 session" in gap.reason and router.calls(GAP) == 0

    talk(rv, "s2", "Summarize my emails again")
    router.script(GAP, "this is not JSON at all")
    gap = dream(rv)["skill_gap"]
    assert gap.counts["malformed"] == 1 and gap.counts["created"] == 0 and rv.skills.live(AGENT) == []

    router.script(GAP, {"toSave": [skill("summarize-emails", LONG, sessions=["s1", "s2"])]})
    assert dream(rv)["skill_gap"].counts["created"] == 1  # the malformed answer was not stamped: asked again
    calls = router.calls(GAP)
    again = dream(rv)["skill_gap"]  # the same sessions: not sent twice
    assert again.status == "skipped" and "change gate" in again.reason and router.calls(GAP) == calls
    talk(rv, "s3", "Plan my week")
    assert dream(rv)["skill_gap"].status == "ran" and router.calls(GAP) == calls + 1

    off = opener(skill_gap_enabled=False)
    assert "skill_gap" not in dream(off)


# -- Pass 3: skill consolidation -------------------------------------------------------------------------------
@both
def test_consolidation_merges_with_the_host_s_dates_drops_invented_names_and_is_gated(
    opener: Any, router: Router, clock: FakeClock
) -> None:
    rv = opener()
    first = rv.skills.save(AGENT, "email/send", "Send an email", "Open the client, write, press send.").skill
    rv.skills.save(AGENT, "notes", "Take notes", "Write it down.")
    clock.advance(days=8)
    rv.skills.save(AGENT, "email/compose", "Compose an email", LONG)
    rv.skills.save(AGENT, "mcp/calendar", "Book a slot", LONG)
    rv.skills.save(AGENT, "mcp/weather", "Weather", LONG)
    rv.skills.record_usage(AGENT, "s1", ["email/send", "email/compose"])
    clock.advance(hours=1)
    rv.skills.record_usage(AGENT, "s2", ["email/send", "email/compose"])
    latest = rv.skills.get(AGENT, "email/compose").last_used_at
    merged = skill("email/write-and-send", LONG + "3. Press send.", sourceNames=["email/send", "email/compose",
                   "ghost"], seeAlso=["mcp/calendar", "phantom", "email/send"])  # fmt: skip
    router.script(MERGE, {"toDelete": ["email/send", "email/compose", "nonexistent"], "toSave": [merged]})
    report = dream(rv)["skill_consolidation"]
    assert report.status == "ran" and report.llm_calls == 1
    assert report.counts == {**report.counts, "merged": 1, "saved": 1, "archived": 2, "live": 4, "unknown_names": 3}

    prompt = router.last(MERGE)
    assert "### email/send uses(30d)=2" in prompt and "### mcp/weather uses(30d)=0" in prompt
    assert "### notes uses(30d)=0 [sparse-content]" in prompt and "### email/compose uses(30d)=2\n" in prompt
    assert "- email/compose + email/send: 2 session(s)" in prompt
    assert "- email/*: email/compose, email/send" in prompt and "- mcp/*: mcp/calendar, mcp/weather" in prompt

    new = rv.skills.get(AGENT, "email/write-and-send")
    assert new.created_at == first.created_at and new.last_used_at == latest  # earliest created, latest used
    assert new.see_also == ("mcp/calendar",) and new.metadata["merged_from"] == ["email/compose", "email/send"]
    old = rv.skills.get(AGENT, "email/send")
    assert old.archived and old.metadata["merged_into"] == "email/write-and-send"

    calls = router.calls(MERGE)
    gated = dream(rv)["skill_consolidation"]  # the corpus as the pass left it: not sent back
    assert gated.status == "skipped" and "change gate" in gated.reason and router.calls(MERGE) == calls
    rv.skills.save(AGENT, "mcp/weather", "Weather forecasts", LONG)  # a changed skill re-opens it
    assert dream(rv)["skill_consolidation"].status == "ran" and router.calls(MERGE) == calls + 1
    assert not rv.skills.restore(AGENT, "email/send").archived  # the sources are restorable


def test_consolidation_applies_nothing_for_bare_deletions_bad_json_or_a_refused_change(
    opener: Any, router: Router
) -> None:
    rv = opener(change_gate_enabled=False)
    for name in ("alpha", "beta", "gamma"):
        rv.skills.save(AGENT, name, f"Do {name}", LONG)
    before = {s.name: s.version for s in rv.skills.live(AGENT)}
    router.script(
        MERGE,
        {"toDelete": ["alpha", "beta"], "toSave": []},  # deletions without replacements: a directive violation
        "```json\n{not json",
        {"toDelete": ["alpha"], "toSave": [skill("Not A Name", LONG, sourceNames=["alpha", "beta"])]},
        {"toDelete": ["alpha", "ghost"], "toSave": [skill("ghost2", LONG, sourceNames=["ghost"])]},
    )
    reports = [dream(rv)["skill_consolidation"] for _ in range(3)]
    assert reports[0].counts["violations"] == 1 and reports[0].counts["archived"] == 0
    assert reports[1].counts["malformed"] == 1
    assert reports[2].counts["refused"] == 1 and all(r.status == "ran" for r in reports)
    assert {s.name: s.version for s in rv.skills.live(AGENT)} == before  # nothing applied, ever
    last = dream(rv)["skill_consolidation"]  # invented names dropped, the rest applied
    assert last.counts["unknown_names"] == 2 and last.counts["archived"] == 1
    assert {s.name for s in rv.skills.live(AGENT)} == {"beta", "gamma", "ghost2"}
    assert rv.skills.get(AGENT, "ghost2").metadata.get("merged_from") is None


# -- Pass 4: skill optimisation --------------------------------------------------------------------------------
@both
def test_optimisation_improves_at_risk_and_sparse_skills_once_per_failure(
    opener: Any, router: Router, clock: FakeClock
) -> None:
    rv = opener(skill_consolidation_enabled=False)
    rv.skills.save(AGENT, "deploy/app", "Deploy the app", LONG)
    rv.skills.save(AGENT, "notes/tiny", "Take notes", "Write it down.")
    rv.skills.save(AGENT, "fine", "A fine skill", LONG)
    assert dream(rv)["skill_optimisation"].status == "skipped" and router.calls(OPTIMISE) == 0  # nothing yet
    clock.advance(days=8)
    rv.skills.save(AGENT, "fresh", "New and short", "Short.")  # sparse only after 7 days
    rv.skills.record_usage(AGENT, "s1", ["deploy/app", "fine"])
    rv.feedback.record(
        AGENT, "correction", "s1", comment="You forgot to run the migrations", skill_names=["deploy/app"]
    )
    rv.feedback.record(AGENT, "session_summary", "s2", rating="good", comment="all fine")
    router.script(OPTIMISE, "not json")
    bad = dream(rv)["skill_optimisation"]
    assert bad.counts["malformed"] == 1 and rv.skills.get(AGENT, "deploy/app").version == 1

    improved = LONG + "3. Run the database migrations before switching traffic."
    router.script(
        OPTIMISE,
        {
            "toDelete": ["fine"],
            "toSave": [
                skill("deploy/app", improved, seeAlso=["notes/tiny", "phantom"]),
                skill("notes/tiny", LONG + "Example: meeting notes."),
                skill("ghost", LONG),  # not shown
            ],
        },
    )
    report = dream(rv)["skill_optimisation"]
    assert report.counts == {
        **report.counts, "at_risk": 2, "sparse": 1, "shown": 3, "optimised": 2, "deletions_refused": 1,
        "unknown_names": 2,
    }  # fmt: skip
    prompt = router.last(OPTIMISE)
    # deploy/app's block runs up to the next skill's heading ("### <name> [at-risk]" or "[sparse]"), past its
    # own "### Failure context" sub-heading.
    deploy = re.split(r"\n### \S+ \[(?:at-risk|sparse)\]\n", prompt.split("### deploy/app [at-risk]\n")[1])[0]
    assert "### Failure context" in deploy and "correction (session s1" in deploy
    assert "You forgot to run the migrations" in deploy and "all fine" not in prompt
    assert REVIEW_NOTE in prompt.split("### notes/tiny")[1] and "### fresh" not in prompt
    app = rv.skills.get(AGENT, "deploy/app")
    assert app.content == improved.strip() and app.see_also == ("notes/tiny",) and OPTIMISED_AT in app.metadata
    assert [v.content for v in rv.skills.history(AGENT, "deploy/app")][0] == LONG  # the old text is kept
    assert rv.skills.get(AGENT, "fine").content == LONG and not rv.skills.get(AGENT, "fine").archived
    assert OPTIMISED_AT in rv.skills.get(AGENT, "fine").metadata  # shown (used in s1), left alone: reviewed

    calls = router.calls(OPTIMISE)
    assert dream(rv)["skill_optimisation"].status == "skipped" and router.calls(OPTIMISE) == calls  # no new failure
    clock.advance(hours=1)
    rv.feedback.record(
        AGENT, "session_summary", "s3", rating="poor", comment="deploy broke", skill_names=["deploy/app"]
    )
    again = dream(rv)["skill_optimisation"]
    assert again.counts["shown"] == 1 and "deploy broke" in router.last(OPTIMISE)
    assert "You forgot to run the migrations" not in router.last(OPTIMISE)  # already optimised for that one


class TickingClock(FakeClock):
    """A FakeClock that also moves a millisecond at every reading, as a real clock does between two calls."""

    def now(self) -> datetime:
        return self.advance(milliseconds=1)


def test_a_sparse_skill_left_alone_is_not_shown_again_when_the_clock_moves(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, server: ScriptedOpenAIServer, router: Router
) -> None:
    clock = TickingClock()
    rv = _open(backend, request, tmp_path, clock, server, {"skill_consolidation_enabled": False})
    try:
        rv.skills.save(AGENT, "notes/tiny", "Take notes", "Write it down.")
        clock.advance(days=8)
        first = dream(rv)["skill_optimisation"]  # the model answers nothing: the skill is marked reviewed
        assert first.counts["shown"] == 1 and first.counts["optimised"] == 0 and router.calls(OPTIMISE) == 1
        reviewed = rv.skills.get(AGENT, "notes/tiny")
        assert reviewed.version == 2 and reviewed.metadata[OPTIMISED_VERSION] == 2
        stamped = parse_moment(reviewed.metadata[OPTIMISED_AT])
        assert stamped is not None and reviewed.updated_at > stamped  # the save read the clock later
        clock.advance(hours=1)
        assert dream(rv)["skill_optimisation"].status == "skipped" and router.calls(OPTIMISE) == 1  # not re-shown
        assert rv.skills.get(AGENT, "notes/tiny").version == 2  # and no metadata-only version
        rv.skills.save(AGENT, "notes/tiny", "Take notes", "Write it down, then file it.")  # changed since
        clock.advance(hours=1)
        assert dream(rv)["skill_optimisation"].counts["shown"] == 1 and router.calls(OPTIMISE) == 2
    finally:
        rv.close()
