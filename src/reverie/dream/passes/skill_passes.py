"""The three skill passes of seed 001 (Pass 2 gap detection, Pass 3 consolidation, Pass 4 optimisation), built
in their order for the engine's dream service: gap detection first, so the skills it creates are consolidated
in the same cycle; optimisation last, on the consolidated set."""

from __future__ import annotations

from reverie.dream.passes.base import DreamPass
from reverie.dream.passes.skill_consolidation import SkillConsolidationPass
from reverie.dream.passes.skill_gap import LogReader, SkillGapPass
from reverie.dream.passes.skill_optimisation import SkillOptimisationPass
from reverie.logs import JsonlFile
from reverie.skills.service import SkillStore


def skill_passes(
    skills: SkillStore,
    log_reader: LogReader,
    *,
    gap: bool = True,
    consolidation: bool = True,
    optimisation: bool = True,
    dream_log: JsonlFile | None = None,
) -> list[DreamPass]:
    """The enabled skill passes, in order. ``log_reader(agent_id)``: the agent's conversation-log records."""
    passes: list[DreamPass] = []
    if gap:
        passes.append(SkillGapPass(skills, log_reader, dream_log=dream_log))
    if consolidation:
        passes.append(SkillConsolidationPass(skills, dream_log=dream_log))
    if optimisation:
        passes.append(SkillOptimisationPass(skills, dream_log=dream_log))
    return passes
