"""Named, ordered schema migrations for the SQLite backend.

Invariant: an applied migration is never edited. A schema change is a new entry at the end of
``MIGRATIONS``; ``apply`` runs the missing ones in order, each in its own transaction, and records it in
``schema_migrations``. Several processes may open a new file at once: each migration re-checks inside the
write lock, so it runs once.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from reverie.storage.sqlite.database import Database, parse_ts, ts
from reverie.storage.sqlite.schema import MIGRATIONS


def apply(db: Database, now: datetime) -> list[str]:
    """Apply every missing migration; returns the names applied now."""
    db.write(
        lambda c: c.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
    )
    applied: list[str] = []
    for name, script in MIGRATIONS:
        if db.write(lambda c, n=name, s=script: _apply_one(c, n, s, now)):  # type: ignore[misc]
            applied.append(name)
    return applied


def _apply_one(conn: sqlite3.Connection, name: str, script: str, now: datetime) -> bool:
    if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
        return False
    # executescript would COMMIT our transaction; run the statements one by one instead.
    for statement in _statements(script):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, ts(now)))
    return True


def applied(db: Database) -> list[tuple[str, datetime]]:
    rows = db.read(lambda c: c.execute("SELECT name, applied_at FROM schema_migrations ORDER BY name").fetchall())
    return [(name, parse_ts(at)) for name, at in rows]


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (triggers contain ';' inside BEGIN ... END)."""
    out: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buffer[:80]!r}")
    return out
