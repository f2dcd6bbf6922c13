"""Turns appended to one session at the same time are all kept, in some order, each with its own index.

`reverie bench load` with two server processes on PostgreSQL answered a turn 409 ("duplicate key value violates
unique constraint turns_pkey"): two transactions read the same last index and both wrote the next. The
session's row is now locked for the append (SQLite's one writer at a time already ordered them).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import reverie

THREADS = 6
TURNS = 4


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_turns_of_one_session_all_land(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = {} if backend == "sqlite" else {"store": {"url": request.getfixturevalue("pg_url")}}
    with reverie.open(tmp_path / "home", embedding={"provider": "none"}, **store) as rv:
        rv.conversation.create("s1", agent_id="a")
        rv.conversation.add_turn("s1", "user", "the first turn", agent_id="a")
        errors: list[BaseException] = []
        start = threading.Barrier(THREADS)

        def append(n: int) -> None:
            start.wait()
            try:
                for k in range(TURNS):
                    rv.conversation.add_turn("s1", "user", f"thread {n} turn {k}", agent_id="a")
            except BaseException as exc:  # reported by the test
                errors.append(exc)

        threads = [threading.Thread(target=append, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        turns = rv.conversation.live("s1", agent_id="a")
        assert len(turns) == 1 + THREADS * TURNS
        assert [t.index for t in turns] == list(range(1, 2 + THREADS * TURNS))
