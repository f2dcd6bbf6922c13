"""Memory mining (issue 10, part 4): durable facts the conversation log holds, minted into long-term memory.

Invariants:
- The log is read through a window: only turns newer than this pass's last stamp. The stamp is the time of
  the newest turn the model was shown, written only after a usable answer, so a log that is not cleared
  (preference inference off) is never mined twice (re-mining would inflate reinforcement), and turns that
  did not fit in one call or met an unusable answer are read again next cycle.
- Every fact is saved agent-wide through save-time dedup (``LongTermMemory.save_internal``): a fact memory
  already holds reinforces or extends it instead of duplicating it. Provenance: source ``inferred``,
  ``metadata.dreamPass`` and ``metadata.sessionIds`` (the sessions it was mined from; a reinforced entry
  gains the session id too).
- A ``sessionId`` that was not shown is ignored and counted; so is a blank or invalid save. A malformed
  answer applies nothing (counted); an endpoint failure fails the pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.conversation.service import ConversationMemory
from reverie.core import transcripts, validate
from reverie.core.transcripts import Turn
from reverie.dream.passes.base import Capability, PassContext, PassReport, ask_or_none, conversation_log
from reverie.errors import ValidationError
from reverie.llm.base import Message
from reverie.memory.longterm import LongTermMemory
from reverie.prompts import read_prompt
from reverie.types import Change, MemoryEntry, SaveResult, Scope

log = logging.getLogger("reverie.dream")

PASS_NAME = "memory_mining"
DIRECTIVE = "mine-dream.md"
DREAM_PASS = "dreamPass"  # metadata: the pass that minted the entry
SESSION_IDS = "sessionIds"  # metadata: the sessions it came from
MAX_LOG_CHARS = 40_000  # transcript shown in one call; the rest waits for the next cycle
MAX_TURN_CHARS = 2_000


@dataclass(slots=True)
class Outcomes:
    """What the saves of a learning pass did."""

    created: int = 0
    reinforced: int = 0
    extended: int = 0
    blank: int = 0
    invalid: int = 0
    saved_ids: list[str] = field(default_factory=list)

    def add(self, result: SaveResult) -> None:
        if result.outcome == "reinforced":
            self.reinforced += 1
        elif result.outcome == "extended":
            self.extended += 1
        else:
            self.created += 1
        self.saved_ids.append(result.entry.id)

    def counts(self) -> dict[str, int]:
        return {
            "created": self.created,
            "reinforced": self.reinforced,
            "extended": self.extended,
            "blank": self.blank,
            "invalid": self.invalid,
        }


class MinedFact(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    content: str = ""
    category: str | None = None
    tags: list[str] | None = None
    session_id: str | None = Field(default=None, alias="sessionId")


class MiningAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_save: list[MinedFact] = Field(default_factory=list, alias="toSave")


# -- helpers the learning passes share --------------------------------------------------------------------
def log_window(ctx: PassContext, conversation: ConversationMemory, pass_name: str) -> list[Turn]:
    """This agent's turns newer than the pass's last stamp, oldest first (the log read once per run)."""
    stamp = ctx.ledger.last(ctx.agent_id, pass_name)
    records = transcripts.turns(conversation_log(ctx, lambda agent: conversation.log_records(agent_id=agent)))
    return transcripts.newer_than(records, stamp.stamped_at if stamp is not None else None)


def stamp_window(ctx: PassContext, pass_name: str, shown: list[Turn]) -> None:
    """Move the window past the turns shown (their newest time; now when none had one)."""
    ctx.ledger.stamp(ctx.agent_id, pass_name, transcripts.newest(shown) or ctx.now())


def clean_category(raw: str | None, default: str) -> str:
    """The model's category when valid, else ``default``."""
    if raw is None:
        return default
    try:
        return validate.category(raw.strip().lower(), default=default) or default
    except ValidationError:
        return default


def clean_tags(raw: list[str] | None, *extra: str) -> tuple[str, ...]:
    try:
        tags = validate.tags(raw)
    except ValidationError:
        tags = ()
    return tuple(dict.fromkeys([*tags, *extra]))


def save_learned(
    ctx: PassContext,
    memory: LongTermMemory,
    content: str,
    *,
    category: str,
    tags: tuple[str, ...],
    metadata: dict[str, Any],
    outcomes: Outcomes,
    tier: str | None = None,
) -> MemoryEntry | None:
    """Save one learned fact agent-wide through save-time dedup, in one transaction with the note of its
    sessions on the entry it landed in. None (counted) when the content is blank or refused."""
    text = content.strip()
    if not text:
        outcomes.blank += 1
        return None
    sessions = [s for s in metadata.get(SESSION_IDS, []) if isinstance(s, str)]
    try:
        with ctx.store.transaction():
            result = memory.save_internal(
                text,
                scope=Scope(agent_id=ctx.agent_id),
                category=category,
                tags=tags,
                source="inferred",
                metadata=metadata,
                tier=tier,
            )
            entry = note_sessions(ctx, result.entry, sessions) if result.outcome != "created" else result.entry
    except ValidationError as exc:
        outcomes.invalid += 1
        log.info("DreamService: %s refused a save (%s)", ctx.report.name, exc)
        return None
    outcomes.add(result)
    return entry


def note_sessions(ctx: PassContext, entry: MemoryEntry, sessions: list[str]) -> MemoryEntry:
    """``entry`` with ``sessions`` added to its ``sessionIds`` (a housekeeping write: no new version)."""
    current = entry.metadata.get(SESSION_IDS)
    known = [s for s in current if isinstance(s, str)] if isinstance(current, list) else []
    missing = [s for s in sessions if s not in known]
    if not missing:
        return entry
    updated = replace(entry, metadata={**entry.metadata, SESSION_IDS: known + missing})
    ctx.store.facts.write(updated, change=Change.HOUSEKEEPING, at=ctx.now())
    return updated


# -- the pass ---------------------------------------------------------------------------------------------
class MemoryMiningPass:
    """Mines durable facts from the agent's conversation log (see the module docstring)."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.CONVERSATION_LOG})

    def __init__(self, memory: LongTermMemory, conversation: ConversationMemory) -> None:
        self._memory = memory
        self._conversation = conversation

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        report.counts = {"turns": 0, "sessions": 0, "malformed": 0, "ignored_sessions": 0}
        window = log_window(ctx, self._conversation, PASS_NAME)
        if not window:
            report.status, report.reason = "skipped", "no conversation log records since the last mining"
            return report
        shown = transcripts.fit(window, MAX_LOG_CHARS, max_turn_chars=MAX_TURN_CHARS)
        sessions = transcripts.by_session(shown)
        report.counts.update(turns=len(shown), sessions=len(sessions))
        prompt = "\n".join(
            [
                "TASK: memory mining",
                f"Now: {ctx.now().date().isoformat()}",
                "",
                transcripts.render(shown, max_turn_chars=MAX_TURN_CHARS),
                "",
                'Answer with one JSON object: {"toSave": [{"content", "category", "tags", "sessionId"}]}.',
            ]
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        answer = ask_or_none(ctx, messages, MiningAnswer, "dream.memory_mining")
        outcomes = Outcomes()
        if answer is not None:
            for item in answer.to_save:
                if item.session_id not in sessions:
                    report.counts["ignored_sessions"] += 1
                    continue
                metadata = {DREAM_PASS: PASS_NAME, SESSION_IDS: [item.session_id]}
                category = clean_category(item.category, self._memory.config.default_category)
                tags = clean_tags(item.tags)
                save_learned(
                    ctx, self._memory, item.content, category=category, tags=tags, metadata=metadata, outcomes=outcomes
                )
            stamp_window(ctx, PASS_NAME, shown)
        report.counts.update(outcomes.counts())
        report.summary = (
            f"memory mining — {len(shown)} turns of {len(sessions)} sessions, created {outcomes.created}, "
            f"reinforced {outcomes.reinforced}, extended {outcomes.extended}, "
            f"ignored {report.counts['ignored_sessions']}, malformed {report.counts['malformed']}"
        )
        log.info("DreamService: %s", report.summary)
        return report
