"""Warming a serving engine: load the embedding model and the recall indexes on a background thread, once the
server already answers, so the first search does not pay for them (``reverie serve``, ``reverie mcp``).

Invariants:
- The warm-up only reads: one query embedding, and one hybrid search per agent through ``HybridSearch`` (the
  lexical and vector indexes load on an agent's first search), which records nothing, unlike a memory search
  (reads noted for aging).
- It takes the same paths and locks as a request: a search that arrives first waits for the model's load and
  for an index being built (their locks), or triggers them itself; it never fails because of the warm-up.
- A failure is logged, never raised: the first request then loads what is missing and reports its own error.
- ``join`` before the engine closes: the warm-up must not search a closed store (one still in its ``delay``
  is called off).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reverie.embed.base import embed_queries
from reverie.storage.base import FactFilter
from reverie.types import Scope

if TYPE_CHECKING:
    from reverie.engine.root import Reverie

log = logging.getLogger("reverie.warmup")

WARM_TEXT = "warm-up"
MAX_AGENTS = 32  # agents whose indexes are loaded ahead; the others load on their first search, as before
# How long a server lets its first requests (health checks, a client's handshake) go before it warms: loading
# the model keeps the CPU busy for a moment, on several threads.
SERVER_DELAY = 0.5


class WarmUp:
    """Warm ``rv`` for ``agents`` (None: every agent with entries in the store, up to ``MAX_AGENTS``) on a
    background thread, ``delay`` seconds after ``start``: start it once the server answers, ``join`` it before
    closing the engine."""

    def __init__(self, rv: Reverie, agents: Sequence[str] | None = None, *, delay: float = 0.0) -> None:
        self._rv = rv
        self._agents = None if agents is None else list(agents)
        self._delay = delay
        self._called_off = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = threading.Event()
        self.error: BaseException | None = None

    def start(self) -> WarmUp:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name="reverie-warmup", daemon=True)
            self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the warm-up (if it started; one still waiting out its delay is called off); whether it
        has finished."""
        self._called_off.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return self._thread is None or not self._thread.is_alive()

    def run(self) -> None:
        """Warm in this thread, after the delay (``start`` runs it on its own)."""
        try:
            if self._delay > 0 and self._called_off.wait(self._delay):
                return
            warm_up(self._rv, self._agents)
        except Exception as exc:  # whatever it was, the first search meets it again and reports it
            self.error = exc
            log.warning("warm-up failed (the first search loads what it needs): %s", exc)
        finally:
            self.done.set()


def warm_up(rv: Reverie, agents: Sequence[str] | None = None) -> None:
    """Load the query embedder and the recall indexes of ``agents`` (None: the store's, up to
    ``MAX_AGENTS``), the way a search does."""
    if rv.embedder is not None:
        embed_queries(rv.embedder, [WARM_TEXT])  # the model's load, the slow part of a first search
    names = rv.store.facts.agents()[:MAX_AGENTS] if agents is None else agents
    for agent_id in names:
        flt = FactFilter(scope=Scope(agent_id=agent_id), now=rv.clock.now())
        rv.recall.search(WARM_TEXT, flt, 1, mode="hybrid" if rv.embedder is not None else "bm25")
