"""Pass 2 — skill gap detection (seed 001): requests that recur across sessions and no skill covers become
new skills.

The model reads this agent's conversation log (user turns, grouped by session, newest ``max_sessions``
sessions, each cut to ``max_turns_per_session`` turns of ``max_turn_chars``), the skill catalog (names and
summaries) and seed 001's explicit signal: the terms of each session's first user message that recur in 2+
sessions (``core.skill_signals``). It answers ``{"toSave": [{"name", "summary", "content", "sessions"}]}``.

Safeguards (the host decides, deterministically):
- Skipped, with no LLM call, while the log holds fewer than 2 sessions of the agent.
- A skill is created only when it cites at least 2 distinct session ids that were shown ("a skill only when
  a request recurs in 2+ sessions"); otherwise refused (``unrecurring``).
- Gap detection creates, never overwrites: a name the agent already has (live or archived: restoring is the
  user's call) is refused (``existing``), as is a second save of one name in the answer.
- Each skill is applied on its own (``SkillStore.apply_changes``, source ``dream:skill_gap``): one the store's
  validation refuses (a bad name, an empty summary...) is counted (``invalid``) and the others still apply.
- A malformed answer applies nothing (``malformed``). The log is only read, never cleared (the preference pass,
  its last reader, clears it). The same sessions are not sent twice (the change gate over the sessions as
  shown, not the catalog, like a corpus-wide pass: a stamp is written after a usable answer only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.core.consolidation import corpus_fingerprint
from reverie.core.skill_signals import (
    MIN_SESSIONS,
    SessionTurns,
    cited_sessions,
    group_sessions,
    recurring_terms,
    render_recurring,
)
from reverie.core.text import cut_words
from reverie.dream.passes.base import Capability, PassContext, PassReport, conversation_log
from reverie.dream.passes.skill_common import ask_usable, bump, record
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.logs import JsonlFile
from reverie.skills.changes import SkillDraft
from reverie.skills.service import SkillStore

log = logging.getLogger("reverie.dream")

PASS_NAME = "skill_gap"
DIRECTIVE = "skill-gap.md"
SOURCE = "dream:skill_gap"
SESSIONS_HEADING = "## Sessions"
LogReader = Callable[[str], Iterable[tuple[str, Mapping[str, Any]]]]


@dataclass(frozen=True, slots=True)
class SkillGapConfig:
    max_sessions: int = 50  # the newest sessions shown
    max_turns_per_session: int = 10  # user turns shown per session
    max_turn_chars: int = 500  # each turn cut to this
    max_catalog: int = 500  # skills listed in the catalog (name order)


class GapSkill(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = ""
    summary: str = ""
    content: str = ""
    sessions: list[Any] = Field(default_factory=list)


class GapAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_save: list[GapSkill] = Field(default_factory=list, alias="toSave")


class SkillGapPass:
    """Pass 2. ``log(agent_id)`` yields the agent's conversation-log records ``(session_id, record)``."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM, Capability.SKILLS, Capability.CONVERSATION_LOG})

    def __init__(
        self,
        skills: SkillStore,
        log_reader: LogReader,
        config: SkillGapConfig | None = None,
        *,
        dream_log: JsonlFile | None = None,
    ) -> None:
        self.skills = skills
        self._read_log = log_reader
        self.config = config or SkillGapConfig()
        self._dream_log = dream_log

    def run(self, ctx: PassContext) -> PassReport:
        report, cfg = ctx.report, self.config
        sessions = group_sessions(conversation_log(ctx, self._read_log))  # read once per run
        report.counts = {"sessions": len(sessions), "created": 0}
        if len(sessions) < MIN_SESSIONS:
            report.status, report.reason = "skipped", f"{len(sessions)} session(s) in the conversation log (needs 2+)"
            return report
        shown = sessions[: cfg.max_sessions]
        catalog = self.skills.store.skills.list(ctx.agent_id, include_archived=True, limit=100_000)
        live = [s for s in catalog if not s.archived][: cfg.max_catalog]
        prompt = self._prompt(shown, len(sessions), [(s.name, s.summary) for s in live])
        # The log as shown, not the catalog: the skills this pass creates must not re-open it.
        fingerprint = corpus_fingerprint([prompt.split(SESSIONS_HEADING, 1)[1]])
        gate = ctx.ledger.gate(ctx.agent_id, PASS_NAME, fingerprint, ctx.now())
        if not gate.run:
            report.status, report.reason = "skipped", f"change gate: {gate.reason}"
            return report
        report.counts["sessions_shown"] = len(shown)
        answer = ask_usable(ctx, DIRECTIVE, prompt, GapAnswer, purpose="dream.skill_gap")
        if answer is None:
            report.summary = "skill gap detection — answer unusable, nothing created"
            return report
        taken = {s.name for s in catalog}
        for item in answer.to_save:
            self._create(ctx, item, [s.session_id for s in shown], taken)
            taken.add(item.name.strip())
        ctx.ledger.stamp(ctx.agent_id, PASS_NAME, ctx.now(), fingerprint)
        counts = report.counts
        report.summary = (
            f"skill gap detection — {len(shown)} session(s) read, created {counts['created']}, "
            f"refused {sum(counts.get(k, 0) for k in ('unrecurring', 'existing', 'invalid'))}"
        )
        log.info("DreamService: %s", report.summary)
        return report

    def _prompt(self, shown: list[SessionTurns], total: int, catalog: list[tuple[str, str]]) -> str:
        cfg = self.config
        blocks = []
        for session in shown:
            turns = session.user_turns[: cfg.max_turns_per_session]
            lines = [f"### session {session.session_id} (started {session.first_at[:16]})"]
            lines += [f"- user: {cut_words(' '.join(t.split()), cfg.max_turn_chars)}" for t in turns]
            if len(session.user_turns) > len(turns):
                lines.append(f"- … {len(session.user_turns) - len(turns)} more user turn(s) not shown")
            blocks.append("\n".join(lines))
        return "\n".join(
            [
                "TASK: skill gap detection",
                "",
                "## Existing skills",
                "\n".join(f"- {name}: {summary}" for name, summary in catalog) or "(none)",
                "",
                render_recurring(recurring_terms(s.first_message for s in shown)),
                "",
                f"{SESSIONS_HEADING} (the newest {len(shown)} of {total}; user turns only)",
                "\n\n".join(blocks),
                "",
                'Answer with one JSON object: {"toSave": [{"name": "...", "summary": "...", "content": "...", '
                '"sessions": ["<session id>", ...]}]}.',
            ]
        )

    def _create(self, ctx: PassContext, item: GapSkill, shown: list[str], taken: set[str]) -> None:
        name = item.name.strip()
        cited = cited_sessions(item.sessions, shown)
        if len(cited) < MIN_SESSIONS:
            bump(ctx, "unrecurring")
            log.info("DreamService: skill gap %r refused — a skill only when a request recurs in 2+ sessions", name)
            return
        if name in taken:
            bump(ctx, "existing")
            log.info("DreamService: skill gap %r refused — gap detection creates, never overwrites", name)
            return
        draft = SkillDraft(name=name, summary=item.summary.strip(), content=item.content.strip())
        try:
            self.skills.apply_changes(ctx.agent_id, [draft], source=SOURCE)
        except (ValidationError, NotFound, Conflict) as exc:
            bump(ctx, "invalid")
            log.info("DreamService: skill gap %r refused — %s", name, exc)
            return
        bump(ctx, "created")
        record(self._dream_log, ctx, "skill_created", name, sessions=cited)
