"""The LangGraph store (``reverie.integrations.langgraph.ReverieStore``) through LangGraph's own store interface:
put / get / search / delete / list_namespaces and their async twins, TTL, a compiled LangGraph graph using it,
LangGraph's ``InMemoryStore`` as the oracle for what the interface answers, and the docs' example executed.
Real SQLite files and the real bundled embedder where ranking matters."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.config import get_store  # noqa: E402
from langgraph.graph import START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp, SearchOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

import reverie  # noqa: E402
from _template import new_store_file  # noqa: E402
from reverie import Change, FakeClock, Scope, ValidationError  # noqa: E402
from reverie.integrations.langgraph import ReverieStore, category_of, entry_id  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "portability.md"
ANA = ("memories", "ana")

# A small corpus both stores hold: namespaces of several depths and users, values with numbers and nesting.
CORPUS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("memories", "ana"), "language", {"text": "Ana wants answers in Portuguese", "kind": "pref", "n": 1}),
    (("memories", "ana"), "diet", {"text": "Ana is vegetarian", "kind": "pref", "n": 5, "meta": {"sure": True}}),
    (("memories", "ana", "trips"), "lisbon", {"text": "Ana flew to Lisbon in May", "kind": "event", "n": 3}),
    (("memories", "bob"), "diet", {"text": "Bob avoids gluten", "kind": "pref", "n": 2}),
    (("docs", "v1"), "readme", {"text": "How to install", "kind": "doc", "n": 7, "tags": ["a", "b"]}),
    (("docs", "v2"), "readme", {"text": "How to install, again", "kind": "doc", "n": 8}),
]


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, sqlite_template: Path
) -> Iterator[reverie.Reverie]:
    """An engine on each backend, with the fake clock and the hash embedder (embedding on demand)."""
    options: dict[str, Any] = {"embedding": {"provider": "hash", "background": False}}
    if request.param == "postgresql":
        options["store"] = {"url": request.getfixturevalue("pg_url")}
    else:
        new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with reverie.open(tmp_path / "home", clock=clock, **options) as opened:
        yield opened


@pytest.fixture
def store(engine: reverie.Reverie) -> ReverieStore:
    """The LangGraph store over ``engine`` (a module fixture: not the conftest's storage ``store``), users at
    label 1."""
    return ReverieStore(engine, user_at=1)


def _fill(*stores: BaseStore) -> None:
    for target in stores:
        for namespace, key, value in CORPUS:
            target.put(namespace, key, value)


def test_put_then_get_gives_the_value_back_exactly(store: ReverieStore, clock: FakeClock) -> None:
    value = {"text": "Ação: ünïcode ✓", "nested": {"list": [1, 2.5, None, {"x": "y"}], "flag": False}, "n": 0}
    store.put(("Memories", "ana", "Deep Label!"), "k 1", value)
    item = store.get(("Memories", "ana", "Deep Label!"), "k 1")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("Memories", "ana", "Deep Label!"), "k 1", value)
    assert item.created_at == item.updated_at == clock.now()
    assert store.get(("Memories", "ana", "Deep Label!"), "other") is None
    assert store.get(("Memories", "bob", "Deep Label!"), "k 1") is None


def test_the_mapping_to_reverie_entries(store: ReverieStore, engine: reverie.Reverie) -> None:
    store.put(ANA, "language", {"text": "Ana wants answers in Portuguese", "kind": "pref"}, index=["text"])
    entry = engine.memory.get(entry_id("default", ANA, "language"), scope=Scope(user_id="ana"))
    assert entry.scope == Scope("default", "ana")  # the label at user_at is Reverie's user
    assert entry.category == category_of(ANA) == "langgraph/memories/ana"
    assert entry.content == "Ana wants answers in Portuguese"  # the index paths' text
    assert entry.metadata["langgraph"]["value"] == {"text": "Ana wants answers in Portuguese", "kind": "pref"}
    assert entry.source == "tool:langgraph" and entry.pinned
    # Reverie's own isolation holds: another user, or no user, does not see it.
    assert [h.entry.id for h in engine.memory.search("Portuguese", scope=Scope(user_id="ana"))] == [entry.id]
    assert not engine.memory.search("Portuguese", scope=Scope(user_id="bob"))
    assert not engine.memory.search("Portuguese")


def test_a_put_with_the_same_key_is_a_new_version_never_a_duplicate(
    store: ReverieStore, engine: reverie.Reverie, clock: FakeClock
) -> None:
    store.put(ANA, "language", {"text": "Ana wants answers in Portuguese"})
    created = clock.now()
    clock.advance(minutes=5)
    store.put(ANA, "language", {"text": "Ana wants answers in English"})
    store.put(ANA, "language", {"text": "Ana wants answers in English"})  # the same value: no version
    item = store.get(ANA, "language")
    assert item is not None and item.value == {"text": "Ana wants answers in English"}
    assert (item.created_at, item.updated_at) == (created, clock.now())
    assert len(store.search(ANA)) == 1
    history = engine.memory.history(entry_id("default", ANA, "language"), scope=Scope(user_id="ana"))
    assert [v.change for v in history] == [Change.CREATED, Change.EDITED]
    assert "Portuguese" in history[0].content


def test_delete_archives_and_a_put_brings_the_key_back(store: ReverieStore, engine: reverie.Reverie) -> None:
    _fill(store)
    store.delete(ANA, "diet")
    store.delete(ANA, "never-there")  # not an error, as in LangGraph's stores
    assert store.get(ANA, "diet") is None
    assert "diet" not in {i.key for i in store.search(ANA)}
    assert "vegetarian" not in str(store.search(ANA, query="vegetarian"))
    entry = engine.memory.get(entry_id("default", ANA, "diet"), scope=Scope(user_id="ana"))
    assert entry.archived and not entry.pinned  # kept until the purge pass, which may now remove it
    store.put(ANA, "diet", {"text": "Ana eats fish now"})
    item = store.get(ANA, "diet")
    assert item is not None and item.value == {"text": "Ana eats fish now"}
    changes = [v.change for v in engine.memory.history(entry.id, scope=Scope(user_id="ana"))]
    assert changes == [Change.CREATED, Change.ARCHIVED, Change.RESTORED]


def test_a_namespace_with_only_deleted_items_is_not_listed(store: ReverieStore) -> None:
    store.put(("docs", "old"), "x", {"text": "gone soon"})
    assert ("docs", "old") in store.list_namespaces()
    store.delete(("docs", "old"), "x")
    assert ("docs", "old") not in store.list_namespaces()


def test_answers_match_langgraphs_in_memory_store(store: ReverieStore) -> None:
    """The oracle: LangGraph's own InMemoryStore, fed the same items, answers get, filtered search and
    list_namespaces the same (as sets where the two stores' orders legitimately differ)."""
    oracle = InMemoryStore()
    _fill(store, oracle)

    def keys(target: BaseStore, prefix: tuple[str, ...], **kwargs: Any) -> set[tuple[tuple[str, ...], str]]:
        return {(i.namespace, i.key) for i in target.search(prefix, limit=100, **kwargs)}

    def got(target: BaseStore, namespace: tuple[str, ...], key: str) -> tuple[Any, ...] | None:
        item = target.get(namespace, key)
        return None if item is None else (item.namespace, item.key, item.value)

    for prefix in [(), ("memories",), ANA, ("memories", "ana", "trips"), ("docs",), ("nothing",)]:
        assert keys(store, prefix) == keys(oracle, prefix), prefix
    filters: list[dict[str, Any]] = [
        {"kind": "pref"},
        {"n": {"$gt": 2}},
        {"n": {"$gte": 2, "$lt": 7}},
        {"kind": {"$ne": "doc"}},
        {"meta": {"sure": True}},
        {"tags": ["a", "b"]},
        {"kind": "pref", "n": {"$lte": 1}},
        {"missing": "x"},
    ]
    for flt in filters:
        assert keys(store, (), filter=flt) == keys(oracle, (), filter=flt), flt
    listings: list[dict[str, Any]] = [
        {},
        {"prefix": ("memories",)},
        {"prefix": ("memories", "*")},
        {"suffix": ("readme",)},
        {"suffix": ("v1",)},
        {"prefix": ("docs",), "suffix": ("*",)},
        {"max_depth": 1},
        {"prefix": ("memories",), "max_depth": 2},
        {"limit": 2, "offset": 1},
    ]
    for kwargs in listings:
        assert store.list_namespaces(**kwargs) == oracle.list_namespaces(**kwargs), kwargs
    # Last: InMemoryStore's get of an unknown namespace adds it (empty) to its namespace listing.
    for namespace, key, _ in [*CORPUS, (ANA, "missing", {}), (("docs",), "readme", {})]:
        assert got(store, namespace, key) == got(oracle, namespace, key)


def test_listing_pages_most_recent_first_without_repeats(store: ReverieStore, clock: FakeClock) -> None:
    for i in range(25):
        store.put(("notes",), f"k{i:02}", {"text": f"note {i}", "i": i, "even": i % 2 == 0})
        clock.advance(seconds=1)
    pages = [store.search(("notes",), limit=10, offset=offset) for offset in (0, 10, 20)]
    assert [len(p) for p in pages] == [10, 10, 5]
    seen = [item.value["i"] for page in pages for item in page]
    assert seen == list(range(24, -1, -1))  # most recently written first, each once
    evens = store.search(("notes",), filter={"even": True}, limit=5, offset=5)
    assert [i.value["i"] for i in evens] == [14, 12, 10, 8, 6]
    assert all(item.score is None for page in pages for item in page)
    assert store.search(("notes",), limit=0) == []


def test_search_with_a_query_ranks_by_meaning(rv_local: reverie.Reverie) -> None:
    """The real bundled embedder: Reverie's hybrid search behind ``query``, best first, scores falling."""
    store = ReverieStore(rv_local, user_at=1)
    _fill(store)
    store.put(ANA, "pet", {"text": "Ana has a cat called Miso"}, index=["text"])
    rv_local.embed_pending()
    hits = store.search(ANA, query="what food does Ana not eat? she is vegetarian")
    assert hits[0].key == "diet"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.namespace[:2] == ANA for h in hits)
    pet = store.search(("memories",), query="which animal lives with Ana", limit=1)
    assert [(h.namespace, h.key) for h in pet] == [(ANA, "pet")]  # across users, through the merge
    only_events = store.search(("memories",), query="Lisbon trip", filter={"kind": "event"})
    assert [h.key for h in only_events] == ["lisbon"]
    assert all(h.namespace[0] == "docs" for h in store.search(("docs",), query="Portuguese answers"))


def test_a_query_nothing_matches_well_still_ranks_the_namespace_by_meaning(rv_local: reverie.Reverie) -> None:
    """As LangGraph's own stores answer: a query returns up to ``limit`` of the namespace's items, best first,
    even when Reverie's search finds none of them a match of its own (no shared word, a weak similarity)."""
    store = ReverieStore(rv_local, user_at=1)
    _fill(store)
    rv_local.embed_pending()
    hits = store.search(ANA, query="what does she eat?", limit=10)
    assert hits[0].key == "diet"  # nearest in meaning, though no word is shared
    assert sorted(h.key for h in hits) == ["diet", "language", "lisbon"]  # every item under the prefix, once
    scores = [h.score for h in hits if h.score is not None]
    assert scores == sorted(scores, reverse=True)


def test_index_false_indexes_only_the_key(store: ReverieStore, engine: reverie.Reverie) -> None:
    store.put(("docs",), "secret-recipe", {"text": "saffron and paprika"}, index=False)
    entry = engine.memory.get(entry_id("default", ("docs",), "secret-recipe"))
    assert entry.content == "docs: secret-recipe"
    # Not found by what it says (its text is not indexed): as LangGraph's own stores do, a query still lists
    # the namespace's items after its matches, and this one comes last, unscored or scored below any match.
    (found,) = store.search(("docs",), query="saffron")
    assert found.key == "secret-recipe" and (found.score is None or found.score < 0.5)
    item = store.get(("docs",), "secret-recipe")
    assert item is not None and item.value == {"text": "saffron and paprika"}


def test_ttl_expires_and_reads_refresh_it(store: ReverieStore, clock: FakeClock) -> None:
    assert store.supports_ttl
    store.put(ANA, "otp", {"text": "code 1234"}, ttl=2)  # minutes
    clock.advance(seconds=90)
    assert store.get(ANA, "otp") is not None  # a read refreshes: two more minutes from now
    clock.advance(seconds=90)
    assert store.get(ANA, "otp", refresh_ttl=False) is not None
    assert [i.key for i in store.search(ANA, refresh_ttl=False)] == ["otp"]
    clock.advance(seconds=31)
    assert store.get(ANA, "otp") is None
    assert store.search(ANA) == [] and store.list_namespaces() == []
    store.put(ANA, "otp", {"text": "code 5678"})  # a put revives it, now without a TTL
    clock.advance(days=365)
    item = store.get(ANA, "otp")
    assert item is not None and item.value == {"text": "code 5678"}


def test_the_default_ttl_of_the_ttl_config(engine: reverie.Reverie, clock: FakeClock) -> None:
    store = ReverieStore(engine, ttl={"default_ttl": 1, "refresh_on_read": False})
    store.put(("cache",), "a", {"v": 1})
    store.put(("cache",), "b", {"v": 2}, ttl=None)  # explicit None: never expires
    clock.advance(seconds=30)
    assert store.get(("cache",), "a") is not None  # not refreshed (refresh_on_read False)
    clock.advance(seconds=31)
    assert store.get(("cache",), "a") is None
    assert store.get(("cache",), "b") is not None


def test_bad_input_is_refused_and_writes_nothing(store: ReverieStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "x"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {"v": 1})])  # straight to batch: still checked
    with pytest.raises(ValidationError, match="value"):
        store.put(("a",), "k", {"v": {1, 2}})  # not JSON
    with pytest.raises(ValidationError, match="value"):
        store.put(("a",), "k", {"v": "x" * 70_000})
    with pytest.raises(ValidationError, match="operator"):
        store.search(("a",), filter={"n": {"$regex": "x"}})
    with pytest.raises(ValidationError, match="limit"):
        store.search(("a",), limit=-1)
    with pytest.raises(ValidationError, match="user_id"):
        store.put(("memories", " padded "), "k", {"v": 1})  # the user label must be a Reverie id
    with pytest.raises(ValidationError, match="ttl"):
        store.batch([PutOp(("a",), "k", {"v": 1}, ttl=-5)])
    # A batch whose last op is bad applies none of the ops before it.
    with pytest.raises(ValidationError):
        store.batch([PutOp(("a",), "ok", {"v": 1}), SearchOp(("a",), limit=-3)])
    assert store.get(("a",), "ok") is None and store.list_namespaces() == []


def test_the_agents_other_memories_and_other_agents_stay_out(store: ReverieStore, engine: reverie.Reverie) -> None:
    engine.memory.save("Ana wants answers in Portuguese, said at lunch", scope=Scope(user_id="ana"))
    other = ReverieStore(engine, agent_id="helper", user_at=1)
    other.put(ANA, "language", {"text": "Ana wants answers in Portuguese"})
    assert store.search(ANA) == [] and store.search(ANA, query="Portuguese") == []
    assert store.list_namespaces() == [] and store.get(ANA, "language") is None
    assert [i.key for i in other.search(ANA, query="Portuguese")] == ["language"]


def test_the_async_interface(store: ReverieStore) -> None:
    async def run() -> None:
        await asyncio.gather(*(store.aput(ANA, f"k{i}", {"text": f"fact {i}", "i": i}) for i in range(5)))
        item = await store.aget(ANA, "k3")
        assert item is not None and item.value == {"text": "fact 3", "i": 3}
        assert {i.key for i in await store.asearch(ANA, filter={"i": {"$gte": 3}})} == {"k3", "k4"}
        assert await store.alist_namespaces(prefix=("memories",)) == [ANA]
        await store.adelete(ANA, "k3")
        assert await store.aget(ANA, "k3") is None
        results = await store.abatch([SearchOp(ANA, limit=100), PutOp(ANA, "k9", {"text": "fact 9"})])
        assert len(results[0]) == 4 and results[1] is None  # type: ignore[arg-type]

    asyncio.run(run())


class _State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def test_a_langgraph_graph_keeps_its_memory_in_reverie(store: ReverieStore, engine: reverie.Reverie) -> None:
    """A compiled StateGraph with ``store=ReverieStore(...)``, no LLM: one node writes through the injected
    ``store`` argument, the next reads through ``get_store()``; a second run of the graph sees the first's."""

    def remember(state: _State, *, store: BaseStore) -> dict[str, Any]:
        namespace = ("memories", state["user"])
        store.put(namespace, f"fact-{len(store.search(namespace))}", {"text": state["fact"]})
        return {}

    def recall(state: _State) -> dict[str, Any]:
        found = get_store().search(("memories", state["user"]), limit=10)
        return {"recalled": sorted(item.value["text"] for item in found)}

    builder = StateGraph(_State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    graph = builder.compile(store=store)
    graph.invoke({"user": "ana", "fact": "Ana is vegetarian", "recalled": []})
    out = graph.invoke({"user": "ana", "fact": "Ana lives in Porto", "recalled": []})
    assert out["recalled"] == ["Ana is vegetarian", "Ana lives in Porto"]
    other = graph.invoke({"user": "bob", "fact": "Bob rides a bike", "recalled": []})
    assert other["recalled"] == ["Bob rides a bike"]
    # What the graph stored is Reverie memory like any other: Ana's scope finds it.
    hits = engine.memory.search("vegetarian", scope=Scope(user_id="ana"))
    assert [h.entry.metadata["langgraph"]["key"] for h in hits] == ["fact-0"]


def _docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("\n## LangGraph and LangMem\n")
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"```python\n(.*?)```", text[start : end if end != -1 else None], re.DOTALL)
    assert blocks, "the section shows its example"
    return str(blocks[0])


def test_the_docs_example_runs(tmp_path: Path) -> None:
    """docs/portability.md's ten-line example, executed as written (a fresh process, the default engine)."""
    code = _docs_example()
    assert len(code.strip().splitlines()) <= 15
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "language Ana wants her answers in Portuguese"


def test_concurrent_puts_of_one_key_leave_one_entry(store: ReverieStore, engine: reverie.Reverie) -> None:
    """Threads racing to create the same key: every put lands (none refused), one entry holds the last."""
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def put(n: int) -> None:
        start.wait()
        try:
            for k in range(3):
                store.put(ANA, "shared", {"text": f"thread {n} write {k}"})
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert [item.key for item in store.search(ANA)] == ["shared"]
    history = engine.memory.history(entry_id("default", ANA, "shared"), scope=Scope(user_id="ana"))
    assert history[0].change is Change.CREATED and len(history) == 18


def test_fields_and_index_paths_choose_the_indexed_text(engine: reverie.Reverie) -> None:
    store = ReverieStore(engine, fields=["title", "body.text"])
    value = {"title": "Trip", "body": {"text": "Lisbon in May"}, "tags": ["sun", "sea"], "id": 7}
    store.put(("notes",), "a", value)
    store.put(("notes",), "b", value, index=["tags[*]"])
    content = {k: engine.memory.get(entry_id("default", ("notes",), k)).content for k in ("a", "b")}
    assert content == {"a": "Trip\nLisbon in May", "b": "sun\nsea"}
    with pytest.raises(ValidationError, match="fields"):
        ReverieStore(engine, fields="text")
    with pytest.raises(ValidationError, match="user_at"):
        ReverieStore(engine, user_at=-1)
