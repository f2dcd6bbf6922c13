"""Pass 4 — skill optimisation (seed 001): skills that went wrong, or that say too little, are improved.

Two kinds of skill are shown (at most ``max_skills`` a cycle, at-risk ones first):
- *At risk* (``SkillStore.at_risk``): used in sessions with a correction or a session summary rated poor or
  fair, shown with that failure context (each signal's kind, rating, session, date and comment). Only signals
  newer than the skill's last optimisation (``metadata.optimised_at``) count, so a skill is not re-optimised
  every cycle for a failure it was already optimised for.
- *Sparse*: less than ``[skills] sparse_chars`` (200) of content, created more than ``sparse_days`` (7) ago,
  shown with seed 001's review note — unless this pass reviewed it and nobody changed it since (its version
  is still ``metadata.optimised_version``, the version the pass's own save wrote).

The model answers seed 001's skill contract ``{"toSave": [{"name", "summary", "content", "seeAlso"}]}``.
Safeguards: a skill that was not shown is not saved (``unknown_names``); ``toDelete`` is refused in this pass
(``deletions_refused``; nothing is archived); ``seeAlso`` keeps live skills only. Each improvement is saved as a
new version of the skill (history keeps the old text), compare-and-set on the version shown, with
``optimised_at``, ``optimised_version`` and source ``dream:skill_optimisation`` in its metadata; a save the
store refuses is counted (``refused``) and the others apply. A shown skill the model left alone is marked
reviewed (``optimised_at``, ``optimised_version``) too. Skipped entirely (no LLM call) when nothing is at risk
or sparse. A malformed answer applies nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from reverie.core.skill_signals import (
    OPTIMISED_AT,
    OPTIMISED_VERSION,
    fresh_signals,
    needs_expansion,
    parse_moment,
    parse_version,
)
from reverie.dream.passes.base import Capability, PassContext, PassReport
from reverie.dream.passes.skill_common import ask_usable, bump, record, render_skill
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.logs import JsonlFile
from reverie.skills.service import SkillStore
from reverie.types import Feedback, Skill

log = logging.getLogger("reverie.dream")

PASS_NAME = "skill_optimisation"
DIRECTIVE = "skill-optimize.md"
SOURCE = "dream:skill_optimisation"
REVIEW_NOTE = (
    "### Review note: This skill has minimal content.\nExpand it with concrete steps, examples, and edge cases."
)


@dataclass(frozen=True, slots=True)
class SkillOptimisationConfig:
    max_skills: int = 10  # skills shown per cycle (at-risk first); the rest wait for the next cycle


@dataclass(slots=True)
class Candidate:
    skill: Skill
    failures: list[Feedback] = field(default_factory=list)
    sparse: bool = False


class OptimisedSkill(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = ""
    summary: str = ""
    content: str = ""
    see_also: list[str] | None = Field(default=None, alias="seeAlso")


class OptimisationAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_delete: list[str] = Field(default_factory=list, alias="toDelete")
    to_save: list[OptimisedSkill] = Field(default_factory=list, alias="toSave")


class SkillOptimisationPass:
    """Pass 4, over ``skills`` (the engine's skill store, whose usage log and feedback it reads)."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.SKILLS, Capability.FEEDBACK})

    def __init__(
        self, skills: SkillStore, config: SkillOptimisationConfig | None = None, *, dream_log: JsonlFile | None = None
    ) -> None:
        self.skills = skills
        self.config = config or SkillOptimisationConfig()
        self._dream_log = dream_log

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        candidates = self.candidates(ctx)
        at_risk = sum(1 for c in candidates if c.failures)
        report.counts = {"at_risk": at_risk, "sparse": len(candidates) - at_risk, "optimised": 0}
        if not candidates:
            report.status, report.reason = "skipped", "no skill at risk or sparse"
            return report
        shown = {c.skill.name: c for c in candidates[: self.config.max_skills]}
        report.counts["shown"] = len(shown)
        answer = ask_usable(ctx, DIRECTIVE, self._prompt(list(shown.values())), OptimisationAnswer,
                            purpose="dream.skill_optimize")  # fmt: skip
        if answer is None:
            report.summary = "skill optimisation — answer unusable, nothing saved"
            return report
        if answer.to_delete:
            bump(ctx, "deletions_refused", len(answer.to_delete))
        saved: set[str] = set()
        live = {s.name for s in self.skills.live(ctx.agent_id)}  # what seeAlso may name, listed once a run
        for item in answer.to_save:
            candidate = shown.get(item.name)
            if candidate is None or item.name in saved:
                bump(ctx, "unknown_names")
                continue
            if self._save(ctx, candidate.skill, item, live):
                saved.add(item.name)
        for name, candidate in shown.items():
            if name not in saved:
                self._mark_reviewed(ctx, candidate.skill)
        report.summary = (
            f"skill optimisation — {len(shown)} shown ({at_risk} at risk), optimised {report.counts['optimised']}"
        )
        log.info("DreamService: %s", report.summary)
        return report

    def candidates(self, ctx: PassContext) -> list[Candidate]:
        """The at-risk skills with fresh failure signals (name order), then the sparse ones needing expansion."""
        out: dict[str, Candidate] = {}
        for risk in self.skills.at_risk(ctx.agent_id):
            since = parse_moment(risk.skill.metadata.get(OPTIMISED_AT))
            fresh = [risk.feedback[i] for i in fresh_signals([f.created_at for f in risk.feedback], since)]
            if fresh:
                out[risk.skill.name] = Candidate(risk.skill, fresh)
        for skill in self.skills.sparse(ctx.agent_id):
            if not needs_expansion(True, parse_version(skill.metadata.get(OPTIMISED_VERSION)), skill.version):
                continue
            if skill.name in out:
                out[skill.name].sparse = True
            else:
                out[skill.name] = Candidate(skill, sparse=True)
        return sorted(out.values(), key=lambda c: (not c.failures, c.skill.name))

    @staticmethod
    def _prompt(candidates: list[Candidate]) -> str:
        blocks = []
        for c in candidates:
            lines = [render_skill(c.skill, notes=["[at-risk]"] if c.failures else ["[sparse]"])]
            if c.failures:
                lines += ["", "### Failure context"]
                lines += [f"- {_signal(f)}" for f in c.failures[:20]]
            if c.sparse:
                lines += ["", REVIEW_NOTE]
            blocks.append("\n".join(lines))
        return "\n".join(
            [
                "TASK: skill optimization",
                "",
                f"## Skills to review ({len(candidates)})",
                "\n\n".join(blocks),
                "",
                'Answer with one JSON object: {"toSave": [{"name": "...", "summary": "...", "content": "...", '
                '"seeAlso": [...]}]}.',
            ]
        )

    def _save(self, ctx: PassContext, skill: Skill, item: OptimisedSkill, live: set[str]) -> bool:
        see_also = None
        if item.see_also is not None:
            see_also = [n for n in dict.fromkeys(item.see_also) if n in live and n != skill.name]
            bump(
                ctx, "unknown_names", len(dict.fromkeys(item.see_also)) - len(see_also) - (skill.name in item.see_also)
            )
        metadata = {**_optimised(ctx, skill), "source": SOURCE}
        try:
            self.skills.save(
                ctx.agent_id, skill.name, item.summary.strip(), item.content.strip(), see_also=see_also,
                metadata=metadata, expected_version=skill.version,
            )  # fmt: skip
        except (ValidationError, NotFound, Conflict) as exc:
            bump(ctx, "refused")
            log.info("DreamService: optimised skill %r refused — %s", skill.name, exc)
            return False
        bump(ctx, "optimised")
        record(self._dream_log, ctx, "skill_optimised", skill.name, previous_version=skill.version)
        return True

    def _mark_reviewed(self, ctx: PassContext, skill: Skill) -> None:
        """Record that the pass reviewed the skill as it stands, so the same signals do not show it again."""
        try:
            self.skills.save(
                ctx.agent_id, skill.name, skill.summary, skill.content,
                metadata=_optimised(ctx, skill), expected_version=skill.version,
            )  # fmt: skip
        except (ValidationError, NotFound, Conflict) as exc:  # changed meanwhile: shown again next cycle
            log.info("DreamService: could not mark skill %r reviewed — %s", skill.name, exc)


def _optimised(ctx: PassContext, skill: Skill) -> dict[str, object]:
    """The bookkeeping a save of ``skill`` by this pass carries: when (the failure signals older than that are
    spent) and the version the save writes — exactly ``skill.version + 1``, as the save is compare-and-set on
    ``skill.version`` and every write moves the version by one — so an untouched sparse skill is not shown
    again however the clock moves, and any later write (a newer version) shows it again."""
    return {OPTIMISED_AT: ctx.now().isoformat(), OPTIMISED_VERSION: skill.version + 1}


def _signal(signal: Feedback) -> str:
    what = signal.kind if signal.rating is None else f"{signal.kind} rated {signal.rating}"
    comment = " ".join((signal.comment or "(no comment)").split())
    return f"{what} (session {signal.session_id}, {signal.created_at.date().isoformat()}): {comment}"
