"""The one place that maps an LLM provider name to a client."""

from __future__ import annotations

from reverie.errors import ConfigError
from reverie.llm.base import LLM
from reverie.llm.usage import Prices, UsageLedger


def make_llm(
    provider: str,
    *,
    endpoint: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    connect_timeout: float = 10.0,
    timeout: float = 120.0,
    max_retries: int = 3,
    backoff_seconds: float = 1.0,
    prices: Prices | None = None,
    ledger: UsageLedger | None = None,
) -> LLM | None:
    """The client ``provider`` names, or None for ``none``. A provider missing what it needs fails here, by
    name, rather than at the first call. Makes no request."""
    if provider == "none":
        return None
    if provider == "openai":
        if not endpoint or not model:
            raise ConfigError('llm.provider = "openai" needs llm.endpoint and llm.model')
        from reverie.llm.openai import OpenAIChat

        return OpenAIChat(
            endpoint,
            model,
            api_key=api_key,
            connect_timeout=connect_timeout,
            timeout=timeout,
            max_retries=max_retries,
            backoff_seconds=backoff_seconds,
            prices=prices,
            ledger=ledger,
        )
    raise ConfigError(f"unknown llm provider {provider!r}; use openai or none")
