"""Two writer processes and a reader process share one store: no caller ever sees an error (in particular no
"database is locked"), no committed save is lost, and scopes stay apart.

Writers record each id only after ``save()`` returned; the reader ``get``s ids from those files while the
writers run, so it also checks that a commit in one process is visible to the next read in another.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

import reverie

WORKERS = Path(__file__).with_name("_workers.py")
DURATION = 15.0  # seconds the workers run together: thousands of contended saves and reads
AGENTS = ("agent-alpha", "agent-beta")
JOIN_GRACE = 90.0  # a worker may finish its last call after DURATION; well under lock_wait_seconds + this


def read_ids(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line]


def start_workers(home: Path, tmp_path: Path, stack: ExitStack) -> list[tuple[str, subprocess.Popen[str], Path]]:
    """Start both writers and the reader; returns (name, process, errors file) for each."""
    seconds = str(DURATION)
    agent_files = [f"{agent}:{tmp_path / f'ids-{agent}.txt'}" for agent in AGENTS]
    specs: list[tuple[str, Path, list[str]]] = []
    for n, agent in enumerate(AGENTS):
        ids_file = tmp_path / f"ids-{agent}.txt"
        ids_file.touch()
        errors = tmp_path / f"errors-writer-{n}.txt"
        args = ["writer", str(home), agent, f"w{n}", seconds, str(ids_file), str(errors)]
        specs.append((f"writer-{agent}", errors, args))
    errors = tmp_path / "errors-reader.txt"
    specs.append(("reader", errors, ["reader", str(home), "r0", seconds, str(errors), *agent_files]))
    procs = []
    for name, errors_file, args in specs:
        log = stack.enter_context((tmp_path / f"{name}.log").open("w", encoding="utf-8"))
        proc = subprocess.Popen([sys.executable, str(WORKERS), *args], stdout=log, stderr=subprocess.STDOUT, text=True)
        stack.callback(_reap, proc)
        procs.append((name, proc, errors_file))
    return procs


def _reap(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def collect_failures(procs: list[tuple[str, subprocess.Popen[str], Path]], tmp_path: Path) -> list[str]:
    failures = []
    for name, proc, errors_file in procs:
        try:
            rc = proc.wait(timeout=JOIN_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            failures.append(f"{name}: still running {JOIN_GRACE} s after its deadline")
        errors = errors_file.read_text(encoding="utf-8") if errors_file.exists() else ""
        log = (tmp_path / f"{name}.log").read_text(encoding="utf-8")
        if rc != 0 or errors:
            failures.append(f"{name}: exit status {rc}\n{errors}\n{log}")
    return failures


@pytest.mark.slow
def test_two_writers_and_a_reader_share_one_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    reverie.open(home).close()  # create and migrate the store up front, so the workers start on equal terms

    started = time.monotonic()
    with ExitStack() as stack:
        procs = start_workers(home, tmp_path, stack)
        failures = collect_failures(procs, tmp_path)
    elapsed = time.monotonic() - started

    report = "\n\n".join(failures)
    assert "locked" not in report.lower(), f"a 'database is locked' error reached a caller:\n{report}"
    assert "busy" not in report.lower(), f"a busy error reached a caller:\n{report}"
    assert not failures, report
    assert elapsed >= DURATION

    committed = {agent: read_ids(tmp_path / f"ids-{agent}.txt") for agent in AGENTS}
    all_ids = [i for ids in committed.values() for i in ids]
    assert all(committed.values()), {a: len(ids) for a, ids in committed.items()}
    assert len(set(all_ids)) == len(all_ids), "the same id was handed out twice"

    with reverie.open(home) as rv:
        for agent, ids in committed.items():
            scope = reverie.Scope(agent_id=agent)
            other = reverie.Scope(agent_id=next(a for a in AGENTS if a != agent))
            for entry_id in ids:
                entry = rv.memory.get(entry_id, scope=scope)  # NotFound here is a lost committed save
                assert entry.id == entry_id
                assert entry.scope == scope
            for entry_id in ids[:: max(1, len(ids) // 50)]:
                with pytest.raises(reverie.NotFound):
                    rv.memory.get(entry_id, scope=other)
            taxonomy = rv.memory.browse(scope=scope).taxonomy
            assert sum(c.count for c in taxonomy) == len(ids), (agent, taxonomy, len(ids))
        stats = rv.stats()
        assert stats.live == len(all_ids), (stats.live, len(all_ids))
        assert stats.archived == 0
        health = rv.check()
        assert health.ok is True, health.checks
