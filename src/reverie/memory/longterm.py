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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal, overload

from reverie.clock import Clock
from reverie.core import filters, validate
from reverie.core.stance_vocabulary import StanceVocabulary
from reverie.errors import NotFound, ValidationError
from reverie.memory import listing, successor
from reverie.memory.contradiction import CONTRADICTION, SUPERSEDE, supersede, with_supersedes
from reverie.memory.dedup import Contradicted, Deduplicator, SavePlan
from reverie.memory.entries import Draft, LongTermConfig, add_new, build_entry, build_item
from reverie.recall.hybrid import MODES, HybridSearch
from reverie.storage.base import FactFilter, PurgeRule, Store
from reverie.types import (
    VALID_TO,
    Browse,
    Change,
    EntryFilter,
    EntryVersion,
    MemoryEntry,
    Page,
    PurgeReport,
    SaveRejection,
    SaveResult,
    Scope,
    SearchHit,
    SearchResults,
    Tier,
)

PIN_FIRST_MAX = 10  # seed 003: pin_first puts up to ten pinned entries ahead of the results
OnError = Literal["raise", "skip"]
ON_ERROR: tuple[OnError, ...] = ("raise", "skip")


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
        dedup: Deduplicator | None = None,
        on_read: Callable[[list[str]], None] | None = None,
        expand: Callable[[MemoryEntry], bool] | None = None,
        extract: Callable[[MemoryEntry], bool] | None = None,
        confidence: Callable[[list[MemoryEntry], Scope], Mapping[str, float]] | None = None,
        on_activity: Callable[[Scope], None] | None = None,
        stance: Callable[[], StanceVocabulary] | None = None,
    ) -> None:
        """``dedup``: save-time deduplication (None: every save creates an entry). ``on_read`` is told the
        ids a caller read (search hits, ``get``): reads keep entries warm in the forget sweep. ``expand``
        says whether a fact ``save`` (never ``save_many``) stores as a new or extended entry is queued for
        the background expansion (``memory.expansion``; None: nothing is); ``extract`` likewise for the
        knowledge graph's extraction queue (``memory.graph_extraction``). ``confidence`` gives entries'
        confidence (``memory.lint``), read only when ``belief_authority_weight`` > 0. ``on_activity`` is told
        the scope of every save, search, browse and read (the dream's activity gate and idle trigger).
        ``stance`` gives the deployment's stance vocabulary (its relations read a query against superseded
        entries, ``memory.successor``; None: the built-in one)."""
        self._store = store
        self._clock = clock
        self.config = config or LongTermConfig()
        self._recall = recall or HybridSearch(store, None)
        self._on_saved = on_saved or (lambda: None)
        self._dedup = dedup
        self._on_read = on_read or (lambda _ids: None)
        self._successors = successor.Successors(store, stance)
        self._expand = expand
        self._extract = extract
        self._confidence = confidence
        self._on_activity = on_activity or (lambda _scope: None)

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
        dedup: bool = True,
        observed_at: datetime | str | None = None,
    ) -> SaveResult:
        """Save a fact. ``source`` is provenance: ``user``, ``tool:<name>`` or ``inferred``; any other
        value is dropped and the result's ``notes`` say so. The text is durable when this returns; its
        embedding is computed in the background (BM25 finds the entry meanwhile).

        ``observed_at`` (importing dated history): when the fact was observed (``validate.observed_at``: aware,
        not in the future). A created entry takes it as ``created_at``, ``last_seen_at`` and its first version's
        time; a reinforcement or extension keeps the entry's ``created_at`` and moves ``last_seen_at`` only
        forwards. ``metadata``'s subject-time keys must be well formed (``core.subject_time``).

        With deduplication on (the default), a fact an entry of the same scope and top-level category
        already states reinforces that entry (``outcome`` "reinforced"), one that adds specifics extends
        it ("extended"); otherwise it is "created". ``dedup=False`` always creates (ingesting records
        known to be distinct). A paraphrase only an embedding recognises is folded into the older entry
        after the background embedding (the new entry is then archived, ``superseded_by`` the older)."""
        now = self._clock.now()
        entry, notes = build_entry(
            self.config,
            Draft(content, category, tags, source, importance, tier, metadata, pinned),
            validate.scope(scope),
            now,
            observed_at,
        )
        return self._save(entry, notes, now, dedup, expand=self._expand is not None and self._expand(entry))

    def save_internal(
        self,
        content: str,
        *,
        scope: Scope,
        category: str | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
        dedup: bool = True,
        tier: Tier | str | None = None,
    ) -> SaveResult:
        """``save`` for the engine's own services (proactive memory, the dream's learning passes): ``scope``
        may be a reserved one (``types.user_agent``), which every public entry point refuses. Never queued for
        the expansion (such saves are focused facts already); the graph extraction as in ``save``. Interfaces
        never call it."""
        now = self._clock.now()
        draft = Draft(content, category, tags, source, None, tier, metadata, False)
        entry, notes = build_entry(self.config, draft, validate.internal_scope(scope), now, None)
        return self._save(entry, notes, now, dedup, expand=False)

    def _save(
        self, entry: MemoryEntry, notes: tuple[str, ...], now: datetime, dedup: object, *, expand: bool
    ) -> SaveResult:
        use_dedup = validate.flag(dedup, name="dedup")
        # The lookup for an entry to fold into only reads: made before the write lock is taken (saves, reads
        # and the embedding worker all queue on it), then re-checked cheaply under it (Deduplicator.fold_on_save).
        plan = self._dedup.plan_save(entry, now) if use_dedup and self._dedup is not None else None
        with self._store.transaction():
            result = self._store_one(entry, now, use_dedup, expand=expand, plan=plan)
            entry = result.entry
            new_text = result.outcome in ("created", "extended", "superseded")
            if new_text and self._extract is not None and self._extract(entry):
                # Queued in the save's transaction: a crash after the save cannot lose the extraction.
                self._store.facts.queue_graph_extraction(entry.id, entry.scope.agent_id, at=now)
        self._on_saved()
        self._on_activity(entry.scope)
        return replace(result, notes=notes + result.notes)

    def _store_one(
        self, entry: MemoryEntry, now: datetime, dedup: bool, *, expand: bool = False, plan: SavePlan | None = None
    ) -> SaveResult:
        """Create, reinforce, extend or supersede; ``expand``: a created, extended or superseding entry (new
        text) waits for the background expansion; ``plan``: the deduplication lookup made for ``entry`` before
        the transaction (``Deduplicator.plan_save``). Call inside a store transaction."""
        if not dedup or self._dedup is None:
            return SaveResult("created", self._add(replace(entry, expand_pending=expand)))
        folded = self._dedup.fold_on_save(entry, now, plan)
        if isinstance(folded, Contradicted):
            return self._contradicting(entry, folded, now, expand=expand)
        if folded is None:
            pending = self._dedup.semantic_check_pending(entry)
            return SaveResult("created", self._add(replace(entry, fold_pending=pending, expand_pending=expand)))
        outcome, stored = folded
        if expand and outcome == "extended" and not stored.expand_pending:
            stored = replace(stored, expand_pending=True)
            self._store.facts.write(stored, change=Change.HOUSEKEEPING, at=now)
        return SaveResult(outcome, stored)

    def _contradicting(self, entry: MemoryEntry, found: Contradicted, now: datetime, *, expand: bool) -> SaveResult:
        """A save that contradicts a live entry: its own new entry, the current belief under ``supersede``
        (the earlier entry kept, superseded by it), and the caller told both ids."""
        assert self._dedup is not None
        mode = self._dedup.config.on_contradiction
        if mode == SUPERSEDE:
            entry = with_supersedes(entry, found.existing.id)
        pending = self._dedup.semantic_check_pending(entry)
        stored = self._add(replace(entry, fold_pending=pending, expand_pending=expand))
        told = supersede(self._store, found.existing, stored, found.difference, now, mode=mode, newer_stored=False)
        outcome = "superseded" if told.superseded else "created"
        return SaveResult(outcome, stored, notes=(told.message(),), contradiction=told)

    @overload
    def save_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        scope: Scope | None = None,
        dedup: bool = True,
        on_error: Literal["raise"] = "raise",
        observed_at: datetime | str | None = None,
    ) -> list[SaveResult]: ...

    @overload
    def save_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        scope: Scope | None = None,
        dedup: bool = True,
        on_error: OnError,
        observed_at: datetime | str | None = None,
    ) -> list[SaveResult | SaveRejection]: ...

    def save_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        scope: Scope | None = None,
        dedup: bool = True,
        on_error: OnError = "raise",
        observed_at: datetime | str | None = None,
    ) -> list[SaveResult] | list[SaveResult | SaveRejection]:
        """Save many facts in one transaction (ingestion). Each item holds ``save``'s keyword arguments
        (``content`` required; an item's own ``scope`` and ``observed_at`` win over ``scope`` and
        ``observed_at``). Deduplication as in ``save`` (items of the batch see each other).

        Every item is validated before anything is written. ``on_error="raise"`` (the default): one bad item
        raises its ``ValidationError`` (the message starts with ``item N:``) and nothing is saved.
        ``on_error="skip"``: a bad item is reported, not fatal: the good items are saved (one transaction) and
        the result holds one value per item, in input order: a ``SaveResult``, or a ``SaveRejection`` with the
        item's position, the error message and the field. Arguments of the batch itself (``scope``,
        ``dedup``, ``on_error``, ``observed_at``, ``items`` not iterable) always raise."""
        default_scope = validate.scope(scope)
        use_dedup = validate.flag(dedup, name="dedup")
        if on_error not in ON_ERROR:
            raise ValidationError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}", field="on_error")
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise ValidationError("items must be a list of mappings of save arguments", field="items")
        now = self._clock.now()
        validate.observed_at(observed_at, now=now)
        built: list[tuple[MemoryEntry, tuple[str, ...]] | SaveRejection] = []
        for position, item in enumerate(items):
            try:
                built.append(build_item(self.config, item, default_scope, observed_at, now))
            except ValidationError as exc:
                if on_error == "raise":  # "item 3 has unknown fields […]", "item 3: content is empty"
                    joint = " " if exc.field == "items" else ": "
                    raise ValidationError(f"item {position}{joint}{exc}", field=exc.field) from None
                built.append(SaveRejection(position, str(exc), exc.field))
        with self._store.transaction():
            saved = [b if isinstance(b, SaveRejection) else self._store_built(b, now, use_dedup) for b in built]
        self._on_saved()
        self._on_activity(default_scope)
        return saved

    def _store_built(self, built: tuple[MemoryEntry, tuple[str, ...]], now: datetime, dedup: bool) -> SaveResult:
        entry, notes = built
        result = self._store_one(entry, now, dedup)
        return replace(result, notes=notes + result.notes)

    def _add(self, entry: MemoryEntry) -> MemoryEntry:
        """Insert a new entry, its first version at its ``created_at`` (now, or a dated save's observed time)."""
        return add_new(self._store, entry, entry.created_at)

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
        current = self._get(entry_id, scope=scope)
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
        current = self._get(entry_id, scope=scope)
        changed = replace(current, importance=value)
        self._store.facts.write(changed, change=Change.IMPORTANCE, at=self._clock.now())
        return changed

    def set_pinned(self, entry_id: str, pinned: bool, *, scope: Scope | None = None) -> MemoryEntry:
        """Pin or unpin an entry. A pinned entry never decays, is never swept or pruned, and comes first with
        ``pin_first``. A version (``pinned``) records the change; the text and ``updated_at`` are left alone."""
        value = validate.flag(pinned, name="pinned")
        current = self._get(entry_id, scope=scope)
        if current.pinned == value:
            return current
        changed = replace(current, pinned=value)
        self._store.facts.write(changed, change=Change.PINNED, at=self._clock.now())
        return changed

    def archive(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """Delete = archive: hidden from search and browse, retrievable by id, restorable until purge."""
        current = self._get(entry_id, scope=scope)
        if current.archived:
            return current
        now = self._clock.now()
        changed = replace(current, archived_at=now)
        self._store.facts.write(changed, change=Change.ARCHIVED, at=now)
        return changed

    def restore(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """Bring an archived or superseded entry back into search as a current entry (``superseded_by`` and
        ``validTo`` cleared: its history keeps what superseded it)."""
        current = self._get(entry_id, scope=scope)
        if current.current:
            return current
        # No longer a tombstone of the forget sweep (see the purge pass), nor an ended belief.
        metadata = {k: v for k, v in current.metadata.items() if k not in ("forgotten", VALID_TO, CONTRADICTION)}
        changed = replace(current, archived_at=None, superseded_by=None, metadata=metadata)
        self._store.facts.write(changed, change=Change.RESTORED, at=self._clock.now())
        return changed

    def restore_version(self, entry_id: str, version: int, *, scope: Scope | None = None) -> MemoryEntry:
        """Make an earlier version's text, category and tags current again (as a new version)."""
        clean_scope = validate.scope(scope)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValidationError("version must be a whole number from 1", field="version")
        current = self._get(entry_id, scope=clean_scope)
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
            protect_importance=cfg.pruning_protection_importance,
            protect_reinforcement=cfg.pruning_protection_reinforcement_count,
            agent_id=agent_id,
            tombstones_before=self._clock.now() - timedelta(days=cfg.tombstone_days),
            purged_at=self._clock.now(),
        )
        purged, protected = self._store.facts.purge(rule)
        return PurgeReport(purged=tuple(purged), protected=tuple(protected))

    # -- reading -------------------------------------------------------------------------------------
    def get(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """The entry, archived or not. Raises ``NotFound`` when it is not visible to ``scope``. Counts as a
        read (it keeps the entry warm)."""
        entry = self._get(entry_id, scope=scope)
        self._on_read([entry.id])
        self._on_activity(validate.scope(scope))
        return entry

    def _get(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        clean_id = validate.identifier(entry_id, name="id")
        entry = self._store.facts.get(clean_id, validate.scope(scope))
        if entry is None:
            raise NotFound(f"no memory with id {entry_id!r} in this scope")
        return entry

    def history(self, entry_id: str, *, scope: Scope | None = None) -> list[EntryVersion]:
        """Every version of the entry, oldest first."""
        clean_scope = validate.scope(scope)
        entry = self._get(entry_id, scope=clean_scope)
        return self._store.versions.history(entry.id, clean_scope)

    def history_page(
        self, entry_id: str, *, cursor: str | None = None, limit: int | None = None, scope: Scope | None = None
    ) -> Page[EntryVersion]:
        """``history`` a page at a time (1..1000, default 100), oldest first; ``next_cursor`` for the next."""
        clean_scope, count = validate.scope(scope), validate.limit(listing.DEFAULT_PAGE if limit is None else limit)
        entry = self._get(entry_id, scope=clean_scope)
        return listing.versions(self._store, entry.id, clean_scope, cursor, count)

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
        pin_first: bool = False,
        include_superseded: bool = False,
        filter: EntryFilter | None = None,
        peek: bool = False,
    ) -> SearchResults:
        """Recall, best first. ``mode``: ``auto`` (hybrid when an embedder is configured, else BM25),
        ``bm25``, ``vector`` or ``hybrid``. ``min_similarity`` overrides the vector floor for this call.
        An empty query browses (most recently reinforced first). Substring matches fill up the rest when
        the indexes find fewer than ``limit``, so the index only ever adds matches.

        Seed 003's query options: ``pin_first`` puts up to ten pinned entries the search may see (scope,
        category) ahead of the results, labelled ``pinned`` (``limit`` counts the results after them);
        ``include_superseded`` appends up to ``limit`` entries folded into another (archived with
        ``superseded_by`` set) that match the query, labelled ``superseded``. With the engine's
        ``belief_authority_weight`` w > 0, scores are multiplied by ``(1 - w) + w · confidence`` and
        re-ranked; w = 0 leaves ranking exactly as recall made it. ``filter`` keeps only the entries it
        matches (``EntryFilter``), applied in SQL to every candidate read, so it never hides a match the
        indexes would have found. ``peek``: a look that changes nothing — no read is counted toward aging and
        no activity noted (the console's context preview)."""
        query = validate.query(query)
        count = validate.limit(self.config.search_limit if limit is None else limit)
        looked = validate.flag(peek, name="peek")
        if mode not in MODES:
            raise ValidationError(f"mode must be one of {', '.join(MODES)}, got {mode!r}", field="mode")
        floor = None if min_similarity is None else validate.unit_interval(min_similarity, name="min_similarity")
        pinned = validate.flag(pin_first, name="pin_first")
        superseded = validate.flag(include_superseded, name="include_superseded")
        flt = replace(self._filter(scope, category, include_archived), entry=filters.entry_filter(filter))
        if not query.strip():
            if not looked:
                self._on_activity(flt.scope)
            browsed = SearchResults(
                [SearchHit(e, 0.0, "recent") for e in self._store.facts.recent(flt, count)], mode="browse"
            )
            return listing.pinned_first(self._store, browsed, flt, PIN_FIRST_MAX) if pinned else browsed
        results = self._ranked(query, flt, count, mode, floor)
        if mode in ("auto", "hybrid"):  # bm25 and vector are the plain signals
            results = self._successors.forwarded(query, flt, results, count)
        needle = query.strip()
        if len(results) < count and mode != "vector":
            seen = frozenset(h.entry.id for h in results)
            extra = self._store.facts.search_substring(needle, flt, count - len(results), seen)
            results.extend(SearchHit(e, 0.0, "substring") for e in extra)
        if superseded:
            results.extend(self._superseded(query, flt, results, count, mode, floor))
        if pinned:
            results = listing.pinned_first(self._store, results, flt, PIN_FIRST_MAX)
        if not looked:
            self._on_read([h.entry.id for h in results])
            self._on_activity(flt.scope)
        return results

    def _ranked(self, query: str, flt: FactFilter, count: int, mode: str, floor: float | None) -> SearchResults:
        """Recall's hits, weighed by confidence when ``belief_authority_weight`` > 0 (seed 003)."""
        weight = self.config.belief_authority_weight
        if weight <= 0 or self._confidence is None:
            return self._recall.search(query, flt, count, mode=mode, min_similarity=floor)
        # Over-fetch: weighing in confidence can lift an entry from just below the cut.
        found = self._recall.search(query, flt, count * 2, mode=mode, min_similarity=floor)
        confidence = self._confidence([h.entry for h in found], flt.scope)
        weighed = [replace(h, score=h.score * (1.0 - weight + weight * confidence.get(h.entry.id, 0.0))) for h in found]
        weighed.sort(key=lambda hit: -hit.score)  # stable: equal scores keep recall's order
        return SearchResults(weighed[:count], mode=found.mode, notes=found.notes)

    def _superseded(
        self, query: str, flt: FactFilter, results: SearchResults, count: int, mode: str, floor: float | None
    ) -> list[SearchHit]:
        """Entries folded into another that match ``query`` and are not among ``results`` (where any such
        entry, found through ``include_archived``, is relabelled). They are archived, so they come from a
        search of the archive too; live entries take most of its places, hence the over-fetch."""
        for position, hit in enumerate(results):
            if hit.entry.superseded_by is not None:
                results[position] = SearchHit(hit.entry, hit.score, "superseded")
        archive = replace(flt, include_archived=True)
        wanted = count + self._recall.config.candidates
        found = self._recall.search(query, archive, wanted, mode=mode, min_similarity=floor)
        seen = {h.entry.id for h in results}
        folded = [h for h in found if h.entry.superseded_by is not None and h.entry.id not in seen]
        return [SearchHit(h.entry, h.score, "superseded") for h in folded[:count]]

    def browse(self, *, category: str | None = None, limit: int | None = None, scope: Scope | None = None) -> Browse:
        """The query-less look: most recently reinforced first, then the scope's full taxonomy."""
        count = validate.limit(self.config.browse_limit if limit is None else limit)
        flt = self._filter(scope, category, include_archived=False)
        entries = self._store.facts.recent(flt, count)
        taxonomy = self._store.facts.taxonomy(flt)
        self._on_activity(flt.scope)
        return Browse(entries=tuple(entries), taxonomy=tuple(taxonomy), category=flt.category_prefix)

    def list(
        self,
        *,
        filter: EntryFilter | None = None,
        order: str = "newest",
        cursor: str | None = None,
        limit: int | None = None,
        category: str | None = None,
        include_archived: bool = False,
        scope: Scope | None = None,
    ) -> Page[MemoryEntry]:
        """One page of the scope's entries that ``filter`` (and ``category``) keep, in ``order`` (``newest``,
        ``oldest``, ``recent``, ``updated``, ``importance``, ``reinforced``, ``cold``), at most ``limit``
        (1..1000, default 100) long. Pass the page's ``next_cursor`` as ``cursor`` for the next page; it is
        None on the last. Reads nothing into retention (a listing is not recall). See ``memory.listing`` for
        the paging guarantees."""
        count = validate.limit(listing.DEFAULT_PAGE if limit is None else limit)
        flt = replace(self._filter(scope, category, include_archived), entry=filters.entry_filter(filter))
        return listing.page(self._store, flt, filters.order(order), cursor, count)

    def _filter(self, scope: Scope | None, category: str | None, include_archived: bool) -> FactFilter:
        return FactFilter(
            scope=validate.scope(scope),
            now=self._clock.now(),
            category_prefix=validate.category_prefix(category),
            include_archived=validate.flag(include_archived, name="include_archived"),
        )
