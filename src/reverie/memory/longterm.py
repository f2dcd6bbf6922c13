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
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from reverie.clock import Clock
from reverie.core import text, validate
from reverie.core.provenance import normalize_source
from reverie.errors import Conflict, NotFound, ValidationError
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
    Tier,
)

ID_LENGTH = 12


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

    def __init__(self, store: Store, clock: Clock, config: LongTermConfig | None = None) -> None:
        self._store = store
        self._clock = clock
        self.config = config or LongTermConfig()

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
        value is dropped and the result's ``notes`` say so."""
        cfg = self.config
        clean_scope = validate.scope(scope)
        clean_meta = validate.metadata(metadata)
        # An explicit source wins over metadata["source"]; either way it goes through the same check.
        raw_source = _optional_str(source if source is not None else clean_meta.pop("source", None), "source")
        clean_meta.pop("source", None)
        canonical, note = normalize_source(raw_source)
        if canonical is not None:
            clean_meta["source"] = canonical
        now = self._clock.now()
        entry = MemoryEntry(
            id=new_id(),
            content=validate.content(content, max_chars=cfg.max_content_chars),
            category=validate.category(category, default=cfg.default_category),
            tags=validate.tags(tags),
            tier=validate.tier(tier, default=cfg.default_tier),
            scope=clean_scope,
            created_at=now,
            last_seen_at=now,
            importance=validate.unit_interval(
                cfg.default_importance if importance is None else importance, name="importance"
            ),
            pinned=_flag(pinned, "pinned"),
            metadata=clean_meta,
        )
        for _ in range(5):  # 48 random bits: a collision is rare, and then we draw again
            try:
                self._store.facts.add(entry, at=now)
                break
            except Conflict:
                entry = replace(entry, id=new_id())
        else:
            raise Conflict("could not draw an unused id in 5 attempts")
        return SaveResult(outcome="created", entry=entry, notes=(note,) if note else ())

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
        scope: Scope | None = None,
    ) -> list[SearchHit]:
        """BM25 over content + tags + category words, best first; substring matches fill up the rest."""
        query = validate.query(query)
        count = validate.limit(self.config.search_limit if limit is None else limit)
        flt = self._filter(scope, category, include_archived)
        hits: list[SearchHit] = []
        match = text.fts_match(text.query_terms(query))
        if match is not None:
            hits = [SearchHit(e, score, "bm25") for e, score in self._store.facts.search(match, flt, count)]
        needle = query.strip()
        if len(hits) < count and needle:
            seen = frozenset(h.entry.id for h in hits)
            extra = self._store.facts.search_substring(needle, flt, count - len(hits), seen)
            hits.extend(SearchHit(e, 0.0, "substring") for e in extra)
        return hits

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
