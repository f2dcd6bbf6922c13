"""The sections of the agent-scoped stores of seed 004 and seed 001: ``[kv]``, ``[graph]``, ``[proactive]``,
``[skills]``, and each agent's own ``[agents.<id>]``.

Invariant (``settings.base``): a key that feeds a service's config dataclass takes that dataclass's default
(the ``_CONFIG.name`` below); the section adds the range, the choices and the description users see. Keys
that feed no dataclass (a switch the engine reads) hold their default here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from reverie.core.graph import relation_key
from reverie.dream.passes.curation import AgentCuration
from reverie.graph.extraction import ExtractionConfig
from reverie.graph.service import GraphConfig
from reverie.kv.service import KvConfig
from reverie.proactive.service import ProactiveConfig
from reverie.proactive.upkeep import UpkeepConfig
from reverie.settings.base import Section
from reverie.skills import SkillsConfig

# The defaults: each config dataclass with nothing given.
_KV, _GRAPH, _EXTRACTION, _PROACTIVE = KvConfig(), GraphConfig(), ExtractionConfig(), ProactiveConfig()
_UPKEEP, _SKILLS, _AGENT = UpkeepConfig(), SkillsConfig(), AgentCuration()


class KvSettings(Section):
    """Key-value memory (seed 004): structured values per agent under exact keys."""

    max_value_bytes: int = Field(
        _KV.max_value_bytes, ge=1, le=16_777_216, description="largest value, in bytes of its JSON"
    )
    max_keys_per_agent: int = Field(
        _KV.max_keys_per_agent, ge=1, description="live keys an agent may hold; a set of a new key past it is refused"
    )


class GraphSettings(Section):
    """The knowledge graph (seed 004): which relations hold one target at a time, and how far walks go
    (``GraphConfig``); extraction (``extraction_*``: ``ExtractionConfig``)."""

    exclusive_relations: list[str] = Field(
        default_factory=lambda: list(_GRAPH.exclusive_relations),
        description="relations with one valid target per source: a new target invalidates the previous one",
    )
    max_depth: int = Field(
        _GRAPH.max_depth, ge=1, le=10, description="deepest path or subgraph a caller may ask (the path default)"
    )
    subgraph_limit: int = Field(_GRAPH.subgraph_limit, ge=1, le=1000, description="entities a subgraph holds at most")
    list_limit: int = Field(
        _GRAPH.list_limit, ge=1, le=1000, description="entities or relations a listing returns by default"
    )
    # Extraction: each saved entry's entities and relations, learned in the background.
    extraction: Literal["auto", "llm", "rules", "off"] = Field(
        "auto", description="learn from each save: llm, rules (names, dates, numbers), off; auto: llm if configured"
    )
    extraction_background: bool = Field(
        True, description="extract in a background thread; false: rv.extract_pending() (one-shot CLI commands do)"
    )
    extraction_max_entities: int = Field(
        _EXTRACTION.max_entities, ge=1, le=200, description="entities learned from one entry at most"
    )
    extraction_max_relations: int = Field(
        _EXTRACTION.max_relations, ge=0, le=500, description="relations learned from one entry at most"
    )
    extraction_window: int = Field(
        _EXTRACTION.window,
        ge=1,
        le=50,
        description="rules: a name is mentioned_with the entities within this many mentions of it",
    )
    extraction_max_input_chars: int = Field(
        _EXTRACTION.max_input_chars,
        ge=100,
        le=1_000_000,
        description="of an entry's text read (the entry is kept whole)",
    )

    @field_validator("exclusive_relations")
    @classmethod
    def _snake_case(cls, value: list[str]) -> list[str]:
        for name in value:
            try:
                valid = relation_key(name) == name
            except ValueError:
                valid = False
            if not valid:
                raise ValueError(f"exclusive_relations: {name!r} is not a relation name in lower snake case")
        return value


class ProactiveSettings(Section):
    """Proactive memory (seed 004): memories extracted after a turn, recalled before one, user-level memory
    shared by a user's agents (``ProactiveConfig``); confidence decay, a per-agent cap and auto-consolidation
    (``UpkeepConfig``)."""

    enabled: bool = Field(
        _PROACTIVE.enabled, description="the per-turn context includes proactive memories; memorize_on_turn may run"
    )
    categories: list[str] = Field(
        default_factory=lambda: list(_PROACTIVE.categories),
        description="categories auto_memorize extracts; anything else an LLM proposes is dropped",
    )
    session_ttl_hours: float = Field(
        _PROACTIVE.session_ttl_hours, gt=0, description="session_memory expires this long after it is saved"
    )
    confidence_decay_rate: float = Field(
        _UPKEEP.confidence_decay_rate,
        ge=0,
        le=10,
        description="per day: confidence x e^(-rate x days since access), after a day untouched",
    )
    decay_sweep_minutes: float = Field(
        _UPKEEP.decay_sweep_minutes, ge=0, description="an agent's decay sweep runs at most this often"
    )
    max_entries_per_agent: int = Field(
        _UPKEEP.max_entries_per_agent,
        ge=1,
        description="live proactive entries per agent (and per user); past it the weakest are archived",
    )
    consolidate_every: int = Field(
        _PROACTIVE.consolidate_every, ge=1, description="auto-consolidate after this many auto_memorize calls"
    )
    consolidate_window: int = Field(
        _UPKEEP.consolidate_window, ge=2, description="most recent proactive entries an auto-consolidation scans"
    )
    duplicate_cosine: float = Field(
        _UPKEEP.duplicate_cosine, gt=0, le=1, description="cosine from which two memories are duplicates"
    )
    duplicate_jaccard: float = Field(
        _UPKEEP.duplicate_jaccard,
        gt=0,
        le=1,
        description="content-word Jaccard from which two memories are duplicates (no vectors)",
    )
    min_similarity: float | None = Field(
        _PROACTIVE.min_similarity,
        ge=0,
        le=1,
        description="retrieval floor on cosine similarity; None: none (inert without an embedder)",
    )
    agent_min_similarity: dict[str, float] = Field(
        default_factory=dict, description="per-agent retrieval floors, over min_similarity"
    )
    retrieve_limit: int = Field(
        _PROACTIVE.retrieve_limit, ge=1, le=100, description="memories auto_retrieve returns at most"
    )
    memorize_on_turn: bool = Field(
        _PROACTIVE.memorize_on_turn, description="auto_memorize after every assistant turn that is recorded"
    )
    memorize_background: bool = Field(
        True, description="with an LLM, memorize turns in a background thread; false: rv.proactive.memorize_pending()"
    )

    @field_validator("categories")
    @classmethod
    def _category_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or not name.isascii() or not all(c.islower() or c.isdigit() or c == "_" for c in name):
                raise ValueError(f"categories: {name!r} must be lower-case letters, digits and '_'")
        if not value:
            raise ValueError("categories: at least one")
        return list(dict.fromkeys(value))

    @field_validator("agent_min_similarity")
    @classmethod
    def _floors(cls, value: dict[str, float]) -> dict[str, float]:
        for agent, floor in value.items():
            if not 0.0 <= floor <= 1.0:
                raise ValueError(f"agent_min_similarity.{agent} must be between 0 and 1")
        return value


class SkillsSettings(Section):
    """The skill store, its usage log and the feedback log (seed 001's skill and feedback stores), and how often
    the tool-call log commits (the engine reads it)."""

    max_skills_per_agent: int = Field(
        _SKILLS.max_skills_per_agent,
        ge=1,
        le=100_000,
        description="live skills an agent may hold; a save of a new name past it is refused",
    )
    max_content_chars: int = Field(
        _SKILLS.max_content_chars, ge=1, le=1_000_000, description="longest skill content a save accepts"
    )
    search_limit: int = Field(_SKILLS.search_limit, ge=1, le=1000, description="skills a search returns by default")
    sparse_chars: int = Field(
        _SKILLS.sparse_chars, ge=1, description="a skill with less content than this is sparse (Pass 4)"
    )
    sparse_days: float = Field(
        _SKILLS.sparse_days, ge=0, description="a sparse skill counts once it is older than this (days)"
    )
    usage_window_days: float = Field(
        _SKILLS.usage_window_days, gt=0, description="usage counts and co-usage look back this far"
    )
    co_usage_pairs: int = Field(_SKILLS.co_usage_pairs, ge=1, le=1000, description="most co-used skill pairs reported")
    log_retention_days: float = Field(
        _SKILLS.log_retention_days,
        ge=0,
        description="usage and feedback rows older than this are purged (0: kept forever)",
    )
    tool_call_log_flush_ms: int = Field(
        500,
        ge=0,
        le=60_000,
        description="the tool-call log commits the calls of this many ms at once (a crash loses at most them); "
        "0: every call is committed on its own",
    )


class AgentSettings(Section):
    """One agent's own switches (TOML ``[agents.<id>]``: ``AgentCuration``). Seed 004: what lets an agent's
    own tool reach its whole store is armed here, per agent, and never by a deployment-wide setting."""

    allow_self_consolidation: bool = Field(
        _AGENT.allow_self_consolidation,
        description="the agent's own tool may merge near-duplicates across its whole store",
    )
    auto_dream: bool = Field(
        _AGENT.auto_dream, description="this agent takes part in the auto-dream (with [dream]'s switch)"
    )
    auto_dream_min_hours: float | None = Field(
        _AGENT.min_hours, ge=0, description="overrides [dream] auto_dream_min_hours"
    )
    auto_dream_min_sessions: int | None = Field(
        _AGENT.min_sessions, ge=0, description="overrides [dream] auto_dream_min_sessions"
    )
