"""The threads of one process writing one SQLite file queue for the write lock instead of polling for it.

SQLite's own wait for a locked file polls, sleeping up to 100 ms between tries and not woken by the commit it
waits for: under a loaded API server (16 clients) that left the lock idle while its waiters slept. Writers of
one process now take turns through a lock of the process, so none of them ever finds the file locked
(``Database.busy_polls`` counts the times a writer did). With ``busy_timeout_ms = 0`` every such meeting is
counted (SQLite's own polling is off), so before the queue this test saw hundreds.
"""

from __future__ import annotations

import threading
from pathlib import Path

import reverie
from reverie.storage.sqlite.database import Database

THREADS = 8
WRITES = 40


def _hammer(databases: list[Database], rows: int) -> list[BaseException]:
    """``THREADS`` threads (spread over ``databases``), each committing ``rows`` inserts one by one, started
    together; returns what any of them raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def write(db: Database, name: int) -> None:
        start.wait()
        try:
            for n in range(rows):
                with db.transaction():
                    conn = db.connection()
                    conn.execute("INSERT INTO t (who, n) VALUES (?, ?)", (name, n))
                    conn.execute("SELECT count(*) FROM t WHERE who = ?", (name,)).fetchone()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(databases[i % len(databases)], i)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_threads_of_one_process_never_find_the_file_locked(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    # Two Database objects on one file (two engines in one process) share the queue too.
    first = Database(path, busy_timeout_ms=0, lock_wait_seconds=60)
    second = Database(path, busy_timeout_ms=0, lock_wait_seconds=60)
    try:
        first.write(lambda c: c.execute("CREATE TABLE t (who INTEGER, n INTEGER)"))
        assert _hammer([first, second], WRITES) == []
        assert first.read(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]) == THREADS * WRITES
        assert first.busy_polls + second.busy_polls == 0
    finally:
        first.close()
        second.close()


def test_concurrent_saves_through_the_engine_never_poll(tmp_path: Path) -> None:
    """The same through the engine: concurrent saves of one process, each kept, no writer polling."""
    with reverie.open(tmp_path / "home", embedding={"provider": "hash", "background": False},
                      store={"busy_timeout_ms": 0}) as rv:  # fmt: skip
        saved: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(THREADS)

        def save(i: int) -> None:
            start.wait()
            for n in range(5):
                result = rv.memory.save(f"thread {i} wrote note number {n} about the kettle {i * 100 + n}")
                with lock:
                    saved.append(result.entry.id)

        threads = [threading.Thread(target=save, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(saved)) == THREADS * 5
        database = rv.store._db  # type: ignore[attr-defined]  # the count is the SQLite backend's own
        assert database.busy_polls == 0
