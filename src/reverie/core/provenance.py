"""Provenance (seed 000): where a fact came from, and how trust combines.

Sources, most trusted first: ``user`` (the user said or confirmed it), ``tool:<name>`` (read from that
tool's result), ``inferred`` (the agent's own conclusion; ``inference`` is an alias). Anything else is
dropped, and the caller is told.
"""

from __future__ import annotations

import re

_TOOL = re.compile(r"tool:([A-Za-z0-9_.\-/]{1,100})", re.IGNORECASE)


def normalize_source(raw: str | None) -> tuple[str | None, str | None]:
    """Returns ``(source, note)``: the canonical source or None, and a note when ``raw`` was dropped."""
    if raw is None:
        return None, None
    value = raw.strip()
    lowered = value.lower()
    if lowered == "user":
        return "user", None
    if lowered in ("inferred", "inference"):
        return "inferred", None
    tool = _TOOL.fullmatch(value)
    if tool:
        return "tool:" + tool.group(1), None
    return None, f"source {raw!r} is not one of user, tool:<name>, inferred; it was dropped"


def trust_rank(source: str | None) -> int:
    """Higher is more trusted: user 3, tool 2, inferred 1, unknown 0."""
    if source == "user":
        return 3
    if source is not None and source.startswith("tool:"):
        return 2
    if source == "inferred":
        return 1
    return 0
