"""``reverie demo``: a guided tour of long-term memory on the shipped sample."""

from __future__ import annotations

import json
import re
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import typer

import reverie
from reverie.cli import render
from reverie.cli.common import console, escape, fail
from reverie.clock import FakeClock, SystemClock
from reverie.errors import ReverieError

# The tour's parts (the sample, the scripted model server, the tool registry, the learning step) are imported
# by the steps that use them: ``reverie --help`` imports this module too.

_QUERIES = (
    "What time zone is Maya in?",
    "which database does Lantern use?",
    "how should I write review comments",
    "when can we ship to production?",  # no word in common with the answer: the embedding finds it
    "🥮",  # no word for either index to match: the substring fallback finds it
)


def demo(
    keep: Path | None = typer.Option(
        None, "--keep", help="Run in this directory and keep the store (default: a temporary directory)."
    ),
    serve: bool = typer.Option(
        False, "--serve", help="After the tour, open the web console on the tour's store (Ctrl-C stops it)."
    ),
    port: int = typer.Option(4545, "--port", min=1, max=65535, help="The console's port on 127.0.0.1 (--serve)."),
) -> None:
    """A guided tour: save, recall, browse, archive, restore, edit and history, on a shipped sample."""
    try:
        if keep is not None:
            _tour(keep.expanduser().resolve())
            if serve:
                _serve_console(keep.expanduser().resolve(), port)
        else:
            with tempfile.TemporaryDirectory(prefix="reverie-demo-") as tmp:
                _tour(Path(tmp))
                if serve:
                    _serve_console(Path(tmp), port)
    except ReverieError as exc:
        fail(exc)


def _serve_console(home: Path, port: int) -> None:
    """The web console over the tour's store on 127.0.0.1, with a new admin key printed once."""
    from reverie.api import create_app
    from reverie.api.server import serve as run_server

    with reverie.open(home, embedding={"background": True}) as rv:
        secret = rv.keys.create("demo-console", agent_id=None, scopes=["admin"])[1]
        _step("Web console", "The tour's store in the browser: memory, entries and versions, graph, dream, usage.")
        console.print(
            f"open http://127.0.0.1:{port}/console and sign in with this admin key (shown once):", soft_wrap=True
        )
        console.print(secret, markup=False, highlight=False)
        console.print("[dim]Ctrl-C stops the server.[/]")
        if not run_server(create_app(rv), host="127.0.0.1", port=port, log_level="warning"):
            fail(f"could not serve on 127.0.0.1:{port} (is the port taken? try --port)")


def _step(title: str, text: str) -> None:
    from rich.rule import Rule

    console.print()
    console.print(Rule(f"[bold]{title}[/]", align="left"))
    console.print(f"[dim]{text}[/]")


def _tour(home: Path) -> None:
    from reverie.cli.demo_learning import learning
    from reverie.demo import load_sample

    with reverie.open(home, embedding={"background": False}) as rv:
        now = rv.clock.now
        _step("1. Save", f"Saving the sample's facts into a fresh store at {escape(str(home))}.")
        ids: dict[str, str] = {}
        for fact in load_sample():
            result = rv.memory.save(
                fact.content, category=fact.category, tags=fact.tags, source=fact.source, importance=fact.importance
            )
            ids[fact.content] = result.id
            console.print(render.entry_line(result.entry, now()))

        embedded = rv.embed_pending()
        model = rv.embedder.model_id if rv.embedder else "none"
        console.print(f"[dim]embedded {embedded} facts with {escape(model)}, offline[/]")

        _step(
            "2. Recall",
            "Hybrid: BM25 over content, tags and category words, fused with embedding similarity. "
            "Every query is plain text, never syntax.",
        )
        for query in _QUERIES:
            results = rv.memory.search(query, limit=3)
            console.print(f"\n[bold]?[/] {escape(query)} [dim]({results.mode})[/]")
            render.hits(results, now(), query)

        _step("3. Browse", "No query: the most recently reinforced entries, then the whole category taxonomy.")
        render.browse(rv.memory.browse(limit=5), now())

        db_fact = next(c for c in ids if "PostgreSQL 16" in c)
        db_id = ids[db_fact]
        _step("4. Archive", "Delete never destroys: it archives. The entry leaves search but stays readable by id.")
        rv.memory.archive(db_id)
        found = [h.entry.id for h in rv.memory.search("Lantern PostgreSQL database")]
        console.print(f"search 'Lantern PostgreSQL database' finds {db_id}: {db_id in found}")
        console.print(f"get {db_id}: archived at {rv.memory.get(db_id).archived_at:%Y-%m-%d %H:%M:%S} UTC")

        _step("5. Restore", "Until the purge pass (90 days after archiving), an archived entry comes back whole.")
        rv.memory.restore(db_id)
        found = [h.entry.id for h in rv.memory.search("Lantern PostgreSQL database")]
        console.print(f"search 'Lantern PostgreSQL database' finds {db_id}: {db_id in found}")

        tz_id = ids[next(c for c in ids if "Lisbon" in c)]
        _step("6. Edit and history", "Every rewrite keeps the old text as a version; any version can come back.")
        rv.memory.edit(
            tz_id, content="Maya moved to Porto in October; still Europe/Lisbon hours, meetings before 16:00."
        )
        rv.memory.restore_version(tz_id, 1)
        render.history(rv.memory.history(tz_id))

        _step("7. Scope", "Memory is per agent: another agent on the same store sees none of this.")
        other = rv.memory.search("Maya", scope=reverie.Scope(agent_id="researcher"))
        console.print(f"agent 'researcher' searching 'Maya': {len(other)} results")

        review_id = ids[next(c for c in ids if "BLOCKER" in c)]
        _step("8. Restate", "Saying a known fact again reinforces the entry instead of adding a duplicate.")
        again = rv.memory.save(
            "Code review comments grouped by file, blocking ones marked BLOCKER first: that is what Maya wants.",
            category="user-preferences/code-review",
        )
        entry = rv.memory.get(again.id)
        console.print(
            f"outcome: {again.outcome} ({again.id} == {review_id}: {again.id == review_id}); "
            f"reinforced {entry.reinforcement_count}×, text unchanged: {entry.content.startswith('Maya wants')}"
        )
        _step("9. Status", "What is in the store.")
        render.stats(rv.stats())
    _age(home)
    _dream(home)
    _conversation(home)
    _graph(home)
    learning(home, 14)
    console.print("\n[bold green]Tour complete.[/] Next: `reverie memory --help`, and the README's quickstart.")


def _age(home: Path) -> None:
    """Two months on a fake clock: grace (30 days) then a month of importance decay (half-life 45 days)."""
    start = SystemClock().now()
    clock = FakeClock(start + timedelta(days=60))
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        _step("10. Age", "Sixty days later on a fake clock: a month past the 30-day grace, unreinforced facts fade.")
        before = {e.id: e.importance for e in rv.memory.browse(limit=100).entries}
        report = rv.aging.decay()
        for entry in rv.memory.browse(limit=3).entries:
            console.print(f"{entry.id}: importance {before[entry.id]:.2f} → {entry.importance:.2f}")
        console.print(f"decayed {len(report.decayed)} of {report.examined} (never below the 0.10 floor)")


_BLOCK = re.compile(r"^\[\d+\] id=(\w+).*\n((?:    .*\n?)+)", re.MULTILINE)


def _scripted_consolidator(body: dict[str, Any]) -> str:
    """The demo's stand-in for an LLM: one good merge, one merge that drops specifics, a prune of chatter and a
    prune of a fact heard five times. Only the host's safeguards decide what happens."""
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("TASK: merge repair"):
        return json.dumps({"content": "Lantern: a scheduling app on FastAPI and PostgreSQL."})  # still drops them
    shown = {m.group(1): m.group(2).strip() for m in _BLOCK.finditer(prompt)}

    def find(word: str) -> list[str]:
        return [i for i, text in shown.items() if word in text]

    lisbon, lantern = find("Lisbon"), find("Lantern")[:2]
    to_save = []
    if len(lisbon) >= 2:
        longest = max(lisbon, key=lambda i: len(shown[i]))
        to_save.append({"content": shown[longest], "category": "user-preferences/timezone", "sourceIds": lisbon})
    if len(lantern) == 2:
        merged = "Lantern: a scheduling app on FastAPI and PostgreSQL."
        to_save.append({"content": merged, "category": "project-context/lantern", "sourceIds": lantern})
    to_delete = find("build logs") + find("phone")
    return "<think>tidy up</think>" + json.dumps({"toDelete": to_delete, "toSave": to_save})


def _dream(home: Path) -> None:
    """A dream cycle with a scripted LLM on a loopback server: the model proposes, the host decides."""
    from reverie.testing.openai_server import ScriptedOpenAIServer

    clock = FakeClock(SystemClock().now() + timedelta(days=61))
    with ScriptedOpenAIServer() as server:
        server.answer_chat_with(_scripted_consolidator)
        llm = {"provider": "openai", "endpoint": server.url, "model": "scripted", "max_retries": 0}
        settings: dict[str, Any] = {
            "embedding": {"provider": "none"},
            "memory": {"expansion_enabled": False},
            "graph": {"extraction": "rules"},  # the scripted model answers the dream only
        }
        with reverie.open(home, clock=clock, llm=llm, **settings) as rv:
            _step(
                "11. Dream",
                "A dream cycle with a scripted LLM. It proposes a good merge, a merge that drops details, and "
                "removals; the host's safeguards decide: coverage check, repair, high-value floor, archive-only.",
            )
            rv.memory.save(
                "Maya's time zone is Europe/Lisbon; meetings before 16:00 suit her.",
                dedup=False,
                category="user-preferences/timezone",
            )
            rv.memory.save("ok, looking at the build logs now", category="chatter", tier="episodic")
            for _ in range(4):  # heard five times in all: above the high-value floor
                rv.memory.save(
                    "Maya reads answers on her phone in the morning: short summaries first, details after a divider.",
                    category="user-preferences/communication",
                )
            report = rv.dream.run()
            for name, p in report.passes.items():
                if name == "consolidation":
                    continue
                console.print(f"  {name:<18} {p.status:<8} {escape(p.summary or p.reason)}")
            console.print(f"[bold]{escape(report.passes['consolidation'].summary)}[/]")
            console.print(f"[dim]{report.llm_calls} LLM calls, {report.tokens} tokens (scripted)[/]")


def _conversation(home: Path) -> None:
    """A 60-turn conversation: its third turn scrolls out of the window, and out-of-window recall brings it back."""
    clock = FakeClock(SystemClock().now())
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        _step(
            "12. Conversation",
            "A 60-turn session: only the last 20 turns are replayed. Asked about an early detail, the context "
            "builder quotes the hidden turn that matches, framed as conversation record, before the replayed turns.",
        )
        session = rv.conversation.create(name="trip planning").session_id
        for i in range(1, 61):
            clock.advance(minutes=1)
            if i == 3:
                text = "Before I forget: my gym locker code is 4417, locker 12 by the sauna."
            elif i % 2:
                text = f"Next for the Kyoto trip, day {i // 2}: temples in the morning, food in the evening."
            else:
                text = "Noted: temples first, then dinner near the river."
            rv.conversation.add_turn(session, "user" if i % 2 else "assistant", text)
        built = rv.context.build(session, "What was my gym locker code again?")
        console.print(f"sections: {', '.join(f'{s.name} ({s.tokens} tokens)' for s in built.sections)}")
        window = next(s for s in built.sections if s.name == "out_of_window")
        console.print(escape(str(window.messages[0]["content"])))


_GRAPH_NOTES = (
    "Ana Costa runs the Porto office of Acme Corp.",
    "Acme Corp signed a contract with Northwind Labs on March 14, 2026.",
    "Bruno from Northwind Labs ships the 3 kiosks to New York.",
)


def _graph(home: Path) -> None:
    """Three notes saved; the rule-based extractor (no LLM) learns what they name, and a path query joins two
    things no single note connects."""
    from reverie.tools import ToolContext, ToolRegistry

    with reverie.open(
        home, embedding={"provider": "none"}, graph={"extraction": "rules", "extraction_background": False}
    ) as rv:
        _step(
            "13. Knowledge graph",
            "Three notes. Without an LLM, rules learn their names, dates and numbers, relating those mentioned "
            "together; each relation cites the note it came from. A path query then joins two things no single "
            "note connects.",
        )
        saved = [rv.memory.save(note, category="project-context/acme").entry for note in _GRAPH_NOTES]
        for entry in saved:
            console.print(render.entry_line(entry, rv.clock.now()))
        rv.extract_pending()
        path = rv.graph.path("default", "Ana Costa", "New York")
        if path is None:  # cannot happen: the three notes chain the two
            console.print("no path from Ana Costa to New York")
            return
        console.print(f"path from {escape(path.start.name)} to {escape(path.goal.name)}, {len(path.triples)} hops:")
        for triple in path.triples:
            console.print(f"  {escape(triple.text)}  [dim](from {', '.join(triple.relation.sources)})[/]")
        explored = ToolRegistry(rv).call("memory_explore", {"id": saved[0].id}, ToolContext())
        shared = [r for r in explored.data["related"] if r["relation"] == "shared_entity"]
        links = "; ".join(f"[{r['id']}] also names {r['entity']}" for r in shared) or "none"
        console.print(f"memory_explore from [{saved[0].id}], entries naming the same things: {escape(links)}")
