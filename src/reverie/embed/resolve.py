"""The one place that maps a provider name to an embedder."""

from __future__ import annotations

from reverie.embed.base import Embedder
from reverie.errors import ConfigError

MINILM = "all-MiniLM-L6-v2"  # the bundled default
E5 = "multilingual-e5-small"  # the e5 extra (reverie.embed.e5)
# The cosine thresholds' defaults in Settings are MiniLM's. A local model whose cosines sit elsewhere brings its
# own, which Settings uses for each one not set explicitly. e5's cosines are compressed high (two turns of one
# LoCoMo conversation: median 0.864 against MiniLM's 0.432; 30% of them reach MiniLM's duplicate threshold 0.88,
# against 0.02% with MiniLM). Its figures (docs/benchmarks.md, "Embedding models"): each is the e5 cosine that
# the same share of LoCoMo's 1.8 million same-conversation turn pairs reaches as reaches MiniLM's value (lint
# 0.75 -> 0.93, 0.88 -> 0.96, 0.90 -> 0.97); for the save-time fold, 0.96 still let 2 of `reverie bench truth`'s
# 200 corrections be folded into the fact they correct, 0.98 none.
MODEL_THRESHOLDS: dict[str, dict[tuple[str, str], float]] = {
    E5: {
        ("memory", "dedupe_similarity_threshold"): 0.98,
        ("memory", "lint_similarity"): 0.93,
        ("dream", "consolidation_similarity_threshold"): 0.96,
        ("proactive", "duplicate_cosine"): 0.97,
    },
}


def model_thresholds(provider: str, model: str | None) -> dict[tuple[str, str], float]:
    """The (section, key) cosine thresholds ``provider``/``model`` replaces MiniLM's defaults with: none for
    MiniLM, for a served model (``openai``: not calibrated here) and for the test embedders."""
    return MODEL_THRESHOLDS.get(model or MINILM, {}) if provider == "local" else {}


def make_embedder(
    provider: str,
    *,
    endpoint: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    dim: int | None = None,
    timeout: float = 30.0,
    max_input_chars: int = 30_000,
    threads: int | None = None,
) -> Embedder | None:
    """An embedder for ``provider`` (``local``, ``openai``, ``hash``), or None for ``none`` (BM25 only).
    ``local`` runs ``model`` offline: the bundled MiniLM (None or ``all-MiniLM-L6-v2``) or
    ``multilingual-e5-small`` (the e5 extra). A provider missing what it needs fails here, by name, rather
    than at the first save."""
    if provider == "none":
        return None
    if provider == "local":
        return _local(model, threads)
    if provider == "hash":
        from reverie.embed.hashing import HashEmbedder

        return HashEmbedder(dim or 256)
    if provider == "openai":
        if not endpoint or not model:
            raise ConfigError("embedding.provider = 'openai' needs embedding.endpoint and embedding.model")
        from reverie.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            endpoint, model, api_key=api_key, dim=dim, timeout=timeout, max_input_chars=max_input_chars
        )
    raise ConfigError(f"unknown embedding provider {provider!r}; use local, openai, hash or none")


def _local(model: str | None, threads: int | None) -> Embedder:
    if model is None or model == MINILM:
        from reverie.embed.local import LocalEmbedder

        return LocalEmbedder(threads=threads)
    if model == E5:
        from reverie.embed.e5 import E5Embedder

        return E5Embedder(threads=threads)  # a ConfigError without the e5 extra
    raise ConfigError(
        f"embedding.model {model!r} is not a local model; use {MINILM} (the default) or {E5}"
        " (pip install 'reverie[e5]'), or embedding.provider = 'openai' for a model behind an endpoint"
    )
