"""The approximate vector index (usearch HNSW) through the engine: it agrees with exact search, its scores
are exact cosines, and it follows edits, archives and purges made by another engine on the same file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

import reverie
from reverie import Scope
from reverie.bench.ann import measure_ann, random_unit_rows
from reverie.clock import FakeClock
from reverie.recall import ann
from reverie.recall.index import VectorIndex

# Not importorskip: importing usearch at collection, before onnxruntime, would crash later tests (ann.Graph).
pytestmark = pytest.mark.skipif(not ann.installed(), reason="usearch (the ann extra) is not installed")

DIM = 384
AGENT = "ann-agent"
HASH = {"provider": "hash", "dim": DIM, "background": False}
Vectors = npt.NDArray[np.float32]


def unit_rows(rng: np.random.Generator, n: int) -> Vectors:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    out: Vectors = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return out


def open_engine(home: Path, clock: FakeClock, threshold: int) -> reverie.Reverie:
    return reverie.open(home, clock=clock, embedding=HASH, recall={"ann_threshold": threshold})


def fill(rv: reverie.Reverie, vectors: Vectors, start: int = 0) -> list[str]:
    """Save one entry per vector and store the vector as the entry's embedding (as a worker would)."""
    items = [{"content": f"entry {start + i} code {(start + i) * 7919 % 100_003}"} for i in range(len(vectors))]
    saved = rv.memory.save_many(items, scope=Scope(agent_id=AGENT))
    assert rv.embedder is not None
    rows = [(s.id, s.entry.content, v.tobytes()) for s, v in zip(saved, vectors, strict=True)]
    assert rv.store.vectors.put_many(rows, model=rv.embedder.model_id, dim=DIM, at=rv.clock.now()) == len(rows)
    return [s.id for s in saved]


def graph_index(rv: reverie.Reverie) -> VectorIndex:
    index = rv.recall.index
    assert isinstance(index, VectorIndex)
    return index


def wait_for_graph(index: VectorIndex, timeout: float = 180.0) -> None:
    probe = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    deadline = time.monotonic() + timeout
    while not index.searched_by_graph(AGENT):
        assert time.monotonic() < deadline, "the HNSW graph was not built in time"
        index.search(AGENT, probe, 1)  # a search hands the follower any work due
        time.sleep(0.05)


def recall_at_10(approx: VectorIndex, exact: VectorIndex, queries: Vectors) -> float:
    found = 0
    for query in queries:
        truth = {i for i, _ in exact.search(AGENT, query, 10)}
        found += len(truth & {i for i, _ in approx.search(AGENT, query, 10)})
    return found / (10 * len(queries))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def big_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Vectors]:
    """A closed home whose agent holds 3,000 random unit vectors, filled once per module (the slow part);
    each test gets a copy of it, so a test that edits its store changes no other test's."""
    vectors = unit_rows(np.random.default_rng(7), 3000)
    home = tmp_path_factory.mktemp("ann-template") / "home"
    with open_engine(home, FakeClock(), threshold=1000) as rv:
        ids = fill(rv, vectors)
    return home, ids, vectors


@pytest.fixture
def big(
    big_template: tuple[Path, list[str], Vectors], tmp_path: Path, clock: FakeClock
) -> Iterator[tuple[reverie.Reverie, list[str], Vectors]]:
    """An engine over a copy of the template, above an ANN threshold of 1,000; its HNSW graph is built by this
    engine, as after a fill."""
    template, ids, vectors = big_template
    shutil.copytree(template, tmp_path / "home")
    with open_engine(tmp_path / "home", clock, threshold=1000) as rv:
        wait_for_graph(graph_index(rv))
        yield rv, ids, vectors


def test_the_graph_agrees_with_exact_search_and_scores_are_exact_cosines(
    big: tuple[reverie.Reverie, list[str], Vectors],
) -> None:
    rv, ids, vectors = big
    approx, exact = graph_index(rv), VectorIndex(rv.store, graph_index(rv).model, DIM)
    queries = unit_rows(np.random.default_rng(8), 100)
    assert approx.searched_by_graph(AGENT) and not exact.searched_by_graph(AGENT)
    assert recall_at_10(approx, exact, queries) >= 0.95
    by_id = dict(zip(ids, vectors, strict=True))
    for fact_id, score in approx.search(AGENT, queries[0], 10):
        assert score == pytest.approx(float(by_id[fact_id] @ queries[0]), abs=1e-5)
    # A stored vector finds its own entry first, at cosine 1.
    (best_id, best), *_ = approx.search(AGENT, vectors[1234], 5)
    assert best_id == ids[1234] and best == pytest.approx(1.0, abs=1e-5)


def test_the_graph_follows_edits_archives_purges_and_saves_of_another_engine(
    big: tuple[reverie.Reverie, list[str], Vectors], tmp_path: Path
) -> None:
    rv, ids, vectors = big
    index = graph_index(rv)
    edited, archived, purged = ids[:20], ids[20:40], ids[40:60]
    other_clock = FakeClock(rv.clock.now())
    with open_engine(tmp_path / "home", other_clock, threshold=1000) as other:
        scope = Scope(agent_id=AGENT)
        for i, fact_id in enumerate(edited):
            other.memory.edit(fact_id, content=f"rewritten entry {i}", scope=scope)
        for fact_id in purged:
            other.memory.archive(fact_id, scope=scope)
        other_clock.advance(timedelta(days=91))
        for fact_id in archived:  # archived now: within the retention, so not purged
            other.memory.archive(fact_id, scope=scope)
        assert set(other.purge(agent_id=AGENT).purged) == set(purged)
        fresh_vectors = unit_rows(np.random.default_rng(9), 10)
        fresh = fill(other, fresh_vectors, start=10_000)
        assert other.embed_pending() == len(edited)  # the edited texts get new vectors
        assert other.embedder is not None
        rewritten = other.embedder.embed(["rewritten entry 3"])[0]

    for fact_id, vector in zip(ids[:60], vectors[:60], strict=True):
        found = index.search(AGENT, vector, 10)
        assert not {i for i, _ in found} & set(purged)
        if fact_id in archived:  # the index holds archived entries; hydration decides their visibility
            assert found[0][0] == fact_id and found[0][1] == pytest.approx(1.0, abs=1e-5)
        else:  # edited or purged: its old vector is gone, so nothing scores near 1 against it any more
            assert found[0][1] < 0.9
    for fact_id, vector in zip(fresh, fresh_vectors, strict=True):
        assert index.search(AGENT, vector, 1)[0][0] == fact_id
    assert index.search(AGENT, rewritten, 1)[0][0] == edited[3]
    exact = VectorIndex(rv.store, index.model, DIM)
    assert recall_at_10(index, exact, unit_rows(np.random.default_rng(10), 50)) >= 0.95
    assert index.searched_by_graph(AGENT)


def test_a_store_below_the_threshold_never_builds_a_graph(tmp_path: Path, clock: FakeClock) -> None:
    with open_engine(tmp_path / "small", clock, threshold=1000) as rv:
        fill(rv, unit_rows(np.random.default_rng(11), 200))
        index = graph_index(rv)
        assert len(index.search(AGENT, unit_rows(np.random.default_rng(12), 1)[0], 10)) == 10
        assert not index.searched_by_graph(AGENT)


def test_the_ann_benchmark_reports_both_searches_from_one_run() -> None:
    report = measure_ann(random_unit_rows(1500, DIM, 1), random_unit_rows(20, DIM, 2), ks=(10,), threshold=500)
    (timing,) = report.timings
    assert report.n == 1500 and report.build_seconds > 0
    assert timing.k == 10 and timing.recall >= 0.9
    assert min(timing.exact_p50_ms, timing.ann_p50_ms) > 0


def test_onnxruntime_still_loads_after_the_graph_has_loaded_usearch() -> None:
    # In a child process: the crash this guards against (usearch before onnxruntime) is a SIGSEGV.
    script = (
        "from reverie.recall import ann; ann.Graph(8); from reverie.embed.local import LocalEmbedder; "
        "print(LocalEmbedder(threads=1).embed(['a query']).shape)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 384)"
