"""``Settings`` and how it is read: defaults from the seeds, then ``<home>/reverie.toml``, then
``REVERIE_<SECTION>__<KEY>`` environment variables, then the keyword overrides given to ``reverie.open``
(highest wins). A bad key or value is a ``ConfigError`` naming it.

The cosine thresholds' defaults are MiniLM's; a local model whose cosines sit elsewhere brings its own for
each one left unset (``Settings._thresholds_follow_the_model``).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reverie.embed.resolve import model_thresholds
from reverie.errors import ConfigError
from reverie.settings.agents import AgentSettings, GraphSettings, KvSettings, ProactiveSettings, SkillsSettings
from reverie.settings.dream import DreamSettings
from reverie.settings.sections import (
    AuditSettings,
    ContextSettings,
    ConversationSettings,
    DecaySettings,
    EmbeddingSettings,
    LLMSettings,
    MemorySettings,
    RecallSettings,
    StoreSettings,
    WorkingSettings,
)
from reverie.types import RESERVED_AGENT_PREFIX

SETTINGS_FILE = "reverie.toml"
DEFAULT_HOME = "~/.reverie"


class Settings(BaseSettings):
    """Every setting Reverie reads. Sections mirror the TOML file's tables."""

    model_config = SettingsConfigDict(env_prefix="REVERIE_", env_nested_delimiter="__", extra="forbid", frozen=True)

    home: Path = Field(default_factory=lambda: Path(DEFAULT_HOME).expanduser())
    store: StoreSettings = Field(default_factory=StoreSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    decay: DecaySettings = Field(default_factory=DecaySettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    working: WorkingSettings = Field(default_factory=WorkingSettings)
    kv: KvSettings = Field(default_factory=KvSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    proactive: ProactiveSettings = Field(default_factory=ProactiveSettings)
    agents: dict[str, AgentSettings] = Field(default_factory=dict, description="per-agent switches by agent id")

    @model_validator(mode="before")
    @classmethod
    def _thresholds_follow_the_model(cls, data: Any) -> Any:
        """The cosine thresholds' defaults are MiniLM's: a local model whose cosines sit elsewhere (e5) brings
        its own (``reverie.embed.resolve.model_thresholds``) for each one left unset. A threshold set anywhere
        (the file, the environment, a keyword) wins, and so does a section given as a model."""
        if not isinstance(data, dict):
            return data
        embedding = data.get("embedding")
        if isinstance(embedding, BaseModel):
            embedding = embedding.model_dump()
        if not isinstance(embedding, dict):
            embedding = {}
        thresholds = model_thresholds(str(embedding.get("provider", "local")), embedding.get("model"))
        out = dict(data)
        for (section, key), value in thresholds.items():
            given = out.get(section)
            if given is None:
                out[section] = {key: value}
            elif isinstance(given, dict) and key not in given:
                out[section] = {**given, key: value}
        return out

    @field_validator("agents")
    @classmethod
    def _agent_ids(cls, value: dict[str, AgentSettings]) -> dict[str, AgentSettings]:
        for agent_id in value:
            if not agent_id.strip() or agent_id != agent_id.strip() or not agent_id.isprintable():
                raise ValueError(f"agents: {agent_id!r} is not an agent id")
            if agent_id.startswith(RESERVED_AGENT_PREFIX):
                raise ValueError(f"agents: {agent_id!r} is reserved (ids starting with {RESERVED_AGENT_PREFIX!r})")
        return value


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
