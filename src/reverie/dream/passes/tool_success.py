"""Tool-success learning: what worked, from the tool-call log. The host groups the last ``window_days`` (14) of
the agent's tool calls by tool (``core.execution_patterns.summarise_tools``); the model writes facts on how to
call a tool successfully; each is saved agent-wide through save-time dedup, so a lesson learnt again
reinforces the entry instead of duplicating it.

Invariants:
- Only tools with >= 3 calls in the window, at least one newer than the pass's last stamp, are shown; with none,
  no LLM call. Argument *shapes* (keys and types) are shown, never argument values.
- A saved fact: category ``tool-usage/<tool>``, source ``inferred``, metadata {calls, success_rate, window_days,
  pass}. A fact for a tool that was not shown is ignored and counted; so is a blank one.
- A malformed answer saves nothing, is counted and leaves the stamp alone (retried next cycle); an endpoint
  failure fails the pass.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from reverie.core import validate
from reverie.core.execution_patterns import WINDOW_DAYS, ToolSummary, summarise_tools
from reverie.dream.passes.base import Capability, PassContext, PassReport
from reverie.errors import LLMError, ValidationError
from reverie.llm.base import MALFORMED_ANSWER, Message
from reverie.memory.longterm import LongTermMemory
from reverie.prompts import read_prompt
from reverie.skills.activity_logs import ToolCallLog
from reverie.types import Scope

log = logging.getLogger("reverie.dream")

DIRECTIVE = "tool-success-dream.md"
PASS_NAME = "tool_success"
CATEGORY_ROOT = "tool-usage"
MAX_LESSON_CHARS = 2000
_NOT_CATEGORY = re.compile(r"[^a-z0-9_-]+")


class Lesson(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = ""
    tool: str = ""
    tags: list[str] | None = None


class ToolSuccessAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_save: list[Lesson] = Field(default_factory=list, alias="toSave")


@dataclass(slots=True)
class _Tally:
    calls: int = 0
    tools_shown: int = 0
    created: int = 0
    reinforced: int = 0
    extended: int = 0
    ignored_tools: int = 0
    blank: int = 0
    refused: int = 0
    malformed: int = 0

    def counts(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def tool_category(tool: str) -> str:
    """``tool-usage/<tool>`` with the tool's name made a category segment (lower case, ``-`` for the rest)."""
    segment = _NOT_CATEGORY.sub("-", tool.casefold()).strip("-")[:100] or "tool"
    return f"{CATEGORY_ROOT}/{segment}"


@dataclass(slots=True)
class ToolSuccessPass:
    """Learns how to call tools from the agent's tool-call log (see the module)."""

    tool_calls: ToolCallLog
    memory: LongTermMemory
    window_days: float = WINDOW_DAYS
    name: str = PASS_NAME
    needs: frozenset[Capability] = field(default_factory=lambda: frozenset({Capability.LLM, Capability.TOOL_CALL_LOG}))

    def run(self, ctx: PassContext) -> PassReport:
        report, now, agent = ctx.report, ctx.now(), ctx.agent_id
        tally = _Tally()
        report.counts = tally.counts()
        last = ctx.ledger.last(agent, PASS_NAME)
        records = self.tool_calls.window(agent, now - timedelta(days=self.window_days))
        tally.calls = len(records)
        summaries = summarise_tools((r.call() for r in records), since=last.stamped_at if last else None)
        tally.tools_shown = len(summaries)
        if not summaries:
            report.status = "skipped"
            report.reason = (
                f"no tool calls in the last {self.window_days:g} days"
                if not records
                else "no tool with 3 or more calls and a call since the last run"
            )
            report.counts = tally.counts()
            return report
        self._learn(ctx, summaries, tally)
        if not tally.malformed:
            # The newest record read, not now: a call logged at the same instant, after the read, stays new.
            ctx.ledger.stamp(agent, PASS_NAME, max(r.at for r in records))
        report.counts = tally.counts()
        report.summary = (
            f"tool-success learning — {tally.calls} calls, {tally.tools_shown} tools shown, saved {tally.created}, "
            f"reinforced {tally.reinforced}, extended {tally.extended}, {tally.ignored_tools} unknown tools ignored"
        )
        return report

    def _learn(self, ctx: PassContext, summaries: list[ToolSummary], tally: _Tally) -> None:
        prompt = "\n".join(
            [
                "TASK: tool success learning",
                f"Now: {ctx.now().date().isoformat()}, window: the last {self.window_days:g} days",
                "",
                *(_render(s) for s in summaries),
                'Answer with one JSON object: {"toSave": [{"content": "...", "tool": "...", "tags": [...]}]}.',
            ]
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        try:
            answer, _ = ctx.ask(messages, ToolSuccessAnswer, purpose="dream.tool_success")
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise
            tally.malformed += 1
            log.warning("DreamService: tool-success answer unusable (%s); retried next cycle", exc)
            return
        shown = {s.tool: s for s in summaries}
        for lesson in answer.to_save:
            summary = shown.get(lesson.tool)
            content = lesson.content.strip()
            if summary is None:
                tally.ignored_tools += 1
            elif not content or len(content) > MAX_LESSON_CHARS:
                tally.blank += 1
            else:
                self._save(ctx, lesson, content, summary, tally)

    def _save(self, ctx: PassContext, lesson: Lesson, content: str, summary: ToolSummary, tally: _Tally) -> None:
        try:
            tags = validate.tags(lesson.tags or [])
        except ValidationError:
            tags = ()
        metadata = {
            "calls": summary.calls,
            "success_rate": round(summary.success_rate, 3),
            "window_days": self.window_days,
            "pass": PASS_NAME,
        }
        try:
            saved = self.memory.save_internal(
                content,
                scope=Scope(agent_id=ctx.agent_id),
                category=tool_category(summary.tool),
                tags=tuple(dict.fromkeys([*tags, CATEGORY_ROOT])),
                source="inferred",
                metadata=metadata,
            )
        except ValidationError as exc:
            log.warning("DreamService: tool-success lesson for %s refused: %s", summary.tool, exc)
            tally.refused += 1
            return
        if saved.outcome == "reinforced":
            tally.reinforced += 1
        elif saved.outcome == "extended":
            tally.extended += 1
        else:
            tally.created += 1


def _render(summary: ToolSummary) -> str:
    lines = [
        f"## Tool: {summary.tool}",
        f"calls: {summary.calls} ({summary.new_calls} new), succeeded: {summary.successes} "
        f"({summary.success_rate:.0%})",
        "successful argument shapes: " + ("; ".join(summary.ok_shapes) or "(none)"),
        "failed calls:",
        *(f"- {shape}: {error[:300] or '(no error text)'}" for shape, error in summary.failures),
    ]
    if not summary.failures:
        lines.append("- (none)")
    return "\n".join(lines) + "\n"
