"""A read-only store can be read: the read commands open a file they cannot write (no write permission, or a
read-only directory) read-only, say that writes are off, and work; writes fail with a clear message and change
nothing. A read command on a home with no store says so and creates nothing.

Permissions do not bind root, so when the tests run as root the CLI runs as ``nobody`` through ``setpriv``
(skipped, with the reason, when that is not possible). The library path is tested directly with
``mode="ro"``, which holds for root too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import reverie
from reverie.clock import SystemClock
from reverie.errors import StorageError
from reverie.storage import open_store, store_url

SETTINGS = '[embedding]\nprovider = "hash"\n'
NOTICE = "the store is read-only: writes are off"
NOBODY = 65534


def _as_other_user() -> list[str] | None:
    """The command prefix that drops root for the CLI, [] when not root, None when it cannot be done."""
    if os.geteuid() != 0:
        return []
    tool = shutil.which("setpriv")
    if tool is None:
        return None
    probe = subprocess.run(
        [tool, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, "-c", "import reverie"],
        capture_output=True,
        timeout=60,
    )
    return [tool, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if probe.returncode == 0 else None


PREFIX = _as_other_user()
needs_other_user = pytest.mark.skipif(
    PREFIX is None, reason="running as root without setpriv (or nobody cannot run this Python): permissions don't bind"
)


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory every user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="reverie-ro-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for p in [path, *path.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(path)


def make_home(root: Path, name: str = "home") -> Path:
    home = root / name
    home.mkdir()
    home.chmod(0o755)
    (home / "reverie.toml").write_text(SETTINGS, encoding="utf-8")
    with reverie.open(home, embedding={"provider": "hash", "background": False}) as rv:
        for i in range(40):
            rv.memory.save(f"note {i}: the lighthouse keeper logs the tide at {i} o'clock")
        rv.embed_pending()
    return home


def cli(home: Path, *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "reverie", *args],
        env={**os.environ, "REVERIE_HOME": str(home), "HOME": str(home.parent)},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def snapshot(home: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(home.iterdir()) if p.is_file()}


def assert_reads_work(home: Path) -> None:
    assert PREFIX is not None
    status = cli(home, "status", prefix=PREFIX)
    assert status.returncode == 0, status.stderr
    assert "40 live" in status.stdout and NOTICE in status.stderr and "Traceback" not in status.stderr
    found = cli(home, "memory", "search", "lighthouse tide", "--json", prefix=PREFIX)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits and NOTICE in found.stderr
    listed = cli(home, "memory", "list", "--json", prefix=PREFIX)
    assert listed.returncode == 0 and json.loads(listed.stdout)["entries"], listed.stderr
    got = cli(home, "memory", "get", hits[0]["entry"]["id"], prefix=PREFIX)
    assert got.returncode == 0 and "lighthouse" in got.stdout, got.stderr
    doctor = cli(home, "doctor", prefix=PREFIX)
    assert doctor.returncode == 0 and "healthy" in doctor.stdout, (doctor.stdout, doctor.stderr)
    for result in (status, found, listed, got, doctor):  # the notice, and not a warning of a failed write
        assert [line for line in result.stderr.splitlines() if line.strip()] == [f"note: {NOTICE}"], result.stderr
    saved = cli(home, "memory", "save", "a new note", prefix=PREFIX)
    assert saved.returncode == 1 and "read-only" in saved.stderr and "Traceback" not in saved.stderr, saved.stderr


@needs_other_user
def test_read_commands_work_on_a_file_without_write_permission(world: Path) -> None:
    home = make_home(world)
    (home / "reverie.db").chmod(0o444)
    home.chmod(0o777)  # the directory stays writable: SQLite may add its -shm beside the file
    before = hashlib.sha256((home / "reverie.db").read_bytes()).hexdigest()
    assert_reads_work(home)
    assert hashlib.sha256((home / "reverie.db").read_bytes()).hexdigest() == before


@needs_other_user
def test_read_commands_work_in_a_read_only_directory(world: Path) -> None:
    home = make_home(world)
    home.chmod(0o555)
    before = snapshot(home)
    assert_reads_work(home)
    assert snapshot(home) == before


def test_the_library_opens_a_store_read_only(world: Path) -> None:
    home = make_home(world)
    db = home / "reverie.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with reverie.open(home, mode="ro", embedding={"provider": "hash", "background": True}) as rv:
        assert rv.store.read_only
        assert rv.stats().live == 40
        hits = rv.memory.search("lighthouse")
        assert hits
        assert rv.memory.get(hits[0].entry.id).content.startswith("note")
        assert rv.check().ok
        with pytest.raises(StorageError, match="read-only"):
            rv.memory.save("this must not be written")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    store = open_store(store_url(db), now=SystemClock().now(), mode="ro")
    try:
        assert store.read_only and store.stats().live == 40
        with pytest.raises(StorageError, match="read-only"):
            store.meta.set("k", "v")
    finally:
        store.close()


def test_read_only_refuses_a_store_with_pending_migrations(world: Path) -> None:
    home = make_home(world)
    db = home / "reverie.db"
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(db)) as conn:
        last = conn.execute("SELECT max(name) FROM schema_migrations").fetchone()[0]
        conn.execute("DELETE FROM schema_migrations WHERE name = ?", (last,))
        conn.commit()
    with pytest.raises(StorageError, match="migration"):
        open_store(store_url(db), now=SystemClock().now(), mode="ro")


@pytest.mark.parametrize(
    "command", [("status",), ("memory", "search", "x"), ("memory", "list"), ("doctor",)], ids=" ".join
)
def test_a_read_command_on_a_mistyped_home_creates_nothing(tmp_path: Path, command: tuple[str, ...]) -> None:
    home = tmp_path / "hoem"
    result = cli(home, *command)
    assert result.returncode in (1, 2), (result.stdout, result.stderr)
    assert "no store at" in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
    assert not home.exists()


def test_a_write_command_still_creates_the_store(tmp_path: Path) -> None:
    home = tmp_path / "new-home"
    result = cli(home, "memory", "save", "-q", "first note")
    assert result.returncode == 0, result.stderr
    assert (home / "reverie.db").is_file()
