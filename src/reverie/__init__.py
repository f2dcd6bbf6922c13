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
    EntryVersion,
    HealthReport,
    MemoryEntry,
    PurgeReport,
    SaveRejection,
    SaveResult,
    Scope,
    SearchHit,
    SearchResults,
    StoreStats,
    Tier,
)

__version__ = "0.1.0"

__all__ = [
    "Browse",
    "CategoryCount",
    "Change",
    "Clock",
    "ConfigError",
    "Conflict",
    "EmbeddingError",
    "EntryVersion",
    "FakeClock",
    "HealthReport",
    "LLMError",
    "MemoryEntry",
    "ModelMismatch",
    "NotFound",
    "PurgeReport",
    "Reverie",
    "ReverieError",
    "SaveRejection",
    "SaveResult",
    "Scope",
    "SearchHit",
    "SearchResults",
    "Settings",
    "StorageError",
    "StoreBusy",
    "StoreStats",
    "SystemClock",
    "Tier",
    "ValidationError",
    "VectorBackendError",
    "__version__",
    "open",
]
