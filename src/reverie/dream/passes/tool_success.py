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

import re
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from reverie.core.execution_patterns import WINDOW_DAYS, ToolSummary, summarise_tools
from reverie.dream.passes.base import Capability, PassContext, PassReport, ask_or_none
from reverie.dream.passes.mining import Outcomes, clean_tags, save_learned
from reverie.llm.base import Message
from reverie.memory.longterm import LongTermMemory
from reverie.prompts import read_prompt
from reverie.skills.activity_logs import ToolCallLog

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
    ignored_tools: int = 0
    overlong: int = 0  # lessons over MAX_LESSON_CHARS: counted as blank
    malformed: int = 0
    saves: Outcomes = field(default_factory=Outcomes)  # what the saves did (``mining.save_learned``)

    def counts(self) -> dict[str, int]:
        saves = self.saves
        return {
            "calls": self.calls,
            "tools_shown": self.tools_shown,
            "created": saves.created,
            "reinforced": saves.reinforced,
            "extended": saves.extended,
            "ignored_tools": self.ignored_tools,
            "blank": saves.blank + self.overlong,
            "refused": saves.invalid,
            "malformed": self.malformed,
        }


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
            f"tool-success learning — {tally.calls} calls, {tally.tools_shown} tools shown, saved "
            f"{tally.saves.created}, reinforced {tally.saves.reinforced}, extended {tally.saves.extended}, "
            f"{tally.ignored_tools} unknown tools ignored"
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
        answer = ask_or_none(ctx, messages, ToolSuccessAnswer, "dream.tool_success")
        if answer is None:
            tally.malformed += 1  # the report's counts are rebuilt from the tally
            return
        shown = {s.tool: s for s in summaries}
        for lesson in answer.to_save:
            summary = shown.get(lesson.tool)
            if summary is None:
                tally.ignored_tools += 1
            elif len(lesson.content.strip()) > MAX_LESSON_CHARS:
                tally.overlong += 1
            else:
                self._save(ctx, lesson, summary, tally)

    def _save(self, ctx: PassContext, lesson: Lesson, summary: ToolSummary, tally: _Tally) -> None:
        metadata = {
            "calls": summary.calls,
            "success_rate": round(summary.success_rate, 3),
            "window_days": self.window_days,
            "pass": PASS_NAME,
        }
        save_learned(
            ctx, self.memory, lesson.content, category=tool_category(summary.tool),
            tags=clean_tags(lesson.tags, CATEGORY_ROOT), metadata=metadata, outcomes=tally.saves,
        )  # fmt: skip


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
