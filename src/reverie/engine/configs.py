"""Service configurations from Settings: the engine's half of "only the engine reads Settings". Each function
builds the plain config a service takes from one settings section.

No setting is mapped by hand: ``config_from`` picks a config's fields from the section by name (under the
section's prefix for a sub-config, e.g. ``[memory] dedupe_*`` for ``DedupConfig``). What is written out is
what a name cannot say: a value another section holds, passed under the service's own name, and a value
derived from two settings or from the embedding model (each says why in its docstring).
"""

from __future__ import annotations

from datetime import timedelta

from reverie.audit import AuditConfig
from reverie.context.builder import ContextConfig
from reverie.conversation.service import ConversationConfig
from reverie.core.aging import ImportanceDecay, RetentionParams
from reverie.dream.passes.consolidation import ConsolidationConfig
from reverie.dream.passes.curation import AgentCuration, CurationConfig
from reverie.dream.passes.graph import GraphPassConfig
from reverie.dream.schedule import Schedule
from reverie.dream.service import DreamConfig
from reverie.errors import ConfigError
from reverie.graph.extraction import ExtractionConfig
from reverie.graph.service import GraphConfig
from reverie.kv.service import KvConfig
from reverie.memory.aging import AgingConfig
from reverie.memory.consolidate import SemanticConfig
from reverie.memory.dedup import DedupConfig
from reverie.memory.entries import LongTermConfig
from reverie.memory.lint import LintConfig
from reverie.proactive.service import ProactiveConfig
from reverie.proactive.upkeep import UpkeepConfig
from reverie.recall.config import RecallConfig
from reverie.settings import Settings, config_from
from reverie.skills import SkillsConfig
from reverie.working.service import WorkingConfig


def aging_config(settings: Settings) -> AgingConfig:
    """``[decay]``. The core's curves keep their own names: ``ImportanceDecay`` is ``[decay] importance_*``,
    and the retention curve's shared and per-tier half-lives are ``retention_half_life_days`` and
    ``half_life_days``. Cold clusters fold at memory's dedup threshold, under its contradiction mode."""
    d, m = settings.decay, settings.memory
    try:
        return config_from(
            AgingConfig,
            d,
            importance=config_from(ImportanceDecay, d, prefix="importance_"),
            retention=config_from(
                RetentionParams,
                d,
                default_half_life_days=d.retention_half_life_days,
                tier_half_life_days=d.half_life_days,
            ),
            cluster_similarity=m.dedupe_similarity_threshold,
            on_contradiction=m.on_contradiction,
        )
    except ValueError as exc:
        raise ConfigError(f"[decay]: {exc}") from exc


def dedup_config(settings: Settings) -> DedupConfig:
    return config_from(DedupConfig, settings.memory, prefix="dedupe_")


def longterm_config(settings: Settings) -> LongTermConfig:
    """``[memory]``, with decay's tombstone retention and recall's belief-authority weight."""
    return config_from(
        LongTermConfig,
        settings.memory,
        tombstone_days=settings.decay.tombstone_days,
        belief_authority_weight=settings.recall.belief_authority_weight,
    )


def working_config(settings: Settings, model_floor: float) -> WorkingConfig:
    """``[working]``, with recall's semantic weight; the vector floor is derived: recall's when it is set,
    else the embedding model's calibrated one (``model_floor``)."""
    r = settings.recall
    floor = r.min_similarity if r.min_similarity is not None else model_floor
    return config_from(WorkingConfig, settings.working, semantic_weight=r.semantic_weight, min_similarity=floor)


def conversation_config(settings: Settings) -> ConversationConfig:
    """``[conversation]``; deleted sessions wait as long as archived entries (memory's archive retention)."""
    retention = settings.memory.archive_retention_days
    return config_from(ConversationConfig, settings.conversation, deleted_retention_days=retention)


def lint_config(settings: Settings) -> LintConfig:
    return config_from(LintConfig, settings.memory, prefix="lint_")


def recall_config(settings: Settings, model_floor: float, model_strong: float | None) -> RecallConfig:
    """``[recall]``, with the embedding model's calibrated floor and full-evidence similarity."""
    return config_from(
        RecallConfig, settings.recall, model_min_similarity=model_floor, model_strong_similarity=model_strong
    )


def dream_config(settings: Settings) -> DreamConfig:
    """``[dream]``'s schedule and gates, and every agent with its own ``[agents.<id>]``. The schedule is
    derived: it holds durations, which ``[dream]`` names in minutes and hours."""
    d = settings.dream
    schedule = Schedule(
        initial_delay=timedelta(minutes=d.initial_delay_minutes),
        interval=timedelta(hours=d.interval_hours),
        cron=d.cron,
    )
    return config_from(DreamConfig, d, schedule=schedule, configured_agents=frozenset(settings.agents))


def consolidation_config(settings: Settings) -> ConsolidationConfig:
    """``[dream] consolidation_*`` and ``merge_repair_*``, with memory's high-value floor and contradiction
    mode."""
    m = settings.memory
    return config_from(
        ConsolidationConfig,
        settings.dream,
        prefix="consolidation_",
        pruning_protection_importance=m.pruning_protection_importance,
        pruning_protection_reinforcement_count=m.pruning_protection_reinforcement_count,
        on_contradiction=m.on_contradiction,
    )


def audit_config(settings: Settings) -> AuditConfig:
    """``[audit]``; duplicates are counted at the consolidation's similarity."""
    return config_from(AuditConfig, settings.audit, similarity=settings.dream.consolidation_similarity_threshold)


def context_config(settings: Settings) -> ContextConfig:
    """``[context]``; the context replays as many turns as the conversation's window holds."""
    turns = settings.conversation.max_llm_context_turns
    return config_from(ContextConfig, settings.context, replay_turns=turns)


def kv_config(settings: Settings) -> KvConfig:
    """``[kv]``; deleted items wait as long as archived entries (memory's archive retention)."""
    return config_from(KvConfig, settings.kv, deleted_retention_days=settings.memory.archive_retention_days)


def graph_pass_config(settings: Settings) -> GraphPassConfig:
    return config_from(GraphPassConfig, settings.dream, prefix="graph_")


def curation_config(settings: Settings) -> CurationConfig:
    """The auto-dream's switches and thresholds: ``[dream] auto_dream_*`` and each ``[agents.<id>]``'s own."""
    agents = {agent_id: config_from(AgentCuration, a, prefix="auto_dream_") for agent_id, a in settings.agents.items()}
    return config_from(CurationConfig, settings.dream, prefix="auto_dream_", agents=agents)


def semantic_config(settings: Settings) -> SemanticConfig:
    """The agent-callable consolidation: dream's similarity, memory's contradiction mode, and the agents whose
    own ``[agents.<id>]`` allow it."""
    return SemanticConfig(
        similarity=settings.dream.consolidation_similarity_threshold,
        on_contradiction=settings.memory.on_contradiction,
        allowed_agents=frozenset(a for a, s in settings.agents.items() if s.allow_self_consolidation),
    )


def graph_config(settings: Settings) -> GraphConfig:
    return config_from(GraphConfig, settings.graph)


def extraction_config(settings: Settings) -> ExtractionConfig:
    return config_from(ExtractionConfig, settings.graph, prefix="extraction_")


def proactive_config(settings: Settings) -> ProactiveConfig:
    p = settings.proactive
    return config_from(ProactiveConfig, p, upkeep=config_from(UpkeepConfig, p))


def skills_config(settings: Settings) -> SkillsConfig:
    """``[skills]``, with memory's archive retention, recall's semantic weight and the embedder's input cap."""
    return config_from(
        SkillsConfig,
        settings.skills,
        archive_retention_days=settings.memory.archive_retention_days,
        semantic_weight=settings.recall.semantic_weight,
        max_input_chars=settings.embedding.max_input_chars,
    )
