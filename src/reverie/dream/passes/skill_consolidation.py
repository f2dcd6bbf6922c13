"""Pass 3 — skill consolidation (seed 001): the model merges overlapping skills, writes parent guides for
prefix clusters, fills ``seeAlso`` and prunes redundant skills; the host checks and applies.

The model sees every live skill of the agent (name order, up to ``max_skills``) with its content, its uses in
the last 30 days, ``[sparse-content]`` on skills with less than 200 characters of content created more than 7
days ago (``[skills] sparse_chars`` / ``sparse_days``), the top 10 co-used pairs and the prefix clusters. It
answers ``{"toDelete": [names], "toSave": [{"name", "summary", "content", "sourceNames", "seeAlso"}]}``.

Safeguards:
- Skipped (no LLM call) with fewer than 2 live skills, and behind the change gate: the fingerprint covers the
  corpus (each live skill's name, summary, content and see-also — ``core.skill_signals.skills_fingerprint``),
  not usage; stamped only after a usable answer, with the corpus as the pass left it (a merge it applied is
  not sent back to it next cycle).
- ``toDelete`` with an empty ``toSave`` is a directive violation: nothing is applied (``violations``).
- Names the model invents are dropped and counted (``unknown_names``): ``toDelete`` and ``sourceNames`` must
  be live skills that were shown; ``seeAlso`` live skills or skills saved in the same answer. A skill whose
  content was cut for the prompt is frozen: it may not be rewritten, merged or deleted (``frozen``).
- The rest is applied through ``SkillStore.apply_changes``, all or nothing (earliest ``created_at``, latest
  ``last_used_at``, ``merged_from``; archived sources restorable). If the store still refuses it
  (``ValidationError``, ``NotFound``, ``Conflict``), nothing is applied (``refused``) and the pass completes.
- A malformed answer applies nothing (``malformed``) and stamps nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from reverie.core.skill_signals import is_sparse, skills_fingerprint
from reverie.dream.passes.base import Capability, PassContext, PassReport
from reverie.dream.passes.skill_common import MAX_SHOWN_CHARS, ask_usable, bump, record, render_skill
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.logs import JsonlFile
from reverie.skills.changes import SkillDraft
from reverie.skills.service import SkillStore
from reverie.types import Skill

log = logging.getLogger("reverie.dream")

PASS_NAME = "skill_consolidation"
DIRECTIVE = "skill-dream.md"
SOURCE = "dream:skill_consolidation"


@dataclass(frozen=True, slots=True)
class SkillConsolidationConfig:
    max_skills: int = 200  # live skills shown (name order); the rest are not touched this cycle
    max_shown_chars: int = MAX_SHOWN_CHARS  # a longer skill is shown cut, and frozen


class ProposedSkill(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = ""
    summary: str = ""
    content: str = ""
    source_names: list[str] = Field(default_factory=list, alias="sourceNames")
    see_also: list[str] = Field(default_factory=list, alias="seeAlso")


class SkillChangesAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_delete: list[str] = Field(default_factory=list, alias="toDelete")
    to_save: list[ProposedSkill] = Field(default_factory=list, alias="toSave")


def corpus(skills: list[Skill]) -> str:
    return skills_fingerprint((s.name, s.summary, s.content, s.see_also) for s in skills)


class SkillConsolidationPass:
    """Pass 3, over ``skills`` (the engine's skill store)."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.SKILLS})

    def __init__(
        self,
        skills: SkillStore,
        config: SkillConsolidationConfig | None = None,
        *,
        dream_log: JsonlFile | None = None,
    ) -> None:
        self.skills = skills
        self.config = config or SkillConsolidationConfig()
        self._dream_log = dream_log

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        live = self.skills.live(ctx.agent_id)
        report.counts = {"live": len(live), "merged": 0, "saved": 0, "archived": 0}
        if len(live) < 2:
            report.status, report.reason = "skipped", "fewer than two live skills"
            return report
        fingerprint = corpus(live)
        gate = ctx.ledger.gate(ctx.agent_id, PASS_NAME, fingerprint, ctx.now())
        if not gate.run:
            report.status, report.reason = "skipped", f"change gate: {gate.reason}"
            return report
        report.reason = gate.reason
        shown = live[: self.config.max_skills]
        frozen = {s.name for s in shown if len(s.content) > self.config.max_shown_chars}
        answer = ask_usable(ctx, DIRECTIVE, self._prompt(ctx, shown), SkillChangesAnswer, purpose="dream.skill_dream")
        if answer is None:
            report.summary = "skill consolidation — answer unusable, nothing applied"
            return report
        self._apply(ctx, answer, {s.name: s for s in shown}, frozen)
        after = self.skills.live(ctx.agent_id)
        ctx.ledger.stamp(ctx.agent_id, PASS_NAME, ctx.now(), corpus(after))
        counts = report.counts
        counts["live"] = len(after)
        report.summary = (
            f"skill consolidation — live {len(after)}, saved {counts['saved']} (merged {counts['merged']}), "
            f"archived {counts['archived']}, dropped names {counts.get('unknown_names', 0)}"
        )
        log.info("DreamService: %s", report.summary)
        return report

    def _prompt(self, ctx: PassContext, shown: list[Skill]) -> str:
        cfg, now = self.skills.config, ctx.now()
        uses = self.skills.usage_counts(ctx.agent_id)
        blocks = []
        for skill in shown:
            notes = [f"uses(30d)={uses.get(skill.name, 0)}"]
            if is_sparse(skill.content, skill.created_at, now, chars=cfg.sparse_chars, days=cfg.sparse_days):
                notes.append("[sparse-content]")
            if len(skill.content) > self.config.max_shown_chars:
                notes.append("[cut: do not rewrite, merge or delete]")
            blocks.append(render_skill(skill, notes=notes, max_chars=self.config.max_shown_chars))
        pairs = self.skills.co_usage(ctx.agent_id)
        clusters = self.skills.prefix_clusters(ctx.agent_id)
        return "\n".join(
            [
                "TASK: skill consolidation",
                "",
                f"## Skills ({len(shown)})",
                "\n\n".join(blocks),
                "",
                "## Co-used skill pairs (used in the same sessions, last 30 days)",
                "\n".join(f"- {p.first} + {p.second}: {p.sessions} session(s)" for p in pairs) or "(none)",
                "",
                "## Prefix clusters (skills grouped by name prefix)",
                "\n".join(f"- {head}/*: {', '.join(members)}" for head, members in clusters.items()) or "(none)",
                "",
                'Answer with one JSON object: {"toDelete": [...], "toSave": [{"name": "...", "summary": "...", '
                '"content": "...", "sourceNames": [...], "seeAlso": [...]}]}.',
            ]
        )

    def _apply(self, ctx: PassContext, answer: SkillChangesAnswer, shown: dict[str, Skill], frozen: set[str]) -> None:
        if answer.to_delete and not answer.to_save:
            bump(ctx, "violations")
            log.warning(
                "DreamService: skill consolidation proposed deleting %s without replacements — directive violation,"
                " nothing applied",
                answer.to_delete,
            )
            return
        drafts = self._drafts(ctx, answer, shown, frozen)
        doomed = [n for n in self._keep(ctx, answer.to_delete, set(shown)) if n not in frozen]
        bump(ctx, "frozen", len([n for n in dict.fromkeys(answer.to_delete) if n in frozen]))
        if doomed and not drafts:
            bump(ctx, "violations")  # every replacement was dropped: the deletions would stand alone
            return
        try:
            changes = self.skills.apply_changes(ctx.agent_id, drafts, doomed, source=SOURCE)
        except (ValidationError, NotFound, Conflict) as exc:
            bump(ctx, "refused")
            log.warning("DreamService: skill consolidation refused by the store (%s); nothing applied", exc)
            return
        counts = ctx.report.counts
        counts["saved"] = len(changes.saved)
        counts["merged"] = sum(1 for s in changes.saved if s.skill.metadata.get("merged_from"))
        counts["archived"] = len(changes.archived)
        for done in changes.saved:
            merged_from = done.skill.metadata.get("merged_from")
            record(self._dream_log, ctx, "skill_saved", done.skill.name, merged_from=merged_from)
        for gone in changes.archived:
            record(self._dream_log, ctx, "skill_archived", gone.name, merged_into=gone.metadata.get("merged_into"))

    def _drafts(
        self, ctx: PassContext, answer: SkillChangesAnswer, shown: dict[str, Skill], frozen: set[str]
    ) -> list[SkillDraft]:
        """The answer's saves with invented names dropped: a save may rewrite a shown skill or create a new
        name (an archived one comes back), never rewrite a live skill that was not shown or was cut."""
        known = set(shown)
        saving = {item.name for item in answer.to_save}
        retiring = (set(answer.to_delete) | {n for item in answer.to_save for n in item.source_names}) - saving
        drafts: list[SkillDraft] = []
        for item in answer.to_save:
            if item.name in frozen or any(n in frozen for n in item.source_names):
                bump(ctx, "frozen")
                continue
            stored = self.skills.store.skills.get(ctx.agent_id, item.name) if item.name not in known else None
            if stored is not None and not stored.archived:
                bump(ctx, "unknown_names")  # live but not shown: not the model's to rewrite
                continue
            sources = self._keep(ctx, item.source_names, known)
            see_also = self._keep(ctx, item.see_also, (known | saving) - {item.name})
            see_also = [n for n in see_also if n not in retiring]
            drafts.append(SkillDraft(item.name, item.summary, item.content, tuple(see_also), tuple(sources)))
        return drafts

    @staticmethod
    def _keep(ctx: PassContext, names: list[str], allowed: set[str]) -> list[str]:
        """``names`` that are in ``allowed``, de-duplicated in order; the others dropped and counted."""
        kept = [n for n in dict.fromkeys(names) if n in allowed]
        if len(kept) < len(dict.fromkeys(names)):
            bump(ctx, "unknown_names", len(dict.fromkeys(names)) - len(kept))
        return kept
