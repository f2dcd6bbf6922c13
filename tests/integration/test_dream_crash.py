"""A dream killed mid-pass (issue 20, defect 2), on SQLite and PostgreSQL: a real ``reverie dream run``
subprocess, SIGKILLed while the loopback scripted LLM holds one of its answers (the dream then waits at a
checkpoint of one of its passes).

- While it runs, ``dream status`` names the holder's pid and host; ``dream abort`` asks it to stop.
- Once it is dead, ``dream abort`` clears its lock at once and says so, ``dream status`` shows the run
  interrupted (where it died), ``dream history`` records it interrupted with a finish time, and ``dream run``
  goes ahead without waiting for the lease to run out.
- Killed at any checkpoint, the store stays consistent: every merge is whole (its sources archived and
  superseded by a live merged entry, versions recorded), the run is recorded interrupted, and ``reverie
  doctor`` finds the store healthy.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.core.consolidation import MERGED_FROM
from reverie.storage import open_store
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.types import Change, DreamRun
from reverie.types.dream import DreamProcess

from ._dream import EMPTY, llm_settings, open_engine

BACKENDS = ["sqlite", "postgresql"]
runner = CliRunner()
CONSOLIDATION, MINING, EPISODES, PREFS = (
    "memory consolidation",
    "memory mining",
    "episode extraction",
    "preference inference",
)
FACTS = (
    "Maya moved to Lisbon in 2019.",
    "Maya moved to Lisbon for work.",
    "The user drinks green tea every morning.",
    "The user's laptop runs Fedora Linux.",
)
TALK = {
    "s1": ("We are building the Lantern service on PostgreSQL.", "Noted: Lantern runs on PostgreSQL."),
    "s2": ("Please, no bullet points in your answers.", "Understood, plain paragraphs from now on."),
}
HEADER = re.compile(r"^\[\d+\] id=(\S+)(.*)$")


# -- the scripted model -------------------------------------------------------------------------------------
class Stall:
    """The scripted model: answers each dream task with something it can apply (a consolidation prompt's
    eligible entries merged into one, a mined fact, an episode, a preference), except the ``at``-th chat
    call, which it holds until the server stops: the dream then waits there for the test to kill it."""

    def __init__(self, server: ScriptedOpenAIServer) -> None:
        self._lock = threading.Lock()
        self.at: int | None = None
        self.calls = 0
        self.held: str | None = None  # the task of the held call
        self.arrived = threading.Event()
        server.answer_chat_with(self)

    def hold(self, at: int | None) -> None:
        """Hold the ``at``-th call from now on (None: hold none)."""
        with self._lock:
            self.at, self.calls, self.held = at, 0, None
            self.arrived.clear()

    def __call__(self, body: dict[str, Any]) -> str | ChatReply:
        prompt = str(body["messages"][-1]["content"])
        task = prompt.split("\n", 1)[0].removeprefix("TASK:").strip()
        with self._lock:
            self.calls += 1
            if self.calls == self.at:
                self.held = task
                self.arrived.set()
                return ChatReply(EMPTY, delay=600)  # cut short when the server stops
        return json.dumps(_answer(task, prompt))

    def wait(self, proc: subprocess.Popen[str], timeout: float = 60) -> bool:
        """True once the held call arrived; False when ``proc`` ended first (the run needed fewer calls)."""
        deadline = time.monotonic() + timeout
        while not self.arrived.wait(0.05):
            if proc.poll() is not None:
                return False
            assert time.monotonic() < deadline, "the dream never asked the model"
        return True


def _answer(task: str, prompt: str) -> dict[str, Any]:
    if task == CONSOLIDATION:
        shown = _shown(prompt)
        if len(shown) < 2:
            return {"toDelete": [], "toSave": []}
        merged = {"content": " ".join(shown.values()), "sourceIds": list(shown)}
        return {"toDelete": [], "toSave": [merged]}
    if task == MINING:
        fact = {"content": "The Lantern service runs on PostgreSQL.", "category": "project-context", "sessionId": "s1"}
        return {"toSave": [fact]}
    if task == EPISODES:
        return {"episodes": [{"sessionId": "s2", "content": "The user asked for plain paragraphs."}]}
    if task == PREFS:
        preference = {"content": "Answer in plain paragraphs, never bullet points.", "occurrences": 2}
        return {"toDelete": [], "toSave": [preference]}
    return {"toDelete": [], "toSave": []}


def _shown(prompt: str) -> dict[str, str]:
    """The eligible entries a consolidation prompt shows (not the merge-only related ones): id -> content."""
    shown: dict[str, str] = {}
    current: str | None = None
    for line in prompt.splitlines():
        header = HEADER.match(line)
        if header is not None:
            current = None if "related=merge-only" in header.group(2) else header.group(1)
            if current is not None:
                shown[current] = ""
        elif current is not None and line.startswith("    "):
            shown[current] = (shown[current] + " " + line.strip()).strip()
        elif line.strip():
            current = None
    return {k: v for k, v in shown.items() if v}


# -- the home, the CLI and the killed process ---------------------------------------------------------------
@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> Iterator[Callable[[str], str | None]]:
    """``store_url(backend)``: None for SQLite (the home's own file), else a fresh PostgreSQL database,
    dropped at the end of the test."""
    made: list[str] = []

    def make(backend: str) -> str | None:
        if backend == "sqlite":
            return None
        made.append(request.getfixturevalue("pg_server").new_database())
        return made[-1]

    yield make
    for url in made:
        request.getfixturevalue("pg_server").drop_database(url)


def configure(home: Path, server: ScriptedOpenAIServer, url: str | None) -> None:
    """``<home>/reverie.toml``: the scripted LLM, no embedder, small consolidation calls, the store."""
    tables: dict[str, dict[str, Any]] = {
        "embedding": {"provider": "none"},
        "memory": {"expansion_enabled": False},
        "graph": {"extraction": "off"},
        "llm": llm_settings(server),
        "dream": {"consolidation_max_entries_per_call": 2},
    }
    if url is not None:
        tables["store"] = {"url": url}
    lines: list[str] = []
    for name, values in tables.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
    home.mkdir(parents=True, exist_ok=True)
    (home / "reverie.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def seed(home: Path, *, talk: bool = True) -> None:
    with reverie.open(home) as rv:
        for text in FACTS:
            rv.memory.save(text, dedup=False)
        for session, turns in TALK.items() if talk else ():
            for i, text in enumerate(turns):
                rv.conversation.add_turn(session, "user" if i % 2 == 0 else "assistant", text, create=True)


def cli(home: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.exception)
    return " ".join(result.stdout.split())


def cli_json(home: Path, *args: str) -> Any:
    result = runner.invoke(app, ["--home", str(home), *args, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


@pytest.fixture
def dreams() -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    """``start(home)``: a real ``reverie dream run`` process; any still alive at the end is killed."""
    started: list[subprocess.Popen[str]] = []

    def start(home: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "--home", str(home), "dream", "run"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def kill(proc: subprocess.Popen[str], url: str | None) -> None:
    """SIGKILL ``proc`` and reap it; on PostgreSQL (``url``) also wait until the server has ended its session
    (the advisory lock goes with it, a moment after the process)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if url is None:
        return
    with closing(open_store(url, now=datetime.now(UTC))) as store:
        deadline = time.monotonic() + 10
        while store.dream.holder_gone("default") is False:
            assert time.monotonic() < deadline, "the killed holder's session never ended"
            time.sleep(0.05)


# -- a killed dream ----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_dream_is_aborted_at_once_recorded_interrupted_and_run_again(
    backend: str,
    tmp_path: Path,
    server: ScriptedOpenAIServer,
    store_url: Callable[[str], str | None],
    dreams: Callable[[Path], subprocess.Popen[str]],
) -> None:
    home, url = tmp_path / "home", store_url(backend)
    configure(home, server, url)
    seed(home, talk=False)  # consolidation is the first pass to ask the model
    stall = Stall(server)
    stall.hold(1)
    proc = dreams(home)
    assert stall.wait(proc), proc.communicate()

    status = cli_json(home, "dream", "status")
    assert status["running"] is True and status["run"]["phase"] == "running"
    assert status["run"]["current_pass"] == "consolidation"
    holder = status["holder"]
    assert (holder["run_id"], holder["pid"], holder["host"]) == (
        status["run"]["run_id"],
        proc.pid,
        socket.gethostname(),
    )
    assert holder["heartbeat_at"] is not None
    assert "agent default: running" in cli(home, "dream", "status")
    assert cli(home, "dream", "run").startswith("dream of default skipped: another dream")
    assert "abort requested" in cli(home, "dream", "abort")  # a live holder: asked to stop at its next step

    kill(proc, url)
    answer = cli(home, "dream", "abort")
    assert "interrupted" in answer and f"process {proc.pid}" in answer and "lock is cleared" in answer
    assert cli_json(home, "dream", "abort") == {"aborting": False, "interrupted": False}  # nothing left to clear
    status = cli_json(home, "dream", "status")
    assert status["running"] is False and status["holder"] is None and status["abort_requested"] is False
    run = status["run"]
    assert run["phase"] == "interrupted" and run["current_pass"] == "consolidation" and run["finished_at"]
    assert f"process {proc.pid}" in run["error"]
    text = cli(home, "dream", "status")
    assert "agent default: interrupted" in text and "(manual) interrupted in consolidation" in text
    (recorded,) = cli_json(home, "dream", "history")
    assert recorded["phase"] == "interrupted" and recorded["finished_at"] is not None
    assert "interrupted" in cli(home, "dream", "history")

    # Killed again, then run again straight away: the dead holder's lease does not hold the new run back.
    stall.hold(1)
    second = dreams(home)
    assert stall.wait(second), second.communicate()
    kill(second, url)
    stall.hold(None)
    report = cli_json(home, "dream", "run")
    assert report["phase"] == "completed", report
    phases = [r["phase"] for r in cli_json(home, "dream", "history")]
    assert phases == ["completed", "interrupted", "interrupted"]
    assert cli_json(home, "dream", "status")["run"]["phase"] == "completed"
    cli(home, "doctor")


# -- killed at each checkpoint -----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dream_killed_at_any_checkpoint_leaves_a_consistent_store(
    backend: str,
    tmp_path: Path,
    server: ScriptedOpenAIServer,
    store_url: Callable[[str], str | None],
    dreams: Callable[[Path], subprocess.Popen[str]],
) -> None:
    """Round k, on a fresh store, holds the dream's k-th call to the model and kills it there: the rounds
    cut the run at every checkpoint that asks the model, after the writes of every call before it."""
    stall = Stall(server)
    killed_in: list[str] = []
    merges: list[int] = []  # merged entries each round left
    for k in itertools.count(1):
        assert k <= 30, "the dream never finished"
        home, url = tmp_path / f"round-{k}", store_url(backend)
        configure(home, server, url)
        seed(home)
        stall.hold(k)
        proc = dreams(home)
        if not stall.wait(proc):
            out, err = proc.communicate(timeout=30)
            assert proc.returncode == 0, err
            break  # this run needed fewer than k calls: every earlier round cut it at one of them
        assert stall.held is not None
        killed_in.append(stall.held)
        kill(proc, url)
        merges.append(assert_consistent(home))
    assert {MINING, EPISODES, CONSOLIDATION, PREFS} <= set(killed_in), killed_in
    assert killed_in.count(CONSOLIDATION) >= 2  # between two consolidation calls too
    assert merges[killed_in.index(CONSOLIDATION) + 1] > 0  # killed right after the first call's merge


def assert_consistent(home: Path) -> int:
    """The killed run is recorded interrupted, the store is healthy, and every merge is whole; returns how many
    merged entries the store holds."""
    status = cli_json(home, "dream", "status")
    assert status["running"] is False and status["run"]["phase"] == "interrupted", status
    (run,) = cli_json(home, "dream", "history")
    assert run["phase"] == "interrupted" and run["finished_at"] is not None
    cli(home, "doctor")
    with reverie.open(home) as rv:
        entries = {e.id: e for e in rv.store.facts.iter_all("default")}
        for entry in entries.values():
            assert rv.store.versions.history(entry.id, entry.scope), f"{entry.id} has no version"
            sources = entry.metadata.get(MERGED_FROM)
            if sources is None:
                continue
            for source_id in sources:  # replacement and retirement, together
                source = entries[source_id]
                assert source.archived and source.superseded_by == entry.id, (entry, source)
                changes = [v.change for v in rv.store.versions.history(source_id, source.scope)]
                assert changes[-1] == Change.SUPERSEDED
        for entry in entries.values():  # and no source retired without its replacement live
            if entry.superseded_by is not None and entry.archived:
                target = entries[entry.superseded_by]
                assert entry.id in target.metadata.get(MERGED_FROM, []), (entry, target)
                while target.archived and target.superseded_by is not None:
                    target = entries[target.superseded_by]
                assert not target.archived, (entry, target)
        assert rv.dream.status().running is False
        return sum(1 for e in entries.values() if MERGED_FROM in e.metadata)


# -- the heartbeat and the judgement, in one process ---------------------------------------------------------
def test_the_heartbeat_goes_on_through_a_long_llm_call(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    server.script_chat([ChatReply(EMPTY, delay=1.5)])
    with reverie.open(
        tmp_path / "home",
        embedding={"provider": "none"},
        llm=llm_settings(server),
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},
        dream={"heartbeat_seconds": 0.1},
    ) as rv:
        for text in FACTS[:2]:
            rv.memory.save(text, dedup=False)
        done: list[str] = []
        thread = threading.Thread(target=lambda: done.append(rv.dream.run().phase))
        thread.start()
        deadline = time.monotonic() + 30
        while not server.requests:
            assert time.monotonic() < deadline, "the dream never asked the model"
            time.sleep(0.02)
        first = rv.store.dream.lock_state("default").heartbeat_at
        time.sleep(0.6)  # inside the model's 1.5 s answer
        status = rv.dream.status()
        assert status.running is True and status.holder is not None
        assert (status.holder.pid, status.holder.host) == (os.getpid(), socket.gethostname())
        assert first is not None and status.holder.heartbeat_at is not None and status.holder.heartbeat_at > first
        thread.join(30)
        assert done == ["completed"]
        state = rv.store.dream.lock_state("default")
        assert (state.holder, state.process, state.heartbeat_at) == (None, None, None)


def _held_by(rv: reverie.Reverie, clock: FakeClock, process: DreamProcess) -> None:
    """The lock of ``default`` held by ``process`` (another process's dream, running consolidation)."""
    assert rv.store.dream.acquire("default", "run-x", now=clock.now(), lease_seconds=600, process=process)
    started = DreamRun("run-x", "default", "manual", clock.now(), "running", current_pass="consolidation")
    rv.store.dream.save_run(started)


def test_a_holder_on_another_host_is_dead_once_its_heartbeat_is_stale(tmp_path: Path, clock: FakeClock) -> None:
    with open_engine(tmp_path / "home", clock) as rv:
        _held_by(rv, clock, DreamProcess(pid=1, host="another-host.invalid", heartbeat_seconds=5.0))
        clock.advance(seconds=25)  # three periods plus the 10 s of slack: not yet
        assert rv.dream.status().running is True and rv.dream.run().phase == "skipped"
        assert rv.store.dream.heartbeat("default", "run-x", now=clock.now()) is True  # it beats: alive
        clock.advance(seconds=25)
        assert rv.dream.status().running is True
        clock.advance(seconds=1)
        status = rv.dream.status()
        assert status.running is False and status.holder is None
        assert status.run is not None and status.run.phase == "interrupted" and status.run.finished_at == clock.now()
        assert status.run.current_pass == "consolidation"
        assert (
            status.run.error is not None and "process 1 on another-host.invalid sent no heartbeat" in status.run.error
        )
        assert rv.dream.run().phase == "completed"


def test_a_holder_on_this_host_whose_process_is_gone_is_dead_at_once(tmp_path: Path, clock: FakeClock) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    with open_engine(tmp_path / "home", clock) as rv:
        _held_by(rv, clock, DreamProcess(pid=gone.pid, host=socket.gethostname(), heartbeat_seconds=5.0))
        assert [r.phase for r in rv.dream.history()] == ["interrupted"]  # history reaps too
        assert rv.dream.abort_dream().outcome == "none"


def test_a_live_holder_on_this_host_is_only_asked_to_stop(tmp_path: Path, clock: FakeClock) -> None:
    with open_engine(tmp_path / "home", clock) as rv:
        _held_by(rv, clock, DreamProcess(pid=os.getppid(), host=socket.gethostname(), heartbeat_seconds=5.0))
        clock.advance(seconds=5)
        done = rv.dream.abort_dream()
        assert (done.outcome, done.run_id) == ("requested", "run-x")
        status = rv.dream.status()
        assert status.running is True and status.abort_requested is True
        assert status.run is not None and status.run.phase == "running"
