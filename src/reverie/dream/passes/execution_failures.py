"""Execution-failure analysis (seed 001, "Wisp failure analysis", for any logged multi-step execution): the
last ``window_days`` (14) of the agent's execution log, grouped by normalised description.

Invariants:
- The host decides what a pattern is (``core.execution_patterns``): a failure pattern has >= 3 failures in the
  window, at least one newer than the pass's last stamp (the newest record it read; so the same failures
  are not re-annotated every cycle); a success pattern has >= 5 runs and a success rate above 80%.
- Only failure patterns go to the model, with their failed steps, errors and producing skills (and those
  skills' content). No failure pattern: no LLM call.
- An annotation is appended to a live skill's content as a new version (``apply_changes``: the history keeps
  the old text); a skill that is not one of the shown patterns' producing skills is ignored and counted.
- Success patterns are flagged by the host without the model: the producing skill's metadata gets
  ``promotion_candidate`` {description, runs, success_rate, at}; a pattern with no skill is written to the
  dream log and the report. A flag already recorded with the same numbers is not written again.
- A malformed answer applies nothing, is counted, and leaves the stamp alone (the failures stay new evidence
  for the next cycle); an endpoint failure fails the pass.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.core.execution_patterns import (
    WINDOW_DAYS,
    Pattern,
    failure_patterns,
    group_runs,
    normalise,
    success_patterns,
)
from reverie.dream.passes.base import Capability, PassContext, PassReport, ask_or_none, write_dream_log
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.llm.base import Message
from reverie.logs import JsonlFile
from reverie.prompts import read_prompt
from reverie.skills.activity_logs import ExecutionLog
from reverie.skills.changes import SkillDraft, apply_changes
from reverie.skills.service import SkillStore
from reverie.types import Skill

log = logging.getLogger("reverie.dream")

DIRECTIVE = "execution-failure-dream.md"
PASS_NAME = "execution_failures"
PROMOTION = "promotion_candidate"
NOTES_HEADING = "## Execution notes"
SKILL_CHARS = 4000  # of a producing skill's content shown in the prompt
SAMPLE_ERRORS = 5
MAX_NOTE_CHARS = 2000


class Annotation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    skill: str = ""
    note: str = ""


class ClassifiedPattern(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    description: str = ""
    classification: str = ""
    affected_steps: list[str] = Field(default_factory=list, alias="affectedSteps")


class FailureAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    annotations: list[Annotation] = Field(default_factory=list)
    patterns: list[ClassifiedPattern] = Field(default_factory=list)


@dataclass(slots=True)
class _Tally:
    executions: int = 0
    failure_patterns: int = 0
    success_patterns: int = 0
    promoted: int = 0
    promoted_unowned: int = 0
    classified: int = 0
    annotated: int = 0
    ignored_skills: int = 0
    ignored_patterns: int = 0
    blank: int = 0
    refused: int = 0
    malformed: int = 0

    def counts(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(slots=True)
class ExecutionFailuresPass:
    """Learns from the agent's execution log (see the module)."""

    executions: ExecutionLog
    skills: SkillStore
    dream_log: JsonlFile | None = None
    window_days: float = WINDOW_DAYS
    name: str = PASS_NAME
    needs: frozenset[Capability] = field(
        default_factory=lambda: frozenset({Capability.LLM, Capability.SKILLS, Capability.EXECUTION_LOG})
    )

    def run(self, ctx: PassContext) -> PassReport:
        report, now, agent = ctx.report, ctx.now(), ctx.agent_id
        tally = _Tally()
        report.counts = tally.counts()
        last = ctx.ledger.last(agent, PASS_NAME)
        since = last.stamped_at if last is not None else None
        records = self.executions.window(agent, now - timedelta(days=self.window_days))
        tally.executions = len(records)
        if not records:
            report.status, report.reason = "skipped", f"no executions in the last {self.window_days:g} days"
            return report
        patterns = group_runs(r.run() for r in records)
        failing = failure_patterns(patterns, since=since)
        succeeding = success_patterns(patterns)
        tally.failure_patterns, tally.success_patterns = len(failing), len(succeeding)
        self._promote(ctx, succeeding, since, tally)
        if failing:
            self._analyse(ctx, failing, tally)
        elif not tally.promoted and not tally.promoted_unowned:
            report.status, report.reason = "skipped", "no new failure patterns and no new success patterns"
        else:
            report.reason = "no new failure patterns (no LLM call); success patterns flagged"
        if not tally.malformed:
            # Stamped with the newest record read, not now: a record appended at the same instant, after the
            # read, must still count as new evidence next cycle.
            ctx.ledger.stamp(agent, PASS_NAME, max(r.at for r in records))
        report.counts = tally.counts()
        report.summary = (
            f"execution-failure analysis — {tally.executions} executions, {tally.failure_patterns} failure "
            f"patterns, {tally.annotated} skills annotated, {tally.promoted + tally.promoted_unowned} promotion "
            f"candidates, {tally.ignored_skills} unknown skills ignored"
        )
        return report

    # -- success patterns: host only ------------------------------------------------------------------------
    def _promote(self, ctx: PassContext, patterns: list[Pattern], since: datetime | None, tally: _Tally) -> None:
        for pattern in patterns:
            flag = {
                "description": pattern.description,
                "runs": len(pattern.runs),
                "success_rate": round(pattern.success_rate, 3),
                "at": ctx.now().isoformat(),
            }
            skill = self._live_skill(ctx.agent_id, pattern.skills)
            if skill is None:
                if since is None or pattern.newest() > since:  # new evidence only: not re-logged every cycle
                    self._record(ctx, "promotion_candidate", **flag)
                    tally.promoted_unowned += 1
                continue
            current = skill.metadata.get(PROMOTION)
            if isinstance(current, dict) and all(current.get(k) == flag[k] for k in ("description", "runs")):
                continue  # already flagged on this evidence
            try:
                self.skills.save(ctx.agent_id, skill.name, skill.summary, skill.content, metadata={PROMOTION: flag})
            except (ValidationError, Conflict, NotFound) as exc:
                log.warning("DreamService: could not flag %s as a promotion candidate: %s", skill.name, exc)
                tally.refused += 1
                continue
            tally.promoted += 1

    def _live_skill(self, agent_id: str, names: tuple[str, ...]) -> Skill | None:
        for name in names:
            skill = self.skills.store.skills.get(agent_id, name)
            if skill is not None and not skill.archived:
                return skill
        return None

    # -- failure patterns: the model ----------------------------------------------------------------------
    def _analyse(self, ctx: PassContext, failing: list[Pattern], tally: _Tally) -> None:
        shown_skills: dict[str, Skill] = {}
        for pattern in failing:
            for name in pattern.skills:
                skill = self.skills.store.skills.get(ctx.agent_id, name)
                if skill is not None and not skill.archived:
                    shown_skills[name] = skill
        prompt = "\n".join(
            [
                "TASK: execution failure analysis",
                f"Now: {ctx.now().date().isoformat()}",
                "",
                *(_render(i, p, shown_skills) for i, p in enumerate(failing, 1)),
                'Answer with one JSON object: {"annotations": [...], "patterns": [...]}.',
            ]
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        answer = ask_or_none(ctx, messages, FailureAnswer, "dream.execution_failures")  # endpoint failure: raised
        if answer is None:
            tally.malformed += 1  # the report's counts are rebuilt from the tally
            return
        keys = {p.key for p in failing}
        for classified in answer.patterns:
            if normalise(classified.description) not in keys:
                tally.ignored_patterns += 1
                continue
            tally.classified += 1
            self._record(
                ctx,
                "failure_pattern",
                description=classified.description,
                classification=classified.classification[:500],
                affected_steps=[s[:200] for s in classified.affected_steps[:50]],
            )
        self._annotate(ctx, answer.annotations, shown_skills, tally)

    def _annotate(
        self, ctx: PassContext, annotations: list[Annotation], shown: dict[str, Skill], tally: _Tally
    ) -> None:
        notes: dict[str, list[str]] = {}
        for item in annotations:
            note = item.note.strip()[:MAX_NOTE_CHARS]
            if item.skill not in shown:
                tally.ignored_skills += 1  # not a shown producing skill: never invented, never another's
            elif not note:
                tally.blank += 1
            else:
                notes.setdefault(item.skill, []).append(note)
        day = ctx.now().date().isoformat()
        for name, lines in notes.items():
            skill = self.skills.store.skills.get(ctx.agent_id, name)
            if skill is None or skill.archived:
                tally.ignored_skills += 1  # archived since it was shown
                continue
            content = _annotated(skill.content, lines, day)
            draft = SkillDraft(name=name, summary=skill.summary, content=content, see_also=skill.see_also)
            try:
                apply_changes(self.skills, ctx.agent_id, [draft], source="dream")
            except (ValidationError, Conflict, NotFound) as exc:
                log.warning("DreamService: annotation of skill %s refused: %s", name, exc)
                tally.refused += 1
                continue
            tally.annotated += 1
            self._record(ctx, "skill_annotated", skill=name, notes=lines)

    def _record(self, ctx: PassContext, action: str, **fields: Any) -> None:
        record = {"at": ctx.now().isoformat(), "agent": ctx.agent_id, "pass": PASS_NAME, "action": action, **fields}
        write_dream_log(self.dream_log, record)


def _render(index: int, pattern: Pattern, skills: dict[str, Skill]) -> str:
    """One failure pattern as the prompt shows it."""
    failures = pattern.failures
    failed_steps = Counter(s.name for r in failures for s in r.steps if not s.ok)
    step_errors: dict[str, list[str]] = {}
    for run in failures:
        for step in run.steps:
            if not step.ok and step.error:
                step_errors.setdefault(step.name, []).append(step.error)
    errors = list(dict.fromkeys(r.error for r in failures if r.error))[:SAMPLE_ERRORS]
    lines = [
        f"## Pattern {index}: {pattern.description}",
        f"runs: {len(pattern.runs)}, failures: {len(failures)}, success rate: {pattern.success_rate:.0%}",
        "failed steps:",
    ]
    for name, count in failed_steps.most_common():
        samples = list(dict.fromkeys(step_errors.get(name, [])))[:SAMPLE_ERRORS]
        lines.append(f"- {name} ({count}×)" + (": " + " | ".join(e[:300] for e in samples) if samples else ""))
    if not failed_steps:
        lines.append("- (no step marked failed)")
    lines.append("errors: " + (" | ".join(e[:300] for e in errors) if errors else "(none)"))
    for name in pattern.skills:
        skill = skills.get(name)
        if skill is None:
            lines.append(f"producing skill: {name} (no longer exists: do not annotate it)")
            continue
        body = "\n".join("    " + line for line in skill.content[:SKILL_CHARS].splitlines())
        lines.extend([f"producing skill: {name} — {skill.summary}", body])
    if not pattern.skills:
        lines.append("producing skill: (none)")
    return "\n".join(lines) + "\n"


def _annotated(content: str, notes: list[str], day: str) -> str:
    """``content`` with ``notes`` appended under the execution-notes heading (added once)."""
    text = content.rstrip()
    if NOTES_HEADING not in text:
        text += f"\n\n{NOTES_HEADING}"
    for note in notes:
        body = note.replace("\n", "\n  ")
        text += f"\n- {body} (execution-failure analysis, {day})"
    return text
