"""Start-up time, behind ``reverie bench startup``: how long each face takes to answer from a fresh process.

Every case runs ``runs`` times (default 5), each in a fresh subprocess of this interpreter, interleaved (run 1
of every case, then run 2, ...) so a burst of load on the machine touches all of them alike; reported: the
median and the max wall time, and the median CPU time (user + system, every thread) the process had used by
then (at its exit, or for the servers at the answer, from ``/proc``; none elsewhere), which load on the machine
inflates far less: a quiet machine's wall time approaches it (a model running on several threads can take more
CPU than wall time). The cases:
- baselines: ``python -c pass``, ``import numpy``, ``import onnxruntime`` (what no Reverie code can beat);
- ``reverie --version``, ``reverie --help``, ``reverie status``;
- a one-shot ``reverie memory search peanuts`` on a home holding a few saved facts (the default embedder,
  MiniLM: the model load is included);
- ``reverie mcp`` over stdio: from the spawn to the ``initialize`` response, and to the first ``search_memory``
  result (JSON-RPC lines written to its stdin);
- ``reverie serve --no-auth`` on a free 127.0.0.1 port: from the spawn to the first 200 from ``/health``, and
  to the first successful search (sent as soon as ``/health`` answers).

The code measured is ``python -m reverie`` under ``PYTHONPATH``: this process's by default, or another tree's
source (``python_path``, e.g. an older checkout's ``src``), so before and after are measured in one run, on one
machine, interleaved. Each code gets its own home, written by that code. ``import_costs`` are the top
cumulative costs of ``import reverie.cli.app`` from ``python -X importtime``, with the heavy libraries (numpy,
onnxruntime, FastAPI, ...) that import pulls in.
"""

from __future__ import annotations

import json
import os
import queue
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from reverie.errors import ReverieError, ValidationError

DEFAULT_RUNS = 5
TOP_IMPORTS = 15
TIMEOUT = 120.0  # seconds a case may take before it counts as failed
QUERY = "peanuts"
FACTS = (
    "The user is allergic to peanuts",
    "Maya keeps Europe/Lisbon hours",
    "Lantern runs on PostgreSQL 16",
    "Review comments should be kind and specific",
    "Production deploys happen on Tuesday afternoons",
)
# What ``reverie --version`` and ``--help`` must not load (issue 21): the model runtime, the web and MCP stacks.
HEAVY = ("numpy", "onnxruntime", "fastapi", "uvicorn", "starlette", "mcp", "httpx", "jsonschema", "pydantic")
BASELINES = {
    "python -c pass": "pass",
    "python -c 'import numpy'": "import numpy",
    "python -c 'import onnxruntime'": "import onnxruntime",
}
CLI_CASES = {
    "reverie --version": ("--version",),
    "reverie --help": ("--help",),
    "reverie status": ("status",),
    f"reverie memory search {QUERY} (one-shot)": ("memory", "search", QUERY),
}
MCP_INITIALIZE, MCP_SEARCH = "mcp stdio: initialize answered", "mcp stdio: first search answered"
SERVE_HEALTH, SERVE_SEARCH = "serve: first /health 200", "serve: first search 200"
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Timing:
    """One case on one code: ``median_ms`` and ``max_ms`` of ``runs`` fresh processes, and the median CPU
    time the process had used by then (None for a server where ``/proc`` is missing)."""

    case: str
    code: str
    median_ms: float
    max_ms: float
    runs: int
    cpu_median_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ImportCost:
    module: str
    cumulative_ms: float
    self_ms: float


@dataclass(frozen=True, slots=True)
class CodeImports:
    """What ``import reverie.cli.app`` costs on one code: the top cumulative imports, the heavy libraries it
    loads (of ``HEAVY``) and how many modules it imports in all."""

    code: str
    top: tuple[ImportCost, ...]
    heavy: tuple[str, ...]
    modules: int


@dataclass(frozen=True, slots=True)
class StartupReport:
    runs: int
    python: str
    codes: tuple[str, ...]
    timings: tuple[Timing, ...]
    imports: tuple[CodeImports, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Code:
    """A tree of Reverie to measure: its label, its ``PYTHONPATH`` (None: this process's) and its home."""

    label: str
    python_path: str | None
    home: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("REVERIE_")}
        if self.python_path is not None:
            env["PYTHONPATH"] = self.python_path
        env["REVERIE_HOME"] = str(self.home)
        return env

    def reverie(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "reverie", "--home", str(self.home), *args]


def run_startup(
    *,
    runs: int = DEFAULT_RUNS,
    python_paths: tuple[str | None, ...] = (None,),
    importtime: bool = True,
    progress: Progress | None = None,
) -> StartupReport:
    """Measure every case ``runs`` times on each code of ``python_paths`` (None: this process's code)."""
    if runs < 1:
        raise ValidationError("--runs must be at least 1", field="runs")
    say = progress or (lambda _message: None)
    samples: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="reverie-bench-startup-") as tmp:
        codes = [_Code(_label(path), path, Path(tmp) / f"home-{i}") for i, path in enumerate(python_paths)]
        for code in codes:
            say(f"{code.label}: saving {len(FACTS)} facts into a new home")
            _prepare(code)
        for n in range(1, runs + 1):
            say(f"run {n} of {runs}")
            for case, seconds, cpu_seconds in _one_round(codes):
                samples.setdefault(case, []).append(seconds)
                if cpu_seconds is not None:
                    cpu.setdefault(case, []).append(cpu_seconds)
        imports = tuple(_imports(code) for code in codes) if importtime else ()
    timings = tuple(
        Timing(
            case,
            code,
            _ms(statistics.median(values)),
            _ms(max(values)),
            len(values),
            _ms(statistics.median(cpu[case, code])) if (case, code) in cpu else None,
        )
        for (case, code), values in samples.items()
    )
    notes = (
        "wall time from the spawn of a fresh `python -m reverie ...` to its exit (or to the answer named); "
        "baselines are the bare interpreter and the imports no start-up can avoid once a model is needed",
    )
    return StartupReport(runs, sys.version.split()[0], tuple(c.label for c in codes), timings, imports, notes)


def _label(python_path: str | None) -> str:
    return "this code" if python_path is None else f"PYTHONPATH={python_path}"


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 1)


def _one_round(codes: list[_Code]) -> Iterator[tuple[tuple[str, str], float, float | None]]:
    """One run of every case on every code: ((case, code label), wall seconds, CPU seconds or None)."""
    for case, source in BASELINES.items():
        yield (case, "-"), *_timed([sys.executable, "-c", source], dict(os.environ))
    for case, args in CLI_CASES.items():
        for code in codes:
            yield (case, code.label), *_timed(code.reverie(*args), code.env())
    for code in codes:
        initialize, search = _mcp_stdio(code)
        yield (MCP_INITIALIZE, code.label), *initialize
        yield (MCP_SEARCH, code.label), *search
    for code in codes:
        health, search = _serve(code)
        yield (SERVE_HEALTH, code.label), *health
        yield (SERVE_SEARCH, code.label), *search


def _prepare(code: _Code) -> None:
    """A home holding ``FACTS``, embedded, written by the code measured (its own schema)."""
    script = (
        "import sys, reverie\n"
        "with reverie.open(sys.argv[1], embedding={'background': False}) as rv:\n"
        "    for fact in sys.argv[2:]:\n"
        "        rv.memory.save(fact)\n"
        "    rv.embed_pending()\n"
    )
    _timed([sys.executable, "-c", script, str(code.home), *FACTS], code.env())


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds from the spawn of ``argv`` to its exit, and its CPU seconds (user + system); a failure is
    an error naming the command."""
    used = _children_cpu()
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ReverieError(f"{_shown(argv)} took more than {TIMEOUT:.0f} s") from None
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise ReverieError(f"{_shown(argv)} exited {done.returncode}: {_tail(done.stderr)}")
    return elapsed, _children_cpu() - used


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (``_timed`` runs one at a time)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _shown(argv: list[str]) -> str:
    return " ".join(["python", *argv[1:]])[:200]


def _tail(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return " | ".join(lines[-3:]) or "no message"


# -- MCP over stdio ----------------------------------------------------------------------------------------
Moment = tuple[float, float | None]  # wall seconds since the spawn, and the process's CPU seconds by then


def _moment(proc: subprocess.Popen[bytes], start: float) -> Moment:
    return time.perf_counter() - start, _cpu_of(proc.pid)


def _cpu_of(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) process ``pid`` has used, from ``/proc`` (None without it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14 and 15


def _mcp_stdio(code: _Code) -> tuple[Moment, Moment]:
    """Seconds from the spawn of ``reverie mcp`` to its ``initialize`` response, and to its first search."""
    with _spawned(code.reverie("mcp"), code.env(), stdin=True) as (proc, start, errors):
        assert proc.stdin is not None and proc.stdout is not None
        lines = _lines(proc.stdout)
        _send(proc.stdin, 1, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"},
        })  # fmt: skip
        _answer(lines, 1, proc, errors)
        initialized = _moment(proc, start)
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        _send(proc.stdin, 2, "tools/call", {"name": "search_memory", "arguments": {"query": QUERY}})
        result = _answer(lines, 2, proc, errors)
        searched = _moment(proc, start)
        if result.get("isError") or "error" in result:
            raise ReverieError(f"reverie mcp: the search failed: {str(result)[:300]}")
        proc.stdin.close()
        proc.wait(TIMEOUT)
    return initialized, searched


def _send(stream: IO[bytes], request_id: int, method: str, params: dict[str, Any]) -> None:
    stream.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
    stream.write(b"\n")
    stream.flush()


def _lines(stream: IO[bytes]) -> queue.Queue[bytes]:
    """The lines of ``stream``, read on a thread (a pipe's readline cannot time out); b"" at its end."""
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        for line in iter(stream.readline, b""):
            lines.put(line)
        lines.put(b"")

    threading.Thread(target=pump, name="bench-startup-mcp", daemon=True).start()
    return lines


def _answer(lines: queue.Queue[bytes], request_id: int, proc: subprocess.Popen[bytes], errors: IO[bytes]) -> Any:
    """The result (or error) of JSON-RPC request ``request_id``, skipping notifications and other answers."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise ReverieError(f"reverie mcp did not answer request {request_id} in {TIMEOUT:.0f} s") from None
        if not line:
            raise ReverieError(f"reverie mcp exited ({proc.poll()}) before answering: {_read(errors)}")
        message = json.loads(line)
        if message.get("id") == request_id:
            return message.get("result", message)


# -- the HTTP API ------------------------------------------------------------------------------------------
def _serve(code: _Code) -> tuple[Moment, Moment]:
    """Seconds from the spawn of ``reverie serve`` to its first 200 from ``/health``, and to the first 200 of a
    search sent as soon as ``/health`` answered."""
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    argv = code.reverie("serve", "--no-auth", "--port", str(port))
    with _spawned(argv, code.env()) as (proc, start, errors):
        _poll(f"{origin}/health", proc, errors)
        health = _moment(proc, start)
        _poll(f"{origin}/api/memory/agents/default/search?query={QUERY}", proc, errors)
        search = _moment(proc, start)
    return health, search


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _poll(url: str, proc: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    """GET ``url`` until it answers 200 (every 5 ms while nothing listens); an error if the server exits."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ReverieError(f"reverie serve exited ({proc.returncode}): {_read(errors)}")
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:  # noqa: S310 (loopback, http)
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            raise ReverieError(f"reverie serve answered {exc.code} to {url}") from None
        except OSError:  # not listening yet
            time.sleep(0.005)
    raise ReverieError(f"reverie serve did not answer {url} in {TIMEOUT:.0f} s")


# -- processes ---------------------------------------------------------------------------------------------
@contextmanager
def _spawned(
    argv: list[str], env: dict[str, str], *, stdin: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], float, IO[bytes]]]:
    """``argv`` started (stdout a pipe, stderr a file), its start time and its stderr; stopped after: SIGTERM,
    then SIGKILL if it has not exited within ``TIMEOUT``."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=errors,
        )  # fmt: skip
        try:
            yield proc, start, errors
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()


def _read(errors: IO[bytes]) -> str:
    errors.flush()
    errors.seek(0)
    return _tail(errors.read())


# -- import costs ------------------------------------------------------------------------------------------
_IMPORT_LINE = re.compile(r"^import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)\s*$")


def _imports(code: _Code) -> CodeImports:
    """``python -X importtime -c "import reverie.cli.app"`` on ``code``: the top cumulative costs."""
    argv = [sys.executable, "-X", "importtime", "-c", "import reverie.cli.app"]
    done = subprocess.run(argv, env=code.env(), capture_output=True, timeout=TIMEOUT)
    if done.returncode != 0:
        raise ReverieError(f"import reverie.cli.app failed on {code.label}: {_tail(done.stderr)}")
    costs: list[ImportCost] = []
    for line in done.stderr.decode("utf-8", "replace").splitlines():
        match = _IMPORT_LINE.match(line)
        if match is not None:
            own, cumulative, name = int(match.group(1)), int(match.group(2)), match.group(4)
            costs.append(ImportCost(name, round(cumulative / 1000.0, 1), round(own / 1000.0, 1)))
    heavy = sorted({c.module.split(".")[0] for c in costs} & set(HEAVY))
    largest: dict[str, ImportCost] = {}  # a module named twice (``-c`` imports what a package imported): once
    for cost in sorted(costs, key=lambda c: -c.cumulative_ms):
        largest.setdefault(cost.module, cost)
    top = list(largest.values())[:TOP_IMPORTS]
    return CodeImports(code.label, tuple(top), tuple(heavy), len(costs))
