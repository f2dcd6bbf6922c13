"""What the three skill passes (gap detection, consolidation, optimisation) share: one LLM call whose malformed
answer is counted rather than raised, how a skill is shown to the model, and the dream-log record.

Invariants:
- ``ask_usable`` (``base.ask_or_none`` with a directive file) returns None for a malformed answer (counted in
  ``report.counts["malformed"]``; the caller applies nothing and stamps nothing, so the next cycle retries) and
  re-raises an endpoint failure (the pass fails, as the memory consolidation's does).
- Names the model gives are checked against what was shown by the caller, never trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from reverie.dream.passes.base import PassContext, ask_or_none, write_dream_log
from reverie.llm.base import Message
from reverie.logs import JsonlFile
from reverie.prompts import read_prompt
from reverie.types import Skill

Answer = TypeVar("Answer", bound=BaseModel)
MAX_SHOWN_CHARS = 6000  # a skill's content shown whole up to this; a longer one is cut and frozen


def ask_usable(ctx: PassContext, directive: str, prompt: str, schema: type[Answer], *, purpose: str) -> Answer | None:
    """One call with ``directive`` (a prompt file, overridable in the home) as the system message, through
    ``base.ask_or_none`` (a malformed answer counted and None, an endpoint failure raised)."""
    messages = [Message.system(read_prompt(directive, ctx.home)), Message.user(prompt)]
    return ask_or_none(ctx, messages, schema, purpose)


def render_skill(skill: Skill, *, notes: Sequence[str] = (), max_chars: int = MAX_SHOWN_CHARS) -> str:
    """A skill as the model sees it: a header line (name, annotations), its summary, see-also and content
    (cut to ``max_chars`` with a marker saying so)."""
    header = " ".join([f"### {skill.name}", *notes])
    content = skill.content
    if len(content) > max_chars:
        content = content[:max_chars] + f"\n[… content cut at {max_chars:,} of {len(skill.content):,} characters]"
    lines = [header, f"Summary: {skill.summary}"]
    if skill.see_also:
        lines.append("See also: " + ", ".join(skill.see_also))
    return "\n".join([*lines, "", content])


def bump(ctx: PassContext, key: str, by: int = 1) -> None:
    """Add ``by`` to the report's count ``key`` (a count that never moved is left out)."""
    if by:
        ctx.report.counts[key] = ctx.report.counts.get(key, 0) + by


def record(dream_log: JsonlFile | None, ctx: PassContext, action: str, name: str, **extra: Any) -> None:
    """One line of ``<home>/logs/dream.jsonl`` (best effort: the store is the record)."""
    line = {"at": ctx.now().isoformat(), "agent": ctx.agent_id, "action": action, "skill": name, **extra}
    write_dream_log(dream_log, line)
