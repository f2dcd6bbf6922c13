"""The corruption family of ``reverie bench faults``: a home whose store file is damaged, one way per case.

The kinds: a zero-length file, a text file, another application's SQLite database, a real store with random
bytes written over some of its middle pages, and a real store cut to half its length. For each: ``reverie
status`` must refuse or report the damage (exit non-zero, one line of output, no traceback), ``reverie
serve`` must refuse to start (exit non-zero without ever answering ``/health``), and the damaged file must be
left exactly as it was (same bytes, same modification time): a refused store is never "repaired" by writing
a new schema into it.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from reverie.bench.faults_common import (
    FamilyResult,
    Progress,
    ServeProcess,
    Target,
    fingerprint,
    one_line_error,
    run_cli,
    short,
)

REFUSE_SECONDS = 60.0  # a serve that has neither started nor exited by then hangs
HEALTHY_ENTRIES = 400


def corruption(workdir: Path, rng: random.Random, progress: Progress) -> FamilyResult:
    result = FamilyResult("corruption")
    healthy = Target(workdir / "corruption-healthy")
    healthy.write_settings()
    with healthy.open() as rv:
        for n in range(HEALTHY_ENTRIES):
            rv.memory.save(
                f"fact {n}: the user keeps Lisbon hours and plays the violin on day {n % 7}",
                category=("general", "work/meetings", "user-preferences/location")[n % 3],
                dedup=False,
            )
        rv.embed_pending()
    data = healthy.db_file.read_bytes()
    for kind, damage in KINDS.items():
        progress(f"corruption: {kind}")
        target = Target(workdir / f"corruption-{kind}")
        target.write_settings()
        damage(target.db_file, data, rng)
        _case(target, kind, result)
    return result


def _case(target: Target, kind: str, result: FamilyResult) -> None:
    before = fingerprint(target.db_file)
    status = run_cli(target.home, "status")
    problem = one_line_error(status)
    result.check(problem is None, f"{kind}: reverie status gave {problem}")
    if problem is None:
        said = (status.stderr.strip() or status.stdout.strip()).replace(str(target.db_file), "the file")
        result.note(f"{kind}: {short(said, 120)}")
    refused, why = _serve_refuses(target, kind)
    result.check(refused, f"{kind}: reverie serve {why}")
    after = fingerprint(target.db_file)
    changed = [name for name, a, b in zip(("bytes", "size", "mtime"), before, after, strict=True) if a != b]
    result.check(not changed, f"{kind}: the damaged file was written to ({', '.join(changed)} changed)")


def _serve_refuses(target: Target, kind: str) -> tuple[bool, str]:
    """Whether ``reverie serve`` refused to start on the damaged store, and if not, what it did."""
    server = ServeProcess(target.home, target.home.parent / f"serve-{kind}.log")
    try:
        started = server.wait_ready(REFUSE_SECONDS)
        code = server.proc.poll()
    finally:
        server.stop()
    output = server.output()
    if started:
        return False, "started and answered /health"
    if code is None:
        return False, f"neither started nor exited within {REFUSE_SECONDS:g} s"
    if code == 0:
        return False, "exited 0"
    if "Traceback" in output:
        return False, f"exited {code} with a traceback"
    return True, ""


# -- the damage ------------------------------------------------------------------------------------------------
def _zero_length(path: Path, data: bytes, rng: random.Random) -> None:
    path.write_bytes(b"")


def _text(path: Path, data: bytes, rng: random.Random) -> None:
    path.write_text("These are my notes, not a database.\n" * 200, encoding="utf-8")


def _foreign(path: Path, data: bytes, rng: random.Random) -> None:
    """A valid SQLite database of another application."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {n}",) for n in range(100)])


def _random_pages(path: Path, data: bytes, rng: random.Random) -> None:
    """The real store with random bytes over a tenth of its middle third's pages (at least two)."""
    size = int.from_bytes(data[16:18], "big")
    page = 65536 if size == 1 else size
    pages = len(data) // page
    middle = range(pages // 3, max(pages * 2 // 3, pages // 3 + 2))
    damaged = bytearray(data)
    for n in rng.sample(middle, k=min(len(middle), max(2, pages // 10))):
        damaged[n * page : (n + 1) * page] = rng.randbytes(page)
    path.write_bytes(bytes(damaged))


def _truncated(path: Path, data: bytes, rng: random.Random) -> None:
    path.write_bytes(data[: len(data) // 2])


KINDS: dict[str, Callable[[Path, bytes, random.Random], None]] = {
    "zero-length": _zero_length,
    "text": _text,
    "foreign-sqlite": _foreign,
    "random-pages": _random_pages,
    "truncated": _truncated,
}
