"""The kill-dream family of ``reverie bench faults``: a ``reverie dream run`` process SIGKILLed in every pass.

The store is seeded so that every pass has work (near-duplicate entries for consolidation to merge,
conversations in three sessions, tool calls, skills, executions, graph entities, feedback; the auto-dream on),
and the model is a scripted OpenAI-compatible server on loopback (``reverie.testing``) that answers each
task after ``LLM_DELAY`` seconds: consolidation merges the entries it is shown in pairs, the auto-dream
searches then stops, every other task gets an empty answer.

One uninterrupted run first (the calibration) gives the passes in their order and how long each lasts. Then,
per pass, on a fresh copy of the seeded store: a ``dream run`` child; this process watches ``dream.status``
and SIGKILLs the child at a random moment while that pass runs. A few more kills land right after a
consolidation answer arrived, while its merges are applied. After each kill: the store's integrity; no
half-applied merge (a live merged entry whose sources are not all retired into it, or a retired entry whose
replacement is missing); no entry gone; ``dream status`` not running; a new ``dream run`` completes; and the
killed run is no longer recorded as running.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import reverie
from reverie.bench.faults_common import FamilyResult, Progress, Target, child_env, integrity, short
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.tools import ToolContext, ToolRegistry

AGENT = "default"
LLM_DELAY = 0.05  # seconds before each answer: a pass that asks the model lasts long enough to be hit
MID_MERGE_KILLS = 3
RETRIES = 2  # more tries for a pass the kill missed (it ended before the watcher saw it)
RUN_SECONDS = 300.0
CONSOLIDATION = "TASK: memory consolidation"
CURATION = "TASK: auto-dream"
MERGED_FROM = "mergedFrom"
LONG = "Step 1: open the client. Step 2: write the message. Step 3: check the recipient. Step 4: press send. " * 3
EMPTY = '{"toDelete": [], "toSave": []}'


class ScriptedModel:
    """The dream's model: answers by task (see the module docstring) and notes when each consolidation
    answer goes out."""

    def __init__(self, server: ScriptedOpenAIServer) -> None:
        self.lock = threading.Lock()
        self.consolidation_sent: list[float] = []
        server.answer_chat_with(self)

    def __call__(self, body: dict[str, Any]) -> ChatReply:
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        task = users[0].split("\n", 1)[0] if users else ""
        if task.startswith(CONSOLIDATION):
            with self.lock:
                self.consolidation_sent.append(time.monotonic() + LLM_DELAY)
            return ChatReply(_merges(users[-1]), delay=LLM_DELAY)
        if task.startswith(CURATION):  # one search, then done
            search = {"name": "search_memory", "arguments": {"query": "Lisbon"}}
            turn = (
                {"phase": "done", "tool_calls": []} if len(users) > 1 else {"phase": "gather", "tool_calls": [search]}
            )
            return ChatReply(json.dumps(turn), delay=LLM_DELAY)
        return ChatReply(EMPTY, delay=LLM_DELAY)

    def sent_after(self, moment: float) -> float | None:
        with self.lock:
            return next((t for t in self.consolidation_sent if t >= moment), None)


def _merges(prompt: str) -> str:
    """Merge the entries shown, two by two, keeping both texts (so every specific survives the merge)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in prompt.splitlines():
        if line.startswith("[") and "] id=" in line:
            blocks.append((line.split("] id=", 1)[1].split(" ", 1)[0], []))
        elif line.startswith("    ") and blocks:
            blocks[-1][1].append(line.strip())
    saves = [
        {"content": " ".join(a[1]) + " " + " ".join(b[1]), "sourceIds": [a[0], b[0]]}
        for a, b in zip(blocks[0::2], blocks[1::2], strict=False)
    ]
    return json.dumps({"toDelete": [], "toSave": saves})


def dream_settings(server: ScriptedOpenAIServer) -> dict[str, dict[str, Any]]:
    return {
        "llm": {"provider": "openai", "endpoint": server.url, "model": "m", "max_retries": 0},
        "memory": {"expansion_enabled": False},
        "dream": {"auto_dream_enabled": True, "auto_dream_max_turns": 3},
        "agents.default": {"auto_dream": True},
    }


def seed(target: Target) -> None:
    """Work for every pass (see the module docstring)."""
    with target.open() as rv:
        for i in range(30):
            rv.memory.save(f"The user lives in Lisbon and drinks coffee number {i}.", dedup=False)
        for s in range(3):
            for t in range(4):
                rv.conversation.add_turn(f"s{s}", "user", f"Please summarise my Atlas emails, batch {t}", create=True)
                rv.conversation.add_turn(f"s{s}", "assistant", "Done: three emails about the Atlas launch.")
        registry = ToolRegistry(rv)
        for s in range(3):
            ctx = ToolContext(session_id=f"s{s}")
            registry.call("search_memory", {"query": "Lisbon"}, ctx)
            registry.call("kv_get", {"key": "missing"}, ctx)
        rv.skills.save(AGENT, "email/send", "Send an email", LONG)
        rv.skills.save(AGENT, "email/compose", "Compose an email", LONG)
        rv.skills.save(AGENT, "notes", "Take notes", "Write it down.")
        rv.skills.record_usage(AGENT, "s1", ["email/send", "email/compose"])
        rv.feedback.record(AGENT, "correction", "s1", comment="search missed the Lisbon entry")
        for _ in range(3):
            rv.executions.record(
                AGENT,
                "deploy the app",
                False,
                steps=[{"name": "run tests", "ok": False}],
                session_id="s1",
                skill="email/send",
            )
        rv.graph.add_entity(AGENT, "person", "Alice Smith")
        rv.graph.add_entity(AGENT, "person", "Alice  Smith.")


@dataclass
class Watched:
    """What the watcher saw of one dream child: the pass timeline and the run it watched."""

    timeline: list[tuple[float, str]] = field(default_factory=list)  # (monotonic time, pass) at each change
    run_id: str | None = None
    killed_in: str | None = None  # the run's current pass when it was killed (None: not killed)
    report: dict[str, Any] = field(default_factory=dict)  # the child's --json report when it finished
    error: str = ""


KillAt = Callable[[str, float], float | None]  # (current pass, when it began) -> when to kill, or None


def watch(target: Target, kill_at: KillAt | None, workdir: Path) -> Watched:
    """Run ``reverie dream run --json`` on ``target`` and watch its status; SIGKILL it when ``kill_at`` says."""
    seen = Watched()
    err = workdir / "dream-child.err"
    with err.open("w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "dream", "run", "--json"], env=child_env(target.home),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True, encoding="utf-8",
        )  # fmt: skip
    deadline, due = time.monotonic() + RUN_SECONDS, None
    try:
        with target.open() as rv:
            while proc.poll() is None and time.monotonic() < deadline:
                run = rv.dream.status(AGENT).run
                now = time.monotonic()
                if run is not None and run.phase == "running" and run.current_pass:
                    seen.run_id = run.run_id
                    if not seen.timeline or seen.timeline[-1][1] != run.current_pass:
                        seen.timeline.append((now, run.current_pass))
                        due = kill_at(run.current_pass, now) if kill_at else None
                if due is not None and now >= due:
                    proc.kill()
                    seen.killed_in = seen.timeline[-1][1]
                    break
                time.sleep(0.001)
    finally:
        if proc.poll() is None and seen.killed_in is None:
            proc.kill()
            seen.error = f"the dream did not finish within {RUN_SECONDS:g} s"
        out, _ = proc.communicate(timeout=60)
    if seen.killed_in is None and not seen.error:
        try:
            seen.report = json.loads(out)
        except ValueError:
            seen.error = f"dream run exited {proc.returncode}: {short(err.read_text(encoding='utf-8'), 300)}"
    return seen


@dataclass
class Calibration:
    order: list[str]  # the passes that ran (each recorded as the current pass), in order
    seconds: dict[str, float]  # how long the watcher saw each one run
    apply_seconds: float  # from the consolidation answer to the end of that pass
    phase: str  # how the uninterrupted run ended
    unwatched: list[str]  # passes that ran but were never seen running


def kill_dream(
    make_target: Callable[[str], Target], rng: random.Random, workdir: Path, progress: Progress
) -> FamilyResult:
    result = FamilyResult("kill-dream")
    with ScriptedOpenAIServer() as server:
        model = ScriptedModel(server)
        settings = dream_settings(server)
        template = make_target("dream-template")
        template.write_settings(settings)
        seed(template)
        prepare = _preparer(template, settings)
        cal = _calibrate(prepare("dream-calibration", make_target), model, workdir)
        if cal is None or not cal.order:
            result.fail("the uninterrupted dream run failed: " + ("no pass ran" if cal else "see the dream log"))
            return result
        result.note(f"calibration: {len(cal.order)} passes watched, the run {cal.phase}")
        if cal.unwatched:
            result.note(f"too quick to watch (never seen running): {', '.join(cal.unwatched)}")
        plans = [(name, False) for name in cal.order]
        plans += [("consolidation", True)] * (MID_MERGE_KILLS if "consolidation" in cal.order else 0)
        landed: list[str] = []
        for n, (target_pass, mid_merge) in enumerate(plans, 1):
            label = f"{target_pass}{' (mid-merge)' if mid_merge else ''}"
            progress(f"kill-dream: {n} of {len(plans)}: {label}")
            for attempt in range(RETRIES + 1):
                target = prepare(f"dream-{n}-{attempt}", make_target)
                seeded = _ids(target)
                kill_at = _kill_plan(target_pass, mid_merge, cal, model, rng, first=attempt == 0)
                seen = watch(target, kill_at, workdir)
                if seen.killed_in == target_pass or attempt == RETRIES:
                    break
            if seen.killed_in == target_pass:
                landed.append(label)
            else:
                result.note(f"{label}: the kill missed the pass (killed in {seen.killed_in or 'none'})")
            _after_kill(target, seeded, seen, label, cal, result)
        result.note(f"kills landed in {len(landed)} of {len(plans)} planned passes")
    return result


Prepare = Callable[[str, Callable[[str], Target]], Target]


def _preparer(template: Target, settings: dict[str, dict[str, Any]]) -> Prepare:
    """A fresh copy of the seeded store: the template's files (SQLite), or a new seeded database (PostgreSQL)."""

    def prepare(label: str, make_target: Callable[[str], Target]) -> Target:
        target = make_target(label)
        if target.url is None:
            shutil.rmtree(target.home, ignore_errors=True)
            shutil.copytree(template.home, target.home, ignore=shutil.ignore_patterns("reverie.toml"))
            target.write_settings(settings)
        else:
            target.write_settings(settings)
            seed(target)
        return target

    return prepare


def _calibrate(target: Target, model: ScriptedModel, workdir: Path) -> Calibration | None:
    started = time.monotonic()
    seen = watch(target, None, workdir)
    ended = time.monotonic()
    if seen.error or not seen.report:
        return None
    times = [t for t, _ in seen.timeline] + [ended]
    seconds = {name: times[i + 1] - times[i] for i, (_, name) in enumerate(seen.timeline)}
    order = [name for _, name in seen.timeline]
    sent, apply = model.sent_after(started), 0.05
    if sent is not None and "consolidation" in order:
        later = [t for t, name in seen.timeline if order.index(name) > order.index("consolidation")]
        apply = min(later, default=sent + apply) - sent
    passes = seen.report.get("passes", {})
    ran = [
        name for name, p in passes.items() if isinstance(p, dict) and not str(p.get("reason", "")).startswith("needs ")
    ]
    unwatched = [name for name in ran if name not in order]
    return Calibration(order, seconds, max(apply, 0.001), str(seen.report.get("phase")), unwatched)


def _kill_plan(
    target_pass: str, mid_merge: bool, cal: Calibration, model: ScriptedModel, rng: random.Random, *, first: bool
) -> KillAt:
    """When to kill: a random moment of ``target_pass`` (at once on a retry), or, ``mid_merge``, a random moment
    of the merges applied after the consolidation answer."""

    def kill_at(current: str, began: float) -> float | None:
        if current != target_pass:
            return None
        if mid_merge:
            sent = None
            deadline = time.monotonic() + 30
            while sent is None and time.monotonic() < deadline:
                sent = model.sent_after(began)
                time.sleep(0.001)
            return (sent or began) + rng.uniform(0, cal.apply_seconds)
        return began + (rng.uniform(0, cal.seconds.get(target_pass, 0.0) * 0.8) if first else 0.0)

    return kill_at


def _ids(target: Target) -> set[str]:
    with target.open() as rv:
        return {e.id for e in rv.store.facts.iter_all(AGENT)}


def _after_kill(
    target: Target, seeded: set[str], seen: Watched, label: str, cal: Calibration, result: FamilyResult
) -> None:
    if seen.error:
        result.fail(f"{label}: {seen.error}")
        return
    found = integrity(target)
    result.check(found == "ok", f"{label}: integrity after the kill: {found}")
    try:
        with target.open() as rv:
            _check_store(rv, seeded, label, result)
            status = rv.dream.status(AGENT)
            result.check(not status.running, f"{label}: dream status says running after the kill (a stale lock)")
            again = rv.dream.run(AGENT)
            wanted = "completed" if cal.phase == "completed" else again.phase
            result.check(
                again.phase == wanted and again.phase != "skipped",
                f"{label}: the next dream run {again.phase}: {short(again.reason, 120)}",
            )
            killed = next((r for r in rv.dream.history(AGENT, limit=50) if r.run_id == seen.run_id), None)
            phase = killed.phase if killed else "missing"
            result.check(phase != "running", f"{label}: the killed run is still recorded as running")
    except Exception as exc:  # the store no longer opens, or the dream raised: the finding
        result.fail(f"{label}: {type(exc).__name__}: {short(str(exc))}")


def _check_store(rv: reverie.Reverie, seeded: set[str], label: str, result: FamilyResult) -> None:
    """No half-applied merge, and no entry of the seeded store gone."""
    entries = {e.id: e for e in rv.store.facts.iter_all(AGENT)}
    half = []
    for entry in entries.values():
        if entry.archived and entry.superseded_by and entry.superseded_by not in entries:
            half.append(f"{entry.id} retired into a missing {entry.superseded_by}")
        sources = entry.metadata.get(MERGED_FROM) if not entry.archived else None
        for source in sources if isinstance(sources, list) else []:
            retired = entries.get(str(source))
            if retired is None or not (retired.archived and retired.superseded_by == entry.id):
                half.append(f"merged {entry.id} but its source {source} is not retired into it")
    result.check(not half, f"{label}: half-applied merge: {'; '.join(half[:2])}")
    gone = seeded - entries.keys()
    result.lost += len(gone)
    result.check(not gone, f"{label}: {len(gone)} entries of the store gone, e.g. {sorted(gone)[:2]}")
