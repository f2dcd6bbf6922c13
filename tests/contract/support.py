"""Builders shared by the contract suite. Backend-neutral: entries are plain ``MemoryEntry`` values and every
store call goes through the Protocols of ``reverie.storage.base``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from reverie.core.text import fts_match, query_terms
from reverie.storage.base import FactFilter
from reverie.types import MemoryEntry, Scope, Tier

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
AGENT = Scope()

# Text that must come back byte for byte: composed and decomposed accents, CJK, RTL, emoji sequences.
UNICODE_TEXTS = [
    "Café naïve façade — “quoted” ‘single’ …",
    "e\u0301 (decomposed) vs \u00e9 (composed)",
    "日本語のテキスト、中文文本、한국어",
    "עברית ועربية right-to-left",
    "emoji 🎉🧠 family 👩‍👩‍👧 flag 🇵🇹 skin 👍🏽",
    "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑∫√ and a zero-width\u200bspace",
    "  leading and trailing whitespace\n\twith a tab  ",
]


def eid(n: int) -> str:
    """A 12-character id, the shape the data model uses."""
    return f"{n:012x}"


def at(**delta: float) -> datetime:
    """``T0`` moved by ``timedelta(**delta)``."""
    return T0 + timedelta(**delta)


def entry(
    n: int,
    content: str = "a plain fact",
    *,
    category: str = "general",
    tags: Iterable[str] = (),
    scope: Scope = AGENT,
    seen: datetime = T0,
    **fields: Any,
) -> MemoryEntry:
    fields.setdefault("tier", Tier.SEMANTIC)
    fields.setdefault("created_at", seen)
    return MemoryEntry(
        id=eid(n),
        content=content,
        category=category,
        tags=tuple(tags),
        scope=scope,
        last_seen_at=seen,
        **fields,
    )


def view(
    scope: Scope = AGENT,
    *,
    now: datetime = T0,
    category_prefix: str | None = None,
    include_archived: bool = False,
) -> FactFilter:
    return FactFilter(scope=scope, now=now, category_prefix=category_prefix, include_archived=include_archived)


def match(query: str) -> str:
    """The FTS expression the service layer would send for ``query``."""
    expression = fts_match(query_terms(query))
    assert expression is not None, query
    return expression


def ids(entries: Iterable[MemoryEntry]) -> list[str]:
    return [e.id for e in entries]


def hit_ids(hits: Iterable[tuple[MemoryEntry, float]]) -> list[str]:
    return [e.id for e, _ in hits]
