"""Long-term memory (seed 000): save, get, search, browse, archive, restore, purge, importance, history.

Invariants:
- Every argument is validated before the store is touched, so a rejected call changes nothing.
- Delete archives: the entry leaves search and browse but stays retrievable by id until the purge pass,
  which never removes a high-value entry (importance >= the floor, or reinforced often enough, or pinned).
- Search never raises on what the user typed: the query reaches FTS5 only as quoted terms, and a query
  the index cannot serve (punctuation, emoji, part of a word) falls back to substring matching, so the
  index only ever adds matches.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.provenance import normalize_source
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.recall.hybrid import MODES, HybridSearch
from reverie.storage.base import FactFilter, PurgeRule, Store
from reverie.types import (
    Browse,
    Change,
    EntryVersion,
    MemoryEntry,
    PurgeReport,
    SaveResult,
    Scope,
    SearchHit,
    SearchResults,
    Tier,
)

ID_LENGTH = 12
_SAVE_FIELDS = frozenset({"content", "category", "tags", "source", "importance", "tier", "metadata", "pinned", "scope"})


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
    protect_importance: float = 0.80
    protect_reinforcement: int = 5


def new_id() -> str:
    """A 12-character hex id (seed 000: a GUID fragment)."""
    return secrets.token_hex(ID_LENGTH // 2)


class LongTermMemory:
    """Durable, cross-session facts for one store. Every method takes the caller's ``scope``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        config: LongTermConfig | None = None,
        *,
        recall: HybridSearch | None = None,
        on_saved: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self.config = config or LongTermConfig()
        self._recall = recall or HybridSearch(store, None)
        self._on_saved = on_saved or (lambda: None)

    # -- writing -------------------------------------------------------------------------------------
    def save(
        self,
        content: str,
        *,
        category: str | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
        source: str | None = None,
        importance: float | None = None,
        tier: Tier | str | None = None,
        metadata: dict[str, Any] | None = None,
        pinned: bool = False,
        scope: Scope | None = None,
    ) -> SaveResult:
        """Save a new fact. ``source`` is provenance: ``user``, ``tool:<name>`` or ``inferred``; any other
        value is dropped and the result's ``notes`` say so. The text is durable when this returns; its
        embedding is computed in the background (BM25 finds the entry meanwhile)."""
        now = self._clock.now()
        entry, notes = self._build(
            content, category, tags, source, importance, tier, metadata, pinned, validate.scope(scope), now
        )
        entry = self._add(entry, now)
        self._on_saved()
        return SaveResult(outcome="created", entry=entry, notes=notes)

    def save_many(self, items: Iterable[Mapping[str, Any]], *, scope: Scope | None = None) -> list[SaveResult]:
        """Save many facts in one transaction (ingestion). Each item holds ``save``'s keyword arguments
        (``content`` required; an item's own ``scope`` wins over ``scope``). All are validated first: one bad
        item saves nothing."""
        default_scope = validate.scope(scope)
        now = self._clock.now()
        built: list[tuple[MemoryEntry, tuple[str, ...]]] = []
        for position, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ValidationError(f"item {position} is not a mapping of save arguments", field="items")
            unknown = set(item) - _SAVE_FIELDS
            if unknown:
                raise ValidationError(f"item {position} has unknown fields {sorted(unknown)}", field="items")
            try:
                built.append(
                    self._build(
                        item.get("content"),
                        item.get("category"),
                        item.get("tags"),
                        item.get("source"),
                        item.get("importance"),
                        item.get("tier"),
                        item.get("metadata"),
                        item.get("pinned", False),
                        validate.scope(item.get("scope", default_scope)),
                        now,
                    )
                )
            except ValidationError as exc:
                raise ValidationError(f"item {position}: {exc}", field=exc.field) from None
        with self._store.transaction():
            saved = [(self._add(entry, now), notes) for entry, notes in built]
        self._on_saved()
        return [SaveResult(outcome="created", entry=entry, notes=notes) for entry, notes in saved]

    def _build(
        self,
        content: object,
        category: object,
        tags: object,
        source: object,
        importance: object,
        tier: object,
        metadata: object,
        pinned: object,
        scope: Scope,
        now: datetime,
    ) -> tuple[MemoryEntry, tuple[str, ...]]:
        cfg = self.config
        clean_meta = validate.metadata(metadata)
        # An explicit source wins over metadata["source"]; either way it goes through the same check.
        raw_source = _optional_str(source if source is not None else clean_meta.pop("source", None), "source")
        clean_meta.pop("source", None)
        canonical, note = normalize_source(raw_source)
        if canonical is not None:
            clean_meta["source"] = canonical
        entry = MemoryEntry(
            id=new_id(),
            content=validate.content(content, max_chars=cfg.max_content_chars),
            category=validate.category(category, default=cfg.default_category),
            tags=validate.tags(tags),
            tier=validate.tier(tier, default=cfg.default_tier),
            scope=scope,
            created_at=now,
            last_seen_at=now,
            importance=validate.unit_interval(
                cfg.default_importance if importance is None else importance, name="importance"
            ),
            pinned=_flag(pinned, "pinned"),
            metadata=clean_meta,
        )
        return entry, ((note,) if note else ())

    def _add(self, entry: MemoryEntry, now: datetime) -> MemoryEntry:
        for _ in range(5):  # 48 random bits: a collision is rare, and then we draw again
            try:
                self._store.facts.add(entry, at=now)
                return entry
            except Conflict:
                entry = replace(entry, id=new_id())
        raise Conflict("could not draw an unused id in 5 attempts")

    def edit(
        self,
        entry_id: str,
        *,
        content: str | None = None,
        category: str | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
        scope: Scope | None = None,
    ) -> MemoryEntry:
        """Rewrite an entry's text, category or tags; ``updated_at`` moves, ``last_seen_at`` does not."""
        current = self.get(entry_id, scope=scope)
        changed = replace(
            current,
            content=current.content
            if content is None
            else validate.content(content, max_chars=self.config.max_content_chars),
            category=current.category if category is None else validate.category(category, default=""),
            tags=current.tags if tags is None else validate.tags(tags),
        )
        if (changed.content, changed.category, changed.tags) == (current.content, current.category, current.tags):
            return current
        now = self._clock.now()
        changed = replace(changed, updated_at=now)
        self._store.facts.write(changed, change=Change.EDITED, at=now)
        return changed

    def set_importance(self, entry_id: str, importance: float, *, scope: Scope | None = None) -> MemoryEntry:
        """Re-score an entry. Importance is salience, not text: ``updated_at`` is left alone."""
        value = validate.unit_interval(importance, name="importance")
        current = self.get(entry_id, scope=scope)
        changed = replace(current, importance=value)
        self._store.facts.write(changed, change=Change.IMPORTANCE, at=self._clock.now())
        return changed

    def archive(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """Delete = archive: hidden from search and browse, retrievable by id, restorable until purge."""
        current = self.get(entry_id, scope=scope)
        if current.archived:
            return current
        now = self._clock.now()
        changed = replace(current, archived_at=now)
        self._store.facts.write(changed, change=Change.ARCHIVED, at=now)
        return changed

    def restore(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """Bring an archived entry back into search."""
        current = self.get(entry_id, scope=scope)
        if not current.archived:
            return current
        changed = replace(current, archived_at=None)
        self._store.facts.write(changed, change=Change.RESTORED, at=self._clock.now())
        return changed

    def restore_version(self, entry_id: str, version: int, *, scope: Scope | None = None) -> MemoryEntry:
        """Make an earlier version's text, category and tags current again (as a new version)."""
        clean_scope = validate.scope(scope)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValidationError("version must be a whole number from 1", field="version")
        current = self.get(entry_id, scope=clean_scope)
        old = self._store.versions.get(current.id, version, clean_scope)
        if old is None:
            raise NotFound(f"entry {entry_id!r} has no version {version}")
        now = self._clock.now()
        changed = replace(current, content=old.content, category=old.category, tags=old.tags, updated_at=now)
        self._store.facts.write(changed, change=Change.REVERTED, at=now)
        return changed

    def purge(self, *, agent_id: str | None = None) -> PurgeReport:
        """Hard-delete entries archived longer than the retention, except high-value ones (the only
        hard delete in Reverie). ``agent_id`` None sweeps every agent."""
        if agent_id is not None:
            validate.identifier(agent_id, name="agent_id")
        cfg = self.config
        rule = PurgeRule(
            archived_before=self._clock.now() - timedelta(days=cfg.archive_retention_days),
            protect_importance=cfg.protect_importance,
            protect_reinforcement=cfg.protect_reinforcement,
            agent_id=agent_id,
        )
        purged, protected = self._store.facts.purge(rule)
        return PurgeReport(purged=tuple(purged), protected=tuple(protected))

    # -- reading -------------------------------------------------------------------------------------
    def get(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """The entry, archived or not. Raises ``NotFound`` when it is not visible to ``scope``."""
        clean_id = validate.identifier(entry_id, name="id")
        entry = self._store.facts.get(clean_id, validate.scope(scope))
        if entry is None:
            raise NotFound(f"no memory with id {entry_id!r} in this scope")
        return entry

    def history(self, entry_id: str, *, scope: Scope | None = None) -> list[EntryVersion]:
        """Every version of the entry, oldest first."""
        clean_scope = validate.scope(scope)
        entry = self.get(entry_id, scope=clean_scope)
        return self._store.versions.history(entry.id, clean_scope)

    def search(
        self,
        query: str,
        *,
        category: str | None = None,
        limit: int | None = None,
        include_archived: bool = False,
        mode: str = "auto",
        min_similarity: float | None = None,
        scope: Scope | None = None,
    ) -> SearchResults:
        """Recall, best first. ``mode``: ``auto`` (hybrid when an embedder is configured, else BM25),
        ``bm25``, ``vector`` or ``hybrid``. ``min_similarity`` overrides the vector floor for this call.
        An empty query browses (most recently reinforced first). Substring matches fill up the rest when
        the indexes find fewer than ``limit``, so the index only ever adds matches."""
        query = validate.query(query)
        count = validate.limit(self.config.search_limit if limit is None else limit)
        if mode not in MODES:
            raise ValidationError(f"mode must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
        floor = None if min_similarity is None else validate.unit_interval(min_similarity, name="min_similarity")
        flt = self._filter(scope, category, include_archived)
        if not query.strip():
            return SearchResults(
                [SearchHit(e, 0.0, "recent") for e in self._store.facts.recent(flt, count)], mode="browse"
            )
        results = self._recall.search(query, flt, count, mode=mode, min_similarity=floor)
        needle = query.strip()
        if len(results) < count and mode != "vector":
            seen = frozenset(h.entry.id for h in results)
            extra = self._store.facts.search_substring(needle, flt, count - len(results), seen)
            results.extend(SearchHit(e, 0.0, "substring") for e in extra)
        return results

    def browse(self, *, category: str | None = None, limit: int | None = None, scope: Scope | None = None) -> Browse:
        """The query-less look: most recently reinforced first, then the scope's full taxonomy."""
        count = validate.limit(self.config.browse_limit if limit is None else limit)
        flt = self._filter(scope, category, include_archived=False)
        entries = self._store.facts.recent(flt, count)
        taxonomy = self._store.facts.taxonomy(flt)
        return Browse(entries=tuple(entries), taxonomy=tuple(taxonomy), category=flt.category_prefix)

    def _filter(self, scope: Scope | None, category: str | None, include_archived: bool) -> FactFilter:
        return FactFilter(
            scope=validate.scope(scope),
            now=self._clock.now(),
            category_prefix=validate.category_prefix(category),
            include_archived=_flag(include_archived, "include_archived"),
        )


def _optional_str(value: object, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValidationError(f"{name} must be a string", field=name)


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false", field=name)
    return value
