"""Reverie's values: what the services take and return, importable from ``reverie.types`` (and the common
ones from ``reverie``). Values only: no I/O, no services.

Each name loads its module on first access (PEP 562 ``__getattr__``): ``reverie.types.keys`` or one value does
not cost every dataclass here (the command line imports a few to build its options). ``_LAZY`` names each
value's module; the ``TYPE_CHECKING`` block mirrors it for mypy; ``__all__`` and ``dir()`` list them all."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reverie.types.lazy import exports as _exports

if TYPE_CHECKING:
    from reverie.types.dream import DreamRun, Evidence
    from reverie.types.graph import Entity, Relation
    from reverie.types.keys import ApiKey
    from reverie.types.kv import KvItem
    from reverie.types.memory import (
        DEFAULT_AGENT,
        DEFAULT_CATEGORY,
        RESERVED_AGENT_PREFIX,
        SUPERSEDES,
        USER_AGENT_PREFIX,
        VALID_TO,
        Browse,
        CategoryCount,
        Change,
        Contradiction,
        EntryFilter,
        EntryVersion,
        HealthReport,
        HitEvidence,
        MemoryEntry,
        MetadataScalar,
        Page,
        PurgeReport,
        SaveRejection,
        SaveResult,
        Scope,
        SearchHit,
        SearchResults,
        StoreStats,
        Tier,
        is_user_agent,
        user_agent,
    )
    from reverie.types.sessions import SessionRecord, TurnCounts, TurnRecord
    from reverie.types.skills import CoUsage, Feedback, Skill, SkillSaved, SkillUsage, SkillVersion
    from reverie.types.usage import UsageRow, UsageSummary
    from reverie.types.working import WorkingEntry

_LAZY: dict[str, str] = {
    "DreamRun": "reverie.types.dream",
    "Evidence": "reverie.types.dream",
    "Entity": "reverie.types.graph",
    "Relation": "reverie.types.graph",
    "ApiKey": "reverie.types.keys",
    "KvItem": "reverie.types.kv",
    "DEFAULT_AGENT": "reverie.types.memory",
    "DEFAULT_CATEGORY": "reverie.types.memory",
    "RESERVED_AGENT_PREFIX": "reverie.types.memory",
    "SUPERSEDES": "reverie.types.memory",
    "USER_AGENT_PREFIX": "reverie.types.memory",
    "VALID_TO": "reverie.types.memory",
    "Browse": "reverie.types.memory",
    "CategoryCount": "reverie.types.memory",
    "Change": "reverie.types.memory",
    "Contradiction": "reverie.types.memory",
    "EntryFilter": "reverie.types.memory",
    "EntryVersion": "reverie.types.memory",
    "HealthReport": "reverie.types.memory",
    "HitEvidence": "reverie.types.memory",
    "MemoryEntry": "reverie.types.memory",
    "MetadataScalar": "reverie.types.memory",
    "Page": "reverie.types.memory",
    "PurgeReport": "reverie.types.memory",
    "SaveRejection": "reverie.types.memory",
    "SaveResult": "reverie.types.memory",
    "Scope": "reverie.types.memory",
    "SearchHit": "reverie.types.memory",
    "SearchResults": "reverie.types.memory",
    "StoreStats": "reverie.types.memory",
    "Tier": "reverie.types.memory",
    "is_user_agent": "reverie.types.memory",
    "user_agent": "reverie.types.memory",
    "SessionRecord": "reverie.types.sessions",
    "TurnCounts": "reverie.types.sessions",
    "TurnRecord": "reverie.types.sessions",
    "CoUsage": "reverie.types.skills",
    "Feedback": "reverie.types.skills",
    "Skill": "reverie.types.skills",
    "SkillSaved": "reverie.types.skills",
    "SkillUsage": "reverie.types.skills",
    "SkillVersion": "reverie.types.skills",
    "UsageRow": "reverie.types.usage",
    "UsageSummary": "reverie.types.usage",
    "WorkingEntry": "reverie.types.working",
}

__all__ = [
    "ApiKey",
    "Browse",
    "CategoryCount",
    "Change",
    "CoUsage",
    "Contradiction",
    "DEFAULT_AGENT",
    "DEFAULT_CATEGORY",
    "DreamRun",
    "Entity",
    "EntryFilter",
    "EntryVersion",
    "Evidence",
    "Feedback",
    "HealthReport",
    "HitEvidence",
    "KvItem",
    "MemoryEntry",
    "MetadataScalar",
    "Page",
    "PurgeReport",
    "RESERVED_AGENT_PREFIX",
    "Relation",
    "SUPERSEDES",
    "SaveRejection",
    "SaveResult",
    "Scope",
    "SearchHit",
    "SearchResults",
    "SessionRecord",
    "Skill",
    "SkillSaved",
    "SkillUsage",
    "SkillVersion",
    "StoreStats",
    "Tier",
    "TurnCounts",
    "TurnRecord",
    "USER_AGENT_PREFIX",
    "UsageRow",
    "UsageSummary",
    "VALID_TO",
    "WorkingEntry",
    "is_user_agent",
    "user_agent",
]


__getattr__, __dir__ = _exports("reverie.types", _LAZY, globals())
