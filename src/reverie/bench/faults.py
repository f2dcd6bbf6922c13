"""``reverie bench faults``: the fault suite that keeps issue 20's findings found.

Six families, each a function returning a ``FamilyResult`` (cases, failures, acknowledged writes lost, notes):

- ``kill-writers`` (``faults_writers``): writer processes SIGKILLed at random moments; every acknowledged save
  must be readable afterwards and the store must pass its integrity check.
- ``kill-dream`` (``faults_dream``): a ``dream run`` SIGKILLed in every pass and in the middle of applying
  merges; integrity, no half-applied merge, no stale "running", the next dream completes.
- ``full-disk`` (``faults_writers``): writers whose files cannot grow (``RLIMIT_FSIZE``): a clean one-line
  ``StorageError``, nothing acknowledged lost, nothing failed half-written.
- ``corruption`` (``faults_files``): empty, foreign and damaged store files: ``status`` and ``serve`` refuse
  in one line, and never write into the damaged file.
- ``postgres-outage`` (``faults_pg``): the database server killed and restarted under API load: 503 with
  ``Retry-After`` within a bound, never a 500 or a hang; saves resume; nothing acknowledged lost.
- ``fuzz`` (``faults_fuzz``): generated API requests and agent tool calls: never a 5xx, a dropped connection
  or an internal tool error.

Invariants: everything runs in one temporary directory (removed afterwards) and on 127.0.0.1; each family has
its own random stream derived from ``--seed``, so running a subset replays the same cases; a family whose
harness breaks is reported as a failure, and the other families still run. ``--backend postgres`` runs the
store families (kill-writers, kill-dream, fuzz) on new PostgreSQL databases; full-disk and corruption are
faults of the SQLite file and always run on SQLite.
"""

from __future__ import annotations

import logging
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reverie.bench import postgres
from reverie.bench.faults_common import FamilyResult, Progress, Target, short
from reverie.bench.faults_dream import kill_dream
from reverie.bench.faults_files import corruption
from reverie.bench.faults_fuzz import fuzz
from reverie.bench.faults_pg import postgres_outage
from reverie.bench.faults_writers import full_disk, kill_writers
from reverie.clock import SystemClock
from reverie.errors import ValidationError

FAMILIES = ("kill-writers", "kill-dream", "full-disk", "corruption", "postgres-outage", "fuzz")
BACKENDS = ("sqlite", "postgres")
DEFAULT_SEED = 20
DEFAULT_ROUNDS = 200
DEFAULT_INPUTS = 10_000


@dataclass
class FaultsReport:
    started_at: str
    seed: int
    backend: str
    rounds: int
    inputs: int
    families: list[FamilyResult]
    seconds: float

    @property
    def failures(self) -> int:
        return sum(f.failures for f in self.families)

    @property
    def lost(self) -> int:
        return sum(f.lost for f in self.families)

    def as_dict(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "seed": self.seed,
            "backend": self.backend,
            "rounds": self.rounds,
            "inputs": self.inputs,
            "seconds": round(self.seconds, 1),
            "failures": self.failures,
            "lost": self.lost,
            "families": [f.as_dict() for f in self.families],
        }


@dataclass(frozen=True)
class Run:
    """What a family gets: its random stream, the work directory, a target maker, the options."""

    rng: random.Random
    workdir: Path
    make_target: Callable[[str], Target]
    rounds: int
    inputs: int
    backend: str
    progress: Progress


RUNNERS: dict[str, Callable[[Run], FamilyResult]] = {
    "kill-writers": lambda r: kill_writers(r.make_target("kill-writers"), r.rounds, r.rng, r.workdir, r.progress),
    "kill-dream": lambda r: kill_dream(r.make_target, r.rng, r.workdir, r.progress),
    "full-disk": lambda r: full_disk(r.workdir, r.progress),
    "corruption": lambda r: corruption(r.workdir, r.rng, r.progress),
    "postgres-outage": lambda r: postgres_outage(r.workdir, r.progress),
    "fuzz": lambda r: fuzz(r.make_target("fuzz"), r.inputs, r.rng, r.workdir, r.progress),
}


def run_faults(
    *,
    families: Sequence[str] = FAMILIES,
    seed: int = DEFAULT_SEED,
    rounds: int = DEFAULT_ROUNDS,
    inputs: int = DEFAULT_INPUTS,
    backend: str = "sqlite",
    store_url: str | None = None,
    progress: Progress = lambda _: None,
) -> FaultsReport:
    """Run ``families`` (in the order of ``FAMILIES``); see the module docstring."""
    chosen = _checked(families, rounds, inputs, backend, store_url)
    started, clock = time.monotonic(), SystemClock()
    started_at = clock.now().isoformat(timespec="seconds")
    results: list[FamilyResult] = []
    with tempfile.TemporaryDirectory(prefix="reverie-faults-") as tmp, ExitStack() as stack, _quiet():
        workdir = Path(tmp)
        make_target = _target_maker(workdir, backend, store_url, stack)
        for name in chosen:
            family_dir = workdir / name
            family_dir.mkdir()
            run = Run(random.Random(f"{seed}/{name}"), family_dir, make_target, rounds, inputs, backend, progress)
            result = _run_family(name, run, store_url)
            result.notes = [note.replace(tmp, "$TMP") for note in result.notes]  # paths of a directory now gone
            results.append(result)
            progress(f"{name}: {results[-1].failures} failures in {results[-1].seconds:.0f} s")
    return FaultsReport(started_at, seed, backend, rounds, inputs, results, time.monotonic() - started)


def _checked(families: Sequence[str], rounds: int, inputs: int, backend: str, store_url: str | None) -> list[str]:
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise ValidationError(
            f"--families takes some of {', '.join(FAMILIES)}; got {', '.join(unknown) or 'none'}", field="families"
        )
    if rounds < 1 or inputs < 1:
        raise ValidationError("--rounds and --inputs must be at least 1", field="rounds")
    if backend not in BACKENDS:
        raise ValidationError(f"--backend must be sqlite or postgres, got {backend!r}", field="backend")
    if store_url is not None and backend != "postgres":
        raise ValidationError("--store-url goes with --backend postgres", field="store_url")
    return [f for f in FAMILIES if f in families]


def _target_maker(workdir: Path, backend: str, store_url: str | None, stack: ExitStack) -> Callable[[str], Target]:
    """Targets under ``workdir``: SQLite homes, or homes on new databases (dropped at the end) of the server."""
    if backend == "sqlite":
        return lambda label: Target(workdir / label)
    admin = stack.enter_context(postgres.server(store_url))

    def on_postgres(label: str) -> Target:
        url = stack.enter_context(postgres.fresh_database(admin, re.sub(r"[^a-z0-9]", "_", label.lower())[:30]))
        return Target(workdir / label, url)

    return on_postgres


def _run_family(name: str, run: Run, store_url: str | None) -> FamilyResult:
    started = time.monotonic()
    if name == "postgres-outage" and store_url is not None:
        result = FamilyResult(name, skipped=True)
        result.note("kills only a temporary embedded server it started itself; --store-url names yours")
    else:
        try:
            result = RUNNERS[name](run)
        except Exception as exc:  # a broken harness is a finding too, and must not cost the other families
            result = FamilyResult(name)
            result.fail(f"the harness failed: {type(exc).__name__}: {short(str(exc), 300)}")
    if name in ("full-disk", "corruption") and run.backend == "postgres":
        result.note("faults of the SQLite file: run on SQLite")
    result.seconds = time.monotonic() - started
    result.finish()
    return result


@contextmanager
def _quiet() -> Iterator[None]:
    """Reverie's own log lines (a dream interrupted, a pass failed) are what the suite provokes: not news."""
    logger = logging.getLogger("reverie")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
