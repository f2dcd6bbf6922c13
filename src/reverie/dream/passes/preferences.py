"""Preference inference (seed 001, Pass 5; seed 000, "Pass 2 — Preference inference"): durable user
preferences the conversation log and recent feedback reveal.

Invariants:
- Input: this agent's whole conversation log, grouped by session (the newest turns when it is too long), and
  the last 7 days of feedback signals. Answer: ``{"toDelete": [...], "toSave": [{"content", "category",
  "tags", "sentiment", "occurrences"}]}``; ``toDelete`` is ignored here (counted).
- The host applies the seed's thresholds (``core.preferences``): very irritated needs 1 occurrence, mildly
  frustrated 2, minor or unknown 3; below, the preference is refused (counted).
- A preference is saved agent-wide through save-time dedup with category ``user-preferences/inferred`` (or a
  valid category below it), tag ``inferred``, source ``inferred``; ``requires_user_permission = "true"`` when
  it touches security, credentials or financial decisions (the keyword check, or the model's flag).
- The agent's conversation log is cleared after the pass whatever happened (a usable answer, invalid JSON,
  an endpoint failure, an abort): only the records this pass read, only this agent's, so another agent's turns
  in the same session file and a turn logged meanwhile survive. This is the last pass to read the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from reverie.conversation.service import ConversationMemory
from reverie.core import preferences, transcripts
from reverie.dream.passes.base import Capability, PassContext, PassReport, ask_or_none, conversation_log
from reverie.dream.passes.mining import (
    DREAM_PASS,
    MAX_LOG_CHARS,
    MAX_TURN_CHARS,
    Outcomes,
    clean_tags,
    save_learned,
)
from reverie.errors import ReverieError
from reverie.llm.base import Message
from reverie.memory.longterm import LongTermMemory
from reverie.prompts import read_prompt
from reverie.skills.feedback import FeedbackStore
from reverie.types import Feedback

log = logging.getLogger("reverie.dream")

PASS_NAME = "preference_inference"
DIRECTIVE = "pref-dream.md"
REQUIRES_PERMISSION = "requires_user_permission"
FEEDBACK_DAYS = 7
FEEDBACK_LINES = 50


class InferredPreference(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    content: str = ""
    category: str | None = None
    tags: list[str] | None = None
    sentiment: Any = None
    occurrences: Any = None
    requires_permission: Any = Field(
        default=None, validation_alias=AliasChoices("requiresUserPermission", "requires_user_permission")
    )


class PreferenceAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_delete: list[Any] = Field(default_factory=list, alias="toDelete")
    to_save: list[InferredPreference] = Field(default_factory=list, alias="toSave")


def feedback_line(signal: Feedback) -> str:
    """One feedback signal as the dream's prompts show it."""
    parts = [f"{signal.created_at.date().isoformat()} {signal.kind}"]
    if signal.rating:
        parts.append(f"rating={signal.rating}")
    parts.append(f"session={signal.session_id}")
    if signal.entry_ids:
        parts.append("entries=" + ",".join(signal.entry_ids))
    if signal.skill_names:
        parts.append("skills=" + ",".join(signal.skill_names))
    if signal.comment:
        parts.append("note: " + " ".join(signal.comment.split())[:500])
    return " ".join(parts)


def feedback_lines(store: FeedbackStore, agent_id: str, since: datetime, limit: int = FEEDBACK_LINES) -> list[str]:
    """The agent's feedback signals at or after ``since``, newest first, as prompt lines (at most ``limit``)."""
    return [feedback_line(s) for s in store.list(agent_id, since=since, limit=limit)]


def corrections_since(store: FeedbackStore, agent_id: str, since: datetime | None) -> int:
    """Whether (0 or 1) the agent has a correction signal after ``since`` (ever, when None)."""
    newest = store.list(agent_id, since=since, kinds=["correction"], limit=1)  # newest first
    return int(bool(newest) and (since is None or newest[0].created_at > since))


def _flagged(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"true", "yes", "1"}
    return value is True


class PreferenceInferencePass:
    """Infers preferences from the conversation log, then clears the agent's log (module docstring)."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.CONVERSATION_LOG})

    def __init__(self, memory: LongTermMemory, conversation: ConversationMemory, feedback: FeedbackStore) -> None:
        self._memory = memory
        self._conversation = conversation
        self._feedback = feedback

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        report.counts = {"turns": 0, "sessions": 0, "malformed": 0, "refused": 0, "deletions_ignored": 0}
        # The run's one read of the log: what the other passes learnt from, so the clear below removes those.
        read = transcripts.turns(conversation_log(ctx, lambda agent: self._conversation.log_records(agent_id=agent)))
        if not read:
            report.status, report.reason = "skipped", "the conversation log holds nothing of this agent"
            return report
        outcomes = Outcomes()
        try:
            self._infer(ctx, read, outcomes)
        finally:
            self._clear(ctx, read)
        report.counts.update(outcomes.counts())
        report.summary = (
            f"preference inference — {report.counts['turns']} turns of {report.counts['sessions']} sessions, "
            f"saved {outcomes.created + outcomes.reinforced + outcomes.extended}, refused {report.counts['refused']}, "
            f"malformed {report.counts['malformed']}, log cleared ({report.counts.get('log_cleared', 0)} records)"
        )
        log.info("DreamService: %s", report.summary)
        return report

    def _infer(self, ctx: PassContext, read: Sequence[transcripts.Turn], outcomes: Outcomes) -> None:
        shown = transcripts.fit(
            transcripts.newer_than(read, None), MAX_LOG_CHARS, max_turn_chars=MAX_TURN_CHARS, newest=True
        )
        ctx.report.counts.update(turns=len(shown), sessions=len(transcripts.by_session(shown)))
        signals = feedback_lines(self._feedback, ctx.agent_id, ctx.now() - timedelta(days=FEEDBACK_DAYS))
        prompt = "\n".join(
            [
                "TASK: preference inference",
                f"Now: {ctx.now().date().isoformat()}",
                "",
                transcripts.render(shown, max_turn_chars=MAX_TURN_CHARS),
                "",
                f"## Feedback signals (last {FEEDBACK_DAYS} days)",
                "\n".join(f"- {line}" for line in signals) or "(none)",
                "",
                'Answer with one JSON object: {"toDelete": [], "toSave": [{"content", "category", "tags", '
                '"sentiment": "very_irritated|mildly_frustrated|minor", "occurrences": <n>}]}.',
            ]
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        answer = ask_or_none(ctx, messages, PreferenceAnswer, "dream.preference_inference")
        if answer is None:
            return
        ctx.report.counts["deletions_ignored"] = len(answer.to_delete)
        for item in answer.to_save:
            self._save(ctx, item, outcomes)

    def _save(self, ctx: PassContext, item: InferredPreference, outcomes: Outcomes) -> None:
        if item.content.strip() and not preferences.meets_threshold(item.sentiment, item.occurrences):
            ctx.report.counts["refused"] += 1
            log.info(
                "DreamService: preference refused below its threshold (%s, %r occurrences): %s",
                preferences.sentiment(item.sentiment),
                item.occurrences,
                item.content,
            )
            return
        category = preferences.inferred_category(item.category)
        tags = clean_tags(item.tags, preferences.INFERRED_TAG)
        metadata: dict[str, Any] = {
            DREAM_PASS: PASS_NAME,
            "sentiment": preferences.sentiment(item.sentiment),
            "occurrences": preferences.occurrences(item.occurrences),
        }
        if _flagged(item.requires_permission) or preferences.touches_sensitive(item.content, category, *tags):
            metadata[REQUIRES_PERMISSION] = "true"
        save_learned(
            ctx, self._memory, item.content, category=category, tags=tags, metadata=metadata, outcomes=outcomes
        )

    def _clear(self, ctx: PassContext, read: Sequence[transcripts.Turn]) -> None:
        try:
            cleared = self._conversation.clear_agent_log(ctx.agent_id, keys={t.key for t in read})
        except ReverieError as exc:  # must not mask what the pass raised; retried with the next run
            log.warning("DreamService: could not clear the conversation log of %s: %s", ctx.agent_id, exc)
            return
        ctx.report.counts["log_cleared"] = cleared
