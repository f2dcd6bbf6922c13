"""Vectors on PostgreSQL + pgvector: nearest-neighbour search in the database (HNSW, one partial expression
index per model and dimension), the engine's choice of vector backend, and the issue's requirement that API
processes hold no state beyond a cache invalidated correctly: two engines on one database, as two API
processes, where the second's edits and archives are never answered stale by the first."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

import reverie
from reverie.clock import FakeClock
from reverie.errors import ConfigError
from reverie.recall.index import VectorIndex
from reverie.recall.store_backend import StoreVectorSearch
from reverie.storage import open_store, portable, store_url
from reverie.storage.base import NearestVectors
from reverie.storage.postgres import PgStore
from reverie.storage.postgres.database import Conn
from reverie.storage.postgres.vectors import HnswIndex
from reverie.types import Change, MemoryEntry, Scope, Tier

HASH = {"provider": "hash", "background": False}
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
DIM = 8


def eid(n: int) -> str:
    return f"{n:012x}"


def entry(n: int, content: str, *, agent: str = "default", **fields: Any) -> MemoryEntry:
    return MemoryEntry(
        id=eid(n),
        content=content,
        category="general",
        tags=(),
        scope=Scope(agent_id=agent),
        last_seen_at=T0,
        created_at=T0,
        tier=Tier.SEMANTIC,
        **fields,
    )


def unit(cosine: float, dim: int = DIM) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A unit vector whose cosine with the first axis is ``cosine``."""
    v = np.zeros(dim, dtype=np.float32)
    v[0], v[1] = cosine, np.sqrt(max(0.0, 1.0 - cosine * cosine))
    return v


def ids(results: reverie.SearchResults) -> list[str]:
    return [h.entry.id for h in results]


@pytest.fixture
def pg(pg_url: str) -> Iterator[PgStore]:
    store = open_store(pg_url, now=T0)
    assert isinstance(store, PgStore)
    try:
        yield store
    finally:
        store.close()


def hnsw_indexes(store: PgStore) -> dict[str, str]:
    rows = store.database.read(
        lambda c: c.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'fact_vectors' AND indexdef LIKE '%%hnsw%%'"
        ).fetchall()
    )
    return {str(name): str(definition) for name, definition in rows}


# -- the repository --------------------------------------------------------------------------------------


def test_nearest_answers_the_agents_nearest_ids_best_first_with_exact_cosines(pg: PgStore, tmp_path: Path) -> None:
    cosines = {1: 1.0, 2: 0.8, 3: 0.6, 4: 0.0, 5: -1.0, 6: 0.9}  # 6 is archived: still a candidate
    for n in cosines:
        fields = {"archived_at": T0} if n == 6 else {}
        pg.facts.add(entry(n, f"fact {n}", **fields), at=T0)
    pg.facts.add(entry(7, "another agent's", agent="other"), at=T0)
    pg.facts.add(entry(8, "another model's"), at=T0)
    rows = [(eid(n), f"fact {n}", unit(c).tobytes()) for n, c in cosines.items()]
    assert pg.vectors.put_many(rows, model="m", dim=DIM, at=T0) == 6
    pg.vectors.put_many([(eid(7), "another agent's", unit(1.0).tobytes())], model="m", dim=DIM, at=T0)
    pg.vectors.put_many([(eid(8), "another model's", unit(1.0).tobytes())], model="m2", dim=DIM, at=T0)

    assert isinstance(pg.vectors, NearestVectors)
    query = unit(1.0).tobytes()
    found = pg.vectors.nearest("default", "m", query, 10)
    assert [fid for fid, _ in found] == [eid(n) for n in (1, 6, 2, 3, 4, 5)]
    assert [score for _, score in found] == pytest.approx([1.0, 0.9, 0.8, 0.6, 0.0, -1.0], abs=1e-6)
    assert [fid for fid, _ in pg.vectors.nearest("default", "m", query, 2)] == [eid(1), eid(6)]
    assert pg.vectors.nearest("default", "m", query, 0) == []
    assert pg.vectors.nearest("other", "m", query, 5) == [(eid(7), pytest.approx(1.0))]
    assert [fid for fid, _ in pg.vectors.nearest("default", "m2", query, 5)] == [eid(8)]
    assert pg.vectors.nearest("default", "m", unit(1.0, dim=16).tobytes(), 5) == []  # another dimension
    assert pg.vectors.nearest("nobody", "m", query, 5) == []

    sqlite = open_store(store_url(tmp_path / "store.db"), now=T0)
    try:
        assert not isinstance(sqlite.vectors, NearestVectors)
    finally:
        sqlite.close()


def test_put_many_makes_one_hnsw_index_per_model_and_dimension(pg: PgStore, pg_url: str) -> None:
    assert hnsw_indexes(pg) == {}
    pg.facts.add(entry(1, "one"), at=T0)
    pg.facts.add(entry(2, "two"), at=T0)
    assert pg.vectors.put_many([(eid(1), "stale", unit(1.0).tobytes())], model="m", dim=DIM, at=T0) == 0
    pg.vectors.put_many([(eid(1), "one", unit(1.0).tobytes())], model="m", dim=DIM, at=T0)
    pg.vectors.put_many([(eid(2), "two", unit(0.5).tobytes())], model="m", dim=DIM, at=T0)
    # A model id that needs quoting, and another dimension under a known model id, get their own indexes.
    pg.vectors.put_many([(eid(2), "two", unit(0.5).tobytes())], model="it's m; --", dim=DIM, at=T0)
    pg.vectors.put_many([(eid(2), "two", unit(0.5, dim=16).tobytes())], model="m", dim=16, at=T0)
    indexes = hnsw_indexes(pg)
    assert sorted(indexes) == sorted(HnswIndex(m, d).name for m, d in [("m", DIM), ("it's m; --", DIM), ("m", 16)])
    expected = "((vector)::vector(8)) vector_cosine_ops) WHERE ((model = 'm'::text) AND (dim = 8))"
    assert expected in indexes[HnswIndex("m", DIM).name]
    assert "WHERE ((model = 'it''s m; --'::text) AND (dim = 8))" in indexes[HnswIndex("it's m; --", DIM).name]
    # Another process writing a (model, dim) whose index exists finds it: no error, no second index.
    other = open_store(pg_url, now=T0)
    try:
        other.vectors.put_many([(eid(1), "one", unit(1.0).tobytes())], model="m", dim=DIM, at=T0)
    finally:
        other.close()
    assert len(hnsw_indexes(pg)) == 3
    assert [fid for fid, _ in pg.vectors.nearest("default", "m", unit(1.0).tobytes(), 5)] == [eid(1)]


def test_past_2000_dimensions_the_index_is_halfvec_and_past_4000_there_is_none(pg: PgStore) -> None:
    for n, text in ((1, "near"), (2, "far"), (3, "huge")):
        pg.facts.add(entry(n, text), at=T0)
    rows = [(eid(1), "near", unit(0.9, 3000).tobytes()), (eid(2), "far", unit(0.1, 3000).tobytes())]
    pg.vectors.put_many(rows, model="big-3000", dim=3000, at=T0)
    pg.vectors.put_many([(eid(3), "huge", unit(0.9, 4500).tobytes())], model="big-4500", dim=4500, at=T0)
    indexes = hnsw_indexes(pg)
    assert list(indexes) == [HnswIndex("big-3000", 3000).name]
    assert "halfvec(3000)) halfvec_cosine_ops" in indexes[HnswIndex("big-3000", 3000).name]
    found = pg.vectors.nearest("default", "big-3000", unit(1.0, 3000).tobytes(), 5)
    assert [fid for fid, _ in found] == [eid(1), eid(2)]
    assert [score for _, score in found] == pytest.approx([0.9, 0.1], abs=1e-6)  # exact, not half precision
    assert pg.vectors.nearest("default", "big-4500", unit(1.0, 4500).tobytes(), 5) == [(eid(3), pytest.approx(0.9))]


def test_the_search_uses_the_hnsw_index_and_finds_the_exact_neighbours(pg: PgStore) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((240, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for n in range(240):
        pg.facts.add(entry(n + 1, f"fact {n + 1}", agent=f"agent-{n % 4}"), at=T0)
    pg.vectors.put_many(
        [(eid(n + 1), f"fact {n + 1}", vectors[n].tobytes()) for n in range(240)], model="m", dim=DIM, at=T0
    )
    pg.vacuum()  # statistics for the planner
    query = rng.standard_normal(DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    index = HnswIndex("m", DIM)

    def plan(c: Conn) -> str:
        # At this size the planner rightly prefers reading the agent's 60 rows and sorting them (exact);
        # with the alternatives priced out, the plan shows the query's expression and predicate match the index.
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            c.execute(sql.SQL("SET LOCAL {} = off").format(sql.Identifier(setting)))
        rows = c.execute(sql.SQL("EXPLAIN ") + index.search(), {"agent": "agent-1", "query": query, "k": 10})
        return "\n".join(str(r[0]) for r in rows.fetchall())

    explained = pg.database.write(plan)
    assert f"Index Scan using {index.name} on fact_vectors" in explained, explained
    assert "Order By: ((vector)::vector(8) <=>" in explained and "Filter: (agent_id = " in explained

    mine = [n for n in range(240) if n % 4 == 1]
    exact = sorted(mine, key=lambda n: -float(vectors[n] @ query))[:10]
    found = pg.vectors.nearest("agent-1", "m", query.tobytes(), 10)
    assert [fid for fid, _ in found] == [eid(n + 1) for n in exact]
    assert [score for _, score in found] == pytest.approx([float(vectors[n] @ query) for n in exact], abs=1e-5)


def test_concurrent_writers_of_the_same_vectors_neither_conflict_nor_duplicate(pg: PgStore, pg_url: str) -> None:
    for n in range(1, 21):
        pg.facts.add(entry(n, f"fact {n}"), at=T0)
    rows = [(eid(n), f"fact {n}", unit(n / 20).tobytes()) for n in range(1, 21)]
    other = open_store(pg_url, now=T0)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(store: Any) -> None:
        try:
            start.wait()
            for _ in range(10):
                store.vectors.put_many(rows, model="m", dim=DIM, at=T0)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s,)) for s in (pg, other)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        other.close()
    assert errors == [], [str(e) for e in errors]
    assert pg.vectors.counts() == {"m": 20}
    assert len(hnsw_indexes(pg)) == 1


def test_an_edit_waiting_on_a_vector_write_drops_that_vector_when_it_commits(pg: PgStore, pg_url: str) -> None:
    pg.facts.add(entry(1, "before"), at=T0)
    other = open_store(pg_url, now=T0)
    try:
        edited = threading.Thread(
            target=lambda: other.facts.write(replace(entry(1, "after"), updated_at=T0), change=Change.EDITED, at=T0)
        )
        with pg.transaction():
            assert pg.vectors.put_many([(eid(1), "before", unit(1.0).tobytes())], model="m", dim=DIM, at=T0) == 1
            edited.start()
            time.sleep(0.5)
            assert edited.is_alive()  # the edit waits for the entry this write locked
        edited.join(30)
        assert not edited.is_alive()
    finally:
        other.close()
    assert pg.vectors.counts() == {}  # the edit's trigger dropped the vector of the old text
    assert [fid for _, fid, _ in pg.vectors.pending("m", 10)] == [eid(1)]


# -- the engine ------------------------------------------------------------------------------------------


def engine(home: Path, url: str, clock: FakeClock, backend: str = "auto") -> reverie.Reverie:
    return reverie.open(home, clock=clock, store={"url": url}, embedding=HASH, recall={"vector_backend": backend})


def test_auto_searches_in_the_store_on_postgresql_and_in_memory_on_sqlite(
    tmp_path: Path, pg_url: str, clock: FakeClock
) -> None:
    with engine(tmp_path / "pg", pg_url, clock) as rv:
        assert rv.settings.recall.vector_backend == "auto"
        assert isinstance(rv.recall.index, StoreVectorSearch)
    with engine(tmp_path / "pg", pg_url, clock, "memory") as rv:
        assert isinstance(rv.recall.index, VectorIndex)
    with engine(tmp_path / "pg", pg_url, clock, "store") as rv:
        assert isinstance(rv.recall.index, StoreVectorSearch)
    with reverie.open(tmp_path / "lite", clock=clock, embedding=HASH) as rv:
        assert isinstance(rv.recall.index, VectorIndex)
    with pytest.raises(ConfigError, match=r'recall\.vector_backend = "store" needs a store that searches vectors'):
        reverie.open(tmp_path / "lite", clock=clock, embedding=HASH, recall={"vector_backend": "store"})


def test_recall_through_the_store_respects_scope_and_archive(tmp_path: Path, pg_url: str, clock: FakeClock) -> None:
    with engine(tmp_path / "home", pg_url, clock, "store") as rv:
        mine = rv.memory.save("quarterly budget review notes", dedup=False).id
        rv.memory.save("quarterly budget review notes", scope=Scope(agent_id="other"), dedup=False)
        private = rv.memory.save("quarterly budget review notes", scope=Scope(user_id="u1"), dedup=False).id
        gone = rv.memory.save("quarterly budget review notes, archived", dedup=False).id
        assert rv.embed_pending() == 4
        rv.memory.archive(gone)
        assert ids(rv.memory.search("budget review", mode="vector")) == [mine]
        assert set(ids(rv.memory.search("budget review", mode="vector", scope=Scope(user_id="u1")))) == {
            mine,
            private,
        }
        assert set(ids(rv.memory.search("budget review", mode="vector", include_archived=True))) == {mine, gone}
        hybrid = rv.memory.search("budget review")
        assert hybrid.mode == "hybrid" and ids(hybrid) == [mine] and hybrid[0].matched_by == "bm25+vector"


@pytest.mark.parametrize("backend", ["memory", "store"])
def test_a_second_process_edits_and_archives_are_never_answered_stale(
    tmp_path: Path, pg_url: str, clock: FakeClock, backend: str
) -> None:
    """Two engines on one database, as two API processes: A's caches (its vector index or none, its lexical
    index, its query embeddings) never serve B's archived entry, nor the old text or the old vector of B's
    edit."""
    with engine(tmp_path / "a", pg_url, clock, backend) as a, engine(tmp_path / "b", pg_url, clock, backend) as b:
        edited = a.memory.save("coffee grinder settings for espresso", dedup=False).id
        archived = a.memory.save("sailing knots and ropes", dedup=False).id
        kept = a.memory.save("sailing knots for small boats", dedup=False).id
        a.embed_pending()
        # Warm every cache A has: its indexes load, its query vectors are cached.
        for query in ("espresso grinder", "sailing knots", "weekend timetable"):
            a.memory.search(query, mode="vector")
            a.memory.search(query)
        assert ids(a.memory.search("espresso grinder", mode="vector")) == [edited]
        assert set(ids(a.memory.search("sailing knots", mode="vector"))) == {archived, kept}

        b.memory.edit(edited, content="train timetable for the weekend")
        b.memory.archive(archived)
        # Before the new vector exists the old one answers for nothing (the edit dropped it).
        for mode in ("vector", "hybrid"):
            assert edited not in ids(a.memory.search("espresso grinder", mode=mode))
        assert b.embed_pending() == 1

        for mode in ("vector", "hybrid"):
            assert ids(a.memory.search("sailing knots", mode=mode)) == [kept]
            assert edited not in ids(a.memory.search("espresso grinder", mode=mode))
            found = a.memory.search("weekend timetable", mode=mode)
            assert ids(found) == [edited]
            assert found[0].entry.content == "train timetable for the weekend"
        # The vector A searches is the new text's: the new text's own embedding is its nearest, at cosine 1.
        exact = a.memory.search("train timetable for the weekend", mode="vector")
        assert ids(exact) == [edited]
        assert a.recall.index is not None and a.embedder is not None
        query = a.embedder.embed(["train timetable for the weekend"])[0]
        assert a.recall.index.search("default", query, 5)[0] == (edited, pytest.approx(1.0, abs=1e-5))
        # The archived entry is still a candidate (the caller's filter hides it), as the memory index has it.
        assert set(ids(a.memory.search("sailing knots", mode="vector", include_archived=True))) == {archived, kept}


def test_vectors_that_arrive_by_copy_get_their_index(tmp_path: Path, pg_url: str) -> None:
    """A (model, dim) first seen through ``reverie copy`` is indexed by the copy, before any search."""
    with reverie.open(tmp_path / "home", embedding={"provider": "hash", "background": False}) as rv:
        rv.memory.save("the heron waits by the canal", scope=reverie.Scope(agent_id="a"))
        rv.embed_pending()
        model = rv.embedder.model_id if rv.embedder else ""
    src = open_store(store_url(tmp_path / "home"), now=T0)
    dst = open_store(pg_url, now=T0)
    try:
        portable.copy(src, dst)
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'fact_vectors_hnsw%%'")
            names = [r[0] for r in rows]
        assert len(names) == 1 and model
    finally:
        src.close()
        dst.close()
