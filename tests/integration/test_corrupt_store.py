"""A corrupt, empty or foreign store file: refused with a clear message and left as it was; ``serve`` refuses a
store that fails its quick check; ``doctor --repair`` copies what can be read into a new file beside it.

Real files throughout: a real store is written, closed, then emptied, replaced or overwritten at page offsets,
and the CLI runs as a real process (``python -m reverie``), so what a user sees (exit code, one line on stderr,
no traceback) is what is checked.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

import reverie
from reverie.clock import SystemClock
from reverie.errors import StorageError
from reverie.storage import open_store, store_url

ENTRIES = 400
SETTINGS = '[embedding]\nprovider = "hash"\n'


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "reverie.toml").write_text(SETTINGS, encoding="utf-8")
    return path


def cli(home: Path, *args: str, path_env: str | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REVERIE_HOME": str(home)}
    if path_env is not None:
        env["PATH"] = path_env
    return subprocess.run(
        [sys.executable, "-m", "reverie", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command failed with exit 1 and said why in one line, without a traceback."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    # Rich wraps long lines on a narrow terminal: the check is "one message", so join what it printed.
    return " ".join(result.stderr.split())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_store(home: Path, entries: int = ENTRIES) -> Path:
    with reverie.open(home, embedding={"provider": "hash", "background": False}) as rv:
        for i in range(entries):
            rv.memory.save(f"entry {i}: the project codename is lantern-{i} and it ships on day {i % 31}")
        rv.embed_pending()
    db = home / "reverie.db"
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    return db


def schema_pages(data: bytes, page_size: int) -> set[int]:
    """Page 1 and, when it is an interior page, its children: the pages of ``sqlite_master`` (its rows are
    small enough to need no overflow pages, and a Reverie schema needs one level of interior page at most)."""
    header = 100  # page 1 starts with the file header
    pages = {1}
    if data[header] == 0x05:  # an interior table b-tree page: cell pointers, each cell starts with a child page
        cells = int.from_bytes(data[header + 3 : header + 5], "big")
        pages.add(int.from_bytes(data[header + 8 : header + 12], "big"))
        for i in range(cells):
            offset = int.from_bytes(data[header + 12 + 2 * i : header + 14 + 2 * i], "big")
            pages.add(int.from_bytes(data[offset : offset + 4], "big"))
    return pages


def damage(db: Path, *, seed: int = 7) -> None:
    """Overwrite eight whole pages in the middle of the file with random bytes, sparing the schema's pages
    (with the schema gone nothing can be read by table, and that case is the empty file's)."""
    data = db.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    pages = len(data) // page_size
    spared = schema_pages(data, page_size)
    targets = [p for p in range(pages // 3, pages) if p not in spared][:8]
    rng = random.Random(seed)
    with db.open("r+b") as f:
        for page in targets:
            f.seek((page - 1) * page_size)
            f.write(rng.randbytes(page_size))
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        try:
            result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            result = str(exc)
    assert result != "ok", "the damage must be real"


# -- an empty or foreign file --------------------------------------------------------------------------------
def test_zero_length_file_is_refused_by_every_face_and_left_alone(home: Path) -> None:
    db = home / "reverie.db"
    db.touch()
    message = one_line_error(cli(home, "status"))
    assert "empty" in message and "nothing was changed" in message and str(db) in message
    served = cli(home, "serve", "--port", "0")
    assert "rv_" not in served.stdout  # no admin key minted over somebody's data
    assert "empty" in one_line_error(served)
    doctor = cli(home, "doctor")
    assert "empty" in one_line_error(doctor)
    assert db.stat().st_size == 0
    assert sorted(p.name for p in home.iterdir()) == ["reverie.db", "reverie.toml"]
    with pytest.raises(StorageError, match="empty"):
        reverie.open(home)
    assert db.stat().st_size == 0


def test_text_file_is_refused(home: Path) -> None:
    db = home / "reverie.db"
    db.write_text("these are my notes, not a database\n", encoding="utf-8")
    before = digest(db)
    message = one_line_error(cli(home, "memory", "save", "a new fact"))
    assert "not an SQLite database" in message and "nothing was changed" in message
    assert digest(db) == before


def test_foreign_sqlite_file_is_refused_and_not_converted(home: Path) -> None:
    db = home / "reverie.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
        conn.commit()
    before = digest(db)
    with pytest.raises(StorageError, match="not a Reverie store"):
        open_store(store_url(db), now=SystemClock().now())
    assert "not a Reverie store" in one_line_error(cli(home, "status"))
    assert digest(db) == before
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL


def test_a_missing_file_still_creates_a_store(home: Path) -> None:
    with reverie.open(home) as rv:
        assert rv.stats().live == 0
    assert (home / "reverie.db").stat().st_size > 0
    leftovers = [p.name for p in home.iterdir() if p.name not in ("reverie.db", "reverie.toml")]
    assert leftovers == []  # the store is built beside it and moved into place: no temporary file is left


# -- random bytes in middle pages ----------------------------------------------------------------------------
def test_serve_refuses_a_damaged_store_and_writes_nothing(home: Path) -> None:
    db = write_store(home)
    damage(db)
    before = digest(db)
    served = cli(home, "serve", "--port", "0")
    message = one_line_error(served)
    assert "integrity" in message and "doctor" in message
    assert "rv_" not in served.stdout
    dreamer = cli(home, "dream", "serve")
    assert "integrity" in one_line_error(dreamer)
    assert digest(db) == before


def test_read_commands_on_a_damaged_store_fail_in_one_line(home: Path) -> None:
    db = write_store(home)
    damage(db)
    before = digest(db)
    assert "doctor" in one_line_error(cli(home, "status"))
    search = cli(home, "memory", "search", "lantern")
    assert search.returncode in (0, 1) and "Traceback" not in search.stderr, search.stderr
    doctor = cli(home, "doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert "--repair" in doctor.stdout + doctor.stderr
    assert digest(db) == before


@pytest.mark.parametrize("with_sqlite3_tool", [True, False], ids=["sqlite3-recover", "table-by-table"])
def test_doctor_repair_recovers_into_a_new_file_and_keeps_the_old(
    home: Path, tmp_path: Path, with_sqlite3_tool: bool
) -> None:
    if with_sqlite3_tool and shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 command-line tool is not installed")
    db = write_store(home)
    damage(db)
    before = digest(db)
    empty_path = tmp_path / "no-tools"
    empty_path.mkdir()
    result = cli(home, "doctor", "--repair", path_env=None if with_sqlite3_tool else str(empty_path))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.stdout, result.stderr)  # the store in place is still the damaged one
    output = " ".join((result.stdout + result.stderr).split())
    assert "doctor --repair" not in output  # never recommends itself again
    assert digest(db) == before  # the damaged file is kept as it was
    recovered = sorted(home.glob("reverie.recovered-*.db"))
    assert len(recovered) == 1, sorted(p.name for p in home.iterdir())
    assert str(recovered[0]) in output and "facts" in output
    with closing(sqlite3.connect(recovered[0])) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        saved = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    assert 0 < saved <= ENTRIES
    assert f"facts {saved}" in output or f"facts: {saved}" in output
    with reverie.open(recovered[0], embedding={"provider": "hash", "background": False}) as rv:
        assert rv.check().ok
        assert rv.stats().live == saved
        assert rv.memory.search("lantern codename")


def test_recovery_as_a_library_call_reports_rows_per_table(home: Path) -> None:
    from reverie.storage.resolve import recover_store

    db = write_store(home, entries=120)
    damage(db, seed=11)
    recovery = recover_store(store_url(db), now=SystemClock().now())
    assert recovery.destination is not None and recovery.destination.parent == db.parent
    assert recovery.rows["facts"] > 0
    assert sum(recovery.rows.values()) == recovery.total


@pytest.mark.parametrize("content", [b"", b"plain text, not a database\n"], ids=["empty", "text"])
def test_doctor_repair_on_an_unreadable_file_points_to_restore_backup(home: Path, content: bytes) -> None:
    db = home / "reverie.db"
    db.write_bytes(content)
    result = cli(home, "doctor", "--repair")
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    output = " ".join((result.stdout + result.stderr).split())
    assert "restore-backup" in output and "doctor --repair" not in output
    assert list(home.glob("reverie.recovered-*")) == []
    assert db.read_bytes() == content
