"""Settings: every key Reverie reads, by section (``[memory]``, ``[recall]``, ...), with its range, choices and
description; read from defaults, ``<home>/reverie.toml``, ``REVERIE_<SECTION>__<KEY>`` and keyword overrides.

Only the engine and the interfaces read Settings; services receive plain config dataclasses, which hold the
defaults. ``config_from`` validates a section into such a config by name (``settings.base``).

- ``base``: the section base and ``config_from``.
- ``sections``: the engine's and the memory services' sections; ``agents``: the agent-scoped stores' and
  ``[agents.<id>]``; ``dream``: ``[dream]``.
- ``load``: ``Settings`` and ``load_settings``, the layered reading.
"""

from reverie.settings.agents import AgentSettings, GraphSettings, KvSettings, ProactiveSettings, SkillsSettings
from reverie.settings.base import Section, config_from
from reverie.settings.dream import DreamSettings
from reverie.settings.load import DEFAULT_HOME, SETTINGS_FILE, Settings, home_from_env, load_settings
from reverie.settings.sections import (
    VECTOR_BACKENDS,
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

__all__ = [
    "DEFAULT_HOME",
    "SETTINGS_FILE",
    "VECTOR_BACKENDS",
    "AgentSettings",
    "AuditSettings",
    "ContextSettings",
    "ConversationSettings",
    "DecaySettings",
    "DreamSettings",
    "EmbeddingSettings",
    "GraphSettings",
    "KvSettings",
    "LLMSettings",
    "MemorySettings",
    "ProactiveSettings",
    "RecallSettings",
    "Section",
    "Settings",
    "SkillsSettings",
    "StoreSettings",
    "WorkingSettings",
    "config_from",
    "home_from_env",
    "load_settings",
]
