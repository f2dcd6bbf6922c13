"""The HTTP client both OpenAI-compatible providers (embeddings, chat) talk through."""

from __future__ import annotations

import httpx


def openai_client(api_key: str | None, *, timeout: float, connect_timeout: float) -> httpx.Client:
    """An ``httpx.Client`` with the bearer key (when set) and the two timeouts. Thread-safe; close it."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # "" (an unset env var) is no key
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout), headers=headers)
