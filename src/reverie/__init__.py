"""Reverie: a memory engine for LLM agents.

import reverie
with reverie.open("./memory") as rv:
    rv.memory.save("The user lives in Lisbon", category="user-preferences/location")
    hits = rv.memory.search("where does the user live?")
"""

from reverie.clock import Clock, FakeClock, SystemClock
from reverie.engine import Reverie, open
from reverie.errors import (
    ConfigError,
    Conflict,
    EmbeddingError,
    LLMError,
    ModelMismatch,
    NotFound,
    ReverieError,
    StorageError,
    StoreBusy,
    ValidationError,
    VectorBackendError,
)
from reverie.settings import Settings
from reverie.types import (
    Browse,
    CategoryCount,
    Change,
    DreamRun,
    Entity,
    EntryVersion,
    Feedback,
    HealthReport,
    HitEvidence,
    KvItem,
    MemoryEntry,
    PurgeReport,
    Relation,
    SaveRejection,
    SaveResult,
    Scope,
    SearchHit,
    SearchResults,
    SessionRecord,
    Skill,
    SkillVersion,
    StoreStats,
    Tier,
    TurnRecord,
    UsageSummary,
    WorkingEntry,
)

__version__ = "0.1.0"

__all__ = [
    "Browse",
    "CategoryCount",
    "Change",
    "Clock",
    "ConfigError",
    "Conflict",
    "DreamRun",
    "EmbeddingError",
    "Entity",
    "EntryVersion",
    "FakeClock",
    "Feedback",
    "HealthReport",
    "HitEvidence",
    "KvItem",
    "LLMError",
    "MemoryEntry",
    "ModelMismatch",
    "NotFound",
    "PurgeReport",
    "Relation",
    "Reverie",
    "ReverieError",
    "SaveRejection",
    "SaveResult",
    "Scope",
    "SearchHit",
    "SearchResults",
    "SessionRecord",
    "Settings",
    "Skill",
    "SkillVersion",
    "StorageError",
    "StoreBusy",
    "StoreStats",
    "SystemClock",
    "Tier",
    "TurnRecord",
    "UsageSummary",
    "ValidationError",
    "VectorBackendError",
    "WorkingEntry",
    "open",
    "__version__",
]
