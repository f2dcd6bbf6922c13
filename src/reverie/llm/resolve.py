"""The one place that maps an LLM provider name to a client."""

from __future__ import annotations

from reverie.errors import ConfigError
from reverie.llm.base import LLM
from reverie.llm.usage import Prices, UsageLedger
from reverie.settings import LLMSettings


def make_llm(settings: LLMSettings, *, ledger: UsageLedger | None = None) -> LLM | None:
    """The client ``settings.provider`` names, or None for ``none``. A provider missing what it needs fails
    here, by name, rather than at the first call. Makes no request."""
    if settings.provider == "none":
        return None
    if settings.provider == "openai":
        if not settings.endpoint or not settings.model:
            raise ConfigError('llm.provider = "openai" needs llm.endpoint and llm.model')
        from reverie.llm.openai import OpenAIChat

        return OpenAIChat(
            settings.endpoint,
            settings.model,
            api_key=settings.api_key,
            connect_timeout=settings.connect_timeout_seconds,
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
            backoff_seconds=settings.backoff_seconds,
            prices=Prices(settings.price_input_per_mtok, settings.price_output_per_mtok),
            ledger=ledger,
        )
    raise ConfigError(f"unknown llm provider {settings.provider!r}; use openai or none")
