"""Skills, their usage log, and feedback (seed 001's skill, skill-usage and feedback stores): ``rv.skills``
and ``rv.feedback``."""

from reverie.skills.changes import SkillChanges, SkillDraft
from reverie.skills.feedback import FeedbackStore
from reverie.skills.rank import SkillHit
from reverie.skills.service import SkillsConfig, SkillSearch, SkillStore
from reverie.skills.usage import AtRisk
from reverie.types import SkillSaved

__all__ = [
    "AtRisk",
    "FeedbackStore",
    "SkillChanges",
    "SkillDraft",
    "SkillHit",
    "SkillSaved",
    "SkillSearch",
    "SkillStore",
    "SkillsConfig",
]
