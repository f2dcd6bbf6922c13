"""The one place that maps a provider name to an embedder."""

from __future__ import annotations

from reverie.embed.base import Embedder
from reverie.errors import ConfigError


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
    A provider missing what it needs fails here, by name, rather than at the first save."""
    if provider == "none":
        return None
    if provider == "local":
        from reverie.embed.local import LocalEmbedder

        return LocalEmbedder(threads=threads)
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
