"""The agent-curated auto-dream (seed 004, issue 9 part 6): the agent's own model, given the Orient / Gather /
Consolidate / Prune prompt, tidies its long-term memory through the memory tools, one JSON answer a turn.

Gates, in order (the first closed one skips the pass and says why): ``[dream] auto_dream_enabled`` and the
agent's own ``[agents.<id>] auto_dream`` → the time since this pass last completed for the agent
(``auto_dream_min_hours``, per-agent override) → sessions active since then (``auto_dream_min_sessions``,
per-agent override) → the agent's dream lock (held by the service before any pass runs). A manual trigger
bypasses the time and session gates, never the opt-in or the lock.

The loop: each turn the model answers ONE JSON object ``{"phase", "tool_calls": [{"name", "arguments"}],
"note"}`` (no native function calling: the LLM port has none). Its calls run in order through the engine's
tool registry as the agent (``DreamTools``); their results, each cut to ``result_chars``, are the next user
message. It ends at phase ``done`` (that answer's calls still run), after ``max_turns`` turns, or at the first
turn that would start ``timeout_seconds`` (the engine's clock) after the pass began, whichever comes first.

Invariants:
- The allowlist (``core.auto_dream.DREAM_TOOLS``) is checked for every call when it is executed: a call
  outside it, or ``memory_semantic_consolidate`` for an agent whose settings do not allow self-consolidation,
  gets the synthetic error ``tool X is not available during a dream`` and runs nothing. The registry refuses
  withheld consolidation a second time.
- Every call is a tool call with the registry's guarantees (validated, one transaction per write, "delete"
  archives). A dream's saves are recorded as ``inferred`` and tagged ``dream:auto``.
- A malformed answer gets one corrective retry; a second one fails the pass (the calls already made stand,
  the ledger is not stamped, so the time gate stays open). An endpoint failure fails it the same way.
- ``ctx.checkpoint()`` runs before every turn and every tool call, so an abort stops the dream between two
  whole calls. Tokens and cost go through ``ctx.ask``; the run record's progress is updated every turn.
- The ledger is stamped (driving the time gate) only when the loop ended by ``done``, the turn budget or
  the timeout. Every dream that ran the loop appends one ``dream_consolidation`` event to the dream log.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reverie.core import auto_dream as rules
from reverie.core.text import preview
from reverie.dream.activity import unobserved
from reverie.dream.passes.base import Capability, DreamStopped, PassContext, PassReport, write_dream_log
from reverie.errors import LLMError
from reverie.llm.base import MALFORMED_ANSWER, Message
from reverie.logs import JsonlFile
from reverie.prompts import read_prompt

log = logging.getLogger("reverie.dream")
PASS_NAME = "agent_curation"
PROMPT = "auto-dream.md"
PURPOSE = "dream.agent_curation"
MAX_CALLS_PER_TURN = 10  # calls past this in one answer are refused: a turn stays reviewable
MAX_REFUSED_NAMES = 20  # refused tool names the audit event lists
NOTE_CHARS = 120  # of the model's note, in the run's progress text


# -- what the engine hands the pass -------------------------------------------------------------------------
class ToolDescription(Protocol):
    """One tool as the dream's prompt shows it (``reverie.tools.ToolSpec`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...


class ToolOutcome(Protocol):
    """What one call answered (``reverie.tools.ToolResult`` is one)."""

    @property
    def text(self) -> str: ...

    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def is_error(self) -> bool: ...


class DreamTools(Protocol):
    """The agent tools, as the engine serves them to an agent (the pass never imports the interfaces)."""

    def describe(self, agent_id: str) -> Sequence[ToolDescription]:
        """Every tool ``agent_id`` may call (the pass narrows it to the allowlist)."""
        ...

    def call(self, agent_id: str, name: str, arguments: object) -> ToolOutcome:
        """Run tool ``name`` as ``agent_id``; never raises for what a model sends."""
        ...


@dataclass(frozen=True, slots=True)
class AgentCuration:
    """One agent's own auto-dream switches (``[agents.<id>]``): None thresholds use the global ones."""

    auto_dream: bool = False
    min_hours: float | None = None
    min_sessions: int | None = None
    allow_self_consolidation: bool = False


@dataclass(frozen=True, slots=True)
class CurationConfig:
    enabled: bool = False
    min_hours: float = 24.0
    min_sessions: int = 5
    timeout_seconds: float = 600.0
    max_turns: int = 12
    result_chars: int = 4000
    agents: Mapping[str, AgentCuration] = field(default_factory=dict)

    def agent(self, agent_id: str) -> AgentCuration:
        return self.agents.get(agent_id) or AgentCuration()


# -- the answer contract ------------------------------------------------------------------------------------
class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    arguments: Any = None  # the registry checks it against the tool's schema


class DreamTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    phase: Literal["orient", "gather", "consolidate", "prune", "done"]
    tool_calls: list[ToolCall] = Field(default_factory=list)
    note: str = ""

    @field_validator("phase", mode="before")
    @classmethod
    def _phase(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("note", mode="before")
    @classmethod
    def _note(cls, value: object) -> object:
        return "" if value is None else value


@dataclass(slots=True)
class _Tally:
    turns: int = 0
    tool_calls: int = 0
    refused_calls: int = 0
    tool_errors: int = 0
    memories_saved: int = 0
    memories_archived: int = 0
    malformed: int = 0
    phase: str = ""
    outcome: str = ""
    refused: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "refused_calls": self.refused_calls,
            "tool_errors": self.tool_errors,
            "memories_saved": self.memories_saved,
            "memories_archived": self.memories_archived,
            "malformed": self.malformed,
        }


class AgentCurationPass:
    """The auto-dream as the last dream pass (see the module). ``dream_log`` receives its audit events."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM})

    def __init__(self, config: CurationConfig, tools: DreamTools, *, dream_log: JsonlFile | None = None) -> None:
        self.config = config
        self._tools = tools
        self._dream_log = dream_log

    def run(self, ctx: PassContext) -> PassReport:
        report, tally = ctx.report, _Tally()
        report.counts = tally.counts()
        closed = self._closed_gate(ctx)
        if closed is not None:
            report.status, report.reason = "skipped", closed
            return report
        started = ctx.now()
        try:
            tally.outcome = self._loop(ctx, tally, started)
        except DreamStopped:
            tally.outcome = "stopped"
            raise
        except BaseException:
            tally.outcome = "failed"
            raise
        finally:
            report.counts = tally.counts()
            self._audit(ctx, tally)
        ctx.ledger.stamp(ctx.agent_id, self.name, ctx.now())
        report.reason = {"done": "the model finished", "max_turns": "turn budget used", "timeout": "timed out"}[
            tally.outcome
        ]
        report.summary = (
            f"auto-dream — {tally.turns} turns ({report.reason}), {tally.tool_calls} tool calls "
            f"({tally.refused_calls} refused), saved {tally.memories_saved}, archived {tally.memories_archived}"
        )
        log.info("DreamService: %s (agent %s)", report.summary, ctx.agent_id)
        return report

    # -- gates ---------------------------------------------------------------------------------------------
    def _closed_gate(self, ctx: PassContext) -> str | None:
        agent = self.config.agent(ctx.agent_id)
        closed = rules.opt_in_gate(enabled=self.config.enabled, agent_opted_in=agent.auto_dream, agent_id=ctx.agent_id)
        if closed is not None or ctx.trigger == "manual":
            return closed
        stamp = ctx.ledger.last(ctx.agent_id, self.name)
        last: datetime | None = None if stamp is None else stamp.stamped_at
        min_hours = self.config.min_hours if agent.min_hours is None else agent.min_hours
        closed = rules.time_gate(last, ctx.now(), min_hours)
        if closed is not None:
            return closed
        min_sessions = self.config.min_sessions if agent.min_sessions is None else agent.min_sessions
        if min_sessions <= 0:
            return None
        sessions, _ = ctx.store.dream.activity_since(ctx.agent_id, last)
        return rules.session_gate(sessions, min_sessions)

    # -- the loop ------------------------------------------------------------------------------------------
    def _loop(self, ctx: PassContext, tally: _Tally, started: datetime) -> str:
        """The turns; returns how the loop ended: ``done``, ``max_turns`` or ``timeout``."""
        deadline = started + timedelta(seconds=self.config.timeout_seconds)
        messages = [Message.system(self._system(ctx)), Message.user(self._opening(ctx))]
        for turn in range(1, self.config.max_turns + 1):
            ctx.checkpoint()
            if ctx.now() >= deadline:
                return "timeout"
            answer, text = self._ask(ctx, messages, tally)
            tally.turns, tally.phase = turn, answer.phase
            results = self._execute(ctx, answer.tool_calls, tally)
            ctx.report.counts = tally.counts()
            ctx.progress(
                f"auto-dream turn {turn}/{self.config.max_turns}: {answer.phase}, {tally.tool_calls} tool calls"
                + (f" — {preview(answer.note, NOTE_CHARS)}" if answer.note else "")
            )
            if answer.phase == "done":
                return "done"
            left = self.config.max_turns - turn
            reply = rules.results_message(turn, results, turns_left=left, limit=self.config.result_chars)
            messages += [Message.assistant(text), Message.user(reply)]
        return "max_turns"

    def _ask(self, ctx: PassContext, messages: list[Message], tally: _Tally) -> tuple[DreamTurn, str]:
        """One turn's answer, with one corrective retry for a malformed one (a second one raises)."""
        try:
            answer, completion = ctx.ask(messages, DreamTurn, purpose=PURPOSE)
            return answer, completion.text
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise  # the endpoint failed: the pass fails
            tally.malformed += 1
            log.warning("DreamService: auto-dream answer of %s unusable (%s); asking once more", ctx.agent_id, exc)
            correction = Message.user(
                f"Your last answer could not be used: {exc}\nAnswer again with exactly one JSON object "
                '{"phase": ..., "tool_calls": [...], "note": ...} and nothing else.'
            )
        try:
            answer, completion = ctx.ask([*messages, correction], DreamTurn, purpose=PURPOSE)
        except LLMError as exc:
            if exc.reason in MALFORMED_ANSWER:
                tally.malformed += 1
                raise LLMError(f"auto-dream: two unusable answers in a row: {exc}", reason=exc.reason) from None
            raise
        return answer, completion.text

    def _execute(self, ctx: PassContext, calls: Sequence[ToolCall], tally: _Tally) -> list[rules.CallResult]:
        """Each call in order, checked against the allowlist now (see the module)."""
        allowed_self = self.config.agent(ctx.agent_id).allow_self_consolidation
        results = []
        for position, call in enumerate(calls):
            ctx.checkpoint()
            tally.tool_calls += 1
            if position >= MAX_CALLS_PER_TURN:
                tally.refused_calls += 1
                text = f"Error: not run: at most {MAX_CALLS_PER_TURN} tool calls a turn"
                results.append(rules.CallResult(call.name, text, True))
                continue
            if not rules.permitted(call.name, self_consolidation=allowed_self):
                tally.refused_calls += 1
                if len(tally.refused) < MAX_REFUSED_NAMES:
                    tally.refused.append(rules.shown_name(call.name))
                log.warning("DreamService: auto-dream of %s refused tool %r", ctx.agent_id, rules.shown_name(call.name))
                results.append(rules.CallResult(call.name, rules.refusal(call.name), True))
                continue
            with unobserved():  # the dream's own reads and saves are not a client's activity
                outcome = self._tools.call(ctx.agent_id, call.name, rules.dream_arguments(call.name, call.arguments))
            _count(call.name, outcome, tally)
            results.append(rules.CallResult(call.name, outcome.text, outcome.is_error))
        return results

    # -- prompts -------------------------------------------------------------------------------------------
    def _system(self, ctx: PassContext) -> str:
        allowed_self = self.config.agent(ctx.agent_id).allow_self_consolidation
        tools = [
            (t.name, t.description, t.input_schema)
            for t in self._tools.describe(ctx.agent_id)
            if rules.permitted(t.name, self_consolidation=allowed_self)
        ]
        return f"{read_prompt(PROMPT, ctx.home).rstrip()}\n\n## Tools\n\n{rules.render_tools(tools)}\n"

    def _opening(self, ctx: PassContext) -> str:
        stamp = ctx.ledger.last(ctx.agent_id, self.name)
        last = "never" if stamp is None else stamp.stamped_at.isoformat(timespec="minutes")
        sessions, _ = ctx.store.dream.activity_since(ctx.agent_id, None if stamp is None else stamp.stamped_at)
        return "\n".join(
            [
                "TASK: auto-dream — curate your long-term memory",
                f"Agent: {ctx.agent_id}",
                f"Now: {ctx.now().isoformat(timespec='minutes')}",
                f"Last auto-dream: {last}; sessions active since: {sessions}",
                f"Budget: {self.config.max_turns} turns, at most {MAX_CALLS_PER_TURN} tool calls a turn.",
                "Begin with the orient phase. Answer with exactly one JSON object.",
            ]
        )

    # -- the audit event -----------------------------------------------------------------------------------
    def _audit(self, ctx: PassContext, tally: _Tally) -> None:
        """One ``dream_consolidation`` event per dream that ran the loop (the dream log is a convenience: the
        run record in the store carries the same counts, tokens and cost)."""
        if self._dream_log is None:
            return
        event = {
            "at": ctx.now().isoformat(),
            "agent": ctx.agent_id,
            "action": "dream_consolidation",
            "run_id": ctx.run_id,
            "trigger": ctx.trigger,
            "outcome": tally.outcome,
            "phase": tally.phase,
            **tally.counts(),
            "refused": list(tally.refused),
            "llm_calls": ctx.report.llm_calls,
            "tokens": ctx.report.tokens,
            "cost": ctx.report.cost,
        }
        write_dream_log(self._dream_log, event)  # the run record in the store is the trail


def _count(name: str, outcome: ToolOutcome, tally: _Tally) -> None:
    if outcome.is_error:
        tally.tool_errors += 1
    elif name == rules.SAVE_MEMORY:
        tally.memories_saved += 1
    elif name == rules.DELETE_MEMORY:
        tally.memories_archived += 1
    elif name == rules.SELF_CONSOLIDATE:
        archived = outcome.data.get("archived")
        tally.memories_archived += len(archived) if isinstance(archived, list) else 0
