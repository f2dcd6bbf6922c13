"""Working memory (seed 000): path-namespaced scratch space with TTL expiry, and the tool-result stash.

A caller works through a view of its own namespace (``session/{id}``, ``patrol/{task}``,
``subagent/{task}``): plain keys live under it, full keys name any namespace.

Invariants:
- Writes go to the caller's own namespace only; nobody but ``ToolResultStash`` writes under ``stash/``, so
  every key a stash listing shows was parked by the loop. Reads may cross namespaces.
- Every argument is validated before the store is touched: a rejected call changes nothing.
- A namespace holds at most ``max_entries_per_namespace`` live entries: a write of a new key into a full
  namespace evicts the least recently stored ones first, in the same transaction, and says so.
- A view opened with ``background=True`` (subagents, workers) stores nothing for less than
  ``background_min_ttl_minutes``, so findings outlive the batch that made them.
- Expiry is deletion: reads never return an expired entry, and ``sweep`` removes them for good.
- ``page`` walks a listing in key order by keyset (``core.filters.keyset_page``): a rewrite never moves a
  key, so a walk from the first page to the last sees every entry live throughout exactly once, with no cap
  on how many pages.
- The bare namespace ``stash`` resolves to the stash prefix of the run executing in this thread or task
  (``ToolResultStash.run``), never to a prefix derived from the caller's namespace.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta

from reverie.clock import Clock
from reverie.core import filters, validate
from reverie.core import working_keys as keys
from reverie.core.framing import neutralise
from reverie.core.text import preview
from reverie.embed.base import Embedder
from reverie.errors import NotFound, ValidationError
from reverie.storage.base import Store
from reverie.types import Page, WorkingEntry
from reverie.working.rank import rank

# Entries a filtered listing or search examines at most (the newest first) before it says it stopped.
MAX_SCAN = 10_000
PAGE_SCAN = 200  # entries a filtered page reads at a time until it has a page of matches
OWN_HEADING = "Working memory (scratch space — use search_working_memory or get_from_working_memory to retrieve):"
PATROL_HEADING = "Patrol findings in working memory (use get_from_working_memory with the full key to read):"
NO_STASH = "no stash is reachable: no run is executing here, so there is no current stash prefix"
# The stash prefix of the run executing in this thread or async task (ToolResultStash.run sets it).
_RUN_PREFIX: ContextVar[str | None] = ContextVar("reverie_stash_run_prefix", default=None)


@dataclass(frozen=True, slots=True)
class WorkingConfig:
    """The knobs of working memory; the engine fills them from ``[working]`` (and the fusion ones from
    ``[recall]``)."""

    default_ttl_minutes: float = 5.0
    background_min_ttl_minutes: float = 240.0
    max_entries_per_namespace: int = 50
    max_value_chars: int = 1_000_000
    max_ttl_minutes: float = 43_200.0  # 30 days
    search_limit: int = 20
    list_cap: int = 500
    preview_chars: int = 120
    stash_ttl_minutes: float = 60.0
    semantic_weight: float = 0.35  # [recall]'s weight of the vector signal
    min_similarity: float | None = 0.5  # the vector floor: [recall]'s, else the model's calibrated one
    sweep_interval_minutes: float = 60.0  # writes sweep expired entries at most this often

    def __post_init__(self) -> None:
        for name in ("default_ttl_minutes", "background_min_ttl_minutes", "stash_ttl_minutes"):
            if not 0 < getattr(self, name) <= self.max_ttl_minutes:
                raise ValueError(f"{name} must be above 0 and at most max_ttl_minutes ({self.max_ttl_minutes})")


@dataclass(frozen=True, slots=True)
class WorkingSave:
    """What ``save`` stored, the entries the namespace cap evicted to make room, and notes saying so."""

    entry: WorkingEntry
    evicted: tuple[WorkingEntry, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkingHit:
    """One search match: the entry, its fused score in [0, 1], the signals that found it, a preview."""

    entry: WorkingEntry
    score: float
    matched_by: str  # bm25 | vector | bm25+vector
    preview: str


@dataclass(frozen=True, slots=True)
class WorkingSearch:
    """A search (``hits``, best first, with previews) or, without a query, a listing (``entries``, most
    recently stored first, no previews). ``resolved_prefix`` is the namespace path searched (None when the
    bare ``stash`` had no run to resolve to); ``capped``: more entries matched than were returned.
    ``next_cursor``: from ``page``, the token of the next page (None on the last page, and from ``search``)."""

    query: str | None
    resolved_prefix: str | None
    hits: tuple[WorkingHit, ...] = ()
    entries: tuple[WorkingEntry, ...] = ()
    capped: bool = False
    notes: tuple[str, ...] = ()
    next_cursor: str | None = None


def render_inventory(entries: Iterable[WorkingEntry], now: datetime) -> str:
    """Seed 000's inventory lines, one per entry, never its content:
    ``- session/abc123/emails_inbox: expires in 4m32s, category: email, tags: inbox, unread``.

    Category and tags are free text a page or a tool may have chosen, so they are shown neutralised
    (``core.framing.neutralise``: no role marker or template token survives); a key is shown as it is, so it
    stays usable, its charset (``core.working_keys``) holding no space, bracket or line break."""
    lines = []
    for entry in entries:
        line = f"- {entry.key}: expires in {keys.remaining((entry.expires_at - now).total_seconds())}"
        if entry.category:
            line += f", category: {neutralise(entry.category)}"
        if entry.tags:
            line += f", tags: {', '.join(neutralise(' '.join(tag.split())) for tag in entry.tags)}"
        lines.append(line)
    return "\n".join(lines)


def _value(value: object, max_chars: int) -> str:
    if not isinstance(value, str):
        raise ValidationError("value must be a string", field="value")
    if len(value) > max_chars:
        raise ValidationError(f"value is {len(value):,} characters; the maximum is {max_chars:,}", field="value")
    if "\x00" in value:
        raise ValidationError("value contains a NUL character", field="value")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("value is not valid Unicode text (lone surrogate)", field="value") from None
    return value


def _ttl(value: object, config: WorkingConfig) -> float:
    if value is None:
        return config.default_ttl_minutes
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError("ttl_minutes must be a number of minutes", field="ttl_minutes")
    minutes = float(value)
    if not math.isfinite(minutes) or minutes <= 0:
        raise ValidationError(f"ttl_minutes must be above 0, got {value!r}", field="ttl_minutes")
    if minutes > config.max_ttl_minutes:
        raise ValidationError(
            f"ttl_minutes is {value!r}; the maximum is {config.max_ttl_minutes:g} minutes", field="ttl_minutes"
        )
    return minutes


def _category(value: object) -> str | None:
    return None if value is None else validate.category(value, default="")


def _passes(entry: WorkingEntry, category: str | None, tags: tuple[str, ...]) -> bool:
    """The category filter matches by path segment (``email`` matches ``email/inbox``); every tag is needed."""
    if category is not None and not (
        entry.category is not None and (entry.category == category or entry.category.startswith(category + "/"))
    ):
        return False
    return all(tag in entry.tags for tag in tags)


class WorkingMemory:
    """Working memory for one store. Open a caller's view with ``for_namespace``."""

    def __init__(
        self, store: Store, clock: Clock, config: WorkingConfig | None = None, *, embedder: Embedder | None = None
    ) -> None:
        """``embedder``: when set, searches with a query fuse cosine similarity into BM25."""
        self._store = store
        self._clock = clock
        self.config = config or WorkingConfig()
        self.embedder = embedder
        self._sweep_lock = threading.Lock()
        self._last_sweep: datetime | None = None

    def for_namespace(
        self, namespace: str, *, agent_id: str = "default", background: bool = False
    ) -> WorkingMemoryView:
        """The view of a caller whose own namespace is ``namespace`` (``session/{id}``, ``patrol/{task}`` or
        ``subagent/{task}``). ``background=True`` for subagents and workers: every write then lives at least
        ``background_min_ttl_minutes``."""
        own = keys.namespace(namespace)
        agent = validate.identifier(agent_id, name="agent_id")
        if not isinstance(background, bool):
            raise ValidationError("background must be true or false", field="background")
        return WorkingMemoryView(self, own, agent, background)

    def inventory(self, namespace: str, *, agent_id: str = "default") -> list[WorkingEntry]:
        """The live entries under ``namespace`` (a namespace or any prefix of one, e.g. ``patrol``), most
        recently stored first, at most ``list_cap``: what the context builder renders (``render_inventory``)."""
        prefix = keys.prefix(namespace)
        agent = validate.identifier(agent_id, name="agent_id")
        return self._store.working.list(agent, prefix, now=self._clock.now(), limit=self.config.list_cap)

    def sweep(self) -> int:
        """Remove every expired entry for good; returns how many."""
        now = self._clock.now()
        removed = self._store.working.sweep(now)
        with self._sweep_lock:
            self._last_sweep = now
        return removed

    def maybe_sweep(self) -> int:
        """``sweep`` when the last one is ``sweep_interval_minutes`` old or more (or there was none)."""
        now = self._clock.now()
        with self._sweep_lock:
            last = self._last_sweep
            if last is not None and now - last < timedelta(minutes=self.config.sweep_interval_minutes):
                return 0
            self._last_sweep = now
        return self._store.working.sweep(now)

    # -- the one write path --------------------------------------------------------------------------
    def _write(self, entry: WorkingEntry) -> tuple[WorkingEntry, ...]:
        """Upsert ``entry`` (already validated), first evicting the least recently stored entries of its
        namespace while a new key would exceed the cap; all in one transaction. Returns the evicted."""
        self.maybe_sweep()
        repo, now = self._store.working, entry.stored_at
        under = keys.namespace_of(entry.key) + "/"
        evicted: list[WorkingEntry] = []
        with self._store.transaction():
            if repo.get(entry.agent_id, entry.key, now=now) is None:
                while repo.count(entry.agent_id, under, now=now) >= self.config.max_entries_per_namespace:
                    oldest = repo.oldest(entry.agent_id, under, now=now)
                    if oldest is None:
                        break
                    repo.delete(oldest.agent_id, oldest.key)
                    evicted.append(oldest)
            repo.put(entry)
        return tuple(evicted)

    # -- reads ---------------------------------------------------------------------------------------
    def _get(self, agent_id: str, key: str) -> WorkingEntry:
        found = self._store.working.get(agent_id, key, now=self._clock.now())
        if found is None:
            raise NotFound(f"no live working-memory entry {key!r} (never stored, expired or deleted)")
        return found

    def _candidates(
        self, agent_id: str, prefix: str, category: str | None, tags: tuple[str, ...]
    ) -> tuple[list[WorkingEntry], bool, list[str]]:
        """Up to ``list_cap`` live entries under ``prefix`` passing the filters, newest first; whether more
        passed; notes when a filter stopped at ``MAX_SCAN`` examined entries."""
        cap = self.config.list_cap
        filtered = category is not None or bool(tags)
        fetch = (MAX_SCAN if filtered else cap) + 1
        rows = self._store.working.list(agent_id, prefix, now=self._clock.now(), limit=fetch)
        notes: list[str] = []
        if filtered and len(rows) == fetch:
            notes.append(f"only the {MAX_SCAN:,} most recently stored entries under {prefix} were examined")
        kept = [e for e in rows[:MAX_SCAN] if _passes(e, category, tags)] if filtered else rows
        more = len(kept) > cap or bool(notes)
        return kept[:cap], more, notes

    def _page(
        self, agent_id: str, prefix: str, category: str | None, tags: tuple[str, ...], cursor: object, limit: int
    ) -> Page[WorkingEntry]:
        """The live entries under ``prefix`` passing the filters, in key order, after ``cursor``."""
        now, repo = self._clock.now(), self._store.working

        def read(after: tuple[object, str] | None, n: int) -> list[WorkingEntry]:
            start = None if after is None else after[1]
            if category is None and not tags:
                return repo.page(agent_id, prefix, now=now, after=start, limit=n)
            kept: list[WorkingEntry] = []
            while len(kept) < n:  # a filter reads on until it has a page (or the listing ends)
                batch = repo.page(agent_id, prefix, now=now, after=start, limit=PAGE_SCAN)
                kept.extend(e for e in batch if _passes(e, category, tags))
                if len(batch) < PAGE_SCAN:
                    break
                start = batch[-1].key
            return kept[:n]

        listing = filters.fingerprint("working", agent_id, prefix, category, tags)
        return filters.keyset_page(read, cursor, limit, listing, lambda entry: (None, entry.key))

    def _search(
        self, agent_id: str, prefix: str, query: str | None, category: str | None, tags: tuple[str, ...]
    ) -> WorkingSearch:
        resolved = prefix[:-1]
        entries, more, notes = self._candidates(agent_id, prefix, category, tags)
        if query is None:
            if more:
                notes.append(f"the listing stops at {self.config.list_cap} entries; more are stored under {resolved}")
            return WorkingSearch(None, resolved, entries=tuple(entries), capped=more, notes=tuple(notes))
        if more:
            notes.append(
                f"searched the {self.config.list_cap} most recently stored entries under {resolved}; "
                "narrow the namespace to reach older ones"
            )
        cfg = self.config
        ranked, rank_notes = rank(
            entries,
            query,
            embedder=self.embedder,
            semantic_weight=cfg.semantic_weight,
            floor=cfg.min_similarity,
            limit=cfg.search_limit,
        )
        hits = tuple(
            WorkingHit(r.entry, r.score, r.matched_by, preview(r.entry.value, cfg.preview_chars)) for r in ranked
        )
        return WorkingSearch(query, resolved, hits=hits, capped=more, notes=tuple(notes + rank_notes))


class WorkingMemoryView:
    """One caller's working memory: writes in its own namespace, reads anywhere. Made by
    ``WorkingMemory.for_namespace``; cheap, so make one per session, patrol task or subagent."""

    def __init__(self, memory: WorkingMemory, namespace: str, agent_id: str, background: bool) -> None:
        self._memory = memory
        self.namespace = namespace
        self.agent_id = agent_id
        self.background = background

    def _own_key(self, key: object) -> str:
        """The full key of a write: a plain key under the own namespace; a full key must be inside it."""
        full = keys.resolve(self.namespace, key)
        if full.split("/", 1)[0] == keys.STASH_ROOT:
            raise ValidationError(
                f"key {full!r} is under stash/, which only the tool-result stash writes; choose a key in "
                f"your own namespace {self.namespace}",
                field="key",
            )
        if not full.startswith(self.namespace + "/"):
            raise ValidationError(
                f"key {full!r} is outside your own namespace {self.namespace}; writes go to your own "
                "namespace (use a plain key, or a full key under it)",
                field="key",
            )
        return full

    def save(
        self,
        key: str,
        value: str,
        *,
        ttl_minutes: float | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> WorkingSave:
        """Store (or overwrite) ``value`` at ``key`` for ``ttl_minutes`` (default ``default_ttl_minutes``).
        Raises ``ValidationError`` for a key outside the own namespace or under ``stash/``, a bad key, a
        value longer than ``max_value_chars``, or a TTL not above 0 or above ``max_ttl_minutes``."""
        cfg = self._memory.config
        full = self._own_key(key)
        clean_value = _value(value, cfg.max_value_chars)
        minutes = _ttl(ttl_minutes, cfg)
        entry_category = _category(category)
        entry_tags = validate.tags(tags)
        notes: list[str] = []
        if self.background and minutes < cfg.background_min_ttl_minutes:
            notes.append(
                f"ttl raised from {minutes:g} to {cfg.background_min_ttl_minutes:g} minutes: background "
                "findings must outlive the batch that made them"
            )
            minutes = cfg.background_min_ttl_minutes
        now = self._memory._clock.now()
        entry = WorkingEntry(
            self.agent_id, full, clean_value, now, now + timedelta(minutes=minutes), entry_category, entry_tags
        )
        evicted = self._memory._write(entry)
        if evicted:
            names = ", ".join(e.key for e in evicted)
            notes.append(f"{self.namespace} was full ({cfg.max_entries_per_namespace} entries): evicted {names}")
        return WorkingSave(entry, evicted, tuple(notes))

    def get(self, key: str) -> WorkingEntry:
        """The live entry at ``key``: a plain key in the own namespace, a full key in any. Raises
        ``NotFound`` when there is none (never stored, expired or deleted)."""
        return self._memory._get(self.agent_id, keys.resolve(self.namespace, key))

    def delete(self, key: str) -> bool:
        """Remove an entry of the own namespace now; False when there was none. Same key rules as ``save``."""
        return self._memory._store.working.delete(self.agent_id, self._own_key(key))

    def search(
        self,
        query: str | None = None,
        *,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        namespace: str | None = None,
    ) -> WorkingSearch:
        """With a query: the best ``search_limit`` matches under ``namespace`` (default: the own one), with
        previews. Without one (or a blank one): the listing, most recently stored first, at most ``list_cap``.
        ``namespace`` may be any prefix (``patrol``, ``subagent/t1``); the bare word ``stash`` (any case) is
        the current run's stash. ``category`` matches by path segment; every tag in ``tags`` must be present."""
        clean_query = None if query is None else validate.query(query)
        if clean_query is not None and not clean_query.strip():
            clean_query = None
        clean_category = validate.category_prefix(category)
        clean_tags = validate.tags(tags)
        prefix = self._prefix(namespace)
        if prefix is None:
            return WorkingSearch(clean_query, None, notes=(NO_STASH,))
        return self._memory._search(self.agent_id, prefix, clean_query, clean_category, clean_tags)

    def page(
        self,
        *,
        cursor: str | None = None,
        limit: int | None = None,
        category: str | None = None,
        tags: Sequence[str] | None = None,
        namespace: str | None = None,
    ) -> WorkingSearch:
        """The listing a page at a time, in key order (stable: a walk by ``next_cursor`` sees every entry
        live throughout exactly once, however many there are), at most ``limit`` (1..1000, default
        ``list_cap``) per page. ``namespace``, ``category`` and ``tags`` as in ``search``; a cursor from
        another listing is refused (``ValidationError`` on ``cursor``)."""
        default = min(self._memory.config.list_cap, 1000)
        count = validate.limit(default if limit is None else limit)
        clean_category = validate.category_prefix(category)
        clean_tags = validate.tags(tags)
        prefix = self._prefix(namespace)
        if prefix is None:
            return WorkingSearch(None, None, notes=(NO_STASH,))
        found = self._memory._page(self.agent_id, prefix, clean_category, clean_tags, cursor, count)
        return WorkingSearch(None, prefix[:-1], entries=found.items, next_cursor=found.next_cursor)

    def _prefix(self, namespace: str | None) -> str | None:
        """The key prefix ``namespace`` names (see ``search``); None for ``stash`` with no run executing."""
        if namespace is None:
            return self.namespace + "/"
        if isinstance(namespace, str) and namespace.strip().lower() == keys.STASH_ROOT:
            run = _RUN_PREFIX.get()
            return None if run is None else run + "/"
        return keys.prefix(namespace)

    def inventory(self) -> list[WorkingEntry]:
        """The own namespace's live entries for the context builder (``render_inventory``)."""
        return self._memory.inventory(self.namespace, agent_id=self.agent_id)


class ToolResultStash:
    """The tool-result stash (seed 000): oversized tool results parked at ``stash/{session}/{call}``.

    The one place that builds stash keys. The prefix follows the session id of the run, never a caller's
    namespace (a subagent's tools write under ``subagent/{task}`` but its run stashes under its own run
    session id). ``run`` binds the current run's prefix for this thread or async task, which is how a
    search for the bare namespace ``stash`` finds it.
    """

    def __init__(self, working: WorkingMemory) -> None:
        self._working = working

    @staticmethod
    def prefix(session_id: str) -> str:
        """``stash/{session_id}``."""
        return f"{keys.STASH_ROOT}/{keys.segment(session_id, field='session_id')}"

    @staticmethod
    def key(session_id: str, call_id: str) -> str:
        """``stash/{session_id}/{call_id}``."""
        return f"{ToolResultStash.prefix(session_id)}/{keys.segment(call_id, field='call_id')}"

    def park(self, agent_id: str, session_id: str, call_id: str, tool_name: str, content: str) -> WorkingEntry:
        """Store a tool result's full original for ``stash_ttl_minutes``, tagged ``stash``, ``tool-result``
        and ``tool:{tool_name}``. Parking the same call again overwrites it; a full stash namespace evicts
        its least recently stored entry."""
        cfg = self._working.config
        agent = validate.identifier(agent_id, name="agent_id")
        key = self.key(session_id, call_id)
        tool = validate.identifier(tool_name, name="tool_name")
        tags = validate.tags(["stash", "tool-result", f"tool:{tool}"])
        value = _value(content, cfg.max_value_chars)
        now = self._working._clock.now()
        entry = WorkingEntry(agent, key, value, now, now + timedelta(minutes=cfg.stash_ttl_minutes), None, tags)
        self._working._write(entry)
        return entry

    @contextmanager
    def run(self, session_id: str) -> Iterator[str]:
        """Bind the stash prefix of the run of ``session_id`` for this thread or async task while the block
        runs (nested runs restore the outer one); yields the prefix."""
        bound = self.prefix(session_id)
        token = _RUN_PREFIX.set(bound)
        try:
            yield bound
        finally:
            _RUN_PREFIX.reset(token)

    @staticmethod
    def current_prefix() -> str | None:
        """The stash prefix of the run executing in this thread or async task, or None outside a run."""
        return _RUN_PREFIX.get()
