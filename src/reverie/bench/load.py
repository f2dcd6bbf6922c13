"""The API under concurrent load, behind ``reverie bench load``: a real ``reverie serve`` driven by N clients,
beside the same mix through the library in this process, in the same run.

A run:
1. seeds a temporary home (SQLite, or a new database on PostgreSQL): the everyday facts
   (``data/everyday.json``) saved for every agent, a few sessions per agent with a few turns each, an admin
   API key; everything embedded before the clock starts;
2. copies it (a file copy; on PostgreSQL a database made from it as a template), for the library run;
3. starts ``reverie serve`` on a free 127.0.0.1 port as a subprocess (``--workers`` processes), warms it
   up (one search per agent, untimed), and drives it with ``clients`` threads for ``seconds`` with the mix of
   ``load_drive``; then stops it and checks that every acknowledged save is there: by id, and among the hits
   of a search for its own text;
4. drives the copy the same way through ``reverie.open`` (the same threads, no HTTP), checks it the same
   way, and reports the API's throughput as a share of the library's.

``server_pythonpath`` runs the server subprocess on other code (the "before" of docs/benchmarks.md: the
code of an earlier checkout on ``PYTHONPATH``); the library run is always this code.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

import reverie
from reverie.bench import postgres
from reverie.bench.everyday import load_everyday
from reverie.bench.load_drive import MIX, ApiTarget, LibraryTarget, Plan, RunResult, Saved, drive
from reverie.bench.recall import workspace
from reverie.errors import NotFound, ReverieError, ValidationError

BACKENDS = ("sqlite", "postgres")
SESSIONS_PER_AGENT = 3
TURNS_PER_SESSION = 6
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
DEFAULT_SEED = 21
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Loss:
    """What the check after a run found of the acknowledged saves."""

    acknowledged: int
    missing_by_id: int  # no entry under the answered id (or archived)
    missing_by_search: int  # the entry is not among the hits of a search for the saved text
    examples: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LoadReport:
    backend: str
    clients: int
    seconds: float
    agents: int
    workers: int
    server_processes: int  # server processes that started serving (uvicorn's "Started server process" lines)
    seeded_entries: int
    seed_seconds: float
    embedder: str | None
    mix: Mapping[str, int]
    server_code: str  # "this checkout", or the PYTHONPATH the server ran on
    api: RunResult
    api_loss: Loss
    library: RunResult | None
    library_loss: Loss | None
    ratio: float | None  # API throughput / library throughput
    notes: tuple[str, ...]


def run_load(
    *,
    backend: str = "sqlite",
    clients: int = 16,
    seconds: float = 30.0,
    agents: int = 10,
    workers: int = 1,
    store_url: str | None = None,
    settings: Mapping[str, Mapping[str, Any]] | None = None,
    server_pythonpath: str | None = None,
    library: bool = True,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> LoadReport:
    """Seed, serve, drive, check; then the same mix in-process. ``settings``: sections written to the home's
    ``reverie.toml`` (the server and the library read the same), e.g. ``{"embedding": {"provider": "hash"}}``."""
    _check(backend, clients, seconds, agents, workers)
    say = progress or (lambda _: None)
    with ExitStack() as stack:
        root = stack.enter_context(workspace(None, "reverie-bench-load-"))
        sections = {name: dict(values) for name, values in (settings or {}).items()}
        admin: str | None = None
        if backend == "postgres":
            admin = stack.enter_context(postgres.server(store_url))
            sections["store"] = {**sections.get("store", {}), "url": stack.enter_context(_database(admin, "api"))}
        home = root / "api"
        _write_settings(home, sections)
        say(f"seeding {agents} agents")
        began = time.perf_counter()
        plan, secret, seeded, embedder = seed_home(home, agents)
        seed_seconds = time.perf_counter() - began
        copy = root / "library"
        if library:
            copy_sections = dict(sections)
            if admin is not None:
                copy_sections["store"] = {"url": stack.enter_context(_database(admin, "lib", template=sections))}
            else:
                shutil.copytree(home, copy)
            _write_settings(copy, copy_sections)
        say(f"serving with {workers} worker(s); {clients} clients for {seconds:g} s")
        api, saves = _api_run(home, root, plan, secret, clients, seconds, workers, seed, server_pythonpath)
        started = _tail(root / "serve.log", chars=10**7).count("Started server process")
        say(f"api: {api.throughput:g} requests/s; checking {api.acknowledged_saves} acknowledged saves")
        api_loss = check_saves(home, saves)
        lib = lib_loss = None
        if library:
            say(f"library: {clients} threads for {seconds:g} s")
            lib, lib_loss = _library_run(copy, plan, clients, seconds, seed)
            say(f"library: {lib.throughput:g} calls/s")
    ratio = round(api.throughput / lib.throughput, 3) if lib is not None and lib.throughput else None
    return LoadReport(
        backend=backend, clients=clients, seconds=seconds, agents=agents, workers=workers, server_processes=started,
        seeded_entries=seeded, seed_seconds=round(seed_seconds, 1), embedder=embedder, mix=dict(MIX),
        server_code=server_pythonpath or "this checkout", api=api, api_loss=api_loss, library=lib,
        library_loss=lib_loss, ratio=ratio, notes=_notes(api, lib),
    )  # fmt: skip


def _check(backend: str, clients: int, seconds: float, agents: int, workers: int) -> None:
    if backend not in BACKENDS:
        raise ValidationError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}", field="backend")
    if not 1 <= clients <= 512:
        raise ValidationError("--clients must be 1 to 512", field="clients")
    if not 0 < seconds <= 3600:
        raise ValidationError("--seconds must be over 0 and at most 3600", field="seconds")
    if not 1 <= agents <= 1000:
        raise ValidationError("--agents must be 1 to 1000", field="agents")
    if not 1 <= workers <= 64:
        raise ValidationError("--workers must be 1 to 64", field="workers")


def _notes(api: RunResult, lib: RunResult | None) -> tuple[str, ...]:
    notes = ["latencies are per call, from the client's side (the API's include HTTP on loopback)"]
    if api.errors:
        notes.append(f"{api.errors} API calls failed; the first: {api.first_errors[0]}")
    if lib is not None and lib.errors:
        notes.append(f"{lib.errors} library calls failed; the first: {lib.first_errors[0]}")
    return tuple(notes)


# -- the home --------------------------------------------------------------------------------------------
def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a JSON string is a TOML basic string


def _write_settings(home: Path, sections: Mapping[str, Mapping[str, Any]]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
        lines.append("")
    (home / "reverie.toml").write_text("\n".join(lines), encoding="utf-8")


@contextmanager
def _database(admin_url: str, label: str, template: Mapping[str, Any] | None = None) -> Iterator[str]:
    """A new database on ``admin_url``'s server; with ``template`` (the sections naming the seeded one), a copy
    of that database (``CREATE DATABASE … TEMPLATE``: nobody is connected to it once seeding has closed)."""
    if template is None:
        with postgres.fresh_database(admin_url, f"load_{label}") as url:
            yield url
        return
    import psycopg

    parts = urlsplit(str(template["store"]["url"]))
    source = parts.path.lstrip("/")
    name = f"{source}_{label}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {source}")
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def agent_names(count: int) -> tuple[str, ...]:
    return tuple(f"agent-{i:02d}" for i in range(count))


def seed_home(home: Path, agents: int) -> tuple[Plan, str, int, str | None]:
    """Every agent gets the everyday facts and a few sessions with turns; an admin key; all embedded.
    Returns the plan, the key's secret, the entries saved and the embedding model."""
    data = load_everyday()
    names = agent_names(agents)
    sessions: dict[str, tuple[str, ...]] = {}
    with reverie.open(home, embedding={"background": False}) as rv:
        _, secret = rv.keys.create("bench-load", agent_id=None, scopes=["admin"])
        for agent in names:
            items = [{"content": f.content, "category": f.category or "notes"} for f in data.facts]
            rv.memory.save_many(items, scope=reverie.Scope(agent_id=agent), dedup=False)
            ids = []
            for s in range(SESSIONS_PER_AGENT):
                session = rv.conversation.create(f"load-{s}", agent_id=agent).session_id
                for t in range(TURNS_PER_SESSION):
                    role = "user" if t % 2 == 0 else "assistant"
                    rv.conversation.add_turn(session, role, data.queries[(s * 7 + t) % len(data.queries)].text,
                                             agent_id=agent)  # fmt: skip
                ids.append(session)
            sessions[agent] = tuple(ids)
        rv.embed_pending()
        model = rv.embedder.model_id if rv.embedder is not None else None
        seeded = rv.stats().live
    queries = tuple(q.text for q in data.queries)
    return Plan(agents=names, sessions=sessions, queries=queries), secret, seeded, model


# -- the server ------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server_process(home: Path, log: Path, workers: int = 1, pythonpath: str | None = None) -> Iterator[str]:
    """``reverie serve`` on a free loopback port until the block ends (SIGTERM, then a wait); yields its origin."""
    port = free_port()
    command = [sys.executable, "-m", "reverie", "--home", str(home), "serve", "--host", "127.0.0.1", "--port",
               str(port)]  # fmt: skip
    if workers > 1:
        command += ["--workers", str(workers)]
    env = {k: v for k, v in os.environ.items() if k != "REVERIE_HOME"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        origin = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(process, origin, log)
            yield origin
        finally:
            _stop(process)


def _wait_healthy(process: subprocess.Popen[bytes], origin: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ReverieError(f"reverie serve exited with {process.returncode}: {_tail(log)}")
        try:
            if httpx.get(f"{origin}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise ReverieError(f"reverie serve did not answer /health within {START_TIMEOUT:g} s: {_tail(log)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _tail(log: Path, chars: int = 2000) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def _api_run(
    home: Path, root: Path, plan: Plan, secret: str, clients: int, seconds: float, workers: int, seed: int,
    pythonpath: str | None,
) -> tuple[RunResult, list[Saved]]:  # fmt: skip
    with server_process(home, root / "serve.log", workers, pythonpath) as origin:
        warm = ApiTarget(origin, secret)
        try:
            for agent in plan.agents:
                warm.search(agent, plan.queries[0])
        finally:
            warm.close()
        return drive("api", [ApiTarget(origin, secret) for _ in range(clients)], plan, seconds, seed)


def _library_run(home: Path, plan: Plan, clients: int, seconds: float, seed: int) -> tuple[RunResult, Loss]:
    # The library is opened as `reverie serve` opens it: with its background workers.
    with reverie.open(home, embedding={"background": True}) as rv:
        for agent in plan.agents:
            rv.memory.search(plan.queries[0], limit=10, scope=reverie.Scope(agent_id=agent))
        result, saves = drive("library", [LibraryTarget(rv) for _ in range(clients)], plan, seconds, seed)
    return result, check_saves(home, saves)


# -- the check -------------------------------------------------------------------------------------------
def check_saves(home: Path, saves: Sequence[Saved], kept: int = 5) -> Loss:
    """Every acknowledged save, read back by id and searched for by its text (with the workers off)."""
    by_id = by_search = 0
    examples: list[str] = []
    with reverie.open(home, embedding={"background": False}) as rv:
        for saved in saves:
            scope = reverie.Scope(agent_id=saved.agent)
            try:
                entry = rv.memory.get(saved.entry_id, scope=scope)
                present = not entry.archived
            except NotFound:
                present = False
            if not present:
                by_id += 1
                if len(examples) < kept:
                    examples.append(f"{saved.entry_id}: not found by id")
                continue
            hits = rv.memory.search(saved.text, limit=10, scope=scope, include_superseded=True)
            if saved.entry_id not in {hit.entry.id for hit in hits}:
                by_search += 1
                if len(examples) < kept:
                    examples.append(f"{saved.entry_id}: not among the hits for {saved.text!r}")
    return Loss(len(saves), by_id, by_search, tuple(examples))


# -- the text report -------------------------------------------------------------------------------------
def _run_lines(run: RunResult, loss: Loss) -> list[str]:
    lines = [
        f"{run.target}: {run.requests:,} calls in {run.seconds:.1f} s = {run.throughput:,.1f} calls/s, "
        f"{run.errors} errors; acknowledged saves {loss.acknowledged}, missing by id {loss.missing_by_id}, "
        f"missing by search {loss.missing_by_search}",
        f"  {'operation':<10} {'calls':>7} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}",
    ]
    for op in run.ops:
        lines.append(
            f"  {op.op:<10} {op.count:>7,} {op.errors:>6} {op.p50_ms:>8.1f} {op.p95_ms:>8.1f} {op.p99_ms:>8.1f} "
            f"{op.max_ms:>8.1f}"
        )
    lines.extend(f"  error: {message}" for message in run.first_errors)
    lines.extend(f"  lost: {example}" for example in loss.examples)
    return lines


def format_report(report: LoadReport) -> str:
    """The report as plain text: the setup, then each run's throughput and per-operation latencies."""
    mix = ", ".join(f"{op} {share}%" for op, share in report.mix.items())
    lines = [
        f"load: {report.backend}, {report.clients} clients, {report.seconds:g} s, {report.agents} agents, "
        f"{report.server_processes} server process(es) on {report.server_code}; {report.seeded_entries:,} entries "
        f"seeded and embedded in {report.seed_seconds:g} s (model {report.embedder})",
        f"mix: {mix}",
        *_run_lines(report.api, report.api_loss),
    ]
    if report.library is not None and report.library_loss is not None:
        lines += _run_lines(report.library, report.library_loss)
        lines.append(f"API / library throughput: {report.ratio if report.ratio is not None else '-'}")
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines)
