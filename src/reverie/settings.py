"""Settings: defaults from the seeds, then ``<home>/reverie.toml``, then ``REVERIE_<SECTION>__<KEY>``
environment variables, then the keyword overrides given to ``reverie.open`` (highest wins).

Only the engine and the interfaces read Settings; services receive plain config objects.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reverie.errors import ConfigError
from reverie.types import Tier

SETTINGS_FILE = "reverie.toml"
VECTOR_BACKENDS = ("memory", "http")
DEFAULT_HOME = "~/.reverie"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSettings(_Section):
    url: str | None = Field(None, description="Store URL; default sqlite:///<home>/reverie.db")
    busy_timeout_ms: int = Field(10_000, ge=0, description="SQLite busy timeout per attempt")
    lock_wait_seconds: float = Field(60.0, gt=0, description="How long a writer waits for the lock in all")
    synchronous: Literal["FULL", "NORMAL"] = Field("FULL", description="SQLite fsync policy")


class MemorySettings(_Section):
    max_content_chars: int = Field(20_000, ge=1)
    default_category: str = "general"
    default_importance: float = Field(0.5, ge=0, le=1)
    default_tier: Tier = Tier.SEMANTIC
    search_limit: int = Field(10, ge=1, le=1000)
    browse_limit: int = Field(20, ge=1, le=1000)
    # Dream:MemoryArchiveRetention and the high-value floor (seed 000 / 001).
    archive_retention_days: float = Field(90.0, ge=0)
    pruning_protection_importance: float = Field(0.80, ge=0, le=1)
    pruning_protection_reinforcement_count: int = Field(5, ge=1)


class EmbeddingSettings(_Section):
    provider: Literal["local", "openai", "hash", "none"] = Field(
        "local", description="local: bundled MiniLM (offline); openai: any /embeddings endpoint; none: BM25 only"
    )
    endpoint: str | None = Field(None, description="openai provider: base URL, e.g. http://127.0.0.1:11434/v1")
    model: str | None = Field(None, description="openai provider: model name")
    api_key: str | None = Field(None, description="openai provider: API key (optional for local servers)")
    dim: int | None = Field(None, ge=1, description="openai/hash provider: vector dimension")
    max_input_chars: int = Field(30_000, ge=1, description="longer texts are truncated before embedding")
    timeout_seconds: float = Field(30.0, gt=0)
    background: bool = Field(True, description="embed in a background thread after each save")
    threads: int | None = Field(None, ge=1, description="local provider: onnxruntime threads")


class RecallSettings(_Section):
    # Seed 000 averages the two signals (0.5); 0.35 measured better on LoCoMo with MiniLM (docs/adr/0005).
    semantic_weight: float = Field(0.35, ge=0, le=1, description="weight of the vector signal in hybrid fusion")
    candidates: int = Field(50, ge=1, le=10_000, description="candidates per signal before fusion")
    min_similarity: float | None = Field(None, ge=0, le=1, description="vector floor; default: the model's own")
    agent_min_similarity: dict[str, float] = Field(default_factory=dict, description="per-agent vector floors")
    neighbour_share: float = Field(
        0.3, ge=0, le=1, description="share of a sequence neighbour's score an entry takes (metadata.thread/position)"
    )
    vector_backend: str = Field("memory", description="memory: the in-process exact index; http: an external service")
    vector_store_url: str | None = Field(None, description="http backend: the service's base URL")

    @field_validator("vector_backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in VECTOR_BACKENDS:
            raise ValueError(f"unknown vector backend {value!r}; use one of {', '.join(map(repr, VECTOR_BACKENDS))}")
        return value

    @field_validator("vector_store_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _url_for_http(self) -> RecallSettings:
        if self.vector_backend == "http" and not self.vector_store_url:
            raise ValueError('recall.vector_backend = "http" needs recall.vector_store_url (the service\'s base URL)')
        return self


class Settings(BaseSettings):
    """Every setting Reverie reads. Sections mirror the TOML file's tables."""

    model_config = SettingsConfigDict(env_prefix="REVERIE_", env_nested_delimiter="__", extra="forbid", frozen=True)

    home: Path = Field(default_factory=lambda: Path(DEFAULT_HOME).expanduser())
    store: StoreSettings = Field(default_factory=StoreSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)


def home_from_env(explicit: str | Path | None = None) -> Path:
    """The data directory: ``explicit``, else ``REVERIE_HOME``, else ``~/.reverie``."""
    raw = explicit if explicit is not None else os.environ.get("REVERIE_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def load_settings(home: Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read the settings for the data directory ``home``. Raises ``ConfigError`` naming the bad key."""
    toml_values = _read_toml(home / SETTINGS_FILE)

    class _Layered(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, _Static(settings_cls, toml_values))

    _check_environment_sections()
    init: dict[str, Any] = {**(overrides or {}), "home": home}
    try:
        layered = _Layered(**init)
    except PydanticValidationError as exc:
        raise ConfigError(_explain(exc)) from None
    return Settings.model_construct(**{name: getattr(layered, name) for name in Settings.model_fields})


class _Static(PydanticBaseSettingsSource):
    """Values already read from the TOML file."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


def _check_environment_sections() -> None:
    """A misspelt section (``REVERIE_MEMROY__...``) would otherwise be ignored without a word."""
    sections = {name.upper() for name in Settings.model_fields}
    for key in os.environ:
        if key.startswith("REVERIE_") and "__" in key:
            section = key[len("REVERIE_") :].split("__", 1)[0]
            if section not in sections:
                known = ", ".join(sorted(sections - {"HOME"}))
                raise ConfigError(f"environment variable {key}: no settings section {section!r} (known: {known})")


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as handle:
            values = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    values.pop("home", None)  # the file lives in home; it cannot move it
    return values


def _explain(exc: PydanticValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        lines.append(f"{where}: {err['msg']}")
    return "invalid settings: " + "; ".join(lines)
