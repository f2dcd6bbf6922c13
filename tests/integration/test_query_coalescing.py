"""Concurrent searches embed their queries together: one model call for the queries that wait at the same time.

Under load (``reverie bench load``) each search embedded its query alone, and a model run over one query costs
about three times its share of a run over eight. Here eight searches arrive while the first query's embedding
is held: before, the embedder was called eight times; now twice (the first query alone, then the seven that
waited, in one call). The embedder is the real hashing embedder behind a counting wrapper.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import reverie
from reverie.embed.base import Vectors
from reverie.embed.hashing import HashEmbedder
from reverie.recall.config import RecallConfig
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter

SEARCHES = 8
WAIT = 10.0


class GatedCounter:
    """The hashing embedder, counting its calls; once ``gate`` is armed, the next call waits for ``release``."""

    def __init__(self) -> None:
        self._inner = HashEmbedder()
        self.calls: list[int] = []  # texts per call
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.release.wait(WAIT)
        return self._inner.embed(texts)


def test_queries_waiting_together_are_embedded_in_one_call(tmp_path: Path) -> None:
    with reverie.open(tmp_path / "home", embedding={"provider": "hash", "background": False}) as rv:
        scope = reverie.Scope(agent_id="a")
        for n, text in enumerate(("the kettle is in the kitchen", "Dan walks the dog at seven", "Maya owns a canoe")):
            rv.memory.save(f"{text} ({n})", scope=scope)
        rv.embed_pending()
        embedder = GatedCounter()
        # The vector signal on each caller's thread: with the worker pool (4 threads) only 4 queries can be
        # waiting at once, which would make the count depend on the pool's size rather than on the coalescing.
        search = HybridSearch(rv.store, embedder, RecallConfig(parallel=False))
        flt = FactFilter(scope=scope, now=rv.clock.now())
        search.search("warm up the indexes", flt, 5)  # loads the agent's indexes: not what is counted
        embedder.calls.clear()
        embedder.armed = True
        results: dict[int, int] = {}

        def run(n: int) -> None:
            results[n] = len(search.search(f"where is the kettle {n}", flt, 5))

        first = threading.Thread(target=run, args=(0,))
        first.start()
        assert embedder.entered.wait(WAIT)
        rest = [threading.Thread(target=run, args=(n,)) for n in range(1, SEARCHES)]
        for thread in rest:
            thread.start()
        # Before the fix these searches call the embedder themselves and finish; now they wait for the held
        # call to end. Give them time to get there (a bound, not a measurement: the count is the check).
        deadline = time.monotonic() + 2.0
        for thread in rest:
            thread.join(max(0.0, deadline - time.monotonic()))
        embedder.release.set()
        for thread in [first, *rest]:
            thread.join(WAIT)
        assert sorted(results) == list(range(SEARCHES))
        assert sum(embedder.calls) == SEARCHES  # every query embedded once
        assert len(embedder.calls) <= 3  # was 8: one call per query
