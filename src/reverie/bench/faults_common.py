"""What the fault families of ``reverie bench faults`` share: a family's result, the store a family works on
(a SQLite home, or a PostgreSQL database with a home for its settings), the settings file the child processes
read, the ``reverie`` CLI and ``reverie serve`` as real child processes, and the integrity checks.

Invariants:
- Every child process is a real ``python`` process started from this interpreter, with the caller's
  ``REVERIE_*`` variables removed (the user's own settings must not leak into a fault run) and
  ``REVERIE_HOME`` set to the family's temporary home.
- Everything listens and connects on 127.0.0.1 only; a server process is stopped (SIGTERM, then SIGKILL)
  before its context exits, whatever happened inside.
- A family result never raises for what it found: failures are counted and described in ``notes``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import reverie

Progress = Callable[[str], None]
DB_FILE = "reverie.db"
MAX_NOTES = 12  # per family: the first ones say what went wrong; the count says how often
SERVE_START_SECONDS = 60.0
CLI_SECONDS = 120.0
# The settings every family's home starts from: a cheap deterministic embedder, no LLM, nothing that would
# call out of the machine.
BASE_SETTINGS: dict[str, dict[str, Any]] = {
    "embedding": {"provider": "hash"},
    "llm": {"provider": "none"},
    "graph": {"extraction": "off"},
}


@dataclass
class FamilyResult:
    """One family's row: cases run, failures among them, acknowledged writes lost, what it found."""

    family: str
    cases: int = 0
    failures: int = 0
    lost: int = 0
    seconds: float = 0.0
    skipped: bool = False
    notes: list[str] = field(default_factory=list)
    _dropped: int = 0

    def fail(self, note: str) -> None:
        """One failed case, described (only the first ``MAX_NOTES`` descriptions are kept)."""
        self.failures += 1
        self.note(note)

    def note(self, note: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(note)
        else:
            self._dropped += 1

    def check(self, ok: bool, note: str) -> bool:
        """One case: counted, and a failure with ``note`` unless ``ok``."""
        self.cases += 1
        if not ok:
            self.fail(note)
        return ok

    def finish(self) -> None:
        if self._dropped:
            self.notes.append(f"… and {self._dropped} more")
            self._dropped = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "cases": self.cases,
            "failures": self.failures,
            "lost": self.lost,
            "seconds": round(self.seconds, 1),
            "skipped": self.skipped,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Target:
    """Where a family's store lives: ``home`` holds ``reverie.toml`` (and, without ``url``, the SQLite file)."""

    home: Path
    url: str | None = None  # a PostgreSQL database; None: <home>/reverie.db

    @property
    def backend(self) -> str:
        return "sqlite" if self.url is None else "postgres"

    @property
    def db_file(self) -> Path:
        return self.home / DB_FILE

    def write_settings(self, extra: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """``<home>/reverie.toml``: the base settings, the store URL, then ``extra`` (section by section)."""
        sections: dict[str, dict[str, Any]] = {name: dict(values) for name, values in BASE_SETTINGS.items()}
        if self.url is not None:
            sections["store"] = {"url": self.url}
        for name, values in (extra or {}).items():
            sections[name] = {**sections.get(name, {}), **values}
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "reverie.toml").write_text(toml_text(sections), encoding="utf-8")

    def open(self, **overrides: dict[str, Any]) -> reverie.Reverie:
        """The engine on this target, in this process, without background threads (``overrides``: more
        settings, section by section)."""
        sections: dict[str, Any] = {"embedding": {"background": False}, "memory": {"expansion_background": False}}
        for name, values in overrides.items():
            sections[name] = {**sections.get(name, {}), **values}
        return reverie.open(self.home, **sections)


def toml_text(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """A TOML document of flat tables (``agents.default`` is a dotted table name)."""
    lines: list[str] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def child_env(home: Path) -> dict[str, str]:
    """The environment of a child process: the caller's, without its ``REVERIE_*`` settings, on ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REVERIE_")}
    env["REVERIE_HOME"] = str(home)
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "400"  # Rich wraps a long error line at 80 columns when not on a terminal
    return env


def run_cli(home: Path, *args: str, timeout: float = CLI_SECONDS) -> subprocess.CompletedProcess[str]:
    """``python -m reverie ARGS`` on ``home``; its exit code and output (a hang past ``timeout`` is rc 124)."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "reverie", *args],
            env=child_env(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return subprocess.CompletedProcess(exc.cmd, 124, out, err + f"\n(timed out after {timeout:g} s)")


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str | None:
    """Why ``proc``'s output is not a clean failure (non-zero exit, one line, no traceback), or None."""
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    if proc.returncode == 0:
        return "exited 0"
    if proc.returncode == 124:
        return "hung"
    if any("Traceback" in line for line in lines):
        return f"a traceback (exit {proc.returncode})"
    if len(lines) != 1:
        return f"{len(lines)} lines of output (exit {proc.returncode}): {short(' | '.join(lines))}"
    return None


def short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ServeProcess:
    """A ``reverie serve`` child on a free loopback port; its output goes to ``log``."""

    def __init__(self, home: Path, log: Path) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("w", encoding="utf-8") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "reverie", "serve", "--port", str(self.port)],
                env=child_env(home),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = SERVE_START_SECONDS) -> bool:
        """True once ``/health`` answers 200; False when the process exits (or ``timeout`` passes) first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if httpx.get(f"{self.origin}/health", timeout=1).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        return False

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextmanager
def serving(home: Path, log: Path) -> Iterator[ServeProcess]:
    """A ready ``reverie serve`` on ``home``; raises RuntimeError (with its output) when it does not start."""
    server = ServeProcess(home, log)
    try:
        if not server.wait_ready():
            raise RuntimeError(f"reverie serve did not start: {short(server.output(), 400)}")
        yield server
    finally:
        server.stop()


def sqlite_integrity(db_file: Path) -> str:
    """``PRAGMA integrity_check`` of the file, by plain sqlite3: "ok" or what it says."""
    try:
        with closing(sqlite3.connect(db_file, timeout=30)) as conn:
            rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok" if rows == ["ok"] else short("; ".join(rows))


def integrity(target: Target, rv: reverie.Reverie | None = None) -> str:
    """ "ok", or what is wrong: SQLite's own integrity check of the file; on PostgreSQL, ``rv.check()``."""
    if target.url is None:
        return sqlite_integrity(target.db_file)
    if rv is None:
        with target.open() as engine:
            return integrity(target, engine)
    report = rv.check()
    return "ok" if report.ok else short(str(report.checks))


def fingerprint(path: Path) -> tuple[str, int, int]:
    """sha256, size and mtime (ns) of a file; ("missing", 0, 0) when it does not exist."""
    try:
        data = path.read_bytes()
        return hashlib.sha256(data).hexdigest(), len(data), path.stat().st_mtime_ns
    except FileNotFoundError:
        return "missing", 0, 0
