"""Reverie's values: what the services take and return, importable from ``reverie.types`` (and the common
ones from ``reverie``). Values only: no I/O, no services."""

from __future__ import annotations

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
    EntryVersion,
    HealthReport,
    HitEvidence,
    MemoryEntry,
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
    "EntryVersion",
    "Evidence",
    "Feedback",
    "HealthReport",
    "HitEvidence",
    "KvItem",
    "MemoryEntry",
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
