"""The dream passes ``[dream]`` enables, in the order they run, built from an open engine's services. Called by
the composition root (``engine/root.py``) only.

The order (seed 001's, extended): log retention, archive purge, importance decay, (cold rewrite,) forget sweep,
proactive memory's decay sweep;
the passes that mint facts from the logs (memory mining, episode extraction, tool-success learning), so the next
consolidation sees what they wrote; memory consolidation (with anti-pattern mining); the knowledge graph's pass;
the skill passes (gap detection, consolidation, optimisation); execution-failure analysis; preference inference,
the last reader of the conversation log (it clears the agent's log); the agent's own curation, last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from reverie.conversation.service import ConversationMemory
from reverie.dream.passes.base import DreamPass
from reverie.dream.passes.cold_rewrite import ColdRewritePass
from reverie.dream.passes.consolidation import ConsolidationPass
from reverie.dream.passes.conversation import conversation_passes
from reverie.dream.passes.curation import AgentCurationPass
from reverie.dream.passes.execution_failures import ExecutionFailuresPass
from reverie.dream.passes.graph import GraphConsolidationPass
from reverie.dream.passes.maintenance import (
    ArchivePurgePass,
    DecayPass,
    ForgetPass,
    LogRetentionPass,
    ProactiveSweepPass,
)
from reverie.dream.passes.preferences import corrections_since, feedback_lines
from reverie.dream.passes.skill_passes import skill_passes
from reverie.dream.passes.tool_success import ToolSuccessPass
from reverie.engine import configs as service_configs
from reverie.logs import JsonlFile, PrunableLog, RetentionPolicy
from reverie.memory.aging import Aging
from reverie.proactive.service import ProactiveMemory
from reverie.settings import Settings, config_from
from reverie.skills.activity_logs import ExecutionLog
from reverie.types import MemoryEntry

if TYPE_CHECKING:
    from reverie.dream.passes.curation import ToolDescription, ToolOutcome
    from reverie.tools.dream import DreamToolRunner
    from reverie.tools.services import ToolServices
else:  # the tools package (its registry imports jsonschema) loads with the first dream that calls a tool

    class ToolServices(Protocol):
        pass


class Services(ToolServices, Protocol):
    """What the passes are built from: the agent tools' services (the curation pass calls the tools) and the
    engine's logs, aging and settings. ``engine.root.Reverie`` satisfies it; naming the engine's class here
    would be an import cycle inside this package."""

    @property
    def settings(self) -> Settings: ...

    @property
    def conversation(self) -> ConversationMemory: ...

    @property
    def executions(self) -> ExecutionLog: ...

    @property
    def aging(self) -> Aging: ...

    @property
    def proactive(self) -> ProactiveMemory: ...

    @property
    def dream_log(self) -> JsonlFile: ...

    def logs(self) -> list[PrunableLog]: ...

    def related_ids(self, entry: MemoryEntry, limit: int) -> list[str]: ...


def dream_passes(rv: Services) -> list[DreamPass]:
    """Every enabled pass, in running order (see the module docstring)."""
    d = rv.settings.dream
    learned, last_readers = conversation_passes(  # mining and episodes; preference inference (it clears the log)
        rv.memory,
        rv.conversation,
        rv.feedback,
        mining=d.memory_mining_enabled,
        episodes=d.episode_extraction_enabled,
        preferences=d.preference_inference_enabled,
    )
    passes = _upkeep(rv) + learned
    if d.tool_success_enabled:
        passes.append(ToolSuccessPass(rv.tool_calls, rv.memory, window_days=d.activity_log_window_days))
    if d.consolidation_enabled:
        passes.append(
            ConsolidationPass(
                service_configs.consolidation_config(rv.settings),
                dream_log=rv.dream_log,
                related=rv.related_ids,
                feedback=lambda agent, since: feedback_lines(rv.feedback, agent, since),  # anti-patterns
                corrections=lambda agent, since: corrections_since(rv.feedback, agent, since),
            )
        )
    if d.graph_enabled:  # after consolidation: which entries are live decides which entities are stale
        passes.append(GraphConsolidationPass(rv.graph, service_configs.graph_pass_config(rv.settings)))
    passes += skill_passes(  # seed 001's Passes 2-4: gap detection, skill consolidation, optimisation
        rv.skills,
        lambda agent: rv.conversation.log_records(agent_id=agent),
        gap=d.skill_gap_enabled,
        consolidation=d.skill_consolidation_enabled,
        optimisation=d.skill_optimisation_enabled,
        dream_log=rv.dream_log,
    )
    if d.execution_failure_analysis_enabled:  # after the skill passes: it annotates the skills they left
        passes.append(
            ExecutionFailuresPass(
                rv.executions, rv.skills, dream_log=rv.dream_log, window_days=d.activity_log_window_days
            )
        )
    passes += last_readers  # after every other reader of the conversation log: it clears the agent's log
    # Last: the agent curates what the deterministic passes left. Always listed; its own gates (both
    # auto_dream switches off by default) skip it and say why.
    curation = service_configs.curation_config(rv.settings)
    passes.append(AgentCurationPass(curation, _ToolsOnFirstUse(rv), dream_log=rv.dream_log))
    return passes


class _ToolsOnFirstUse:
    """The agent tools for the curation pass, imported and built when it first calls them: an engine that
    never dreams with tools (a one-shot command) does not import the tool registry."""

    def __init__(self, rv: Services) -> None:
        self._rv = rv
        self._runner: DreamToolRunner | None = None

    def _tools(self) -> DreamToolRunner:
        if self._runner is None:
            from reverie.tools.dream import DreamToolRunner

            self._runner = DreamToolRunner(self._rv)
        return self._runner

    def describe(self, agent_id: str) -> Sequence[ToolDescription]:
        return self._tools().describe(agent_id)

    def call(self, agent_id: str, name: str, arguments: object) -> ToolOutcome:
        return self._tools().call(agent_id, name, arguments)


def _upkeep(rv: Services) -> list[DreamPass]:
    """The passes that need no LLM (cold rewrite aside): log retention, purge, decay, cold rewrite, forget, and
    proactive memory's decay sweep."""
    d = rv.settings.dream
    passes: list[DreamPass] = []
    if d.log_retention_enabled:
        passes.append(LogRetentionPass(rv.logs, config_from(RetentionPolicy, d, prefix="log_retention_")))
    passes.append(ArchivePurgePass(rv.memory))
    if d.decay_enabled:
        passes.append(DecayPass(rv.aging))
    if d.cold_rewrite_enabled:
        similarity = rv.settings.memory.dedupe_similarity_threshold
        passes.append(ColdRewritePass(rv.aging, max_clusters_per_run=d.max_clusters_per_run, similarity=similarity))
    if d.forget_enabled:
        passes.append(ForgetPass(rv.aging))
    passes.append(ProactiveSweepPass(rv.proactive))  # proactive memory's decay: a scan, kept off the context build
    return passes
