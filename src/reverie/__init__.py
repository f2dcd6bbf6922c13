"""Reverie: a memory engine for LLM agents.

import reverie
with reverie.open("./memory") as rv:
    rv.memory.save("The user lives in Lisbon", category="user-preferences/location")
    hits = rv.memory.search("where does the user live?")

``import reverie`` is cheap: the errors and the clock load at once, every other public name (``open``,
``Reverie``, ``Settings``, the values) on first use (PEP 562 ``__getattr__``), so ``reverie --version`` and any
tool that only needs an error class does not pay for the engine (numpy, the LLM clients, jsonschema, ...).
Invariant: ``__all__``, ``dir(reverie)`` and ``from reverie import *`` see every public name, loaded or not;
``_LAZY`` names the module each lazy name comes from, and the ``TYPE_CHECKING`` block mirrors it for mypy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.clock import Clock, FakeClock, SystemClock
from reverie.errors import (
    ConfigError,
    Conflict,
    EmbeddingError,
    LLMError,
    ModelMismatch,
    NotFound,
    ReverieError,
    StorageError,
    StorageFull,
    StoreBusy,
    StoreUnavailable,
    ValidationError,
    VectorBackendError,
)
from reverie.types.lazy import exports as _exports

if TYPE_CHECKING:
    from reverie.engine import Reverie, open
    from reverie.settings import Settings
    from reverie.types import (
        Browse,
        CategoryCount,
        Change,
        DreamRun,
        Entity,
        EntryFilter,
        EntryVersion,
        Feedback,
        HealthReport,
        HitEvidence,
        KvItem,
        MemoryEntry,
        Page,
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

_TYPES = (
    "Browse",
    "CategoryCount",
    "Change",
    "DreamRun",
    "Entity",
    "EntryFilter",
    "EntryVersion",
    "Feedback",
    "HealthReport",
    "HitEvidence",
    "KvItem",
    "MemoryEntry",
    "Page",
    "PurgeReport",
    "Relation",
    "SaveRejection",
    "SaveResult",
    "Scope",
    "SearchHit",
    "SearchResults",
    "SessionRecord",
    "Skill",
    "SkillVersion",
    "StoreStats",
    "Tier",
    "TurnRecord",
    "UsageSummary",
    "WorkingEntry",
)
# Public name -> the module that defines it, imported on first access.
_LAZY: dict[str, str] = {
    "Reverie": "reverie.engine",
    "open": "reverie.engine",
    "Settings": "reverie.settings",
    **dict.fromkeys(_TYPES, "reverie.types"),
}

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
    "EntryFilter",
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
    "Page",
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
    "StorageFull",
    "StoreBusy",
    "StoreStats",
    "StoreUnavailable",
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


__getattr__, __dir__ = _exports("reverie", _LAZY, globals())
