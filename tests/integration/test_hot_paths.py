"""The five hot-path costs of issue 21, each shown gone by a count (never a timing), on a real SQLite store:

1. a context build never scans the agent's entries: proactive memory's decay sweep runs in the dream;
2. the accesses proactive memory counts are written in batches (one transaction per flush, none per build);
3. the tool-call log commits in groups (one store write per flush interval, not one per tool call);
4. auto-consolidation counts only calls that saved something new and reads only the new entries and their
   nearest neighbours, never every entry and vector of the agent;
5. a dream run reads the agent's conversation log once, whatever number of passes read it.

The counts come from counting wrappers around the engine's real store, handed to the public constructors
(``ProactiveMemory``, ``ContextBuilder``), or from the public counters of ``logs.StoredLog``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

import reverie
from _template import new_store_file
from reverie import Scope
from reverie.clock import FakeClock
from reverie.context.builder import ContextBuilder
from reverie.errors import ValidationError
from reverie.logs import StoredLog
from reverie.proactive.fresh import NEIGHBOURS
from reverie.proactive.service import ProactiveConfig, ProactiveMemory
from reverie.storage import open_store, store_url
from reverie.storage.base import Store
from reverie.testing import ScriptedOpenAIServer
from reverie.tools.base import ToolContext
from reverie.tools.registry import ToolRegistry
from reverie.types import MemoryEntry

from ._dream import Router, llm_settings

FACTS = [f"The {name} service runs on port {8000 + i}" for i, name in enumerate(
    ["billing", "search", "auth", "mail", "queue", "cache", "report", "export", "import", "audit", "ledger", "cron"]
)]  # fmt: skip


# -- counting wrappers around the real store ------------------------------------------------------------------
class _Facts:
    """The store's fact repository, counting what the hot paths cost: rows an ``iter_all`` scan yields,
    ``get`` and ``write`` calls."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.scanned = self.gets = self.writes = 0

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        for entry in self._inner.iter_all(agent_id):
            self.scanned += 1
            yield entry

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets += 1
        return self._inner.get(*args, **kwargs)

    def write(self, *args: Any, **kwargs: Any) -> Any:
        self.writes += 1
        return self._inner.write(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Vectors:
    """The vector repository, counting the vectors read back from the store (a snapshot reads all of an agent's)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.loaded = 0

    def snapshot(self, agent_id: str, model: str) -> Any:
        found = self._inner.snapshot(agent_id, model)
        self.loaded += len(found.vectors)
        return found

    def changes(self, agent_id: str, model: str, after: int) -> Any:
        found = self._inner.changes(agent_id, model, after)
        self.loaded += len(found.vectors)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Store:
    """A real store whose facts and vectors are counted, and whose outermost transactions are (each one commit)."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.facts = _Facts(inner.facts)
        self.vectors = _Vectors(inner.vectors)
        self.commits = 0

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if not self._inner.in_transaction():
            self.commits += 1
        with self._inner.transaction():
            yield

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _counted(rv: reverie.Reverie, **config: Any) -> tuple[_Store, ProactiveMemory]:
    """Proactive memory over the engine's parts, its store counted."""
    store = _Store(rv.store)
    memory = ProactiveMemory(cast(Store, store), rv.clock, rv.memory, rv.recall, rv.kv, ProactiveConfig(**config))
    return store, memory


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    engine = reverie.open(
        tmp_path / "home",
        clock=clock,
        embedding={"provider": "hash", "background": False},
        graph={"extraction": "off"},
        proactive={"memorize_background": False, "consolidate_every": 1000},
    )
    try:
        yield engine
    finally:
        engine.close()


def _remember(memory: ProactiveMemory, scope: Scope, *contents: str) -> list[str]:
    items = [{"content": c, "category": "project_context", "scope": "agent", "confidence": 0.6} for c in contents]
    return [r.id for r in memory.remember(items, scope=scope).saved]


def _stored(rv: reverie.Reverie, entry_id: str) -> MemoryEntry:
    owner = rv.store.facts.owner(entry_id)
    assert owner is not None
    entry = rv.store.facts.get(entry_id, owner)
    assert entry is not None
    return entry


# -- 1. the decay sweep ---------------------------------------------------------------------------------------
def test_a_context_build_never_scans_the_agents_entries_the_dream_sweeps(rv: reverie.Reverie, clock: FakeClock) -> None:
    ids = _remember(rv.proactive, Scope("a"), *FACTS)
    clock.advance(days=3)
    store, memory = _counted(rv)
    builder = ContextBuilder(
        rv.memory, rv.working, rv.conversation, rv.clock, injected=rv.store.injected, proactive=memory.for_context
    )
    rv.conversation.create("s1", agent_id="a")
    for _ in range(3):
        built = builder.build("s1", "Which port does the billing service run on?", agent_id="a")
        assert any("billing" in m["content"] for m in built.messages)
    assert store.facts.scanned == 0  # the sweep (due: it never ran) is not the context build's to run
    assert _stored(rv, ids[1]).confidence == 0.6

    report = rv.dream.run("a")  # the dream's maintenance runs it, with or without an LLM
    swept = report.passes["proactive_sweep"]
    assert swept.status == "ran" and swept.counts["examined"] == len(FACTS)
    assert _stored(rv, ids[1]).confidence == pytest.approx(0.6 * math.exp(-0.03), abs=1e-12)
    assert rv.dream.run("a").passes["proactive_sweep"].status == "skipped"  # not due again within the hour


# -- 2. access counts --------------------------------------------------------------------------------------
def test_accesses_are_written_in_one_transaction_per_flush_not_per_build(rv: reverie.Reverie) -> None:
    _remember(rv.proactive, Scope("a"), *FACTS)
    store, memory = _counted(rv)
    seen: list[dict[str, int]] = []
    for _ in range(5):
        hits = memory.auto_retrieve("Which port does the service run on?", scope=Scope("a"))
        assert len(hits) == 8
        seen.append({h.entry.id: h.entry.metadata["proactive"]["access_count"] for h in hits})
    assert store.facts.writes == 0 and store.facts.gets == 0 and store.commits == 0  # nothing written per build
    assert all(count == 5 for count in seen[-1].values())  # yet each hit shows its accesses so far

    assert memory.flush_accesses() == 8
    assert store.commits == 1 and store.facts.writes == 8 and store.facts.gets == 0  # one transaction, one row each
    for entry_id in seen[-1]:
        assert _stored(rv, entry_id).metadata["proactive"]["access_count"] == 5
    assert memory.flush_accesses() == 0 and store.commits == 1


# -- 3. the tool-call log ------------------------------------------------------------------------------------
def test_tool_calls_are_logged_in_one_commit_per_flush(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path / "home", clock=clock, embedding={"provider": "none"}, skills={"tool_call_log_flush_ms": 60_000}
    ) as rv:
        registry, log = ToolRegistry(rv), rv.tool_calls.log
        for i in range(20):
            assert not registry.call("search_memory", {"query": f"q{i}"}, ToolContext(agent_id="a")).is_error
        assert log.writes == 0 and log.pending == 20  # none committed yet: the interval has not passed
        assert len(rv.tool_calls.list("a", limit=100)) == 20  # a read sees them: it flushes first
        assert log.writes == 1 and log.pending == 0
        for i in range(3):
            registry.call("search_memory", {"query": f"late {i}"}, ToolContext(agent_id="a"))
        assert log.writes == 1
    with reverie.open(tmp_path / "home", clock=clock, embedding={"provider": "none"}) as again:
        assert again.store.logs.count("tool-calls") == 23  # closing the engine flushed the last three


def test_the_tool_call_log_flushes_by_itself_within_its_interval(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path / "home", clock=clock, embedding={"provider": "none"}, skills={"tool_call_log_flush_ms": 5}
    ) as rv:
        registry, log = ToolRegistry(rv), rv.tool_calls.log
        for i in range(5):
            registry.call("search_memory", {"query": f"q{i}"}, ToolContext(agent_id="a"))
        assert log.wait_flushed(10.0)
        assert rv.store.logs.count("tool-calls") == 5 and 1 <= log.writes <= 5


def test_a_durable_tool_call_log_commits_every_call(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path / "home", clock=clock, embedding={"provider": "none"}, skills={"tool_call_log_flush_ms": 0}
    ) as rv:
        for _ in range(3):
            ToolRegistry(rv).call("search_memory", {"query": "q"}, ToolContext(agent_id="a"))
        assert rv.tool_calls.log.writes == 3 and rv.tool_calls.log.pending == 0


def test_a_group_committed_log_checks_at_once_and_keeps_the_order(tmp_path: Path, clock: FakeClock) -> None:
    store = open_store(store_url(tmp_path / "store.db"), now=clock.now())
    try:
        log = StoredLog(store.logs, "tool-calls", flush_seconds=60)
        with pytest.raises(ValidationError):
            log.append("a", None, clock.now(), {"bad": float("nan")})  # refused at once: nothing waits
        for i in range(3):
            log.append("a", None, clock.now(), {"i": i})
        assert (log.pending, log.writes, store.logs.count("tool-calls")) == (3, 0, 0)
        assert [r.record["i"] for r in log.rows(agent_id="a")] == [0, 1, 2]  # a read writes what waits first
        assert (log.pending, log.writes) == (0, 1)
        log.append("a", None, clock.now(), {"i": 3})
        log.close()  # writes what waits; later appends are written at once
        log.append("a", None, clock.now(), {"i": 4})
        assert log.writes == 3 and [r.record["i"] for r in log.rows()] == [0, 1, 2, 3, 4]
    finally:
        store.close()


# -- 4. auto-consolidation -----------------------------------------------------------------------------------
def test_auto_consolidation_counts_saves_and_reads_only_the_new_and_their_neighbours(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    store, memory = _counted(rv, consolidate_every=3)
    history = [f"Team {i} meets in room {100 + i}" for i in range(80)]
    old = _remember(memory, Scope("a"), "User prefers dark mode", *history)  # the first saving call
    rv.embed_pending()  # their vectors, in the store and the recall index
    memory.consolidate("a")  # a full pass: nothing is new after it
    store.facts.scanned = store.vectors.loaded = 0
    for i in range(6):  # calls that save nothing are not counted
        clock.advance(minutes=1)
        assert memory.auto_memorize(f"Nothing to note {i}", scope=Scope("a")).consolidation is None
    clock.advance(minutes=1)
    first = memory.remember(
        [{"content": "Deploys happen on Thursdays", "category": "work_style", "scope": "agent"}], scope=Scope("a")
    )
    assert first.consolidation is None  # the second saving call
    clock.advance(minutes=1)
    second = memory.remember(
        [{"content": "User prefers dark mode in every editor", "category": "preference", "scope": "agent"}],
        scope=Scope("a"),
    )
    report = second.consolidation
    assert report is not None and not report.full  # the third: consolidated
    assert [(m.keep, m.archived) for m in report.merges] == [(second.saved[0].id, (old[0],))]  # an old duplicate
    assert store.facts.scanned == 0 and store.vectors.loaded == 0  # neither every entry nor every vector
    assert report.examined <= 2 * (1 + 2 * NEIGHBOURS) < len(history)  # the two new and their nearest neighbours


# -- 5. the conversation log in a dream ----------------------------------------------------------------------
def test_a_dream_reads_the_conversation_log_once(
    tmp_path: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    Router(server)
    with reverie.open(
        tmp_path / "home",
        clock=clock,
        embedding={"provider": "none"},
        llm=llm_settings(server),
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},
    ) as rv:
        for session in ("s1", "s2"):
            for i, text in enumerate(["I moved to Lisbon last year.", "Nice!", "I work on the billing team.", "Ok."]):
                clock.advance(minutes=1)
                rv.conversation.add_turn(session, ("user", "assistant")[i % 2], text, create=True, agent_id="a")
        before = rv.conversation_log.reads
        report = rv.dream.run("a")
        readers = ("memory_mining", "episode_extraction", "skill_gap", "preference_inference")
        assert all(report.passes[name].status == "ran" for name in readers), report.passes
        # One read to learn from, one by the preference pass's clear (it deletes only the records read).
        assert rv.conversation_log.reads - before == 2
