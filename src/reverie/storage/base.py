"""The storage contract. Every backend implements these Protocols and passes ``tests/contract/``.

Rules every backend keeps (DESIGN.md, "Storage contract"):
- Scope is in every query. A read never returns an entry its ``Scope`` cannot see (``Scope.sees``).
- Every write that changes text records a version row in the same transaction, before it returns.
- "Delete" is archive. Only ``FactRepository.purge`` hard-deletes, and never above the high-value floor.
- A write that raises leaves the store as it was.
- Time is passed in: repositories never read a clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from reverie.storage.graph import GraphRepository
from reverie.storage.kv import KvRepository
from reverie.storage.logs import ActivityLogRepository, InjectedRepository, LogName, LogRow, SessionWrites
from reverie.storage.repositories import (
    ApiKeyRepository,
    DreamLease,
    DreamLockState,
    DreamRepository,
    LedgerStamp,
    SessionRepository,
    UsageRepository,
    WorkingRepository,
)
from reverie.storage.skills import FeedbackRepository, SkillRepository
from reverie.types import (
    ApiKey,
    CategoryCount,
    Change,
    CoUsage,
    DreamRun,
    Entity,
    EntryFilter,
    EntryVersion,
    Evidence,
    Feedback,
    HealthReport,
    KvItem,
    MemoryEntry,
    Relation,
    Scope,
    SessionRecord,
    Skill,
    SkillUsage,
    SkillVersion,
    StoreStats,
    Tier,
    TurnCounts,
    TurnRecord,
    UsageRow,
    UsageSummary,
    WorkingEntry,
)

__all__ = [
    "ActivityLogRepository",
    "InjectedRepository",
    "LogName",
    "LogRow",
    "SessionWrites",
    "CoUsage",
    "Feedback",
    "FeedbackRepository",
    "Skill",
    "SkillRepository",
    "SkillUsage",
    "SkillVersion",
    "Entity",
    "GraphRepository",
    "KvItem",
    "KvRepository",
    "Relation",
    "ApiKey",
    "ApiKeyRepository",
    "DreamLease",
    "DreamLockState",
    "DreamRepository",
    "DreamRun",
    "Evidence",
    "FactCandidate",
    "FactFilter",
    "FactRepository",
    "LedgerStamp",
    "MetaRepository",
    "NearestVectors",
    "PurgeRule",
    "PurgedRecord",
    "SessionRecord",
    "SessionRepository",
    "Store",
    "StoreOptions",
    "TextRow",
    "TextSnapshot",
    "TurnCounts",
    "TurnRecord",
    "UsageRepository",
    "UsageRow",
    "UsageSummary",
    "VectorRepository",
    "VectorSnapshot",
    "VersionRepository",
    "WorkingEntry",
    "WorkingRepository",
]


@dataclass(frozen=True, slots=True)
class FactFilter:
    """What a read may return: the caller's scope plus the usual narrowing.

    ``now`` hides entries whose ``expires_at`` has passed; ``include_archived`` shows archived ones too, and so
    does an ``entry`` filter with ``archived`` or ``superseded`` true (``core.filters.reaches_retired``).
    ``entry`` narrows by the entry's fields (tags, source, tier, importance, times, pinned, metadata): a
    checked ``EntryFilter`` (``core.filters.entry_filter``), applied in SQL by every read that takes the filter.
    """

    scope: Scope
    now: datetime
    category_prefix: str | None = None
    include_archived: bool = False
    entry: EntryFilter | None = None


@dataclass(frozen=True, slots=True)
class PurgeRule:
    """Hard-delete entries archived at or before ``archived_before``, except the high-value ones.

    Tombstones (entries the forget sweep archived: ``metadata.forgotten``) keep longer when
    ``tombstones_before`` is set: they go only when archived at or before it (seed 003: 180 days).
    ``purged_at`` is the time the purge log records for each deleted entry (None: ``archived_before``).
    """

    archived_before: datetime
    protect_importance: float
    protect_reinforcement: int
    agent_id: str | None = None  # None: every agent (the maintenance sweep)
    tombstones_before: datetime | None = None
    purged_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class PurgedRecord:
    """One entry ``FactRepository.purge`` hard-deleted: the purge log, so an audit can tell a purge from a
    deletion made any other way."""

    fact_id: str
    agent_id: str
    purged_at: datetime


@dataclass(frozen=True, slots=True)
class TextRow:
    """What a lexical index needs of an entry: its searchable text, its scope below the agent, and whether
    it is archived (expiry is left to the caller's hydration through ``get_many``)."""

    content: str
    tags: tuple[str, ...]
    category: str
    user_id: str | None
    session_id: str | None
    archived: bool


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """What recall ranks a candidate entry by, read without the rest of its row (content, tags, scope,
    counters, the vector's model): a search weighs hundreds of candidates and returns a few, so it reads
    these for the candidates and whole entries (``get_many``) for its hits only. The fields are the
    entry's own, as ``MemoryEntry`` holds them; ranking reads ``metadata``'s thread, position and subject
    times."""

    id: str
    created_at: datetime
    last_seen_at: datetime
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TextSnapshot:
    """The searchable state of one agent's entries as of change-log position ``watermark``.

    ``rows`` holds ``(fact_id, row)``, where ``row`` is None when the entry no longer exists (purged).
    """

    watermark: int
    rows: list[tuple[str, TextRow | None]]


class FactRepository(Protocol):
    """Long-term entries."""

    def add(self, entry: MemoryEntry, *, at: datetime) -> None:
        """Insert a new entry and its version 1. Raises ``Conflict`` when the id exists."""
        ...

    def write(self, entry: MemoryEntry, *, change: Change, at: datetime) -> None:
        """Replace the stored entry with ``entry`` (same id, same scope), recording a version row when
        ``change.versioned`` or the text (content, category, tags) changed. Raises ``NotFound``."""
        ...

    def get(self, entry_id: str, scope: Scope) -> MemoryEntry | None:
        """The entry, archived or not, when ``scope`` can see it."""
        ...

    def fold_pending(self, entry_ids: list[str]) -> set[str]:
        """Which of ``entry_ids`` wait for the after-embedding duplicate check (``fold_pending``)."""
        ...

    def read_states(self, entry_ids: list[str]) -> dict[str, tuple[Tier, float, datetime | None]]:
        """The read accumulator of each of ``entry_ids`` that exists (any scope, archived included): its tier,
        ``read_strength`` and ``read_at``. Inside a transaction the rows stay locked until it ends (for a
        read-modify-write with ``write_reads``)."""
        ...

    def write_reads(self, reads: list[tuple[str, float, datetime]]) -> None:
        """Set ``read_strength`` and ``read_at`` of each ``(id, strength, at)``, and nothing else (housekeeping:
        no version, no change-log row), as one batched statement. Unknown ids are skipped."""
        ...

    def owner(self, entry_id: str) -> Scope | None:
        """The scope an entry was saved in, or None for an unknown id. For background passes handed ids by
        the store itself (the embedding worker); they then read through ``get`` with that scope."""
        ...

    def get_many(self, entry_ids: list[str], flt: FactFilter) -> list[MemoryEntry]:
        """The entries among ``entry_ids`` that ``flt`` lets through (scope, archived, expiry, category),
        in no particular order. Unknown ids are skipped: this is how untrusted candidate ids (from a vector
        index or an external backend) are hydrated."""
        ...

    def neighbours(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[MemoryEntry]:
        """Entries visible through ``flt`` whose ``metadata.thread`` / ``metadata.position`` is one of
        ``keys`` (sequence neighbours: the turns of a conversation, the chunks of a document)."""
        ...

    def in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[MemoryEntry]:
        """Up to ``limit`` entries visible through ``flt`` saved between the days ``first_day`` and
        ``last_day`` (``YYYY-MM-DD``, both included, UTC) or whose ``metadata.subjectTime`` (a year, month,
        day or date and time) overlaps them; the most recently created first."""
        ...

    def candidates(self, entry_ids: list[str], flt: FactFilter) -> list[FactCandidate]:
        """``get_many``'s entries as ``FactCandidate`` rows: the same filter, the same entries."""
        ...

    def neighbour_candidates(self, keys: list[tuple[str, int]], flt: FactFilter) -> list[FactCandidate]:
        """``neighbours``' entries as ``FactCandidate`` rows."""
        ...

    def candidates_in_period(self, flt: FactFilter, first_day: str, last_day: str, limit: int) -> list[FactCandidate]:
        """``in_period``'s entries as ``FactCandidate`` rows, in the same order."""
        ...

    def search(self, match: str, flt: FactFilter, limit: int) -> list[tuple[MemoryEntry, float]]:
        """BM25 full-text search. ``match`` is an FTS expression built by ``core.text.fts_match``.
        Scores are positive, larger is better."""
        ...

    def search_substring(self, needle: str, flt: FactFilter, limit: int, exclude: frozenset[str]) -> list[MemoryEntry]:
        """Entries whose content, tags or category contain ``needle`` (case-insensitive, Unicode-aware),
        most recently reinforced first: the fallback that lets the index only ever add matches."""
        ...

    def recent(self, flt: FactFilter, limit: int) -> list[MemoryEntry]:
        """Most recently reinforced first (``last_seen_at`` descending)."""
        ...

    def taxonomy(self, flt: FactFilter) -> list[CategoryCount]:
        """Every category with live entries visible to the scope (ignores ``category_prefix``)."""
        ...

    def purge(self, rule: PurgeRule) -> tuple[list[str], list[str]]:
        """Hard-delete per ``rule`` (with their versions and vectors); returns (purged, protected) ids. Each
        purged entry leaves a ``PurgedRecord`` in the purge log, written in the same transaction as the delete
        (``purged_at`` = ``rule.purged_at``, or ``rule.archived_before`` when that is None)."""
        ...

    def purge_log(self, since: datetime | None = None, agent_id: str | None = None) -> list[PurgedRecord]:
        """The purge log, oldest first: records purged at or after ``since`` (all when None), of one agent
        (every agent when None)."""
        ...

    def agents(self) -> list[str]:
        """Every agent id with at least one entry, archived included, sorted."""
        ...

    def expansion_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(position, fact_id)`` of entries waiting for the background expansion
        (``expand_pending``), in every scope and archived or not, in insertion order, starting after
        position ``after`` (a cursor, so a run passes an entry it leaves pending). The expansion queue then
        reads each through ``owner`` and ``get``."""
        ...

    def queue_graph_extraction(self, entry_id: str, agent_id: str, *, at: datetime) -> None:
        """Put an entry in the knowledge graph's extraction queue (``memory.graph_extraction``); an entry
        already queued keeps its place. Called inside the save's transaction, so the queue is durable."""
        ...

    def graph_extraction_pending(self, limit: int, *, after: int = 0) -> list[tuple[int, str]]:
        """Up to ``limit`` ``(position, entry_id)`` of queued entries, every agent, in queue order, starting
        after position ``after`` (a cursor, as ``expansion_pending``). Ids of entries purged since are
        listed too: the queue reads each through ``owner`` and ``get``."""
        ...

    def graph_extraction_done(self, entry_id: str) -> bool:
        """Take an entry out of the extraction queue; False when it was not queued (another worker took it
        first: inside a transaction this is the claim that makes one worker's writes count)."""
        ...

    def iter_all(self, agent_id: str | None = None) -> Iterator[MemoryEntry]:
        """Every entry, archived included, ordered by id: for copy, reindex and audits."""
        ...

    def page(self, flt: FactFilter, order: str, after: tuple[Any, str] | None, limit: int) -> list[MemoryEntry]:
        """Up to ``limit`` entries ``flt`` lets through, in ``order`` (a name of ``core.filters.ORDERS``: its
        key, then the id, both the same direction), strictly after position ``after`` (the previous page's
        last order key, as ``core.filters.order_key`` gives it, and id; None: from the start). Keyset paging,
        never an offset: rows written or removed elsewhere never shift a later page."""
        ...

    def text_snapshot(self, agent_id: str) -> TextSnapshot:
        """The searchable state of every entry of one agent (archived included, in insertion order), and
        the change-log position it reflects. The position is read first, so a change committed meanwhile
        is replayed by the next ``text_changes`` (harmlessly, as it is already in the rows)."""
        ...

    def log_position(self, agent_id: str) -> int:
        """The change-log position ``text_changes`` counts from, now (0 when the log is empty): an entry of the
        agent whose searchable state changes after this call is listed by ``text_changes`` after it."""
        ...

    def text_changes(self, agent_id: str, after: int) -> TextSnapshot:
        """The current searchable state (or None: purged) of every entry of the agent whose content, tags,
        category, scope, archived state or expiry changed after log position ``after``. The returned
        watermark is the log's position; one below ``after`` means the log was replaced (a restored
        backup) and the caller must start again from ``text_snapshot``."""
        ...


class VersionRepository(Protocol):
    """The history of every entry. Append-only; purge removes the rows of purged entries only."""

    def history(self, entry_id: str, scope: Scope) -> list[EntryVersion]:
        """All versions, oldest first; empty when the entry is not visible to ``scope``."""
        ...

    def get(self, entry_id: str, version: int, scope: Scope) -> EntryVersion | None: ...

    def page(self, entry_id: str, scope: Scope, after: int | None, limit: int) -> list[EntryVersion]:
        """Up to ``limit`` versions of the entry, oldest first, numbers above ``after`` only (None: from 1)."""
        ...


@dataclass(frozen=True, slots=True)
class VectorSnapshot:
    """What an in-memory index needs: the vectors of one agent and model as of ``watermark``.

    ``vectors`` holds ``(fact_id, vector)`` where ``vector`` is float32 bytes, or None when the fact has no
    vector of that model any more (dropped: the text changed, the entry was purged, a re-embed is due).
    """

    watermark: int
    vectors: list[tuple[str, bytes | None]]


class VectorRepository(Protocol):
    """Embeddings of long-term entries, one per entry, tagged with the model that made it.

    A vector always matches its entry's current text: a rewrite drops it, and ``put_many`` writes only
    when the text it was computed from is still current. Every write and drop is logged, so indexes held
    in memory by any process can catch up with ``changes``.
    """

    def put_many(self, rows: list[tuple[str, str, bytes]], *, model: str, dim: int, at: datetime) -> int:
        """Store ``(fact_id, embedded_text, vector)`` rows; a row whose entry's content is no longer
        ``embedded_text`` (or which is gone) is skipped. Returns how many were written."""
        ...

    def pending(self, model: str, limit: int, after: int = 0) -> list[tuple[int, str, str]]:
        """Up to ``limit`` ``(position, fact_id, content)`` of entries with no vector of ``model``, in
        insertion order, starting after ``position`` ``after`` (a cursor, so a long run stays linear)."""
        ...

    def snapshot(self, agent_id: str, model: str) -> VectorSnapshot:
        """Every vector of ``model`` for one agent, and the log position it reflects."""
        ...

    def changes(self, agent_id: str, model: str, after: int) -> VectorSnapshot:
        """The current vector (or None) of every fact whose vector changed after log position ``after``."""
        ...

    def counts(self) -> dict[str, int]:
        """How many vectors each model has."""
        ...


@runtime_checkable
class NearestVectors(Protocol):
    """A vector repository that answers nearest-neighbour queries itself (pgvector), so recall needs no
    vector index in the process (``recall.vector_backend = "store"``, or ``"auto"`` on such a store).

    Optional: a backend without it is searched through the in-memory ``VectorIndex``.
    """

    def nearest(self, agent_id: str, model: str, query: bytes, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` ``(fact_id, cosine similarity)`` of the agent's vectors of ``model`` nearest ``query``
        (float32 bytes), best first. Candidates only, as the in-memory index's: archived entries included,
        and the caller hydrates them through ``FactRepository.get_many`` with its filter. The search may be
        approximate (an HNSW index); the scores are the exact cosines. Vectors of another dimension than the
        query's are never candidates."""
        ...

    def index_all(self) -> None:
        """Build the search structures of every stored (model, dimension): after vectors arrived in bulk
        (``reverie copy``, a restored backup), so the first search does not pay for it."""
        ...


class MetaRepository(Protocol):
    """Small store-wide facts (the active embedding model)."""

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...


class Store(Protocol):
    """One backend: its repositories, transactions and maintenance."""

    @property
    def url(self) -> str: ...

    @property
    def read_only(self) -> bool:
        """Opened read-only (``OpenMode`` "ro", or "read" on a file that cannot be written): every write
        raises ``StorageError``."""
        ...

    @property
    def facts(self) -> FactRepository: ...

    @property
    def versions(self) -> VersionRepository: ...

    @property
    def vectors(self) -> VectorRepository: ...

    @property
    def meta(self) -> MetaRepository: ...

    @property
    def dream(self) -> DreamRepository: ...

    @property
    def working(self) -> WorkingRepository: ...

    @property
    def sessions(self) -> SessionRepository: ...

    @property
    def keys(self) -> ApiKeyRepository: ...

    @property
    def usage(self) -> UsageRepository: ...

    @property
    def logs(self) -> ActivityLogRepository:
        """The conversation, execution and tool-call logs (``storage.logs``)."""
        ...

    @property
    def injected(self) -> InjectedRepository:
        """The context builder's delta filter (``storage.logs``)."""
        ...

    @property
    def kv(self) -> KvRepository: ...

    @property
    def graph(self) -> GraphRepository: ...

    @property
    def skills(self) -> SkillRepository: ...

    @property
    def feedback(self) -> FeedbackRepository: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Group writes into one atomic unit (replacement before retirement). Repositories used inside
        it write through it. A nested call is a savepoint: it commits with the outer transaction, and an
        exception inside it undoes only the nested writes (the outer block may catch it and go on)."""
        ...

    def in_transaction(self) -> bool:
        """Whether this thread is inside ``transaction()``: its writes are not yet visible to other
        threads, so work that must see them (a search right after a write) stays on this thread."""
        ...

    def migrations(self) -> list[tuple[str, datetime]]:
        """Applied migrations, in order, with when they were applied."""
        ...

    def stats(self) -> StoreStats: ...

    def check(self, *, repair: bool = False, quick: bool = False) -> HealthReport:
        """Integrity, index consistency; with ``repair``, rebuild what can be rebuilt (never on a store that
        fails its integrity check). ``quick``: only a fast integrity check (a server's start)."""
        ...

    def backup(self, destination: Path) -> None:
        """A consistent copy, safe while other processes write."""
        ...

    def restore_backup(self, source: Path) -> None:
        """Replace the store's contents with a backup, atomically."""
        ...

    def vacuum(self) -> None: ...

    def close(self) -> None: ...

    # -- rows, for moving a store between backends (``storage.portable``) ------------------------------
    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        """Every row of the portable ``table`` (``storage.portable.TABLES``), one dict per row keyed by the
        catalog's column names, as Python values of each column's kind: str, int, float, bool, an aware UTC
        datetime, a JSON value (dict, list, ...), float32 bytes for a vector; None for NULL. Derived columns
        (PostgreSQL's ``search_text``) and the ``seq`` columns that only order rows are left out.

        Order: insertion order (``seq``) for the tables the catalog orders so, else primary-key order with
        text compared byte-wise, the same on every backend. Reads run inside ``read_snapshot`` when one is
        open on this thread. A stored timestamp that cannot be read back raises ``StorageError``, except in
        the dream ledger (the row is left out: unreadable means the pass runs once) and the dream locks (it
        reads as None: an unreadable lease counts as expired); see ``Table.on_damage``."""
        ...

    def import_rows(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        """Insert ``rows`` (shaped as ``export_rows`` yields them) into ``table``, in order, in batches;
        returns how many. Joins the caller's ``transaction()`` when one is open, else runs in its own.
        Triggers fire as for any insert (full-text index, change logs), so rows of ``facts`` go in before
        their ``fact_vectors``. Raises ``Conflict`` on a duplicate key."""
        ...

    def count_rows(self, table: str) -> int:
        """How many rows the portable ``table`` holds."""
        ...

    def delete_rows(self, table: str) -> int:
        """Delete every row of the portable ``table`` (joining the caller's transaction); returns how many.
        Triggers fire: deleting ``facts`` logs every entry, so in-memory indexes of any process replay it."""
        ...

    def read_snapshot(self) -> AbstractContextManager[None]:
        """Inside it, this thread's reads of the store see one consistent state (other processes may go on
        writing). For reads only: a write on this thread inside it raises. Joins an open transaction."""
        ...


OpenMode = Literal["rw", "read", "ro"]
"""How a store is opened. "rw": read and write, a missing store is created. "read" (read commands): the
store must exist; it is opened read-only when its file cannot be written, else as "rw". "ro": read-only,
the store must exist. No mode turns an existing file that is not a store into one."""


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Backend tuning the engine passes down from Settings."""

    busy_timeout_ms: int = 10_000
    lock_wait_seconds: float = 60.0
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    pool_size: int = 10  # PostgreSQL: connections per process
    # PostgreSQL: how long a call waits for the database server (a new connection, a pooled one while none
    # can be made) before StoreUnavailable; separate from lock_wait_seconds, the wait for a busy store.
    connect_timeout_seconds: float = 5.0
