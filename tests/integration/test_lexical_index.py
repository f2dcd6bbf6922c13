"""The in-memory BM25 index: FTS5's scores and rankings, exact scope, and other writers' changes seen by the
next search (real SQLite files throughout)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie import Scope
from reverie.bench.latency import synthetic_facts
from reverie.clock import FakeClock
from reverie.core import text
from reverie.core.tokens import search_terms
from reverie.recall.config import RecallConfig
from reverie.recall.hybrid import HybridSearch
from reverie.recall.lexical import LexicalIndex
from reverie.storage import open_store
from reverie.storage.base import FactFilter, PurgeRule, Store
from reverie.types import Change, MemoryEntry, Tier

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
AGENT = "agent-a"
HASH = {"provider": "hash", "background": False}


def fact(n: int, content: str, *, scope: Scope | None = None, **fields: Any) -> MemoryEntry:
    fields.setdefault("category", "general")
    fields.setdefault("tier", Tier.SEMANTIC)
    fields.setdefault("tags", ())
    return MemoryEntry(
        id=f"{n:012x}", content=content, scope=scope or Scope(AGENT), created_at=T0, last_seen_at=T0, **fields
    )


def view(scope: Scope | None = None, **fields: Any) -> FactFilter:
    return FactFilter(scope=scope or Scope(AGENT), now=T0, **fields)


def found(index: LexicalIndex, query: str, flt: FactFilter | None = None, k: int = 10) -> list[str]:
    return [i for i, _ in index.search(flt or view(), search_terms(query), k)]


def fts(store: Store, query: str, flt: FactFilter | None = None, k: int = 10) -> list[tuple[str, float]]:
    match = text.fts_match(text.query_terms(query))
    assert match is not None
    return [(e.id, score) for e, score in store.facts.search(match, flt or view(), k)]


def add_all(store: Store, entries: Iterable[MemoryEntry]) -> None:
    for e in entries:
        store.facts.add(e, at=T0)


# -- scores and rankings ---------------------------------------------------------------------------------
def add_four_fruits(store: Store) -> None:
    add_all(
        store,
        [
            fact(1, "apple banana"),
            fact(2, "apple apple cherry"),
            fact(3, "cherry", category="fruit"),
            fact(4, "durian", category="fruit"),
        ],
    )


def test_a_hand_computed_bm25_score(store: Store) -> None:
    # Lengths (content + category tokens): 3, 4, 2, 2; average 2.75. "banana" is in one document of four.
    add_four_fruits(store)
    assert LexicalIndex(store).search(view(), ["banana"], 10) == [(f"{1:012x}", pytest.approx(0.81692, abs=1e-5))]


def test_length_normalisation_b_is_the_indexs_own(store: Store) -> None:
    # The same corpus as above: "apple banana" is 3 tokens long against an average of 2.75; idf(banana) 0.8473.
    add_four_fruits(store)
    # b 0: a document's length does not matter, so one occurrence scores exactly the idf.
    assert LexicalIndex(store, b=0.0).search(view(), ["banana"], 10)[0][1] == pytest.approx(0.84730, abs=1e-5)
    # b 0.3 (the engine's default, recall.bm25_b): 0.8473 * 2.2 / (1 + 1.2 * (0.7 + 0.3 * 3 / 2.75)).
    assert LexicalIndex(store, b=0.3).search(view(), ["banana"], 10)[0][1] == pytest.approx(0.83488, abs=1e-5)
    with pytest.raises(ValueError, match="b must be"):
        LexicalIndex(store, b=1.5)


def test_the_engine_indexes_with_recall_bm25_b(tmp_path: Path) -> None:
    with (
        reverie.open(tmp_path / "b", embedding=HASH) as default,
        reverie.open(tmp_path / "b2", embedding=HASH, recall={"bm25_b": 0.75}) as fts5_like,
    ):
        assert default.recall.lexical is not None and default.recall.lexical.b == 0.3
        assert fts5_like.recall.lexical is not None and fts5_like.recall.lexical.b == 0.75
    with pytest.raises(reverie.ConfigError, match="bm25_b"):
        reverie.open(tmp_path / "b3", embedding=HASH, recall={"bm25_b": 2})


def test_tags_and_category_count_with_their_weights(store: Store) -> None:
    add_all(
        store,
        [
            fact(1, "notes about the garden", tags=("tomato",)),
            fact(2, "tomato soup recipe"),
            fact(3, "seeds to buy", category="tomato"),
            *(fact(n, f"filler entry number {n}") for n in range(4, 12)),
        ],
    )
    # Same idf for all three; content (1.0) beats tags (0.6) beats category (0.4).
    assert found(LexicalIndex(store), "tomato") == [f"{2:012x}", f"{1:012x}", f"{3:012x}"]


QUERIES = [
    "what did Maya repair in Lisbon",
    "the rusty bicycle Tomas painted",
    "who cooked a guitar last week",
    "where is the golden lantern near the boat",
    "Priya and Omar in Kyoto on Monday",
    "vintage telescope photographed in autumn",
]


@pytest.mark.parametrize("query", QUERIES)
def test_rankings_agree_with_fts5(store: Store, query: str) -> None:
    if not store.url.startswith("sqlite"):
        pytest.skip("the index reproduces FTS5's bm25(); PostgreSQL ranks with ts_rank × idf")
    add_all(store, [fact(n, content) for n, content in enumerate(synthetic_facts(300, seed=7))])
    ours = LexicalIndex(store).search(view(), search_terms(query), 10)
    theirs = fts(store, query, k=10)
    # FTS5 also counts the agent_id column's tokens in a document's length, so scores differ slightly;
    # the order must not.
    assert [i for i, _ in ours[:5]] == [i for i, _ in theirs[:5]]
    assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], rel=0.05)


# -- scope -----------------------------------------------------------------------------------------------
STORED = {
    1: Scope(AGENT),
    2: Scope(AGENT, user_id="u1"),
    3: Scope(AGENT, user_id="u2"),
    4: Scope(AGENT, session_id="s1"),
    5: Scope(AGENT, user_id="u1", session_id="s1"),
    6: Scope("agent-b"),
    7: Scope("agent-b", user_id="u1"),
}
CASES = [
    (Scope(AGENT), {1}),
    (Scope(AGENT, user_id="u1"), {1, 2}),
    (Scope(AGENT, user_id="u3"), {1}),
    (Scope(AGENT, session_id="s1"), {1, 4}),
    (Scope(AGENT, user_id="u1", session_id="s1"), {1, 2, 4, 5}),
    (Scope(AGENT, user_id="u2", session_id="s2"), {1, 3}),
    (Scope("agent-b", user_id="u1"), {6, 7}),
    (Scope("agent-c"), set()),
]


@pytest.mark.parametrize(("scope", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_the_index_shows_exactly_what_the_scope_may_see(store: Store, scope: Scope, expected: set[int]) -> None:
    add_all(store, [fact(n, f"zebra fact {n}", scope=s, tags=("shared",)) for n, s in STORED.items()])
    assert {n for n, s in STORED.items() if scope.sees(s)} == expected
    index = LexicalIndex(store)
    for query in ("zebra", "shared"):
        assert {int(i, 16) for i in found(index, query, view(scope))} == expected


def test_category_prefix_is_a_path_prefix(store: Store) -> None:
    add_all(
        store,
        [
            fact(1, "river walk", category="travel"),
            fact(2, "river cruise", category="travel/boats"),
            fact(3, "river fishing", category="traveller"),
            fact(4, "river map", category="general"),
        ],
    )
    index = LexicalIndex(store)
    assert set(found(index, "river", view(category_prefix="travel"))) == {f"{1:012x}", f"{2:012x}"}
    assert found(index, "river", view(category_prefix="travel/boats")) == [f"{2:012x}"]
    assert found(index, "river", view(category_prefix="nowhere")) == []


# -- keeping in step -------------------------------------------------------------------------------------
def test_changes_through_another_connection_are_seen_by_the_next_search(store: Store, tmp_path: Path) -> None:
    index = LexicalIndex(store)
    store.facts.add(fact(1, "orchard apples harvest"), at=T0)
    assert found(index, "apples") == [f"{1:012x}"]
    other = open_store(store.url, now=T0)
    try:
        other.facts.add(fact(2, "orchard apples picking"), at=T0)
        assert set(found(index, "apples")) == {f"{1:012x}", f"{2:012x}"}
        other.facts.write(fact(1, "vineyard grapes harvest"), change=Change.EDITED, at=T0)
        assert found(index, "apples") == [f"{2:012x}"] and found(index, "grapes") == [f"{1:012x}"]
        archived = fact(2, "orchard apples picking", archived_at=T0)
        other.facts.write(archived, change=Change.ARCHIVED, at=T0)
        assert found(index, "apples") == []
        other.facts.write(replace(archived, archived_at=None), change=Change.RESTORED, at=T0)
        assert found(index, "apples") == [f"{2:012x}"]
        other.facts.write(archived, change=Change.ARCHIVED, at=T0)
        other.facts.purge(PurgeRule(archived_before=T0, protect_importance=0.8, protect_reinforcement=5))
        assert found(index, "apples") == [] and index.size(AGENT) == 1
    finally:
        other.close()


def test_a_users_entry_added_to_an_all_agent_wide_index_stays_that_users(store: Store) -> None:
    """An index of agent-wide rows only skips the scope masks; the first user- or session-scoped row added
    afterwards must bring them back, and scores must match a fresh load of the same rows."""
    index = LexicalIndex(store)
    add_all(store, [fact(n, f"harbour ferry timetable {n}") for n in range(1, 6)])
    assert len(found(index, "ferry", view(Scope(AGENT, user_id="u2")))) == 5  # agent-wide: every user sees them
    store.facts.add(fact(9, "harbour ferry locker code", scope=Scope(AGENT, user_id="u1")), at=T0)
    store.facts.add(fact(10, "harbour ferry seat", scope=Scope(AGENT, session_id="s1")), at=T0)
    assert f"{9:012x}" not in found(index, "ferry locker", view(Scope(AGENT, user_id="u2")))
    assert f"{9:012x}" not in found(index, "ferry locker")
    assert f"{9:012x}" in found(index, "ferry locker", view(Scope(AGENT, user_id="u1")))
    assert f"{10:012x}" not in found(index, "ferry seat", view(Scope(AGENT, user_id="u1")))
    assert f"{10:012x}" in found(index, "ferry seat", view(Scope(AGENT, session_id="s1")))
    both = view(Scope(AGENT, user_id="u1", session_id="s1"))
    fresh = LexicalIndex(store)
    terms = search_terms("harbour ferry locker seat")
    assert index.search(both, terms, 10) == fresh.search(both, terms, 10)


def test_many_edits_reload_the_index_and_keep_it_right(store: Store) -> None:
    index = LexicalIndex(store)
    add_all(store, [fact(n, f"first draft {n}") for n in range(40)])
    assert len(found(index, "draft", k=100)) == 40
    for round_ in range(3):
        for n in range(40):
            store.facts.write(fact(n, f"revision {round_} of {n}"), change=Change.EDITED, at=T0)
        assert len(found(index, f"revision {round_}", k=100)) == 40
    assert found(index, "draft") == []
    assert index.size(AGENT) == 40


def test_a_restored_backup_reloads_the_index(store: Store, tmp_path: Path) -> None:
    index = LexicalIndex(store)
    store.facts.add(fact(1, "alpha notes"), at=T0)
    store.backup(tmp_path / "before.bak")
    store.facts.write(fact(1, "bravo notes"), change=Change.EDITED, at=T0)
    assert found(index, "bravo") == [f"{1:012x}"]
    store.restore_backup(tmp_path / "before.bak")
    assert found(index, "bravo") == [] and found(index, "alpha") == [f"{1:012x}"]


def test_archived_entries_need_the_store(store: Store) -> None:
    assert not LexicalIndex.supports(view(include_archived=True))
    with pytest.raises(ValueError, match="archived"):
        LexicalIndex(store).search(view(include_archived=True), ["x"], 10)


# -- through HybridSearch --------------------------------------------------------------------------------
def test_hybrid_bm25_drops_expired_entries_and_still_fills_its_candidates(store: Store) -> None:
    expired = [fact(n, f"kettle descaling step {n}", expires_at=T0 - timedelta(days=1)) for n in range(5)]
    live = [fact(n, f"kettle descaling note {n}") for n in range(5, 30)]
    add_all(store, [*expired, *live])
    recall = HybridSearch(store, None, RecallConfig(candidates=20))
    results = recall.search("kettle descaling", view(), 20, mode="bm25")
    assert len(results) == 20 and {h.entry.id for h in results} <= {e.id for e in live}


def test_hybrid_searches_archived_entries_through_the_store(store: Store) -> None:
    add_all(store, [fact(1, "old passport number", archived_at=T0), fact(2, "new passport number")])
    recall = HybridSearch(store, None, RecallConfig())
    assert [h.entry.id for h in recall.search("passport", view(), 10, mode="bm25")] == [f"{2:012x}"]
    with_archived = recall.search("passport", view(include_archived=True), 10, mode="bm25")
    assert {h.entry.id for h in with_archived} == {f"{1:012x}", f"{2:012x}"}


MEMORY_UNTIMED = {"lexical": "memory", "bm25_b": 0.75, "time_weight": 0}


def test_memory_and_fts_give_the_same_results_through_the_engine(tmp_path: Path) -> None:
    clock = FakeClock()
    home = tmp_path / "same"
    with (
        # FTS5's bm25() has b 0.75 built in: the index takes the same to give the same rankings. A named time's
        # gain is off: it adds to own evidence, whose scale differs (FTS knows no ideal match), and the synthetic
        # facts say "last week" too.
        reverie.open(home, clock=clock, embedding=HASH, recall=MEMORY_UNTIMED) as memory,
        reverie.open(home, clock=clock, embedding=HASH, recall={"lexical": "fts", "time_weight": 0}) as fts_engine,
    ):
        assert memory.recall.lexical is not None and fts_engine.recall.lexical is None
        facts = synthetic_facts(200, seed=11)
        memory.memory.save_many([{"content": f, "category": f"people/{f.split()[0].lower()}"} for f in facts])
        memory.embed_pending()
        for query in QUERIES:
            for mode in ("bm25", "hybrid"):
                ours = memory.memory.search(query, mode=mode, limit=5)
                theirs = fts_engine.memory.search(query, mode=mode, limit=5)
                assert [h.entry.id for h in ours] == [h.entry.id for h in theirs], (query, mode)
                assert [h.matched_by for h in ours] == [h.matched_by for h in theirs]
            scoped = memory.memory.search(query, mode="bm25", category="people/maya", limit=5)
            assert all(h.entry.category == "people/maya" for h in scoped)


def test_another_engine_on_the_same_file_is_seen(tmp_path: Path) -> None:
    clock = FakeClock()
    home = tmp_path / "shared"
    with (
        reverie.open(home, clock=clock, embedding=HASH) as here,
        reverie.open(home, clock=clock, embedding=HASH) as there,
    ):

        def bm25(query: str) -> list[str]:
            return [h.entry.id for h in here.memory.search(query, mode="bm25") if h.matched_by == "bm25"]

        first = here.memory.save("lighthouse keeper logs the tides").entry.id
        assert bm25("lighthouse") == [first]  # the index is loaded here now
        second = there.memory.save("lighthouse lamp maintenance").entry.id
        assert set(bm25("lighthouse")) == {first, second}
        there.memory.edit(first, content="harbour master schedules")
        assert bm25("lighthouse") == [second] and bm25("harbour") == [first]
        there.memory.archive(second)
        assert bm25("lighthouse") == []
        there.memory.restore(second)
        assert bm25("lighthouse") == [second]
        there.memory.archive(second)
        clock.advance(days=91)
        assert second in here.purge().purged  # purged through this engine's store, seen by its index too
        assert bm25("lighthouse") == []
