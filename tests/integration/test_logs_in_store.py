"""The telemetry logs and the delta filter kept in the store: two engines on one PostgreSQL database (two hosts,
each serving half of a conversation) feed one dream worker; an entry is injected once per session however many
engines serve it; a home with the JSONL files of an older version is imported once; and ``reverie logs export``
writes the logs back out in the files' record shapes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.testing import ScriptedOpenAIServer

from ._dream import Router, open_on

MINING = "memory mining"
LOCKER = "My gym locker code is 4417, locker number 12 by the sauna."
runner = CliRunner()


@pytest.fixture
def engines() -> Iterator[list[reverie.Reverie]]:
    """Engines a test opens, closed at its end."""
    opened: list[reverie.Reverie] = []
    try:
        yield opened
    finally:
        for rv in opened:
            rv.close()


# -- one log for every host ---------------------------------------------------------------------------------
def test_two_engines_on_one_postgres_feed_one_dream_worker(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: FakeClock,
    server: ScriptedOpenAIServer,
    engines: list[reverie.Reverie],
) -> None:
    router = Router(server)
    quiet = {"episode_extraction_enabled": False, "preference_inference_enabled": False}
    for name in ("host-a", "host-b"):  # two homes, as two hosts would have: the logs must not stay in them
        engines.append(open_on("postgresql", request, tmp_path / name, clock, server, dream=quiet))
    host_a, host_b = engines
    turns = [
        "We ship Lantern every Friday, by the way.",
        "Got it: Friday releases.",
        "And the release manager is Ines.",
        "Noted, Ines runs the releases.",
        "Lantern's staging box is called kestrel.",
        "Kestrel it is.",
    ]
    for i, text in enumerate(turns):  # each host receives half of the conversation
        clock.advance(minutes=1)
        host = host_a if i % 2 == 0 else host_b
        host.conversation.add_turn("s1", "user" if i % 2 == 0 else "assistant", text, create=True)
    host_a.tool_calls.record("default", "search_memory", True)
    host_a.tool_calls.log.flush()  # group commit: the other host sees it once flushed (within the interval)
    host_b.executions.record("default", "Release Lantern", False, steps=[{"name": "deploy", "ok": False}])
    fact = "Lantern ships every Friday; Ines manages releases on the kestrel staging box."
    router.script(MINING, {"toSave": [{"content": fact, "category": "project-context/lantern", "sessionId": "s1"}]})

    mining = host_b.dream.run("default").passes["memory_mining"]  # one dream worker, on one host

    assert mining.status == "ran" and mining.counts["created"] == 1, mining.as_dict()
    (prompt,) = router.prompts[MINING]
    assert all(text in prompt for text in turns)  # it learned from both hosts' halves
    assert [e.content for e in host_a.store.facts.iter_all("default")] == [fact]
    assert [c.tool for c in host_b.tool_calls.list("default")] == ["search_memory"]
    assert [r.description for r in host_a.executions.list("default")] == ["Release Lantern"]
    for name in ("host-a", "host-b"):
        assert not (tmp_path / name / "logs" / "conversation").exists()
        assert not (tmp_path / name / "logs" / "tool-calls.jsonl").exists()


def open_pair(backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> list[reverie.Reverie]:
    """Two engines on one store: one SQLite home opened twice, or two homes on one PostgreSQL database."""
    if backend == "sqlite":
        return [reverie.open(tmp_path / "home", clock=clock, embedding={"provider": "none"}) for _ in range(2)]
    url = request.getfixturevalue("pg_url")
    return [
        reverie.open(tmp_path / home, clock=clock, embedding={"provider": "none"}, store={"url": url})
        for home in ("a", "b")
    ]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_entry_is_injected_once_per_session_across_engines(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, engines: list[reverie.Reverie]
) -> None:
    engines += open_pair(backend, request, tmp_path, clock)
    first, second = engines
    entry = first.memory.save(LOCKER, category="user-preferences/gym").entry
    session = first.conversation.create().session_id
    question = "What is my gym locker code?"

    assert entry.id in first.context.build(session, question).injected
    again = second.context.build(session, question)  # another process serving the same session
    assert entry.id not in again.injected and "recall" not in [s.name for s in again.sections]

    second.context.forget_session(session)  # a fresh start, told to one engine, holds for the other too
    assert entry.id in first.context.build(session, question).injected
    assert entry.id not in second.context.build(session, question).injected

    clock.advance(days=2)  # the session expired: its next turn starts it afresh, and so does the filter
    assert entry.id in second.context.build(session, question).injected
    first.conversation.add_turn(session, "user", "Back from holiday.")  # the fresh start, on the other engine
    assert entry.id not in first.context.build(session, question).injected
    other = first.conversation.create().session_id  # the filter is per session
    assert entry.id in second.context.build(other, question).injected


# -- an older home's JSONL files -------------------------------------------------------------------------------
def write_lines(path: Path, *records: dict[str, Any] | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record, ensure_ascii=False)) + "\n")


def old_home(home: Path, clock: FakeClock) -> dict[str, Any]:
    """The logs an older version left in ``home``: a conversation file per session, the execution and the
    tool-call files, each with a line no reader could use."""
    now = clock.now().isoformat()
    turn = {"at": now, "role": "user", "content": "We ship Lantern on Fridays 🚀", "agent": "default"}
    execution = {"at": now, "agent": "default", "session_id": "s1", "description": "Release Lantern",
                 "success": True, "steps": [{"name": "deploy", "ok": True}], "skill": None, "error": None}  # fmt: skip
    call = {"at": now, "agent": "default", "session_id": None, "tool": "search_memory", "ok": False,
            "error": "timeout", "arguments": {"query": ""}, "duration_ms": 12.0}  # fmt: skip
    logs = home / "logs"
    write_lines(logs / "conversation" / "s1.jsonl", turn, {**turn, "role": "assistant", "content": "Noted."})
    write_lines(logs / "conversation" / "s2.jsonl", {**turn, "agent": "other"}, '{"torn": ')
    write_lines(logs / "executions.jsonl", execution, {"agent": "default", "at": "not a time"})
    write_lines(logs / "tool-calls.jsonl", call, "[1, 2]")
    return {"turn": turn, "execution": execution, "call": call}


def test_an_older_homes_jsonl_logs_are_imported_once(tmp_path: Path, clock: FakeClock) -> None:
    home = tmp_path / "home"
    written = old_home(home, clock)
    logs = home / "logs"

    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        records = list(rv.conversation.log_records())
        assert [(sid, r["content"], r["agent"]) for sid, r in records] == [
            ("s1", "We ship Lantern on Fridays 🚀", "default"),
            ("s1", "Noted.", "default"),
            ("s2", "We ship Lantern on Fridays 🚀", "other"),
        ]
        assert records[0][1] == written["turn"]  # the record as the file held it
        (execution,) = rv.executions.list("default")
        assert (execution.description, execution.session_id, execution.steps[0].name) == (
            "Release Lantern",
            "s1",
            "deploy",
        )
        (call,) = rv.tool_calls.list("default")
        assert (call.tool, call.ok, call.error, call.duration_ms) == ("search_memory", False, "timeout", 12.0)
        assert rv.store.logs.count("executions") == 1 and rv.store.logs.count("tool-calls") == 1  # bad lines: not
    # Nothing lost, nothing read twice: every file is renamed, whole.
    assert not list(logs.rglob("*.jsonl"))
    assert (logs / "executions.jsonl.imported").read_text(encoding="utf-8").count("\n") == 2
    assert (logs / "conversation" / "s2.jsonl.imported").is_file()

    # A crash between the import and the rename: the file is back under its old name. It is renamed, not re-read.
    shutil.copy(logs / "tool-calls.jsonl.imported", logs / "tool-calls.jsonl")
    write_lines(logs / "conversation" / "s3.jsonl", {**written["turn"], "content": "A file an old process wrote"})
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        assert rv.store.logs.count("tool-calls") == 1
        assert rv.store.logs.count("conversation") == 4  # the new file's record, once
    assert (logs / "tool-calls.jsonl.2.imported").is_file() and not (logs / "tool-calls.jsonl").exists()
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:  # opening again changes nothing
        assert rv.store.logs.count("conversation") == 4 and rv.store.logs.count("executions") == 1


# -- export ------------------------------------------------------------------------------------------------------
def test_logs_export_writes_the_old_record_shapes(tmp_path: Path, clock: FakeClock) -> None:
    home = tmp_path / "home"
    written = old_home(home, clock)
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        rv.conversation.add_turn("s9", "user", "a new turn", create=True, agent_id="other")

    calls = runner.invoke(app, ["--home", str(home), "logs", "export", "tool-calls"])
    assert calls.exit_code == 0, calls.output
    assert [json.loads(line) for line in calls.output.splitlines()] == [written["call"]]

    out = tmp_path / "export"
    exported = runner.invoke(app, ["--home", str(home), "logs", "export", "conversation", "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert sorted(p.name for p in out.iterdir()) == ["s1.jsonl", "s2.jsonl", "s9.jsonl"]
    old = (home / "logs" / "conversation" / "s1.jsonl.imported").read_text(encoding="utf-8").splitlines()
    new = (out / "s1.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in new] == [json.loads(line) for line in old]  # the same records

    mine = runner.invoke(app, ["--home", str(home), "logs", "export", "conversation", "-a", "other"])
    lines = [json.loads(line) for line in mine.output.splitlines()]
    assert [(r["session_id"], r["content"]) for r in lines] == [
        ("s2", written["turn"]["content"]),
        ("s9", "a new turn"),
    ]

    executions = tmp_path / "executions.jsonl"
    runner.invoke(app, ["--home", str(home), "logs", "export", "executions", "-o", str(executions)])
    assert [json.loads(line) for line in executions.read_text(encoding="utf-8").splitlines()] == [written["execution"]]
    assert runner.invoke(app, ["--home", str(home), "logs", "export", "dream"]).exit_code == 2
    assert runner.invoke(app, ["--home", str(home), "logs", "export", "executions", "-s", "../x"]).exit_code == 2
