"""A full disk, end to end: a write that cannot grow a file raises ``StorageFull`` from the library, one line
and exit 1 from the CLI, 507 from the API (a real ``reverie serve``); the background workers log one-line
warnings and back off instead of tracebacks; once space is back, writes resume and every write that was
acknowledged is there.

The full disk is a file-size limit (``RLIMIT_FSIZE``, no root needed) set in a child process: SQLite cannot grow
the write-ahead log past it, as on a disk with no space left (CPython ignores SIGXFSZ, so the write fails with
EFBIG). Lifting the limit (``setrlimit`` in the child, ``prlimit`` on a server) is freeing space. One more test
fills a real filesystem, an 8 MiB tmpfs in a private user and mount namespace (``unshare -rm``); it is skipped
where the system allows no such namespace.

This module is also the children's script: ``python test_full_disk.py writer|dream|log|filler TARGET [LIMIT]``.
"""

from __future__ import annotations

import logging
import os
import resource
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import reverie
from reverie.logs.jsonl import JsonlFile

# How large a file may grow. Both leave room for the 32 KiB shared-memory index; one save writes ~110 KiB of
# log (its row, versions, full-text index, change logs), so TIGHT refuses the first write and ROOMY a few later.
# The prefilled store file is larger than both, so a checkpoint cannot make room either.
TIGHT = 96 * 1024
ROOMY = 640 * 1024
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")


def _text(n: int, words: int = 12) -> str:
    return f"note {n}: " + " ".join(f"{WORDS[(n * 7 + i) % len(WORDS)]}{n % 97}x{i}" for i in range(words))


def _home(tmp_path: Path, entries: int, *, extract: bool = True) -> Path:
    """A home on the hash embedder holding ``entries`` saved, embedded (and, with ``extract``, extracted)
    entries; without ``extract`` they wait in the graph-extraction queue."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "hash"\n', encoding="utf-8")
    with reverie.open(home, embedding={"background": False}, graph={"extraction_background": False}) as rv:
        for n in range(entries):
            rv.memory.save(_text(n, 40))
        rv.embed_pending()
        if extract:
            rv.extract_pending()
    assert (home / "reverie.db").stat().st_size > ROOMY
    return home


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return apply


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]


# -- the library, with its background workers ---------------------------------------------------------------
def test_library_raises_storage_full_workers_back_off_and_resume(tmp_path: Path) -> None:
    home = _home(tmp_path, 150)
    child = subprocess.run(
        [sys.executable, __file__, "writer", str(home), str(ROOMY)],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "REVERIE_HOME": str(home)},
    )
    out, err = child.stdout, child.stderr
    assert child.returncode == 0, (out, err)
    refused = [line for line in out.splitlines() if line.startswith("REFUSED")]
    assert len(refused) == 1, out
    assert refused[0].startswith("REFUSED reverie.errors.StorageFull: the disk holding "), refused
    assert "free space, then retry; nothing was written" in refused[0]
    saved = [line.split()[1] for line in out.splitlines() if line.startswith("SAVED")]
    assert len(saved) >= 2 and out.splitlines()[-1] == "DONE", out
    # The workers met the full disk: one line each time, no traceback, and they came back by themselves.
    assert "Traceback" not in err, err
    warnings = [line for line in err.splitlines() if line.startswith("WARNING")]
    assert any(line.startswith("WARNING reverie.embedding") for line in warnings), err
    assert any("graph extraction failed" in line for line in warnings), err
    assert all("is full" in line for line in warnings), err
    # Every acknowledged write is there, embedded.
    with reverie.open(home, embedding={"background": False}, graph={"extraction_background": False}) as rv:
        assert all(rv.memory.get(entry_id) is not None for entry_id in saved)
        assert rv.embedder is not None
        assert rv.store.vectors.pending(rv.embedder.model_id, 1) == []


def _writer(home: Path, limit: int) -> int:
    """The child: save until the disk is full (print each acknowledged id); then start the background workers,
    which find those saves waiting and the disk full; free space, and check they catch up on their own."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    rv = reverie.open(home, embedding={"background": False}, graph={"extraction_background": False})
    assert rv.embedding is not None and rv.graph_extraction is not None and rv.embedder is not None
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    for n in range(1000, 5000):
        try:
            entry = rv.memory.save(_text(n))
        except Exception as exc:  # noqa: BLE001 - the test reads what was raised
            print(f"REFUSED {type(exc).__module__}.{type(exc).__name__}: {exc}", flush=True)
            break
        print(f"SAVED {entry.id}", flush=True)
    else:
        print("the disk never filled", flush=True)
        return 1
    # Now the disk is full for every write, small or large: without this a worker's small write could still fit
    # in the room the refused save left, and whether it did would depend on timing.
    resource.setrlimit(resource.RLIMIT_FSIZE, (TIGHT, hard))
    rv.embedding.start()
    rv.graph_extraction.start()
    time.sleep(4)  # the workers meet the full disk meanwhile, and back off
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space is free again
    print(f"SAVED {rv.memory.save('written after space was freed').id}", flush=True)
    deadline = time.monotonic() + 120
    while rv.store.vectors.pending(rv.embedder.model_id, 1) or rv.graph_extraction.last_error is not None:
        if time.monotonic() > deadline:  # the workers did not resume
            print(f"STUCK {rv.embedding.last_error} / {rv.graph_extraction.last_error}", flush=True)
            return 1
        time.sleep(0.2)
    rv.close()
    print("DONE", flush=True)
    return 0


def test_the_dream_scheduler_backs_off_on_its_clock(tmp_path: Path) -> None:
    """The scheduler's wait after a failure is counted on the engine's clock: while that clock stands still it
    does not try again (one warning line, not one per poll); once the clock has moved past the wait it does,
    the wait doubling; once space is back it carries on."""
    home = _home(tmp_path, 150)
    child = subprocess.run([sys.executable, __file__, "dream", str(home)], capture_output=True, text=True, timeout=240)
    out, err = child.stdout, child.stderr
    assert child.returncode == 0, (out, err)
    assert "Traceback" not in err, err
    warnings = [line for line in err.splitlines() if line.startswith("WARNING reverie.dream")]
    assert len(warnings) == 2, err
    assert "retrying in 1 s" in warnings[0] and "retrying in 2 s" in warnings[1], err
    assert all("is full" in line for line in warnings), err
    assert out.splitlines()[-1] == "RESUMED", out


def _dream(home: Path) -> int:
    """The child: a scheduled dream is due at once on a fake clock, and the store's log cannot grow."""
    from reverie.clock import FakeClock

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    clock = FakeClock()
    dream = {"initial_delay_minutes": 0, "busy_poll_seconds": 0.05, "min_hours": 0}
    rv = reverie.open(home, clock=clock, embedding={"background": False}, dream=dream)
    for n in range(3):  # the write-ahead log now ends with committed writes: it cannot restart at its head
        rv.memory.save(_text(5000 + n))
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, ((home / "reverie.db-wal").stat().st_size, hard))
    rv.dream.start()
    time.sleep(1.5)  # some 30 polls; the clock stands still: one attempt
    clock.advance(seconds=1)
    time.sleep(1.0)  # the wait of 1 s is over on the clock: a second attempt, which waits 2 s
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space is free again
    clock.advance(seconds=2)
    deadline = time.monotonic() + 60
    while not rv.dream.history():  # the scheduled dream runs and is recorded
        if time.monotonic() > deadline:
            return 1
        time.sleep(0.05)
    rv.dream.stop()
    rv.close()
    print("RESUMED", flush=True)
    return 0


# -- the CLI ----------------------------------------------------------------------------------------------
def _cli(home: Path, *args: str, limit: int = TIGHT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reverie", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "REVERIE_HOME": str(home)},
        preexec_fn=_limited(limit),
    )


def test_cli_reports_a_full_disk_in_one_line(tmp_path: Path) -> None:
    home = _home(tmp_path, 150)
    done = _cli(home, "memory", "save", "The user moved to Porto")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert _one_error_line(done.stderr).startswith("error: the disk holding "), done.stderr
    with reverie.open(home, embedding={"background": False}) as rv:
        assert rv.stats().live == 150  # nothing of the refused save was written
    # A backup that cannot grow names its own file; no half-written copy is left.
    target = tmp_path / "backups" / "copy.db"
    done = _cli(home, "backup", str(target))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert _one_error_line(done.stderr).startswith(f"error: the disk holding {target} is full"), done.stderr
    assert list(target.parent.iterdir()) == []


def test_a_write_at_exit_that_fails_is_the_commands_one_line_error(tmp_path: Path) -> None:
    home = _home(tmp_path, 150, extract=False)  # 150 entries wait for their graph extraction
    # A search reads, then extracts what waits before it exits: that write meets the full disk.
    done = _cli(home, "memory", "search", "alpha")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert _one_error_line(done.stderr).startswith("error: the disk holding "), done.stderr
    # doctor only reads: a full disk does not make it fail, and it writes nothing a full disk could refuse.
    done = _cli(home, "doctor")
    assert done.returncode == 0 and "healthy" in done.stdout and not done.stderr.strip(), (done.stdout, done.stderr)
    done = _cli(home, "memory", "search", "alpha", limit=resource.RLIM_INFINITY)  # space is back
    assert done.returncode == 0 and not done.stderr.strip(), (done.stdout, done.stderr)


# -- the API on a real server -----------------------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _serve(home: Path, limit: int) -> Iterator[tuple[str, subprocess.Popen[str], list[str]]]:
    """``reverie serve`` under the file-size limit; its output is read through a pipe (a file it
    wrote to would meet the limit too). Yields the origin, the process and the output lines so far."""
    import httpx

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reverie", "serve", "--port", str(port)],
        env={**os.environ, "REVERIE_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_limited(limit),
    )
    lines: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            try:
                if httpx.get(f"{origin}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield origin, proc, lines
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join(10)
        proc.stdout.close()


def test_api_answers_507_on_a_full_disk_and_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    import httpx

    home = _home(tmp_path, 150)
    path = "/api/memory/agents/default/entries"
    acknowledged: list[str] = []
    with reverie.open(home, embedding={"background": False}) as rv:
        secret = rv.keys.create("disk", agent_id="default", scopes=["memory_read", "memory_write"])[1]
    bearer = {"Authorization": f"Bearer {secret}"}  # served as in production: with keys
    with (
        _serve(home, ROOMY) as (origin, proc, lines),
        httpx.Client(base_url=origin, headers=bearer, timeout=30) as api,
    ):
        answer = None
        for n in range(2000, 2400):
            answer = api.post(path, json={"content": _text(n), "dedup": False})
            if answer.status_code != 201:
                break
            acknowledged.append(answer.json()["entry"]["id"])
        assert answer is not None and answer.status_code == 507, answer.text if answer else None
        body = answer.json()
        assert body["error"] == "storage_full" and "is full" in body["message"], body
        # The connection stays usable: reads still answer, another write gets the same 507.
        assert api.get(path, params={"limit": 1}).status_code == 200
        assert api.post(path, json={"content": _text(9999), "dedup": False}).status_code == 507
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        answer = api.post(path, json={"content": "written after space was freed", "dedup": False})
        assert answer.status_code == 201, answer.text
        acknowledged.append(answer.json()["entry"]["id"])
    assert acknowledged
    output = "".join(lines)
    assert "Traceback" not in output, output
    with reverie.open(home, embedding={"background": False}) as rv:
        assert all(rv.memory.get(entry_id) is not None for entry_id in acknowledged)


# -- the dream log (a JSONL file) ---------------------------------------------------------------------------
def test_the_dream_log_refuses_an_append_on_a_full_disk_and_keeps_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "dream.jsonl"
    JsonlFile(path, "dream").append({"run": 1})
    before = path.read_bytes()
    child = subprocess.run(
        [sys.executable, __file__, "log", str(path), str(len(before) + 100)], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, (child.stdout, child.stderr)
    assert child.stdout.startswith("REFUSED reverie.errors.StorageFull: the disk holding "), child.stdout
    assert path.read_bytes() == before  # no fragment of the refused record is left behind
    JsonlFile(path, "dream").append({"run": 2})  # space is back
    assert [record["run"] for record in JsonlFile(path, "dream").read()] == [1, 2]


def _log(path: Path, limit: int) -> int:
    """The child: append a record larger than the room the file-size limit leaves."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        JsonlFile(path, "dream").append({"run": 2, "report": "x" * 1000})
    except Exception as exc:  # noqa: BLE001 - the test reads what was raised
        print(f"REFUSED {type(exc).__module__}.{type(exc).__name__}: {exc}", flush=True)
    return 0


# -- a real full filesystem (tmpfs) -----------------------------------------------------------------------
def _namespaces_allowed() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt 2>/dev/null || exit 3"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


def test_a_real_full_filesystem_raises_storage_full(tmp_path: Path) -> None:
    if not _namespaces_allowed():
        pytest.skip("this system allows no private user and mount namespace (unshare -rm) to mount a tmpfs in")
    mount = tmp_path / "disk"
    mount.mkdir()
    home = shlex.quote(str(mount / "home"))
    script = (
        f"mount -t tmpfs -o size=4m tmpfs {shlex.quote(str(mount))} && mkdir {home} && "
        f"printf '[embedding]\\nprovider = \"hash\"\\n' > {home}/reverie.toml && "
        f"{shlex.quote(sys.executable)} {shlex.quote(__file__)} filler {home}"
    )
    child = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, (child.stdout, child.stderr)
    assert "Traceback" not in child.stderr, child.stderr
    assert "REFUSED reverie.errors.StorageFull: the disk holding " in child.stdout, child.stdout
    assert "FREED" in child.stdout, child.stdout


def _there(rv: reverie.Reverie, entry_id: str) -> bool:
    try:
        rv.memory.get(entry_id)
    except reverie.NotFound:
        return False
    return True


def _filler(home: Path) -> int:
    """Fill the tmpfs ``home`` is on with saves until one is refused, free space (a ballast file), save again,
    and check every acknowledged entry."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    ballast = home.parent / "ballast"
    ballast.write_bytes(b"\0" * (1024 * 1024))
    saved: list[str] = []
    with reverie.open(home, embedding={"background": False}, graph={"extraction_background": False}) as rv:
        for n in range(100_000):
            try:
                saved.append(rv.memory.save(_text(n, 150)).id)
            except Exception as exc:  # noqa: BLE001 - the test reads what was raised
                print(f"REFUSED {type(exc).__module__}.{type(exc).__name__}: {exc}", flush=True)
                break
        ballast.unlink()
        saved.append(rv.memory.save("written after space was freed").id)
        missing = [entry_id for entry_id in saved if not _there(rv, entry_id)]
        print("FREED" if not missing else f"MISSING {missing}", flush=True)
    return 0 if not missing else 1


if __name__ == "__main__":
    mode, target = sys.argv[1], Path(sys.argv[2])
    if mode == "writer":
        sys.exit(_writer(target, int(sys.argv[3])))
    if mode == "log":
        sys.exit(_log(target, int(sys.argv[3])))
    if mode == "dream":
        sys.exit(_dream(target))
    sys.exit(_filler(target))
