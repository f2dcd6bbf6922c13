"""memory_semantic_duplicates and memory_semantic_consolidate (seed 004's agent-callable semantic memory): thin
handlers over ``reverie.memory.consolidate`` (``rv.consolidation``), which owns the groups, the coverage check,
the transactional write and their invariants.

Invariant: ``memory_semantic_consolidate`` is served only to agents whose own settings allow it
(``rv.consolidation.allowed``); the registry refuses it before this handler runs.
"""

from __future__ import annotations

from typing import Any

from reverie.core.text import preview
from reverie.memory.consolidate import MAX_ENTRIES, ConsolidatedGroup, DuplicateGroup
from reverie.tools.base import ToolContext, ToolResult, entry_data
from reverie.tools.services import ToolServices


def group_data(group: DuplicateGroup) -> dict[str, Any]:
    return {
        "keep": entry_data(group.newest),
        "members": [
            {
                **entry_data(m.entry),
                "covered": m.covered,
                "missing": list(m.missing),
                "contradicts_newest": None if m.stance is None else m.stance.describe(),
            }
            for m in group.members
        ],
        "similarity": round(group.similarity, 6),
        "measure": group.measure,
    }


def consolidated_data(group: ConsolidatedGroup) -> dict[str, Any]:
    return {
        "keep": group.keep,
        "archived": list(group.archived),
        "kept": list(group.kept),
        "contradicted": list(group.contradicted),
    }


def memory_semantic_duplicates(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    scan = rv.consolidation.duplicates(ctx.scope)
    if not scan.groups:
        lines = [f"No near-duplicate groups among the {scan.examined} memories examined."]
    else:
        lines = [f"{len(scan.groups)} group(s) of near-duplicates among the {scan.examined} memories examined:"]
        for group in scan.groups:
            lines.append(f"- newest [{group.newest.id}] ({group.newest.category}) {preview(group.newest.content, 300)}")
            for m in group.members:
                said = "covered by the newest" if m.covered else f"has its own specifics: {', '.join(m.missing)}"
                if m.stance is not None:
                    said = f"contradicts the newest ({m.stance.describe()})"
                lines.append(f"  [{m.entry.id}] {said}: {preview(m.entry.content, 300)}")
        if not rv.consolidation.allowed(ctx.agent_id):
            lines.append("Consolidation is not enabled for this agent; an operator can run it.")
    if scan.truncated:
        lines.append(f"Note: only the {MAX_ENTRIES} most recently reinforced memories were examined.")
    data = {"groups": [group_data(g) for g in scan.groups], "examined": scan.examined, "truncated": scan.truncated}
    return ToolResult("\n".join(lines), data)


def memory_semantic_consolidate(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    report = rv.consolidation.consolidate(ctx.scope)
    archived, kept = report.archived, report.kept
    lines = [
        f"Consolidated {len(report.groups)} group(s) of near-duplicates among {report.examined} memories: archived "
        f"{len(archived)} (each superseded by the newest of its group, restorable until the archive purge), "
        f"kept {len(kept)}."
    ]
    for g in report.groups:
        gone = ", ".join(f"[{i}]" for i in g.archived) or "nothing"
        lines.append(f"- kept [{g.keep}]; archived {gone}")
        changed = [f"[{i}]" for i in g.contradicted]
        own = [f"[{i}]" for i in g.kept if i != g.keep and i not in g.contradicted]
        if own:
            lines.append(f"  also kept {', '.join(own)}: each has specifics or a stance the newest entry lacks")
        if changed:
            lines.append(f"  kept {', '.join(changed)} as superseded: the newest entry contradicts each")
    if report.truncated:
        lines.append(f"Note: only the {MAX_ENTRIES} most recently reinforced memories were examined.")
    data = {
        "groups": [consolidated_data(g) for g in report.groups],
        "archived": archived,
        "kept": kept,
        "examined": report.examined,
        "truncated": report.truncated,
    }
    return ToolResult("\n".join(lines), data)
