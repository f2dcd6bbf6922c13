"""``reverie demo``'s learning step: a scripted conversation in which the user pushes back, a dream with a
scripted LLM on a loopback server, and the preference the host let through (thresholds, category, tag,
source), then the cleared conversation log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.rule import Rule

import reverie
from reverie.cli.common import console, escape
from reverie.clock import FakeClock, SystemClock
from reverie.testing.openai_server import ScriptedOpenAIServer

AGENT = "assistant"  # its own agent: the tour's other steps keep theirs
_SESSIONS = (
    (
        "demo-monday",
        "What changed in the Lantern release?",
        "- New calendar sync\n- Faster search\n- Bug fixes",
        "Please, no bullet points. Just tell me in a sentence or two.",
        "Lantern now syncs calendars, searches faster and fixes several bugs.",
    ),
    (
        "demo-tuesday",
        "Any risks for Friday's deploy?",
        "- The migration is slow\n- One flaky test",
        "AGAIN with the bullet points! I told you yesterday: plain sentences.",
        "Sorry. The migration is slow and one test is flaky; neither should block Friday.",
    ),
)
PREFERENCE = "Answer in plain sentences, never bullet points: the user finds them irritating."


def _scripted_model(body: dict[str, Any]) -> str:
    """The demo's stand-in for an LLM, by the task line of each prompt. The preference pass proposes one
    strongly felt preference (enough at one occurrence) and one casual one seen once (refused)."""
    task = str(body["messages"][-1]["content"]).split("\n", 1)[0]
    if task == "TASK: preference inference":
        return json.dumps(
            {
                "toDelete": [],
                "toSave": [
                    {"content": PREFERENCE, "category": "user-preferences/inferred/format", "tags": ["format"],
                     "sentiment": "very_irritated", "occurrences": 2},
                    {"content": "Keep answers under two sentences.", "sentiment": "minor", "occurrences": 1},
                ],
            }
        )  # fmt: skip
    if task == "TASK: memory mining":
        fact = "Lantern deploys on Friday; its migration is slow and one test is flaky."
        return json.dumps(
            {"toSave": [{"content": fact, "category": "project-context/lantern", "sessionId": "demo-tuesday"}]}
        )
    if task == "TASK: episode extraction":
        return json.dumps(
            {"episodes": [{"sessionId": "demo-monday", "content": "Went over what changed in the Lantern release."}]}
        )
    return '{"toDelete": [], "toSave": []}'  # every other pass: nothing to do


def learning(home: Path, number: int) -> None:
    """Two scripted sessions, one dream, and what it learned."""
    # Today, not the tour's later fake days: log retention ages the log's files by their real write time.
    clock = FakeClock(SystemClock().now())
    with ScriptedOpenAIServer() as server:
        server.answer_chat_with(_scripted_model)
        llm = {"provider": "openai", "endpoint": server.url, "model": "scripted", "max_retries": 0}
        settings: dict[str, Any] = {
            "embedding": {"provider": "none"},
            "memory": {"expansion_enabled": False},
            "graph": {"extraction": "off"},
        }
        with reverie.open(home, clock=clock, llm=llm, **settings) as rv:
            console.print()
            console.print(Rule(f"[bold]{number}. Learning from conversations[/]", align="left"))
            console.print(
                "[dim]Two sessions in which the user pushes back on bullet points, then a dream with a scripted "
                "LLM. The model proposes preferences with a sentiment and a count; the host applies the "
                "thresholds (very irritated: 1, mildly frustrated: 2, minor: 3) and clears the agent's log.[/]"
            )
            for session, *turns in _SESSIONS:
                for i, text in enumerate(turns):
                    clock.advance(minutes=2)
                    role = "user" if i % 2 == 0 else "assistant"
                    rv.conversation.add_turn(session, role, text, create=True, agent_id=AGENT)
                    console.print(f"[dim]{session}[/] {role}: {escape(' '.join(text.split()))}")
            records = sum(1 for _ in rv.conversation.log_records(agent_id=AGENT))
            report = rv.dream.run(AGENT)
            for name in ("memory_mining", "episode_extraction", "preference_inference"):
                found = report.passes.get(name)
                if found is not None:
                    console.print(f"  {name:<21} {escape(found.summary or found.reason)}")
            for entry in rv.store.facts.iter_all(AGENT):
                if entry.category.startswith("user-preferences/inferred"):
                    console.print(
                        f"[bold]inferred preference[/] [{entry.id}] {escape(entry.content)} "
                        f"(category {entry.category}, tags {', '.join(entry.tags)}, source {entry.source})"
                    )
            left = sum(1 for _ in rv.conversation.log_records(agent_id=AGENT))
            console.print(f"conversation log of {AGENT!r}: {records} records before the dream, {left} after")
