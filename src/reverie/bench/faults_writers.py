"""Two fault families of ``reverie bench faults`` about writes: writers SIGKILLed at random moments, and a
disk that fills up under a writer.

kill-writers: each round forks a writer (``faults_child.write_forever``) from a fork server that has already
imported Reverie, lets it save for a random time (seeded; from zero, so some kills land while it opens the
store), SIGKILLs it, then checks the store: its integrity (SQLite's ``PRAGMA integrity_check`` of the file;
``check()`` on PostgreSQL) and, through a fresh engine, that ``memory.get`` finds every id the round
acknowledged. All rounds share one store, so damage from an early round shows in every later one; at the end
every id acknowledged in any round is read again.

full-disk (SQLite): a writer process whose files are capped at the store's size plus a margin
(``RLIMIT_FSIZE``: writes past it fail with EFBIG, as on a full disk) saves until saves fail. Each failure
must be a ``StorageError`` with a one-line message; afterwards, without the cap, every acknowledged save is
readable, no failed save left its text behind, and the file passes the integrity check. Then ``reverie memory
save`` of a large text with every file capped at ``CLI_LIMIT`` must fail with one line on stderr, no
traceback, and leave the store as it was.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import reverie
from reverie.bench.faults_child import AGENT, write_forever
from reverie.bench.faults_common import (
    FamilyResult,
    Progress,
    Target,
    child_env,
    integrity,
    one_line_error,
    short,
)
from reverie.errors import NotFound

KILL_DELAY = (0.0, 0.8)  # seconds after the fork: opening the store takes ~0.2 s, a save ~10 ms
EARLIER_SAMPLE = 50  # ids of earlier rounds read again after each round
FILL_MARGINS = (96 * 1024, 512 * 1024, 2 * 1024 * 1024)  # bytes past the largest store file
CLI_LIMIT = 40 * 1024  # the shared-memory index (32 KiB) fits; a large save's log frames do not
FILL_SECONDS = 300.0
SCOPE = reverie.Scope(agent_id=AGENT)


def kill_writers(target: Target, rounds: int, rng: random.Random, workdir: Path, progress: Progress) -> FamilyResult:
    result = FamilyResult("kill-writers")
    target.write_settings()
    with target.open():  # the store exists before the first kill (later rounds kill during opens too)
        pass
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["reverie", "reverie.bench.faults_child"])
    acked: list[str] = []
    lost: set[str] = set()
    for round_no in range(1, rounds + 1):
        ids, problem = _kill_round(ctx, target, rng, round_no, workdir)
        acked.extend(ids)
        problems = [problem] if problem else []
        problems += _check_round(target, ids, rng.sample(acked, min(EARLIER_SAMPLE, len(acked))), lost)
        result.check(not problems, f"round {round_no}: " + "; ".join(problems))
        if round_no % 25 == 0 or round_no == rounds:
            progress(f"kill-writers: round {round_no} of {rounds}, {len(acked)} acknowledged saves")
    with target.open() as rv:
        missing = _missing(rv, acked)
        lost.update(missing)
        live = sum(1 for e in rv.store.facts.iter_all(AGENT) if not e.archived)
    result.check(not missing, f"at the end, {len(missing)} acknowledged ids not found, e.g. {missing[:3]}")
    result.lost = len(lost)
    result.note(
        f"{rounds} writers killed, {len(acked):,} acknowledged saves; {max(live - len(acked), 0)} committed"
        " but not yet acknowledged when killed (at most one per round)"
    )
    return result


def _kill_round(
    ctx: ForkServerContext, target: Target, rng: random.Random, round_no: int, workdir: Path
) -> tuple[list[str], str | None]:
    """Fork a writer, collect its ids for a random time, SIGKILL it; its ids and what went wrong (or None)."""
    receiver, sender = ctx.Pipe(duplex=False)
    errors = workdir / f"writer-{round_no}.err"
    seed = f"{round_no}-{rng.random()}"
    proc = ctx.Process(target=write_forever, args=(str(target.home), seed, sender, str(errors)), daemon=True)
    proc.start()
    sender.close()
    ids: list[str] = []
    deadline = time.monotonic() + rng.uniform(*KILL_DELAY)
    while (left := deadline - time.monotonic()) > 0 and _receive(receiver, ids, left):
        pass
    alive = proc.is_alive()
    if alive and proc.pid is not None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    while _receive(receiver, ids, 0):
        pass
    receiver.close()
    if not alive or proc.exitcode != -signal.SIGKILL:
        text = errors.read_text(encoding="utf-8", errors="replace") if errors.exists() else ""
        return ids, f"the writer died by itself (exit {proc.exitcode}): {short(text, 300)}"
    return ids, None


def _receive(receiver: Connection, ids: list[str], timeout: float) -> bool:
    """One id into ``ids`` if one comes within ``timeout``; False when none came or the pipe closed."""
    try:
        if not receiver.poll(timeout):
            return False
        ids.append(receiver.recv_bytes().decode())
    except (EOFError, OSError):
        return False
    return True


def _check_round(target: Target, ids: list[str], earlier: list[str], lost: set[str]) -> list[str]:
    problems = []
    found = integrity(target)
    if found != "ok":
        problems.append(f"integrity: {found}")
    try:
        with target.open() as rv:
            missing = _missing(rv, ids + earlier)
    except Exception as exc:  # a store that no longer opens is the finding
        return [*problems, f"the store did not reopen: {type(exc).__name__}: {short(str(exc))}"]
    if missing:
        lost.update(missing)
        problems.append(f"{len(missing)} acknowledged ids not found, e.g. {missing[:3]}")
    return problems


def _missing(rv: reverie.Reverie, ids: list[str]) -> list[str]:
    missing = []
    for entry_id in ids:
        try:
            rv.memory.get(entry_id, scope=SCOPE)
        except NotFound:
            missing.append(entry_id)
    return missing


# -- full disk -------------------------------------------------------------------------------------------------
def full_disk(workdir: Path, progress: Progress) -> FamilyResult:
    result = FamilyResult("full-disk")
    target = Target(workdir / "full-disk")
    target.write_settings()
    with target.open() as rv:
        for n in range(50):
            rv.memory.save(f"fact {n}: the user keeps Lisbon hours", scope=SCOPE, dedup=False)
    for margin in FILL_MARGINS:
        progress(f"full-disk: filling with {margin // 1024} KiB left")
        _fill_case(target, margin, result)
    _cli_case(target, result)
    return result


def _fill_case(target: Target, margin: int, result: FamilyResult) -> None:
    label = f"{margin // 1024} KiB left"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "reverie.bench.faults_child", "fill", str(target.home), str(margin)],
            env=child_env(target.home), stdin=subprocess.DEVNULL, capture_output=True, text=True, encoding="utf-8",
            errors="replace", timeout=FILL_SECONDS, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        result.check(False, f"{label}: the writer hung past {FILL_SECONDS:g} s")
        return
    events = [_event(line) for line in proc.stdout.splitlines() if line.strip()]
    acks = [str(e["ack"]) for e in events if "ack" in e]
    errors = [e for e in events if "error" in e]
    crashed = proc.returncode != 0 or "Traceback" in proc.stderr
    result.check(not crashed, f"{label}: the writer crashed (exit {proc.returncode}): {short(proc.stderr, 300)}")
    result.check(bool(errors), f"{label}: {len(acks)} saves and none failed (the cap was never reached)")
    unclean = [e for e in errors if not _clean(e)]
    example = f"{unclean[0].get('error')}: {short(str(unclean[0].get('message')))}" if unclean else ""
    result.check(
        not unclean, f"{label}: {len(unclean)} of {len(errors)} failed saves not a clean StorageError: {example}"
    )
    first = f"{errors[0].get('error')}: {errors[0].get('message')}" if errors else "no failure"
    first = first.replace(str(target.home) + os.sep, "")  # the store's own directory is a temporary one
    result.note(f"{label}: {len(acks)} saves, then {short(first, 120)}")
    _after_fill(target, label, acks, [str(e.get("text")) for e in errors], result)


def _clean(event: dict[str, Any]) -> bool:
    """A failed save reported as a ``StorageError`` with a one-line message."""
    message = str(event.get("message", "")).strip()
    return bool(event.get("storage_error")) and bool(message) and "\n" not in message


def _event(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {"noise": line}
    return value if isinstance(value, dict) else {"noise": line}


def _after_fill(target: Target, label: str, acks: list[str], failed_texts: list[str], result: FamilyResult) -> None:
    """Without the cap: integrity, every acknowledged save readable, no failed save's text stored."""
    found = integrity(target)
    result.check(found == "ok", f"{label}: integrity after the full disk: {found}")
    try:
        with target.open() as rv:
            missing = _missing(rv, acks)
            stored = {e.content for e in rv.store.facts.iter_all(AGENT)}
    except Exception as exc:
        result.check(False, f"{label}: the store did not reopen: {type(exc).__name__}: {short(str(exc))}")
        result.lost += len(acks)
        return
    result.lost += len(missing)
    result.check(not missing, f"{label}: {len(missing)} acknowledged saves lost, e.g. {missing[:3]}")
    leftovers = [text for text in failed_texts if text in stored]
    result.check(not leftovers, f"{label}: {len(leftovers)} failed saves were stored anyway")


def _cli_case(target: Target, result: FamilyResult) -> None:
    """``reverie memory save`` on a disk with almost no room left: one clean line, the store as it was."""
    with target.open() as rv:
        before = sum(1 for _ in rv.store.facts.iter_all(AGENT))
    text = "the full-disk CLI save: " + "padding " * 2300
    args = ["limited", str(CLI_LIMIT), "memory", "save", text, "--agent", AGENT]
    proc = subprocess.run(
        [sys.executable, "-m", "reverie.bench.faults_child", *args], env=child_env(target.home),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, encoding="utf-8", errors="replace",
        timeout=FILL_SECONDS, check=False,
    )  # fmt: skip
    problem = one_line_error(proc)
    result.check(problem is None, f"CLI save on a full disk: {problem}")
    found = integrity(target)
    result.check(found == "ok", f"CLI save on a full disk: integrity afterwards: {found}")
    with target.open() as rv:
        after = sum(1 for _ in rv.store.facts.iter_all(AGENT))
    if proc.returncode != 0:  # a refused save leaves the store as it was
        result.check(after == before, f"CLI save on a full disk failed but {after - before} entries were added")
    if problem is None:
        said = (proc.stderr.strip() or proc.stdout.strip()).replace(str(target.home) + os.sep, "")
        result.note(f"CLI on a full disk: {short(said, 120)}")
