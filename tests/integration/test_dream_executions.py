"""The learning passes over the execution and tool-call logs (issue 10): execution-failure analysis (seed 001's
wisp failure analysis) and tool-success learning, end to end on real stores (SQLite and PostgreSQL) and the
scripted loopback LLM. Each pass's prompt starts with its ``TASK:`` line; the handler answers other passes'
prompts with an empty object, so these tests do not depend on which other passes are switched on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.dream.passes.base import PassReport
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._dream import Router, open_on

FAILURES = "execution failure analysis"
TOOLS = "tool success learning"
BOOK = "Book a flight"
TRAVEL = "travel/book"
WEATHER = "weather/check"
OTHER_SKILL_PASSES_OFF: dict[str, Any] = {
    key: False for key in ("skill_gap_enabled", "skill_consolidation_enabled", "skill_optimisation_enabled")
}


@pytest.fixture(params=["sqlite", "postgresql"])
def rv(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> Iterator[reverie.Reverie]:
    # The skill passes would write skill versions of their own between the checks.
    engine = open_on(request.param, request, tmp_path / "home", clock, server, dream=OTHER_SKILL_PASSES_OFF)
    with engine:
        yield engine


@pytest.fixture
def router(server: ScriptedOpenAIServer) -> Router:
    return Router(server, "{}")  # other passes get an empty object


def cycle(rv: reverie.Reverie, clock: FakeClock, name: str) -> PassReport:
    clock.advance(hours=2)
    report = rv.dream.run()
    assert report.phase == "completed", report.as_dict()
    return report.passes[name]


def fail_booking(rv: reverie.Reverie, times: int, description: str = BOOK) -> None:
    for _ in range(times):
        rv.executions.record(
            "default",
            description,
            False,
            steps=[{"name": "search", "ok": True}, {"name": "pay", "ok": False, "error": "card declined"}],
            skill=TRAVEL,
            error="payment failed",
        )


def test_execution_failures_annotate_the_producing_skill_and_flag_successes(
    rv: reverie.Reverie, clock: FakeClock, router: Router
) -> None:
    rv.skills.save("default", TRAVEL, "Book travel", "1. Search flights.\n2. Pay.")
    rv.skills.save("default", WEATHER, "Check the weather", "Ask the weather tool.")
    fail_booking(rv, 3, "Cancel a hotel")  # 15 days old by the first run: outside the window
    clock.advance(days=15)
    for _ in range(5):
        rv.executions.record("default", "Check the weather", True, skill=WEATHER)
        rv.executions.record("default", "Summarise the inbox", True)

    quiet = cycle(rv, clock, "execution_failures")  # no failure pattern: no LLM call, successes flagged anyway
    assert router.prompts[FAILURES] == []
    assert quiet.status == "ran" and quiet.counts["promoted"] == 1 and quiet.counts["promoted_unowned"] == 1
    flag = rv.skills.get("default", WEATHER).metadata["promotion_candidate"]
    assert (flag["description"], flag["runs"], flag["success_rate"]) == ("Check the weather", 5, 1.0)
    assert [r["description"] for r in rv.dream_log.read() if r.get("action") == "promotion_candidate"] == [
        "Summarise the inbox"
    ]

    fail_booking(rv, 3)
    rv.executions.record("default", "Send an email", False)  # two failures: not a pattern
    rv.executions.record("default", "Send an email", False)
    router.script(
        FAILURES,
        json.dumps(
            {
                "annotations": [
                    {"skill": TRAVEL, "note": "Don't pay before checking the card — it fails with card declined."},
                    {"skill": "ghost/skill", "note": "invented"},
                    {"skill": WEATHER, "note": "a skill that produced no failure pattern"},
                ],
                "patterns": [
                    {"description": "book a flight", "classification": "payment", "affectedSteps": ["pay"]},
                    {"description": "Fly to the moon", "classification": "invented"},
                ],
            }
        ),
    )
    ran = cycle(rv, clock, "execution_failures")
    (prompt,) = router.prompts[FAILURES]
    assert BOOK in prompt and "card declined" in prompt and "1. Search flights." in prompt
    assert "Send an email" not in prompt and "Cancel a hotel" not in prompt and "Check the weather" not in prompt
    c = ran.counts
    assert (c["failure_patterns"], c["annotated"], c["ignored_skills"], c["classified"], c["ignored_patterns"]) == (
        1,
        1,
        2,
        1,
        1,
    )
    assert c["promoted"] == 0 and c["promoted_unowned"] == 0  # already flagged on the same evidence
    skill = rv.skills.get("default", TRAVEL)
    assert skill.content.startswith("1. Search flights.\n2. Pay.\n\n## Execution notes\n- Don't pay before")
    history = rv.skills.history("default", TRAVEL)
    assert [v.content for v in history][0] == "1. Search flights.\n2. Pay." and len(history) == 2
    assert "## Execution notes" not in rv.skills.get("default", WEATHER).content
    assert {r["action"] for r in rv.dream_log.read()} >= {"failure_pattern", "skill_annotated"}

    assert cycle(rv, clock, "execution_failures").status == "skipped"  # nothing new: not re-annotated
    assert len(router.prompts[FAILURES]) == 1

    fail_booking(rv, 1)  # one new failure re-opens the pattern
    router.script(FAILURES, "this is not JSON")
    bad = cycle(rv, clock, "execution_failures")
    assert bad.counts["malformed"] == 1 and bad.counts["annotated"] == 0
    assert rv.skills.get("default", TRAVEL).version == skill.version  # nothing applied
    retried = cycle(rv, clock, "execution_failures")  # not stamped: the same evidence is asked about again
    assert len(router.prompts[FAILURES]) == 3 and retried.counts["malformed"] == 0


def test_tool_success_saves_a_lesson_that_reinforces_next_cycle(
    rv: reverie.Reverie, clock: FakeClock, router: Router
) -> None:
    rv.tool_calls.record("default", "search", True, arguments={"query": "secret value"})
    rv.tool_calls.record("default", "search", True, arguments={"query": "other", "limit": 3})
    rv.tool_calls.record("default", "search", False, error="missing query", arguments={})
    rv.tool_calls.record("default", "rare", False, error="boom")  # two calls: not shown
    rv.tool_calls.record("default", "rare", True)
    lesson = "Call search with a query string; without one it fails with missing query."
    answer = json.dumps(
        {
            "toSave": [
                {"content": lesson, "tool": "search", "tags": ["search"]},
                {"content": "Invented tools work great.", "tool": "ghost"},
                {"content": "rare is rare.", "tool": "rare"},
            ]
        }
    )
    router.script(TOOLS, answer)
    first = cycle(rv, clock, "tool_success")
    (prompt,) = router.prompts[TOOLS]
    assert "## Tool: search" in prompt and "{limit: integer, query: string}" in prompt and "missing query" in prompt
    assert "rare" not in prompt and "secret value" not in prompt
    assert (first.counts["created"], first.counts["ignored_tools"]) == (1, 2)
    (entry,) = [e for e in rv.store.facts.iter_all("default") if not e.archived]
    assert (entry.content, entry.category, entry.source) == (lesson, "tool-usage/search", "inferred")
    assert "search" in entry.tags and "tool-usage" in entry.tags
    assert {k: entry.metadata[k] for k in ("calls", "success_rate", "window_days", "pass")} == {
        "calls": 3,
        "success_rate": 0.667,
        "window_days": 14.0,
        "pass": "tool_success",
    }

    idle = cycle(rv, clock, "tool_success")  # no new calls: no LLM call
    assert idle.status == "skipped" and len(router.prompts[TOOLS]) == 1

    rv.tool_calls.record("default", "search", True, arguments={"query": "q"})
    router.script(TOOLS, answer)
    again = cycle(rv, clock, "tool_success")
    assert again.counts["reinforced"] == 1 and again.counts["created"] == 0
    assert rv.memory.get(entry.id).reinforcement_count == entry.reinforcement_count + 1

    rv.tool_calls.record("default", "search", False, error="timeout")
    router.script(TOOLS, "{not json")
    bad = cycle(rv, clock, "tool_success")
    assert bad.counts["malformed"] == 1 and bad.counts["created"] == bad.counts["reinforced"] == 0
    cycle(rv, clock, "tool_success")  # retried: the stamp did not move
    assert len(router.prompts[TOOLS]) == 4
    assert len([e for e in rv.store.facts.iter_all("default") if not e.archived]) == 1
