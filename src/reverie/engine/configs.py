"""Service configurations from Settings: the engine's half of "only the engine reads Settings". Each function
maps one settings section to the plain config object a service takes."""

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
from reverie.memory.dedup import DedupConfig
from reverie.memory.lint import LintConfig
from reverie.memory.longterm import LongTermConfig
from reverie.proactive.service import ProactiveConfig
from reverie.proactive.upkeep import UpkeepConfig
from reverie.settings import Settings
from reverie.skills import SkillsConfig
from reverie.working.service import WorkingConfig


def aging_config(settings: Settings) -> AgingConfig:
    d = settings.decay
    try:
        return AgingConfig(
            importance=ImportanceDecay(
                grace_days=d.importance_grace_days, half_life_days=d.importance_half_life_days, floor=d.importance_floor
            ),
            retention=RetentionParams(
                default_half_life_days=d.retention_half_life_days,
                tier_half_life_days=dict(d.half_life_days),
                cold_below=d.cold_below,
            ),
            compact_cold_episodic=d.compact_cold_episodic,
            dedup_cold_clusters=d.dedup_cold_clusters,
            cluster_similarity=settings.memory.dedupe_similarity_threshold,
            on_contradiction=settings.memory.on_contradiction,
        )
    except ValueError as exc:
        raise ConfigError(f"[decay]: {exc}") from exc


def dedup_config(settings: Settings) -> DedupConfig:
    m = settings.memory
    return DedupConfig(
        enabled=m.dedupe_enabled,
        similarity_threshold=m.dedupe_similarity_threshold,
        lexical_threshold=m.dedupe_lexical_similarity_threshold,
        max_extended_chars=m.dedupe_max_extended_content_length,
        on_contradiction=m.on_contradiction,
    )


def longterm_config(settings: Settings) -> LongTermConfig:
    m = settings.memory
    return LongTermConfig(
        max_content_chars=m.max_content_chars,
        default_category=m.default_category,
        default_importance=m.default_importance,
        default_tier=m.default_tier,
        search_limit=m.search_limit,
        browse_limit=m.browse_limit,
        archive_retention_days=m.archive_retention_days,
        protect_importance=m.pruning_protection_importance,
        protect_reinforcement=m.pruning_protection_reinforcement_count,
        tombstone_days=settings.decay.tombstone_days,
        belief_authority_weight=settings.recall.belief_authority_weight,
    )


def working_config(settings: Settings, model_floor: float) -> WorkingConfig:
    w, r = settings.working, settings.recall
    return WorkingConfig(
        default_ttl_minutes=w.default_ttl_minutes,
        background_min_ttl_minutes=w.background_min_ttl_minutes,
        max_entries_per_namespace=w.max_entries_per_namespace,
        max_value_chars=w.max_value_chars,
        max_ttl_minutes=w.max_ttl_minutes,
        search_limit=w.search_limit,
        list_cap=w.list_cap,
        preview_chars=w.preview_chars,
        stash_ttl_minutes=w.stash_ttl_minutes,
        semantic_weight=r.semantic_weight,
        min_similarity=r.min_similarity if r.min_similarity is not None else model_floor,
    )


def conversation_config(settings: Settings) -> ConversationConfig:
    c = settings.conversation
    return ConversationConfig(
        max_llm_context_turns=c.max_llm_context_turns,
        max_turns_per_session=c.max_turns_per_session,
        max_archived_turns_per_session=c.max_archived_turns_per_session,
        session_idle_timeout_minutes=c.session_idle_timeout_minutes,
        max_turn_chars=c.max_turn_chars,
        compaction_threshold=c.compaction_threshold,
        compaction_keep_recent=c.compaction_keep_recent,
        auto_compact=c.auto_compact,
        deleted_retention_days=settings.memory.archive_retention_days,
    )


def lint_config(settings: Settings) -> LintConfig:
    m = settings.memory
    return LintConfig(
        similarity=m.lint_similarity, lexical_similarity=m.lint_lexical_similarity, max_entries=m.lint_max_entries
    )


def dream_config(settings: Settings) -> DreamConfig:
    d = settings.dream
    return DreamConfig(
        enabled=d.enabled,
        min_hours=d.min_hours,
        min_sessions=d.min_sessions,
        lease_seconds=d.lease_seconds,
        busy_poll_seconds=d.busy_poll_seconds,
        idle_trigger=d.idle_trigger,
        idle_window_seconds=d.idle_window_seconds,
        schedule=Schedule(
            initial_delay=timedelta(minutes=d.initial_delay_minutes),
            interval=timedelta(hours=d.interval_hours),
            cron=d.cron,
        ),
        runs_retention_days=d.runs_retention_days,
    )


def consolidation_config(settings: Settings) -> ConsolidationConfig:
    d, m = settings.dream, settings.memory
    return ConsolidationConfig(
        similarity=d.consolidation_similarity_threshold,
        max_cluster_size=d.consolidation_max_cluster_size,
        min_interval_hours=d.consolidation_min_interval_hours,
        repair_enabled=d.merge_repair_enabled,
        repair_max_per_cycle=d.merge_repair_max_per_cycle,
        max_entries_per_call=d.consolidation_max_entries_per_call,
        max_entries_per_cycle=d.consolidation_max_entries_per_cycle,
        related_per_entry=d.consolidation_related_per_entry,
        protect_importance=m.pruning_protection_importance,
        protect_reinforcement=m.pruning_protection_reinforcement_count,
        on_contradiction=m.on_contradiction,
    )


def audit_config(settings: Settings) -> AuditConfig:
    a = settings.audit
    return AuditConfig(
        interval_hours=a.interval_hours,
        trend_days=a.trend_days,
        pause_on_loss=a.pause_on_loss,
        similarity=settings.dream.consolidation_similarity_threshold,
    )


def context_config(settings: Settings) -> ContextConfig:
    c = settings.context
    return ContextConfig(
        recall_limit=c.recall_limit,
        first_turn_fallback=c.first_turn_fallback,
        replay_turns=settings.conversation.max_llm_context_turns,
        out_of_window_max_turns=c.out_of_window_max_turns,
        out_of_window_max_chars=c.out_of_window_max_chars,
        entry_chars=c.entry_chars,
    )


def kv_config(settings: Settings) -> KvConfig:
    k = settings.kv
    return KvConfig(
        max_value_bytes=k.max_value_bytes,
        max_keys_per_agent=k.max_keys_per_agent,
        deleted_retention_days=settings.memory.archive_retention_days,
    )


def graph_pass_config(settings: Settings) -> GraphPassConfig:
    d = settings.dream
    return GraphPassConfig(stale_days=d.graph_stale_days, merge_types=tuple(tuple(g) for g in d.graph_merge_types))


def curation_config(settings: Settings) -> CurationConfig:
    """The auto-dream's switches and thresholds: ``[dream] auto_dream_*`` and each ``[agents.<id>]``'s own."""
    d = settings.dream
    agents = {
        agent_id: AgentCuration(
            auto_dream=a.auto_dream,
            min_hours=a.auto_dream_min_hours,
            min_sessions=a.auto_dream_min_sessions,
            allow_self_consolidation=a.allow_self_consolidation,
        )
        for agent_id, a in settings.agents.items()
    }
    return CurationConfig(
        enabled=d.auto_dream_enabled,
        min_hours=d.auto_dream_min_hours,
        min_sessions=d.auto_dream_min_sessions,
        timeout_seconds=d.auto_dream_timeout_seconds,
        max_turns=d.auto_dream_max_turns,
        result_chars=d.auto_dream_result_chars,
        agents=agents,
    )


def graph_config(settings: Settings) -> GraphConfig:
    g = settings.graph
    return GraphConfig(
        exclusive_relations=frozenset(g.exclusive_relations),
        max_depth=g.max_depth,
        subgraph_limit=g.subgraph_limit,
        list_limit=g.list_limit,
    )


def extraction_config(settings: Settings) -> ExtractionConfig:
    g = settings.graph
    return ExtractionConfig(
        max_entities=g.extraction_max_entities,
        max_relations=g.extraction_max_relations,
        window=g.extraction_window,
        max_input_chars=g.extraction_max_input_chars,
    )


def proactive_config(settings: Settings) -> ProactiveConfig:
    p = settings.proactive
    return ProactiveConfig(
        enabled=p.enabled,
        categories=tuple(p.categories),
        session_ttl_hours=p.session_ttl_hours,
        retrieve_limit=p.retrieve_limit,
        min_similarity=p.min_similarity,
        agent_min_similarity=tuple(sorted(p.agent_min_similarity.items())),
        consolidate_every=p.consolidate_every,
        memorize_on_turn=p.memorize_on_turn,
        upkeep=UpkeepConfig(
            decay_rate=p.confidence_decay_rate,
            sweep_minutes=p.decay_sweep_minutes,
            max_entries=p.max_entries_per_agent,
            consolidate_window=p.consolidate_window,
            duplicate_cosine=p.duplicate_cosine,
            duplicate_jaccard=p.duplicate_jaccard,
        ),
    )


def skills_config(settings: Settings) -> SkillsConfig:
    """``[skills]``, with memory's archive retention, recall's semantic weight and the embedder's input cap."""
    k = settings.skills
    return SkillsConfig(
        max_skills_per_agent=k.max_skills_per_agent,
        max_content_chars=k.max_content_chars,
        search_limit=k.search_limit,
        sparse_chars=k.sparse_chars,
        sparse_days=k.sparse_days,
        usage_window_days=k.usage_window_days,
        co_usage_pairs=k.co_usage_pairs,
        archive_retention_days=settings.memory.archive_retention_days,
        log_retention_days=k.log_retention_days,
        semantic_weight=settings.recall.semantic_weight,
        max_input_chars=settings.embedding.max_input_chars,
    )
