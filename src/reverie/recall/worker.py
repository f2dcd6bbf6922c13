"""Embedding never blocks a save (seed 000): saves only write text; this worker embeds afterwards.

Invariants:
- An entry without a vector of the active model is *pending*; pending is derived from the store, not kept
  in memory, so a crash or a restart loses nothing: the next run embeds what is still pending.
- A failing embedder never fails a save: the worker logs, backs off and retries; entries stay pending and
  BM25 finds them meanwhile.
- One embedding run at a time per process (a lock); two processes embedding the same entry is harmless.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from reverie.clock import Clock
from reverie.embed.base import Embedder, Vectors
from reverie.runtime.background import BackgroundService, Backoff, report_failure
from reverie.storage.base import Store

log = logging.getLogger("reverie.embedding")


class EmbeddingWorker(BackgroundService):
    """Embeds pending entries, in the background (``start``) or on demand (``embed_pending``)."""

    thread_name = "reverie-embedding"

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        clock: Clock,
        *,
        # Texts per embed call and per write: the local embedder splits a call across its workers, and
        # fewer, larger writes spend less on commits (docs/adr/0007).
        batch_size: int = 256,
        max_input_chars: int = 30_000,
        poll_seconds: float = 30.0,
        on_embedded: Callable[[list[tuple[str, Vectors]]], object] | None = None,
    ) -> None:
        """``on_embedded`` is called after each batch is written with its ``(fact id, vector)`` pairs (the
        semantic deduplication pass); it runs in the embedding thread and must not raise."""
        self._store = store
        self._embedder = embedder
        self._clock = clock
        self._batch_size = batch_size
        self._max_chars = max_input_chars
        self._poll = poll_seconds
        self._on_embedded = on_embedded
        super().__init__()
        self._run_lock = threading.Lock()
        self.last_error: str | None = None

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed pending entries now, in this thread, until none are left (or ``limit``). Returns how
        many vectors were written. Raises ``EmbeddingError`` when the embedder fails."""
        done = 0
        cursor = 0
        with self._run_lock:
            while (limit is None or done < limit) and not self._stop.is_set():
                want = self._batch_size if limit is None else min(self._batch_size, limit - done)
                batch = self._store.vectors.pending(self._embedder.model_id, want, after=cursor)
                if not batch:
                    break
                cursor = batch[-1][0]
                vectors = self._embedder.embed([text[: self._max_chars] for _, _, text in batch])
                rows = [(fid, text, vectors[i].tobytes()) for i, (_, fid, text) in enumerate(batch)]
                # An entry whose text changed meanwhile is skipped here and picked up by the next run.
                self._store.vectors.put_many(
                    rows, model=self._embedder.model_id, dim=self._embedder.dim, at=self._clock.now()
                )
                if self._on_embedded is not None:
                    self._on_embedded([(fid, vectors[i]) for i, (_, fid, _) in enumerate(batch)])
                done += len(batch)
        return done

    def reembed_all(self, on_batch: Callable[[int], object] | None = None) -> int:
        """Embed every entry again, archived included, whether or not it has a vector of the active model
        (``reverie reindex --force``: the model id is the same but what it computes changed). Each vector
        replaces the entry's old one as its batch is written, so an interrupted run leaves only current
        vectors and is simply run again. ``on_batch`` gets the running count after each batch. The texts are
        unchanged, so the deduplication pass (``on_embedded``) is not run. Raises ``EmbeddingError``."""
        done = 0
        batch: list[tuple[str, str]] = []
        with self._run_lock:
            for entry in self._store.facts.iter_all():
                if self._stop.is_set():
                    break
                batch.append((entry.id, entry.content))
                if len(batch) == self._batch_size:
                    done += self._write(batch)
                    batch = []
                    if on_batch is not None:
                        on_batch(done)
            if batch and not self._stop.is_set():
                done += self._write(batch)
                if on_batch is not None:
                    on_batch(done)
        return done

    def _write(self, batch: list[tuple[str, str]]) -> int:
        """Embed ``(fact id, text)`` pairs and store their vectors (skipped for a text that changed since)."""
        vectors = self._embedder.embed([text[: self._max_chars] for _, text in batch])
        rows = [(fid, text, vectors[i].tobytes()) for i, (fid, text) in enumerate(batch)]
        self._store.vectors.put_many(rows, model=self._embedder.model_id, dim=self._embedder.dim, at=self._clock.now())
        return len(batch)

    # -- background -------------------------------------------------------------------------------
    def _loop(self) -> None:
        backoff = Backoff(1.0, 60.0)
        while not self._stop.is_set():
            try:
                self.embed_pending()
                self.last_error = None
                backoff.reset()
                self._wake.wait(self._poll)
            except Exception as exc:  # EmbeddingError, StorageFull, StoreUnavailable; a fault too: never die
                # Trigger: the embedder or the store failed. Outcome: entries stay pending; retry later.
                self.last_error = str(exc)
                self._stop.wait(report_failure("embedding", exc, backoff, log))
            self._wake.clear()
