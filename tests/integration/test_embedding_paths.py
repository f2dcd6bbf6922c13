"""How texts reach the embedder, and what each embedded entry costs after it: the worker embeds pending
entries in batches (background, ``embed_pending``, the resumable ``reindex`` loop), and the semantic fold
after embedding finds a whole batch's neighbours in one pass over the agent's vectors instead of one scan
per entry (a scan of 50,000 vectors cost as much CPU as embedding the entry)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

import reverie
from reverie.clock import FakeClock
from reverie.embed.base import Embedder, Vectors
from reverie.memory.dedup import DedupConfig, Deduplicator
from reverie.recall.hybrid import HybridSearch
from reverie.recall.index import VectorIndex
from reverie.recall.worker import EmbeddingWorker
from reverie.types import Scope


class CountingEmbedder:
    """A real embedder that records the size of every call."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.calls: list[int] = []

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return self._inner.embed(texts)


class CountingIndex(VectorIndex):
    """The in-process vector index, counting the passes over an agent's vectors its callers ask for."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.scans = 0

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        self.scans += 1
        return super().search(agent_id, query, k)

    def search_many(self, agent_id: str, queries: npt.NDArray[np.float32], k: int) -> list[list[tuple[str, float]]]:
        self.scans += 1
        found = self._matrices.get(agent_id)
        assert found is None or found.graph is None  # exact: one matrix product for the batch
        return super().search_many(agent_id, queries, k)


class OneAtATime:
    """A vector backend that only answers one query at a time (as the store's and the HTTP backends do)."""

    def __init__(self, inner: VectorIndex) -> None:
        self._inner = inner

    def search(self, agent_id: str, query: npt.NDArray[np.float32], k: int) -> list[tuple[str, float]]:
        return self._inner.search(agent_id, query, k)


def _facts(n: int) -> list[str]:
    colours, sites = ["red", "blue", "green", "tall", "flat"], ["north", "south", "east"]
    return [f"Fact number {i}: the {colours[i % 5]} crate sits on shelf {i % 7} of the {sites[i % 3]} warehouse"
            for i in range(n)]  # fmt: skip


def test_the_worker_embeds_pending_entries_in_batches(rv: reverie.Reverie) -> None:
    assert rv.embedder is not None
    rv.memory.save_many([{"content": t} for t in _facts(150)], dedup=False)
    counting = CountingEmbedder(rv.embedder)
    worker = EmbeddingWorker(rv.store, counting, rv.clock, batch_size=64)
    assert worker.embed_pending() == 150
    assert counting.calls == [64, 64, 22]  # never one text per call


def test_the_reindex_loop_embeds_in_batches(rv: reverie.Reverie) -> None:
    """`reverie reindex` calls ``embed_pending(limit=256)`` until nothing is left: each step one batch."""
    assert rv.embedder is not None
    rv.memory.save_many([{"content": t} for t in _facts(300)], dedup=False)
    counting = CountingEmbedder(rv.embedder)
    worker = EmbeddingWorker(rv.store, counting, rv.clock)
    steps = []
    while step := worker.embed_pending(limit=256):
        steps.append(step)
    assert steps == [256, 44] and counting.calls == [256, 44]


def _fold_engine(rv: reverie.Reverie, vectors: object) -> EmbeddingWorker:
    assert rv.embedder is not None
    recall = HybridSearch(rv.store, rv.embedder, vectors=vectors)  # type: ignore[arg-type]
    dedup = Deduplicator(rv.store, rv.clock, DedupConfig(), vocabulary=rv.coverage_vocabulary, recall=recall)
    return EmbeddingWorker(rv.store, rv.embedder, rv.clock, on_embedded=dedup.fold_embedded)


def test_the_fold_after_embedding_scans_the_agents_vectors_once_per_batch(rv: reverie.Reverie) -> None:
    assert rv.embedder is not None
    saved = rv.memory.save_many([{"content": t} for t in _facts(40)])
    assert all(rv.memory.get(s.id).fold_pending for s in saved)  # each waits for the semantic check
    index = CountingIndex(rv.store, rv.embedder.model_id, rv.embedder.dim)
    worker = _fold_engine(rv, index)
    assert worker.embed_pending() == 40
    assert index.scans == 1  # was 40: one scan of every vector per new entry
    assert not any(rv.memory.get(s.id).fold_pending for s in saved)


PAIRS = [
    ("Maya bought a new bicycle in Lisbon last March.", "In March Maya purchased a new bike while in Lisbon."),
    ("Tomas moved to Oslo to work at the harbour office.", "Tomas relocated to Oslo for a job at the harbour office."),
    ("The team ships releases every second Tuesday.", "Releases go out on alternate Tuesdays."),
    ("Priya is allergic to peanuts.", "Nora is allergic to peanuts."),  # twins: never folded
]


def _folded(home: Path, clock: FakeClock, batched: bool) -> list[tuple[str, bool, str | None]]:
    with reverie.open(home, clock=clock, embedding={"background": False}) as rv:
        assert rv.embedder is not None
        ids = [rv.memory.save(text, scope=Scope(agent_id="a")).id for pair in PAIRS for text in pair]
        index = VectorIndex(rv.store, rv.embedder.model_id, rv.embedder.dim)
        worker = _fold_engine(rv, index if batched else OneAtATime(index))
        worker.embed_pending()
        entries = [rv.memory.get(i, scope=Scope(agent_id="a")) for i in ids]
        by_id = {e.id: n for n, e in enumerate(entries)}
        return [
            (e.content, e.archived, None if e.superseded_by is None else str(by_id[e.superseded_by])) for e in entries
        ]


def test_a_batch_folds_what_one_entry_at_a_time_folds(tmp_path: Path, clock: FakeClock) -> None:
    """The real model: the neighbours found for the whole batch are those each entry's own search finds."""
    batched = _folded(tmp_path / "batched", clock, batched=True)
    alone = _folded(tmp_path / "alone", clock, batched=False)
    assert batched == alone
    assert batched[1][1] and batched[1][2] == "0"  # the bicycle paraphrase folded into its original
    assert not batched[7][1]  # the twin stays
