"""The engine on PostgreSQL end to end: ``reverie.open("postgresql://…")`` and the services above the store
(save pipeline, hybrid recall through pgvector, history, archive and restore, working and conversation memory)
work unchanged. The repositories themselves are covered by the contract suite on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.recall.store_backend import StoreVectorSearch

SCOPE = reverie.Scope(agent_id="pg-agent")


@pytest.fixture
def engine(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[reverie.Reverie]:
    monkeypatch.setenv("REVERIE_HOME", str(tmp_path / "home"))  # a URL keeps the default home: settings, logs
    rv = reverie.open(pg_url, clock=FakeClock(), embedding={"provider": "hash", "background": False})
    yield rv
    rv.close()


def test_open_by_url_saves_and_recalls_through_pgvector(engine: reverie.Reverie) -> None:
    assert engine.store.url.startswith("postgresql://")
    assert isinstance(engine.recall.index, StoreVectorSearch)  # auto: the database searches vectors
    kept = engine.memory.save("Ana keeps the spare keys in the blue drawer", scope=SCOPE).entry
    engine.memory.save("The standup moved to 9:30 on Tuesdays", scope=SCOPE)
    assert engine.embed_pending() == 2
    for mode in ("hybrid", "bm25", "vector"):
        hits = engine.memory.search("where are the spare keys", scope=SCOPE, mode=mode)
        assert hits and hits[0].entry.id == kept.id, mode
    assert engine.memory.search("spare keys", scope=reverie.Scope(agent_id="someone-else")) == []


def test_history_archive_restore_and_the_other_memories(engine: reverie.Reverie) -> None:
    entry = engine.memory.save("The boiler is serviced every October", scope=SCOPE).entry
    engine.memory.edit(entry.id, content="The boiler is serviced every November", scope=SCOPE)
    assert [v.content for v in engine.memory.history(entry.id, scope=SCOPE)] == [
        "The boiler is serviced every October",
        "The boiler is serviced every November",
    ]
    engine.memory.archive(entry.id, scope=SCOPE)
    assert engine.memory.search("boiler", scope=SCOPE) == []
    engine.memory.restore(entry.id, scope=SCOPE)
    assert engine.memory.search("boiler", scope=SCOPE)[0].entry.id == entry.id

    view = engine.working.for_namespace("session/s1", agent_id=SCOPE.agent_id)
    view.save("session/s1/plan", "call the plumber")
    assert view.get("session/s1/plan").value == "call the plumber"
    engine.conversation.add_turn("s1", "user", "hello from postgres", create=True, agent_id=SCOPE.agent_id)
    assert [t.content for t in engine.conversation.window("s1", agent_id=SCOPE.agent_id)] == ["hello from postgres"]
