"""Telling a store file from an empty, foreign or damaged one, and recovering what a damaged store still holds.

``inspect`` says why an existing file cannot be opened as a store (empty, not SQLite, SQLite without
Reverie's ``schema_migrations``, a schema that cannot be read). ``integrity`` runs SQLite's check on a file
without opening it as a store. ``recover`` copies what can still be read into a new store beside the file:
the rows of every portable table (``storage.portable.TABLES``), read in rowid ranges (or by primary key,
forwards then backwards, in a table without rowids), stepping over what raises; when the ``sqlite3``
command-line tool is there and its ``.recover`` works, the rows come from what it salvaged instead.

Invariants:
- Nothing here writes to the file it inspects or recovers from: every connection to it is read-only
  (``mode=ro``; ``sqlite3 -readonly``).
- A recovery builds a new store (the migrations, then the portable-row import, so triggers fill the
  full-text index and change logs) under a ``.partial`` name and gives it its final name
  ``<stem>.recovered-<UTC time>.db`` only once it is complete and passes its integrity check; when nothing
  could be read, no file is left.
- A row that cannot be read back (a damaged value) or that the new store refuses (an entry's vector whose
  entry was lost) is skipped and counted, never guessed.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from reverie.errors import ReverieError, StorageError
from reverie.storage.portable import TABLES, Table
from reverie.storage.sql.dialect import SQLITE
from reverie.storage.sql.rows import BATCH, order_by
from reverie.storage.sqlite import migrations
from reverie.storage.sqlite.database import Database, read_only_uri
from reverie.storage.sqlite.rows import SqliteRows

SQLITE_HEADER = b"SQLite format 3\x00"
_RANGE = 256  # rowids read at once; a range that raises is halved down to single rows
# Rows that only serve an entry, dropped with it when it was lost (its version rows stay: its only trace).
_OF_AN_ENTRY = ("fact_vectors", "graph_extraction")
_RESTORE = "move it away (`mv {path} {path}.bad`) and run `reverie restore-backup BACKUP`"


@dataclass(frozen=True)
class Recovery:
    """What ``recover`` did. ``destination`` is None when nothing could be read (no file was written);
    ``rows`` are the rows saved per portable table (catalog order), ``skipped`` those read but not saved;
    ``repaired``: what the new store's own repair did afterwards (``resolve.recover_store``)."""

    source: Path
    destination: Path | None
    method: str
    rows: dict[str, int]
    skipped: dict[str, int] = field(default_factory=dict)
    repaired: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.rows.values())


# -- what is this file? ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Refusal:
    """Why an existing file is not opened as a store: ``kind`` is "empty", "not-sqlite", "damaged" (its schema
    cannot be read) or "foreign" (SQLite, but not a Reverie store); ``message`` says so to a user."""

    kind: Literal["empty", "not-sqlite", "damaged", "foreign"]
    message: str


def inspect(path: Path) -> Refusal | None:
    """Why the existing file ``path`` cannot be opened as a store, or None when it can (a Reverie store, or an
    SQLite database with no table yet). Reads only; raises ``StorageError`` when the file cannot be read."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    restore = _RESTORE.format(path=path)
    if size == 0:
        return Refusal(
            "empty",
            f"{path} is an empty file (0 bytes), not a Reverie store; nothing was changed. If it should hold your "
            f"memory, {restore}; to start a new store there, delete it",
        )
    if head != SQLITE_HEADER:
        return Refusal(
            "not-sqlite",
            f"{path} is not an SQLite database (it begins {head[:16]!r}), so not a Reverie store; nothing was "
            f"changed. Check --home, REVERIE_HOME and store.url; if it should hold your memory, {restore}",
        )
    try:
        with closing(sqlite3.connect(read_only_uri(path), uri=True)) as conn:
            tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.OperationalError as exc:  # a lock, a permission: not about what the file holds
        raise StorageError(f"cannot open {path}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        return Refusal(
            "damaged",
            f"{path} is damaged: its schema cannot be read ({exc}); nothing was changed",
        )
    if tables and "schema_migrations" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        return Refusal(
            "foreign",
            f"{path} is an SQLite database but not a Reverie store (tables {shown}; no schema_migrations); "
            f"nothing was changed. Point --home, REVERIE_HOME or store.url at a Reverie store, or move this "
            f"file away to start a new store there",
        )
    return None


def integrity(path: Path, *, quick: bool = False) -> str:
    """SQLite's integrity check (``quick``: ``quick_check``) of ``path`` through a read-only connection:
    "ok" or the problems found."""
    pragma = "quick_check" if quick else "integrity_check"
    try:
        with closing(sqlite3.connect(read_only_uri(path), uri=True)) as conn:
            messages = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}").fetchall()]
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "ok" if messages == ["ok"] else "; ".join(messages[:10])


# -- recovery -------------------------------------------------------------------------------------------------
def recover(path: Path, now: datetime, *, tool: str | None = None) -> Recovery:
    """Copy what can be read of the damaged store ``path`` into ``<stem>.recovered-<time>.db`` beside it.
    ``tool``: the ``sqlite3`` command-line program (default: found on PATH). ``StorageError`` when the file
    is SQLite but not a Reverie store (there is nothing of ours to recover)."""
    refusal = inspect(path)
    if refusal is not None and refusal.kind == "foreign":
        raise StorageError(refusal.message)
    if refusal is not None and refusal.kind != "damaged":
        reason = "the file is empty" if refusal.kind == "empty" else "the file is not an SQLite database"
        return Recovery(path, None, f"nothing to read: {reason}", {t.name: 0 for t in TABLES})
    destination = _free_name(path, now)
    partial = destination.with_name(destination.name + ".partial")
    salvaged = path.with_name(f".{path.stem}.salvage-{now.strftime('%Y%m%dT%H%M%S%fZ')}.db")
    tool = tool if tool is not None else shutil.which("sqlite3")
    try:
        method, source = "read table by table", path
        if tool and _sqlite3_recover(tool, path, salvaged):
            method, source = "sqlite3 .recover", salvaged
        rows, skipped = _copy(source, partial, now)
        if not sum(rows.values()):
            return Recovery(path, None, method, rows, skipped)
        partial.replace(destination)
        return Recovery(path, destination, method, rows, skipped)
    finally:
        for leftover in (partial, salvaged):
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{leftover}{suffix}").unlink(missing_ok=True)


def _free_name(path: Path, now: datetime) -> Path:
    """``<stem>.recovered-<time>.db`` beside ``path``, numbered when a recovery of the same second exists."""
    stem = f"{path.stem}.recovered-{now.strftime('%Y%m%dT%H%M%SZ')}"
    candidate, n = path.with_name(f"{stem}.db"), 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{stem}-{n}.db")
    return candidate


def _sqlite3_recover(tool: str, path: Path, target: Path) -> bool:
    """Run ``sqlite3 -readonly path .recover`` into the new file ``target``, statement by statement (one that
    fails is skipped, as the tool's own shell would); True when the tool succeeded and ``target`` holds a
    sound ``facts`` table. Some builds lack what ``.recover`` needs (the ``sqlite_dbpage`` table): False."""
    try:
        proc = subprocess.Popen(
            [tool, "-readonly", str(path), ".recover"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="surrogateescape",
        )
    except OSError:
        return False
    with proc, closing(sqlite3.connect(target, isolation_level=None)) as conn:
        assert proc.stdout is not None
        statement = ""
        for line in proc.stdout:
            statement += line
            if sqlite3.complete_statement(statement):
                with suppress(sqlite3.Error):  # one statement the salvage cannot replay: the others still count
                    conn.execute(statement)
                statement = ""
        if conn.in_transaction:
            conn.execute("COMMIT")
        if proc.wait() != 0:
            return False
        try:
            has_facts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'facts'").fetchone() is not None
            return has_facts and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        except sqlite3.Error:
            return False


def _copy(source: Path, partial: Path, now: datetime) -> tuple[dict[str, int], dict[str, int]]:
    """Every portable table of ``source`` that can be read, into a new store at ``partial``."""
    partial.unlink(missing_ok=True)
    target = Database(partial)
    try:
        migrations.apply(target, now)
        into = SqliteRows(target)
        try:
            reader = _Salvage(Database(source, read_only=True))
        except StorageError:  # not even the schema can be read: no table can be found, so nothing is saved
            return {t.name: 0 for t in TABLES}, {}
        try:
            saved: dict[str, int] = {}
            skipped: dict[str, int] = {}
            for t in TABLES:
                saved[t.name], refused = _import(into, t.name, reader.export_rows(t.name))
                skipped[t.name] = refused + reader.unreadable.get(t.name, 0)
        finally:
            reader.close()
        for name in _OF_AN_ENTRY:  # derived from an entry that was lost: a vector of nothing, a queue of nothing
            orphans = f"DELETE FROM {name} WHERE fact_id NOT IN (SELECT id FROM facts)"
            gone = int(target.write(lambda c, sql=orphans: c.execute(sql).rowcount))  # type: ignore[misc]
            saved[name] -= gone
            skipped[name] += gone
        if target.read(lambda c: c.execute("PRAGMA integrity_check").fetchone()[0]) != "ok":
            raise StorageError(f"the store recovered into {partial} fails its own integrity check")
        target.read(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        return saved, skipped
    finally:
        target.close()


def _import(into: SqliteRows, name: str, rows: Iterator[dict[str, Any]]) -> tuple[int, int]:
    """Import ``rows`` in batches; a batch the store refuses goes again row by row. (saved, refused)."""
    saved = refused = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal saved, refused
        try:
            saved += into.import_rows(name, batch)
        except ReverieError:
            for row in batch:
                try:
                    saved += into.import_rows(name, [row])
                except ReverieError:
                    refused += 1  # e.g. the vector of an entry that was lost: the foreign key refuses it
        batch.clear()

    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    return saved, refused


class _Salvage(SqliteRows):
    """Portable rows of a damaged file: the scan steps over ranges that raise, and a row whose values cannot
    be read back is skipped (counted in ``unreadable``) instead of ending the export."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._source = db
        self.unreadable: dict[str, int] = {}

    def close(self) -> None:
        self._source.close()

    def _row_out(self, t: Table, values: Sequence[Any]) -> dict[str, Any] | None:
        try:
            return super()._row_out(t, values)
        except StorageError:
            self.unreadable[t.name] = self.unreadable.get(t.name, 0) + 1
            return None

    def _scan(self, t: Table) -> Generator[Sequence[Any], None, None]:
        columns = self._columns(t)
        if columns is None:
            return  # the table itself cannot be read (or is missing): nothing of it to save
        if self._try(lambda c: c.execute(f"SELECT rowid FROM {t.name} LIMIT 0").fetchall()) is None:
            yield from self._by_key(t, columns)
            return
        yield from self._by_rowid(t, columns)

    def _try(self, work: Any) -> Any:
        try:
            return self._source.read(work)
        except StorageError:
            return None

    def _columns(self, t: Table) -> str | None:
        """The select list for ``t.names``: NULL for a column this (older) file lacks."""
        info = self._try(lambda c: c.execute(f"PRAGMA table_info({t.name})").fetchall())
        if not info:
            return None
        present = {str(row[1]) for row in info}
        return ", ".join(name if name in present else "NULL" for name in t.names)

    def _by_rowid(self, t: Table, columns: str) -> Generator[Sequence[Any], None, None]:
        first = self._try(lambda c: c.execute(f"SELECT rowid FROM {t.name} ORDER BY rowid LIMIT 1").fetchone())
        last = self._try(lambda c: c.execute(f"SELECT rowid FROM {t.name} ORDER BY rowid DESC LIMIT 1").fetchone())
        if first is None and last is None:
            yield from self._by_key(t, columns)  # neither end of the tree can be reached: try the key
            return
        lo = int(first[0]) if first else 1
        hi = int(last[0]) if last else lo + 1_000_000
        select = f"SELECT {columns} FROM {t.name} WHERE rowid BETWEEN ? AND ? ORDER BY rowid"

        def span(a: int, b: int) -> Iterator[Sequence[Any]]:
            rows = self._try(lambda c: c.execute(select, (a, b)).fetchall())
            if rows is not None:
                yield from rows
            elif a < b:  # halve the range until what raises is a single row, and step over it
                mid = (a + b) // 2
                yield from span(a, mid)
                yield from span(mid + 1, b)

        for start in range(lo, hi + 1, _RANGE):
            yield from span(start, min(start + _RANGE - 1, hi))

    def _by_key(self, t: Table, columns: str) -> Generator[Sequence[Any], None, None]:
        """A table without rowids: pages by primary key from the start until a page raises, then from the end
        backwards down to the last key read (what lies between two damaged places is lost)."""
        keys, width = ", ".join(t.order), len(t.order)
        marks = ", ".join("?" * width)
        forward = order_by(t, SQLITE)
        backward = ", ".join(f"{part.strip()} DESC" for part in forward.split(","))
        stop: tuple[Any, ...] | None = None  # the last key the forward pass read
        for ordering, compare in ((forward, ">"), (backward, "<")):
            last: tuple[Any, ...] | None = None
            while True:
                bounds = [] if last is None else [f"({keys}) {compare} ({marks})"]
                if compare == "<" and stop is not None:
                    bounds.append(f"({keys}) > ({marks})")
                where = f" WHERE {' AND '.join(bounds)}" if bounds else ""
                params = (*(last or ()), *(stop if compare == "<" and stop is not None else ()))
                sql = f"SELECT {keys}, {columns} FROM {t.name}{where} ORDER BY {ordering} LIMIT {BATCH}"
                page = self._try(lambda c, s=sql, p=params: c.execute(s, p).fetchall())
                if page is None:
                    break  # damaged from here on, in this direction
                for row in page:
                    yield tuple(row[width:])
                if page:
                    last = tuple(page[-1][:width])
                    if compare == ">":
                        stop = last
                if len(page) < BATCH:
                    if compare == ">":
                        return  # the forward pass reached the end: nothing was damaged here
                    break
