"""Provenance (seed 000): where a fact came from, and how trust combines.

Sources, most trusted first: ``user`` (the user said or confirmed it), ``tool:<name>`` (read from that
tool's result), ``inferred`` (the agent's own conclusion; ``inference`` is an alias). ``import:<format>``
(``import:markdown``, ``import:mem0``: brought in from another system's records, ``reverie.portability``) is
trusted like a tool's result: a record someone kept, not the user speaking now. Anything else is dropped, and
the caller is told.
"""

from __future__ import annotations

import re

_TOOL = re.compile(r"tool:([A-Za-z0-9_.\-/]{1,100})", re.IGNORECASE)
_IMPORT = re.compile(r"import:([A-Za-z0-9_.\-]{1,100})", re.IGNORECASE)


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
    imported = _IMPORT.fullmatch(value)
    if imported:
        return "import:" + imported.group(1).lower(), None
    return None, f"source {raw!r} is not one of user, tool:<name>, inferred, import:<format>; it was dropped"


def trust_rank(source: str | None) -> int:
    """Higher is more trusted: user 3, tool or import 2, inferred 1, unknown 0."""
    if source == "user":
        return 3
    if source is not None and source.startswith(("tool:", "import:")):
        return 2
    if source == "inferred":
        return 1
    return 0


def most_trusted(*sources: str | None) -> str | None:
    """The source of a reinforcement or an exact fold: the same fact seen again, so trust may rise (a user
    confirming an inferred fact upgrades it to ``user``). Ties keep the first."""
    best: str | None = None
    for source in sources:
        if trust_rank(source) > trust_rank(best):
            best = source
    return best


def least_trusted(*sources: str | None) -> str | None:
    """The source of combined text (an extension, a merge): no more trusted than its weakest part.

    Any inferred part makes the result ``inferred``; otherwise any part with no source makes it unknown
    (None); otherwise the least trusted part. Inferred wins over unknown on purpose: "unknown" must never
    hide that part of the text is the agent's own conclusion, so combining can never launder an inference.
    """
    if not sources:
        return None
    if "inferred" in sources:
        return "inferred"
    if None in sources:
        return None
    return min(sources, key=trust_rank)
