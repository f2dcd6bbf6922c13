"""Reverie's values: what the services take and return, importable from ``reverie.types`` (and the common
ones from ``reverie``). Values only: no I/O, no services."""

from __future__ import annotations

from reverie.types.dream import (
    DreamRun as DreamRun,
)
from reverie.types.dream import (
    Evidence as Evidence,
)
from reverie.types.graph import (
    Entity as Entity,
)
from reverie.types.graph import (
    Relation as Relation,
)
from reverie.types.keys import (
    ApiKey as ApiKey,
)
from reverie.types.kv import (
    KvItem as KvItem,
)
from reverie.types.memory import (
    DEFAULT_AGENT as DEFAULT_AGENT,
)
from reverie.types.memory import (
    DEFAULT_CATEGORY as DEFAULT_CATEGORY,
)
from reverie.types.memory import (
    RESERVED_AGENT_PREFIX as RESERVED_AGENT_PREFIX,
)
from reverie.types.memory import (
    SUPERSEDES as SUPERSEDES,
)
from reverie.types.memory import (
    USER_AGENT_PREFIX as USER_AGENT_PREFIX,
)
from reverie.types.memory import (
    VALID_TO as VALID_TO,
)
from reverie.types.memory import (
    Browse as Browse,
)
from reverie.types.memory import (
    CategoryCount as CategoryCount,
)
from reverie.types.memory import (
    Change as Change,
)
from reverie.types.memory import (
    Contradiction as Contradiction,
)
from reverie.types.memory import (
    EntryVersion as EntryVersion,
)
from reverie.types.memory import (
    HealthReport as HealthReport,
)
from reverie.types.memory import (
    HitEvidence as HitEvidence,
)
from reverie.types.memory import (
    MemoryEntry as MemoryEntry,
)
from reverie.types.memory import (
    PurgeReport as PurgeReport,
)
from reverie.types.memory import (
    SaveRejection as SaveRejection,
)
from reverie.types.memory import (
    SaveResult as SaveResult,
)
from reverie.types.memory import (
    Scope as Scope,
)
from reverie.types.memory import (
    SearchHit as SearchHit,
)
from reverie.types.memory import (
    SearchResults as SearchResults,
)
from reverie.types.memory import (
    StoreStats as StoreStats,
)
from reverie.types.memory import (
    Tier as Tier,
)
from reverie.types.memory import (
    is_user_agent as is_user_agent,
)
from reverie.types.memory import (
    user_agent as user_agent,
)
from reverie.types.sessions import (
    SessionRecord as SessionRecord,
)
from reverie.types.sessions import (
    TurnCounts as TurnCounts,
)
from reverie.types.sessions import (
    TurnRecord as TurnRecord,
)
from reverie.types.skills import (
    CoUsage as CoUsage,
)
from reverie.types.skills import (
    Feedback as Feedback,
)
from reverie.types.skills import (
    Skill as Skill,
)
from reverie.types.skills import (
    SkillUsage as SkillUsage,
)
from reverie.types.skills import (
    SkillVersion as SkillVersion,
)
from reverie.types.usage import (
    UsageRow as UsageRow,
)
from reverie.types.usage import (
    UsageSummary as UsageSummary,
)
from reverie.types.working import (
    WorkingEntry as WorkingEntry,
)
