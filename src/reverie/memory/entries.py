"""A new long-term entry from a save's arguments: the long-term settings (``LongTermConfig``), the ids, the
validation of every argument (``build_entry``, ``build_item`` for a ``save_many`` item) and the first insert
(``add_new``). Nothing here reads the store but ``add_new``, which writes the one new row.

Invariant: ``build_entry`` validates every argument before it builds anything, so a rejected save has written
nothing; an explicit ``source`` wins over ``metadata["source"]``, and either is normalised the same way.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from reverie.core import validate
from reverie.core.provenance import normalize_source
from reverie.errors import Conflict, ValidationError
from reverie.storage.base import Store
from reverie.types import MemoryEntry, Scope, Tier

ID_LENGTH = 12
SAVE_FIELDS = frozenset(
    {"content", "category", "tags", "source", "importance", "tier", "metadata", "pinned", "scope", "observed_at"}
)


@dataclass(frozen=True, slots=True)
class LongTermConfig:
    """The knobs of long-term memory; the engine fills them from Settings."""

    max_content_chars: int = 20_000
    default_category: str = "general"
    default_importance: float = 0.5
    default_tier: Tier = Tier.SEMANTIC
    search_limit: int = 10
    browse_limit: int = 20
    archive_retention_days: float = 90.0
    pruning_protection_importance: float = 0.80
    pruning_protection_reinforcement_count: int = 5
    tombstone_days: float = 180.0  # entries the forget sweep archived are purged this long after
    # Seed 003: how much confidence weighs in search ranking; 0 leaves ranking exactly as recall made it.
    belief_authority_weight: float = 0.0


def new_id() -> str:
    """A 12-character hex id (seed 000: a GUID fragment)."""
    return secrets.token_hex(ID_LENGTH // 2)


def add_new(store: Store, entry: MemoryEntry, now: datetime) -> MemoryEntry:
    """Insert a new entry, drawing another id if its id is taken; returns the entry as stored."""
    for _ in range(5):  # 48 random bits: a collision is rare, and then we draw again
        try:
            store.facts.add(entry, at=now)
            return entry
        except Conflict:
            entry = replace(entry, id=new_id())
    raise Conflict("could not draw an unused id in 5 attempts")


@dataclass(frozen=True, slots=True)
class Draft:
    """A save's arguments as the caller gave them, not yet validated."""

    content: object
    category: object = None
    tags: object = None
    source: object = None
    importance: object = None
    tier: object = None
    metadata: object = None
    pinned: object = False


def build_entry(
    config: LongTermConfig, draft: Draft, scope: Scope, now: datetime, observed_at: object
) -> tuple[MemoryEntry, tuple[str, ...]]:
    """The entry a save would store, every argument validated, and the save's notes (a normalised source);
    ``observed_at`` None: observed ``now``."""
    clean_meta = validate.metadata(draft.metadata)
    validate.subject_time(clean_meta)
    # An explicit source wins over metadata["source"]; either way it goes through the same check.
    given = draft.source if draft.source is not None else clean_meta.pop("source", None)
    raw_source = validate.optional_text(given, name="source")
    clean_meta.pop("source", None)
    canonical, note = normalize_source(raw_source)
    if canonical is not None:
        clean_meta["source"] = canonical
    seen = validate.observed_at(observed_at, now=now)
    importance = config.default_importance if draft.importance is None else draft.importance
    entry = MemoryEntry(
        id=new_id(),
        content=validate.content(draft.content, max_chars=config.max_content_chars),
        category=validate.category(draft.category, default=config.default_category),
        tags=validate.tags(draft.tags),
        tier=validate.tier(draft.tier, default=config.default_tier),
        scope=scope,
        created_at=seen,
        last_seen_at=seen,
        importance=validate.unit_interval(importance, name="importance"),
        pinned=validate.flag(draft.pinned, name="pinned"),
        metadata=clean_meta,
    )
    return entry, ((note,) if note else ())


def build_item(
    config: LongTermConfig, item: object, default_scope: Scope, default_observed: object, now: datetime
) -> tuple[MemoryEntry, tuple[str, ...]]:
    """One ``save_many`` item as an entry to store (``build_entry``); raises ``ValidationError`` without the
    item's position."""
    if not isinstance(item, Mapping):
        raise ValidationError("is not a mapping of save arguments", field="items")
    unknown = set(item) - SAVE_FIELDS
    if unknown:
        raise ValidationError(f"has unknown fields {sorted(unknown)}", field="items")
    draft = Draft(
        item.get("content"),
        item.get("category"),
        item.get("tags"),
        item.get("source"),
        item.get("importance"),
        item.get("tier"),
        item.get("metadata"),
        item.get("pinned", False),
    )
    return build_entry(
        config, draft, validate.scope(item.get("scope", default_scope)), now, item.get("observed_at", default_observed)
    )
