"""The skill and feedback tools (seed 001's skill store, seen from the agent): search_skills, get_skill,
save_skill and record_feedback, over ``rv.skills`` and ``rv.feedback`` in the caller's agent.

Invariants:
- Every handler works in ``ctx.agent_id``'s skills and feedback only; another agent's names and ids behave
  exactly like unknown ones. Skills are per agent: the caller's user and session do not narrow them.
- Arguments reach the services, which validate them all before they write, so a refused call writes nothing.
- ``get_skill`` in a session (``ctx.session_id``) records that the session used the skill (the usage log the
  dream's skill passes read), in the same call; an archived skill is not served.
- An empty search says it is not evidence, points at the recall family (``tools.family``) and never
  re-suggests search_skills itself.
- ``record_feedback`` without a ``session_id`` is about the caller's own session.
- A skill's text reaches the model as data (``core.framing``): get_skill frames the summary and content as a
  stored procedure, not an instruction from the user or the system, neutralised; search_skills neutralises the
  summaries it lists. ``data`` carries the stored text unchanged.
"""

from __future__ import annotations

from typing import Any

from reverie.core.framing import SKILL_LEAD, frame, neutralise
from reverie.core.text import preview
from reverie.errors import Conflict
from reverie.tools import family
from reverie.tools.base import ToolContext, ToolError, ToolResult
from reverie.tools.services import ToolServices
from reverie.types import Feedback, Skill
from reverie.views.plain import iso_z_or_none

SUMMARY_CHARS = 300  # of a summary in a result line; ``data`` carries it whole


def skill_data(skill: Skill) -> dict[str, Any]:
    """A skill as plain JSON (no vector)."""
    return {
        "name": skill.name,
        "summary": skill.summary,
        "content": skill.content,
        "see_also": list(skill.see_also),
        "version": skill.version,
        "created_at": iso_z_or_none(skill.created_at),
        "updated_at": iso_z_or_none(skill.updated_at),
        "last_used_at": iso_z_or_none(skill.last_used_at),
        "archived": skill.archived,
        "metadata": skill.metadata,
    }


def feedback_data(signal: Feedback) -> dict[str, Any]:
    return {
        "id": signal.feedback_id,
        "kind": signal.kind,
        "session_id": signal.session_id,
        "rating": signal.rating,
        "comment": signal.comment,
        "entry_ids": list(signal.entry_ids),
        "skill_names": list(signal.skill_names),
        "created_at": iso_z_or_none(signal.created_at),
    }


def empty_search(query: str) -> str:
    """An empty skill search: says so, says it is not evidence, points at the recall family."""
    pointers = " or ".join(
        f"{name} ({family.HEADLINES[name]}: {family.SCOPE_PHRASES[name]})" for name in family.RECALL_FAMILY
    )
    return (
        f"No skill matched {preview(query, 80)!r}. That is {family.NOT_EVIDENCE}: what you know may be held "
        f"elsewhere — try {pointers}."
    )


def search_skills(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    query = args["query"]
    found = rv.skills.search(ctx.agent_id, query, limit=args.get("limit"))
    hits = [
        {
            "name": h.skill.name,
            "summary": h.skill.summary,
            "score": round(h.score, 4),
            "matched_by": h.matched_by,
            "see_also": list(h.skill.see_also),
            "last_used_at": iso_z_or_none(h.skill.last_used_at),
        }
        for h in found.hits
    ]
    data = {"query": query, "mode": found.mode, "notes": list(found.notes), "hits": hits}
    if not hits:
        return ToolResult(empty_search(query), data)
    lines = [f"{len(hits)} {'skill' if len(hits) == 1 else 'skills'}, best first (open one with get_skill):"]
    lines.extend(f"- {h.skill.name} — {neutralise(preview(h.skill.summary, SUMMARY_CHARS))}" for h in found.hits)
    lines.extend(f"Note: {note}" for note in found.notes)
    return ToolResult("\n".join(lines), data)


def get_skill(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    skill = rv.skills.get(ctx.agent_id, args["name"])
    if skill.archived:
        raise ToolError(f"skill {skill.name!r} is archived; search_skills finds the live ones", kind="not_found")
    if ctx.session_id is not None:
        rv.skills.record_usage(ctx.agent_id, ctx.session_id, [skill.name])
    body = neutralise(f"{skill.summary}\n\n{skill.content}")
    text = [frame(f"# {skill.name} (version {skill.version})", body, lead=SKILL_LEAD)]
    if skill.see_also:
        text += ["", f"See also: {', '.join(skill.see_also)}"]
    return ToolResult("\n".join(text), skill_data(skill))


def save_skill(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        saved = rv.skills.save(
            ctx.agent_id, args["name"], args["summary"], args["content"], see_also=args.get("see_also")
        )
    except Conflict as exc:  # a concurrent writer kept winning: the model may simply try again
        raise ToolError(str(exc), kind="conflict") from None
    skill = saved.skill
    said = {"created": "Created", "updated": "Updated", "unchanged": "Unchanged (it already says this):"}
    data = {"outcome": saved.outcome, **skill_data(skill)}
    return ToolResult(f"{said[saved.outcome]} skill {skill.name} (version {skill.version}).", data)


def record_feedback(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    session_id = args.get("session_id", ctx.session_id)
    if session_id is None:
        raise ToolError("session_id is required: this call has no session of its own", field="session_id")
    signal = rv.feedback.record(
        ctx.agent_id,
        args["kind"],
        session_id,
        rating=args.get("rating"),
        comment=args.get("comment"),
        entry_ids=args.get("entry_ids"),
        skill_names=args.get("skill_names"),
    )
    rated = f" ({signal.rating})" if signal.rating else ""
    text = f"Recorded {signal.kind}{rated} feedback {signal.feedback_id} for session {signal.session_id}."
    return ToolResult(text, feedback_data(signal))
