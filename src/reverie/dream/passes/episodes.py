"""Episode extraction (issue 10, part 4): one episodic entry per conversation session, saying what happened.

Invariants:
- At most one episode per session, host-enforced: a session named in a live episode's ``metadata.sessionIds``
  is not extracted again, and a second episode for one session in an answer is ignored (counted).
- The model sees the agent's recent episodes (id and text). An episode it says a new session ``revisits`` (an
  id it was shown) is reinforced through the memory service's reinforcement path (``last_seen_at`` = now,
  ``reinforcement_count`` + 1, the session id added) and no entry is created; an id it was not shown is
  counted and the episode is saved as a new one.
- New episodes are saved agent-wide, tier episodic, source ``inferred``, through save-time dedup.
- The log is read through the same window as memory mining (turns newer than this pass's stamp). A
  ``sessionId`` that was not shown is ignored and counted; a malformed answer applies nothing (counted).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from reverie.conversation.service import ConversationMemory
from reverie.core import transcripts
from reverie.dream.passes.base import Capability, PassContext, PassReport, ask_or_none
from reverie.dream.passes.mining import (
    DREAM_PASS,
    MAX_LOG_CHARS,
    MAX_TURN_CHARS,
    SESSION_IDS,
    Outcomes,
    clean_tags,
    log_window,
    save_learned,
    stamp_window,
)
from reverie.llm.base import Message
from reverie.memory.dedup import reinforced
from reverie.memory.longterm import LongTermMemory
from reverie.prompts import read_prompt
from reverie.types import Change, MemoryEntry, Scope, Tier

log = logging.getLogger("reverie.dream")

PASS_NAME = "episode_extraction"
DIRECTIVE = "episode-dream.md"
CATEGORY = "episodes"
EPISODES_SHOWN = 20


class Episode(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    session_id: str | None = Field(default=None, alias="sessionId")
    content: str = ""
    revisits: str | None = None


class EpisodeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    episodes: list[Episode] = Field(default_factory=list)


def _sessions_of(entry: MemoryEntry) -> list[str]:
    value = entry.metadata.get(SESSION_IDS)
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


class EpisodeExtractionPass:
    """One episodic entry per conversation session (see the module docstring)."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.CONVERSATION_LOG})

    def __init__(self, memory: LongTermMemory, conversation: ConversationMemory) -> None:
        self._memory = memory
        self._conversation = conversation

    def _episodes(self, ctx: PassContext) -> list[MemoryEntry]:
        """The agent's live episodes (agent-wide scope), most recently seen first."""
        scope = Scope(agent_id=ctx.agent_id)
        found = [
            e
            for e in ctx.store.facts.iter_all(ctx.agent_id)
            if not e.archived and e.scope == scope and e.metadata.get(DREAM_PASS) == PASS_NAME
        ]
        return sorted(found, key=lambda e: (e.last_seen_at, e.id), reverse=True)

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        report.counts = {"sessions": 0, "malformed": 0, "ignored_sessions": 0, "duplicates": 0}
        report.counts.update(revisits=0, unknown_revisits=0)
        window = log_window(ctx, self._conversation, PASS_NAME)
        if not window:
            report.status, report.reason = "skipped", "no conversation log records since the last extraction"
            return report
        episodes = self._episodes(ctx)
        covered = {s for e in episodes for s in _sessions_of(e)}
        fresh = [t for t in window if t.session_id not in covered]
        if not fresh:
            stamp_window(ctx, PASS_NAME, window)  # every session already has its episode: move past them
            report.status, report.reason = "skipped", "every session in the log already has an episode"
            return report
        shown = transcripts.fit(fresh, MAX_LOG_CHARS, max_turn_chars=MAX_TURN_CHARS)
        sessions = set(transcripts.by_session(shown))
        recent = episodes[:EPISODES_SHOWN]
        report.counts["sessions"] = len(sessions)
        answer = ask_or_none(ctx, self._messages(ctx, shown, recent), EpisodeAnswer, "dream.episode_extraction")
        outcomes = Outcomes()
        if answer is not None:
            by_id = {e.id: e for e in recent}
            done: set[str] = set()
            for item in answer.episodes:
                if item.session_id not in sessions:
                    report.counts["ignored_sessions"] += 1
                elif item.session_id in done:
                    report.counts["duplicates"] += 1
                else:
                    done.add(item.session_id)
                    self._apply(ctx, item, item.session_id, by_id, outcomes)
            stamp_window(ctx, PASS_NAME, shown)
        report.counts.update(outcomes.counts())
        report.summary = (
            f"episode extraction — {len(sessions)} sessions, new {outcomes.created}, "
            f"revisits {report.counts['revisits']}, ignored {report.counts['ignored_sessions']}, "
            f"malformed {report.counts['malformed']}"
        )
        log.info("DreamService: %s", report.summary)
        return report

    @staticmethod
    def _messages(ctx: PassContext, shown: list[transcripts.Turn], recent: list[MemoryEntry]) -> list[Message]:
        listed = [f"[{e.id}] last={e.last_seen_at.date().isoformat()} {' '.join(e.content.split())}" for e in recent]
        prompt = "\n".join(
            [
                "TASK: episode extraction",
                f"Now: {ctx.now().date().isoformat()}",
                "",
                f"## Recent episodes ({len(recent)})",
                "\n".join(listed) or "(none)",
                "",
                transcripts.render(shown, max_turn_chars=MAX_TURN_CHARS),
                "",
                'Answer with one JSON object: {"episodes": [{"sessionId", "content", "revisits": "<id>" or null}]}.',
            ]
        )
        return [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]

    def _apply(
        self, ctx: PassContext, item: Episode, session_id: str, by_id: dict[str, MemoryEntry], outcomes: Outcomes
    ) -> None:
        revisited = by_id.get(item.revisits) if item.revisits else None
        if revisited is not None:
            self._reinforce(ctx, revisited, session_id)
            return
        if item.revisits:
            ctx.report.counts["unknown_revisits"] += 1  # an id it was not shown: a new episode after all
        metadata = {DREAM_PASS: PASS_NAME, SESSION_IDS: [session_id]}
        save_learned(
            ctx,
            self._memory,
            item.content,
            category=CATEGORY,
            tags=clean_tags(None, "episode"),
            metadata=metadata,
            outcomes=outcomes,
            tier=Tier.EPISODIC.value,
        )

    @staticmethod
    def _reinforce(ctx: PassContext, episode: MemoryEntry, session_id: str) -> None:
        """The episode seen again: the dedup's reinforcement (counters and last seen move, the text does not),
        with the revisiting session noted, in one transaction."""
        now = ctx.now()
        with ctx.store.transaction():
            current = ctx.store.facts.get(episode.id, episode.scope)
            if current is None or current.archived:
                return
            again = replace(current, reinforcement_count=1, metadata={"source": "inferred"})
            updated = reinforced(current, again, now)
            sessions = _sessions_of(updated)
            if session_id not in sessions:
                updated = replace(updated, metadata={**updated.metadata, SESSION_IDS: [*sessions, session_id]})
            ctx.store.facts.write(updated, change=Change.REINFORCED, at=now)
        ctx.report.counts["revisits"] += 1
