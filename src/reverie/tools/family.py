"""The recall-search family (seed 000): the tool names, headlines and scope phrases, kept in this one place
so no interface can rename or re-word one member without the others.

Two searches, told apart by what the caller is after, not by which store holds it:

| tool | headline | scope |
|---|---|---|
| ``search_memory`` | RECALL WHAT YOU CONCLUDED | durable cross-session knowledge you chose to keep |
| ``search_working_memory`` | RECALL WHAT A TOOL RETURNED | this session's cached payloads |

Invariants (tested):
- Every family description leads with its headline and names every sibling by tool name.
- Every empty search result names the siblings and says it is not evidence the thing was never said or
  never known, and never re-suggests the tool that just came back empty (that would be a retry loop, not a
  recovery). Query-less browses are exempt: ``search_memory()`` answers with the category taxonomy, and an
  empty working-memory listing is a fact about a namespace, not a failed lookup.
"""

from __future__ import annotations

from typing import Final

SEARCH_MEMORY: Final = "search_memory"
SEARCH_WORKING_MEMORY: Final = "search_working_memory"
RECALL_FAMILY: Final = (SEARCH_MEMORY, SEARCH_WORKING_MEMORY)

HEADLINES: Final = {
    SEARCH_MEMORY: "RECALL WHAT YOU CONCLUDED",
    SEARCH_WORKING_MEMORY: "RECALL WHAT A TOOL RETURNED",
}
SCOPE_PHRASES: Final = {
    SEARCH_MEMORY: "durable cross-session knowledge you chose to keep",
    SEARCH_WORKING_MEMORY: "this session's cached payloads (large tool results, partial work, hand-offs)",
}
NOT_EVIDENCE: Final = "not evidence it was never said or never known"


def siblings(name: str) -> tuple[str, ...]:
    """The other members of the family."""
    return tuple(other for other in RECALL_FAMILY if other != name)


def describe(name: str, body: str) -> str:
    """A family member's description: its headline first, its scope, ``body``, then its siblings."""
    others = "; ".join(f"{other} ({HEADLINES[other]}: {SCOPE_PHRASES[other]})" for other in siblings(name))
    return f"{HEADLINES[name]} — {SCOPE_PHRASES[name]}. {body} Not what you need? Its sibling: {others}."


def empty_result(name: str, what: str) -> str:
    """The text of an empty search by ``name``: says so, says it is not evidence, and points at the
    siblings, never at ``name`` itself."""
    pointers = " or ".join(f"{other} ({HEADLINES[other]}: {SCOPE_PHRASES[other]})" for other in siblings(name))
    return f"Nothing matched {what}. That is {NOT_EVIDENCE}: it may be held elsewhere — try {pointers}."
