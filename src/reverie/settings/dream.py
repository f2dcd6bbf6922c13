"""The ``[dream]`` section: the dream service's schedule and gates (``DreamConfig``, ``Schedule``), each pass's
switch, and the knobs of the passes with a config of their own, each under its prefix: ``consolidation_*`` and
``merge_repair_*`` (``ConsolidationConfig``), ``graph_*`` (``GraphPassConfig``), ``auto_dream_*``
(``CurationConfig``), ``log_retention_*`` (``logs.RetentionPolicy``).

Invariant (``settings.base``): a key that feeds a config dataclass takes that dataclass's default; the
switches and the pass arguments that are no dataclass's field hold theirs here.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cronsim import CronSim, CronSimError
from pydantic import Field, field_validator

from reverie.core.graph_upkeep import type_groups
from reverie.dream.passes.consolidation import ConsolidationConfig
from reverie.dream.passes.curation import CurationConfig
from reverie.dream.passes.graph import GraphPassConfig
from reverie.dream.schedule import Schedule
from reverie.dream.service import DreamConfig
from reverie.logs import RetentionPolicy
from reverie.settings.base import Section

_DREAM, _SCHEDULE, _CONSOLIDATION = DreamConfig(), Schedule(), ConsolidationConfig()
_GRAPH, _CURATION, _LOGS = GraphPassConfig(), CurationConfig(), RetentionPolicy()


class DreamSettings(Section):
    """The dream service (seeds 001, 003, 004): schedule, gates, and each pass's knobs."""

    enabled: bool = Field(_DREAM.enabled, description="run dream cycles (reverie dream serve / run)")
    # The schedule holds durations; the settings name them in minutes and hours.
    initial_delay_minutes: float = Field(
        _SCHEDULE.initial_delay / timedelta(minutes=1),
        ge=0,
        description="first cycle this long after the scheduler starts",
    )
    interval_hours: float = Field(
        _SCHEDULE.interval / timedelta(hours=1), gt=0, description="then a cycle this often (unless cron is set)"
    )
    cron: str | None = Field(
        _SCHEDULE.cron, description='a cron expression in UTC instead of the interval, e.g. "0 3 * * *"'
    )
    min_hours: float = Field(
        _DREAM.min_hours, ge=0, description="earliest an agent dreams again after a completed dream"
    )
    min_sessions: int = Field(
        _DREAM.min_sessions, ge=0, description="sessions active since the last dream before a scheduled one"
    )
    lease_seconds: float = Field(
        _DREAM.lease_seconds, gt=0, description="a dream's lock expires this long after its last step"
    )
    heartbeat_seconds: float = Field(
        _DREAM.heartbeat_seconds,
        gt=0,
        le=3600,
        description="a running dream's heartbeat period; a holder silent for 3 periods + 10 s counts as dead",
    )
    busy_poll_seconds: float = Field(
        _DREAM.busy_poll_seconds, gt=0, description="how often a dream looks again while a user turn runs"
    )
    idle_trigger: bool = Field(
        _DREAM.idle_trigger, description="also dream once no client was active for idle_window_seconds"
    )
    idle_window_seconds: float = Field(
        _DREAM.idle_window_seconds, gt=0, description="the quiet spell the idle trigger waits for"
    )
    change_gate_enabled: bool = Field(True, description="skip corpus-wide LLM passes whose input did not change")
    max_skip_days: float = Field(7.0, gt=0, description="a gated pass runs at least this often anyway")
    log_retention_enabled: bool = Field(True, description="Pass 0: cap the append-only JSONL logs")
    log_retention_max_file_age_days: float = Field(
        _LOGS.max_file_age_days, description="per-session log files older go (<= 0: off)"
    )
    log_retention_max_files_per_directory: int = Field(
        _LOGS.max_files_per_directory, description="per-session log files kept (<= 0: off)"
    )
    log_retention_max_lines_per_file: int = Field(
        _LOGS.max_lines_per_file, description="lines kept per log file (<= 0: off)"
    )
    decay_enabled: bool = Field(True, description="run importance decay each cycle")
    forget_enabled: bool = Field(True, description="run the forget sweep each cycle")
    memory_mining_enabled: bool = Field(True, description="mine durable facts from the conversation log (LLM)")
    episode_extraction_enabled: bool = Field(True, description="one episodic entry per conversation session (LLM)")
    preference_inference_enabled: bool = Field(
        True, description="Pass 5: infer preferences from the conversation log, then clear it (LLM)"
    )
    consolidation_enabled: bool = Field(True, description="Pass 1 memory consolidation (needs an LLM)")
    consolidation_min_interval_hours: float = Field(
        _CONSOLIDATION.min_interval_hours, ge=0, description="between completed consolidations"
    )
    consolidation_similarity_threshold: float = Field(
        _CONSOLIDATION.similarity_threshold, gt=0, le=1, description="near-duplicate clusters"
    )
    consolidation_max_cluster_size: int = Field(
        _CONSOLIDATION.max_cluster_size, ge=2, description="members of a cluster shown together"
    )
    consolidation_max_entries_per_call: int = Field(
        _CONSOLIDATION.max_entries_per_call, ge=2, description="entries shown in one LLM call"
    )
    consolidation_max_entries_per_cycle: int = Field(
        _CONSOLIDATION.max_entries_per_cycle, ge=2, description="entries reviewed per cycle"
    )
    consolidation_related_per_entry: int = Field(
        _CONSOLIDATION.related_per_entry,
        ge=0,
        description="reviewed entries recall finds for a changed one, shown beside it (merge-only)",
    )
    merge_repair_enabled: bool = Field(
        _CONSOLIDATION.merge_repair_enabled, description="one repair call for a merge that dropped specifics"
    )
    merge_repair_max_per_cycle: int = Field(
        _CONSOLIDATION.merge_repair_max_per_cycle, ge=0, description="repair calls per cycle"
    )
    cold_rewrite_enabled: bool = Field(False, description="ai-memory's dream: rewrite cold clusters (LLM + embedder)")
    max_clusters_per_run: int = Field(8, ge=1, description="cold clusters rewritten per cycle")
    graph_enabled: bool = Field(True, description="the knowledge-graph pass: merge duplicate entities, archive stale")
    graph_stale_days: float = Field(
        _GRAPH.stale_days,
        ge=0,
        le=36_500,
        description="entities unseen this long, unrelated to live ones, are archived; 0: never",
    )
    graph_merge_types: list[list[str]] = Field(
        default_factory=lambda: [list(group) for group in _GRAPH.merge_types],
        description='groups of entity types merged as one, e.g. [["company", "organization"]]',
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
    runs_retention_days: float = Field(
        _DREAM.runs_retention_days, gt=0, description="recorded dream runs are kept this long"
    )
    # The agent-curated auto-dream (seed 004): armed only with this AND the agent's own [agents.<id>] auto_dream.
    auto_dream_enabled: bool = Field(
        _CURATION.enabled, description="the agent_curation pass may run (agents opt in too)"
    )
    auto_dream_min_hours: float = Field(
        _CURATION.min_hours, ge=0, description="earliest an agent's auto-dream runs again"
    )
    auto_dream_min_sessions: int = Field(
        _CURATION.min_sessions, ge=0, description="sessions active since the last auto-dream first"
    )
    auto_dream_timeout_seconds: float = Field(
        _CURATION.timeout_seconds, gt=0, description="an auto-dream asks no more after this"
    )
    auto_dream_max_turns: int = Field(
        _CURATION.max_turns, ge=1, le=100, description="LLM turns of one auto-dream at most"
    )
    auto_dream_result_chars: int = Field(
        _CURATION.result_chars, ge=200, le=100_000, description="a tool result shown back to the model is cut to this"
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
