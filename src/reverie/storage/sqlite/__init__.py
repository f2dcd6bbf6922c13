"""The embedded backend: one SQLite file in WAL mode, FTS5 for BM25, vectors as float32 BLOBs."""

from reverie.storage.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
