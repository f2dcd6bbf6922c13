"""Exact against approximate vector search at scale: ``python -m reverie.bench.ann --n 100000``.

One agent's vectors go straight into a fresh store (random unit vectors, or rows of a ``.npy`` file such
as embedded bench facts); then two ``VectorIndex`` over the same store, one exact and one past its ANN
threshold, answer the same queries in turn, so both latencies come from the same run. Recall@k is the
share of the exact top k the graph's top k holds; the graph's build time is measured from the first
search (which starts it) until searches go through it.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from reverie.bench.recall import percentile, workspace
from reverie.clock import SystemClock
from reverie.embed.base import Vectors, normalise_rows
from reverie.recall.index import VectorIndex
from reverie.storage import open_store, store_url
from reverie.storage.base import Store
from reverie.types import MemoryEntry, Scope, Tier

AGENT = "bench-ann"
MODEL = "bench-vectors"
WRITE_BATCH = 5000
BLOCK = 20  # queries per block when the two searches alternate


@dataclass(frozen=True, slots=True)
class Timing:
    k: int
    exact_p50_ms: float
    exact_p95_ms: float
    ann_p50_ms: float
    ann_p95_ms: float
    recall: float  # mean share of the exact top k found in the graph's top k


@dataclass(frozen=True, slots=True)
class AnnReport:
    n: int
    dim: int
    queries: int
    build_seconds: float
    timings: tuple[Timing, ...]


def random_unit_rows(n: int, dim: int, seed: int) -> Vectors:
    rows = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return normalise_rows(rows)


def fill(store: Store, vectors: Vectors) -> None:
    """One entry per row, with the row as its vector of ``MODEL``."""
    now = _now()
    scope = Scope(agent_id=AGENT)
    for start in range(0, len(vectors), WRITE_BATCH):
        chunk = vectors[start : start + WRITE_BATCH]
        entries = [
            MemoryEntry(uuid.uuid4().hex[:12], f"vector {start + i}", "bench", (), Tier.SEMANTIC, scope, now, now)
            for i in range(len(chunk))
        ]
        with store.transaction():
            for entry in entries:
                store.facts.add(entry, at=now)
        rows = [(e.id, e.content, v.tobytes()) for e, v in zip(entries, chunk, strict=True)]
        store.vectors.put_many(rows, model=MODEL, dim=vectors.shape[1], at=now)


def _now() -> datetime:
    return SystemClock().now()


def _wait_for_graph(index: VectorIndex, probe: npt.NDArray[np.float32], timeout: float) -> float:
    started = time.perf_counter()
    index.search(AGENT, probe, 1)  # starts the build
    while not index.searched_by_graph(AGENT):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"the graph was not built within {timeout:.0f} s")
        time.sleep(0.05)
        index.search(AGENT, probe, 1)
    return time.perf_counter() - started


def _timing(exact: VectorIndex, approx: VectorIndex, queries: Vectors, k: int) -> Timing:
    """Both indexes answer every query, in alternating blocks: both see the same machine over the run, and
    neither search runs right after the other has streamed the whole matrix through the caches."""
    exact_ms: list[float] = []
    ann_ms: list[float] = []
    answers: dict[str, list[set[str]]] = {"exact": [], "ann": []}
    for start in range(0, len(queries), BLOCK):
        for name, index, times in (("exact", exact, exact_ms), ("ann", approx, ann_ms)):
            for query in queries[start : start + BLOCK]:
                started = time.perf_counter()
                found = index.search(AGENT, query, k)
                times.append((time.perf_counter() - started) * 1000)
                answers[name].append({i for i, _ in found})
    hits = sum(len(truth & got) for truth, got in zip(answers["exact"], answers["ann"], strict=True))
    return Timing(
        k=k,
        exact_p50_ms=percentile(exact_ms, 50),
        exact_p95_ms=percentile(exact_ms, 95),
        ann_p50_ms=percentile(ann_ms, 50),
        ann_p95_ms=percentile(ann_ms, 95),
        recall=hits / (k * len(queries)),
    )


def measure_ann(
    vectors: Vectors, queries: Vectors, *, ks: Sequence[int] = (10, 100), threshold: int = 1000, timeout: float = 3600
) -> AnnReport:
    """Build a store holding ``vectors`` (unit rows), then time exact and graph search for ``queries``."""
    with workspace(None, "reverie-bench-ann-") as home:
        store = open_store(store_url(home / "reverie.db"), now=_now())
        exact = VectorIndex(store, MODEL, vectors.shape[1])
        approx = VectorIndex(store, MODEL, vectors.shape[1], ann_threshold=threshold)
        try:
            fill(store, vectors)
            exact.search(AGENT, queries[0], 1)  # loads the matrix, as the graph's first search does
            build = _wait_for_graph(approx, queries[0], timeout)
            timings = tuple(_timing(exact, approx, queries, k) for k in ks)
        finally:
            approx.close()
            store.close()
    return AnnReport(len(vectors), vectors.shape[1], len(queries), build, timings)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m reverie.bench.ann", description="Exact against approximate vector search at scale."
    )
    parser.add_argument("--n", type=int, default=100_000, help="random vectors (without --vectors)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200, help="random queries (without --query-vectors)")
    parser.add_argument("--vectors", type=Path, help="a .npy file of unit rows to index instead")
    parser.add_argument("--query-vectors", type=Path, help="a .npy file of unit query rows")
    args = parser.parse_args(argv)
    vectors = np.load(args.vectors) if args.vectors else random_unit_rows(args.n, args.dim, 1)
    queries = np.load(args.query_vectors) if args.query_vectors else random_unit_rows(args.queries, vectors.shape[1], 2)
    report = measure_ann(np.asarray(vectors, dtype=np.float32), np.asarray(queries, dtype=np.float32))
    print(json.dumps(asdict(report), indent=2))


if __name__ == "__main__":
    main()
