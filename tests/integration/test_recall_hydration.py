"""What a hybrid search reads whole (issue 21): its few hundred candidates are ranked from light
``FactCandidate`` rows, and only the hits it returns are read as whole entries (a query naming a time also reads
the texts of each signal's first undated candidates); the ranking is exactly the one whole entries give.

The counts come from a counting wrapper around the engine's real SQLite store, handed to ``HybridSearch``'s
public constructor; the reference ranking from a wrapper whose candidate reads answer with whole entries.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.core import timeq
from reverie.recall.config import RecallConfig
from reverie.recall.hybrid import WRITTEN_TIMES_READ, HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import MemoryEntry

WORDS = ["garden", "bicycle", "kettle", "guitar", "lantern", "canoe", "camera", "violin", "ladder", "quilt"]
PEOPLE = ["Maya", "Tomas", "Priya", "Jonas", "Amara", "Lucas"]
QUERIES = [
    "what did Maya say about the garden last week",  # names a period: the dated candidates join
    "the kettle and the guitar",
    "Priya repaired the canoe",
    "who borrowed a camera",
]
LIMIT = 5


class _Facts:
    """The fact repository, counting the whole entries (``MemoryEntry``) and all the rows its list reads
    return; ``whole_candidates`` makes the candidate reads answer with whole entries (the reference)."""

    def __init__(self, inner: Any, *, whole_candidates: bool = False) -> None:
        self._inner = inner
        self._whole_candidates = whole_candidates
        self.whole = self.rows = 0
        self.before_whole_read: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._whole_candidates:
            name = {"candidates": "get_many", "neighbour_candidates": "neighbours"}.get(name, name)
            name = "in_period" if name == "candidates_in_period" else name
        method = getattr(self._inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            if name == "get_many" and self.before_whole_read is not None:
                self.before_whole_read()
            found = method(*args, **kwargs)
            if isinstance(found, list):
                self.rows += len(found)
                self.whole += sum(isinstance(r[0] if isinstance(r, tuple) else r, MemoryEntry) for r in found)
            return found

        return counted


class _Store:
    """The engine's store with a counting fact repository."""

    def __init__(self, inner: Store, facts: _Facts) -> None:
        self._inner = inner
        self.facts = facts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    """240 turns in 12 threads sharing a small vocabulary (deep candidate lists for both signals), some dated
    last week, some archived, some another user's; embedded by the hash embedder."""
    settings: dict[str, Any] = {"embedding": {"provider": "hash", "background": False}, "graph": {"extraction": "off"}}
    with reverie.open(tmp_path / "home", clock=clock, **settings) as engine:
        rng = random.Random(7)
        items = []
        for n in range(240):
            who, a, b = rng.choice(PEOPLE), rng.choice(WORDS), rng.choice(WORDS)
            metadata: dict[str, Any] = {"thread": f"chat-{n % 12}", "position": n // 12}
            if n % 5 == 0:
                metadata["subjectTime"] = f"2025-12-{22 + n % 7:02d}"
            item: dict[str, Any] = {"content": f"{who} talked about the {a} and the {b}", "metadata": metadata}
            if n % 9 == 0:
                item["scope"] = Scope(user_id="ana")
            items.append(item)
        saved = engine.memory.save_many(items, dedup=False)
        for n in range(3, 240, 17):
            engine.memory.archive(saved[n].id, scope=items[n].get("scope"))
        engine.embed_pending()
        yield engine


def _search(rv: reverie.Reverie, facts: _Facts, query: str, scope: Scope) -> list[reverie.SearchHit]:
    recall = HybridSearch(cast(Store, _Store(rv.store, facts)), rv.embedder, RecallConfig(parallel=False))
    return list(recall.search(query, FactFilter(scope=scope, now=rv.clock.now()), LIMIT, mode="hybrid"))


def test_a_search_reads_whole_only_the_hits_it_returns(rv: reverie.Reverie) -> None:
    for query in QUERIES:
        facts = _Facts(rv.store.facts)
        hits = _search(rv, facts, query, Scope())
        assert len(hits) == LIMIT, query
        assert facts.rows > 100, "the candidate lists are deep"  # the test measures something
        # A query naming a time also reads the texts of each signal's first candidates with no subject time, for
        # the times they name; the hits among them are not read again.
        allowed = LIMIT + (2 * WRITTEN_TIMES_READ if timeq.find_period(query, rv.clock.now()) else 0)
        assert facts.whole <= allowed, f"{query!r}: {facts.whole} whole entries read for {LIMIT} hits"
        assert [h.entry for h in hits] == [rv.store.facts.get(h.entry.id, Scope()) for h in hits]


@pytest.mark.parametrize("scope", [Scope(), Scope(user_id="ana")], ids=["agent", "user"])
def test_candidate_rows_rank_exactly_as_whole_entries(rv: reverie.Reverie, scope: Scope) -> None:
    for query in QUERIES:
        light = _search(rv, _Facts(rv.store.facts), query, scope)
        whole = _search(rv, _Facts(rv.store.facts, whole_candidates=True), query, scope)
        assert [(h.entry, h.score, h.matched_by, h.evidence) for h in light] == [
            (h.entry, h.score, h.matched_by, h.evidence) for h in whole
        ], query


def test_a_hit_archived_between_the_reads_is_left_out(rv: reverie.Reverie) -> None:
    query = QUERIES[1]
    first = _search(rv, _Facts(rv.store.facts), query, Scope())[0].entry
    facts = _Facts(rv.store.facts)
    facts.before_whole_read = lambda: rv.memory.archive(first.id)  # another writer, between the two reads
    hits = _search(rv, facts, query, Scope())
    assert first.id not in {h.entry.id for h in hits}
    assert len(hits) == LIMIT - 1 and all(h.entry.current for h in hits)
