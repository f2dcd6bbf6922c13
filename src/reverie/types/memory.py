"""The data model: long-term entries, their versions, scopes and the results services return.

Field semantics follow seed 000's temporal table:
- ``created_at``: first seen (agent time); on a merge, the earliest of the sources.
- ``last_seen_at``: last reinforcement by a real save event; never moved by housekeeping.
- ``updated_at``: the record was last rewritten (edits, rephrasing); ``None`` until the first rewrite;
  a reinforcement, which changes no text, leaves it alone.
- ``reinforcement_count``: distinct observations folded into this entry; starts at 1.

All datetimes are timezone-aware UTC. Entries are immutable values: a change is a new value written back
through the store, which records a version row first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

DEFAULT_AGENT = "default"
DEFAULT_CATEGORY = "general"
# Agent ids starting with this are reserved for the engine: no public entry point accepts one.
RESERVED_AGENT_PREFIX = "@"
# User-level memory (proactive memory's user_memory) of user U is stored under the reserved agent id
# "@user/U" (``user_agent``), with U as the user id: shared by every agent serving U
# (``reverie.proactive.service``). One reserved agent per user, not one for all users: every per-agent
# structure (the BM25 index, the vector index or pgvector's per-agent scan, the dream's per-agent run) then
# sees one user's memories only, so one user's recall never thins out among other users' candidates.
USER_AGENT_PREFIX = "@user/"


def user_agent(user_id: str) -> str:
    """The reserved agent id user ``user_id``'s user-level memory is stored under."""
    return USER_AGENT_PREFIX + user_id


def is_user_agent(agent_id: str) -> bool:
    """Whether ``agent_id`` is a user's reserved agent (``user_agent``)."""
    return agent_id.startswith(USER_AGENT_PREFIX)


class Tier(StrEnum):
    """The ai-memory tiers (seed 003). Working notes end with their session; episodic entries age (the
    forget sweep archives them when cold); semantic and procedural entries never decay."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


VALID_TO = "validTo"  # metadata: when a contradicted entry stopped being the current belief
SUPERSEDES = "supersedes"  # metadata: the ids of the entries a contradicting entry superseded


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory this is. Every entry and every query carries one.

    A query sees an entry when the agent ids are equal and each narrower id of the entry is either unset
    (the entry is agent-wide) or equal to the query's. So a user-scoped entry is invisible to other users
    and to queries that name no user, and agent A never sees agent B.
    """

    agent_id: str = DEFAULT_AGENT
    user_id: str | None = None
    session_id: str | None = None

    def sees(self, other: Scope) -> bool:
        """True when a query in this scope may see an entry stored under ``other``."""
        return (
            self.agent_id == other.agent_id
            and (other.user_id is None or other.user_id == self.user_id)
            and (other.session_id is None or other.session_id == self.session_id)
        )


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One long-term fact with its provenance, salience and history counters."""

    id: str
    content: str
    category: str
    tags: tuple[str, ...]
    tier: Tier
    scope: Scope
    created_at: datetime
    last_seen_at: datetime
    updated_at: datetime | None = None
    reinforcement_count: int = 1
    importance: float = 0.5
    retention: float = 1.0
    confidence: float = 0.5
    pinned: bool = False
    expires_at: datetime | None = None
    archived_at: datetime | None = None
    superseded_by: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding_model: str | None = None
    # Aging bookkeeping (core.aging): how far importance decay has been applied, and the fading sum of reads.
    decayed_through: datetime | None = None
    read_strength: float = 0.0
    read_at: datetime | None = None
    # Saved with deduplication on and not yet compared by embedding (the after-embedding semantic check).
    fold_pending: bool = False
    # Saved with an LLM configured and not yet expanded into focused facts (memory.expansion).
    expand_pending: bool = False

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def current(self) -> bool:
        """Neither archived nor superseded: what search shows and what deduplication and the dream compare
        with. An entry a later one contradicted keeps ``superseded_by`` without being archived."""
        return self.archived_at is None and self.superseded_by is None

    @property
    def valid_to(self) -> str | None:
        """When this entry stopped being the current belief (``metadata.validTo``, ISO 8601): set when a
        later entry contradicted it; None while it holds."""
        value = self.metadata.get(VALID_TO)
        return value if isinstance(value, str) else None

    @property
    def source(self) -> str | None:
        """Provenance (``user``, ``tool:<name>``, ``inferred``) or None when unknown."""
        value = self.metadata.get("source")
        return value if isinstance(value, str) else None


class Change(StrEnum):
    """Why an entry was written. The store records a version row for every change except the
    bookkeeping ones that leave the text alone (see ``Change.versioned``)."""

    CREATED = "created"
    EDITED = "edited"
    REVERTED = "reverted"  # restored to an earlier version
    ARCHIVED = "archived"
    RESTORED = "restored"  # brought back from the archive
    IMPORTANCE = "importance"
    PINNED = "pinned"  # pinned or unpinned: the text is left alone
    REINFORCED = "reinforced"  # the same fact seen again: counters move, the text does not
    EXTENDED = "extended"  # a restatement with new specifics appended to the text
    SUPERSEDED = "superseded"  # folded into another entry (``superseded_by``), archived
    CONTRADICTED = "contradicted"  # a later entry contradicts it (``superseded_by``, ``validTo``), not archived
    COMPACTED = "compacted"  # a cold entry's prose dropped by the forget sweep (its keep-tokens kept)
    HOUSEKEEPING = "housekeeping"

    @property
    def versioned(self) -> bool:
        return self not in (Change.REINFORCED, Change.HOUSEKEEPING)


@dataclass(frozen=True, slots=True)
class EntryVersion:
    """A snapshot of an entry as one write left it. Version numbers start at 1 and never repeat."""

    entry_id: str
    version: int
    change: Change
    recorded_at: datetime
    content: str
    category: str
    tags: tuple[str, ...]
    importance: float
    metadata: dict[str, Any]
    archived: bool


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A save met an earlier entry that says the opposite (``core.stance``): its id and text, how the
    stances differ (``kind``: negation, antonym, order, time; ``earlier_words`` and ``new_words``: the words
    that carry each side's stance, one side possibly none), and whether the earlier entry is now superseded by
    the new one (false under ``on_contradiction = "keep_both"``)."""

    entry_id: str
    content: str
    kind: str
    earlier_words: tuple[str, ...]
    new_words: tuple[str, ...]
    superseded: bool

    @property
    def evidence(self) -> tuple[str, ...]:
        return self.earlier_words + self.new_words

    def message(self) -> str:
        """What the caller is told, naming both texts' ids."""
        said = self.content if len(self.content) <= 80 else self.content[:79] + "…"
        why = f"{self.kind}: {', '.join(self.earlier_words) or '-'} / {', '.join(self.new_words) or '-'}"
        if self.superseded:
            return (
                f"this contradicts [{self.entry_id}] ('{said}'; {why}); saved as the current belief, "
                "the earlier entry is kept as superseded"
            )
        return f"this contradicts [{self.entry_id}] ('{said}'; {why}); both are kept as current (keep_both)"


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What a save did (seed 000's save-time deduplication).

    ``outcome``: ``created`` (a new entry), ``reinforced`` (an existing entry already said it: its counters
    moved, its text did not), ``extended`` (an existing entry took the new specifics) or ``superseded`` (a
    new entry that contradicts an existing one and is now the current belief; the earlier entry is kept,
    ``superseded_by`` the new one). ``entry`` is the entry the fact now lives in, so ``id`` is the id to use
    either way. ``contradiction`` names the earlier entry a contradicting save met (also with
    ``memory.on_contradiction = "keep_both"``, where the outcome is ``created``).
    """

    outcome: str
    entry: MemoryEntry
    notes: tuple[str, ...] = ()
    contradiction: Contradiction | None = None

    @property
    def id(self) -> str:
        return self.entry.id


@dataclass(frozen=True, slots=True)
class SaveRejection:
    """An item ``save_many(..., on_error="skip")`` did not save: its ``position`` in the input (from 0), the
    ``error`` message and the ``field`` at fault (as the ``ValidationError`` would have said, without the
    position). Its ``outcome`` is ``rejected``, so a caller can branch on ``outcome`` for every result."""

    position: int
    error: str
    field: str | None = None

    @property
    def outcome(self) -> str:
        return "rejected"


@dataclass(frozen=True, slots=True)
class HitEvidence:
    """Why a hit ranked where it did (docs/concepts.md, "Reading a hit's score").

    ``bm25`` and ``similarity`` are the raw signals (None: that signal did not find the entry);
    ``lexical`` and ``semantic`` are them as evidence in [0, 1]; ``own`` is the hit's own evidence (the
    mode's mix of the two); ``context`` what its thread and sequence neighbours lent it; ``time`` the
    boost for matching a time the query names. ``score`` = ``own`` + ``context`` + ``time``. A hit ranked by
    the query asked again by name (``matched_by = "introduction"``) has ``asked_as``, that query; its ``own``,
    ``context`` and ``time`` are scaled by ``recall.introduction_share``, its raw signals and their evidence
    are that query's. ``succeeds`` is the id of an older hit this one was ranked just above because it says
    that something changed (``recall.newer``); its gain shows in ``context``."""

    bm25: float | None = None
    similarity: float | None = None
    lexical: float = 0.0
    semantic: float = 0.0
    own: float = 0.0
    context: float = 0.0
    time: float = 0.0
    asked_as: str | None = None
    succeeds: str | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result. ``score`` is larger for better matches; ``matched_by`` says what found it: its
    own signals (``bm25``, ``vector``, ``bm25+vector``), the time the query names (``time``), a sequence
    neighbour (``neighbour``), its thread (``thread``), the query asked again by the name of someone it
    describes (``introduction``), or a fill-in (``substring``, ``recent``, ``pinned``, ``superseded``).
    ``evidence`` explains a ranked hit's score (None for fill-ins)."""

    entry: MemoryEntry
    score: float
    matched_by: str
    evidence: HitEvidence | None = None


class SearchResults(list[SearchHit]):
    """Search hits, best first (a list), plus how they were found.

    ``mode`` is ``bm25``, ``vector`` or ``hybrid`` as actually run; ``notes`` says when recall was degraded
    (no embedder, the embedder failed, entries not embedded yet) so an agent can tell.
    """

    def __init__(self, hits: list[SearchHit] | None = None, *, mode: str = "bm25", notes: tuple[str, ...] = ()):
        super().__init__(hits or [])
        self.mode = mode
        self.notes = notes


@dataclass(frozen=True, slots=True)
class CategoryCount:
    category: str
    count: int


@dataclass(frozen=True, slots=True)
class Browse:
    """A query-less look: the most recently reinforced entries, then the whole taxonomy of the scope.

    The taxonomy ignores the category filter on purpose, so a filter that matched nothing still shows
    which categories exist.
    """

    entries: tuple[MemoryEntry, ...]
    taxonomy: tuple[CategoryCount, ...]
    category: str | None = None


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """What the purge pass removed and what the high-value floor kept."""

    purged: tuple[str, ...]
    protected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts for ``reverie status``."""

    location: str
    size_bytes: int
    live: int
    archived: int
    by_tier: dict[str, int]
    by_category: dict[str, int]


@dataclass(frozen=True, slots=True)
class HealthReport:
    """The result of ``doctor``: every problem found, and what a repair fixed."""

    ok: bool
    checks: dict[str, str]
    repaired: tuple[str, ...] = ()


# A metadata value an ``EntryFilter`` compares for equality (None: the key is absent or null).
MetadataScalar = str | int | float | bool | None
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which long-term entries a search or a listing keeps: every field set must hold (AND); unset fields
    (None, empty) keep everything. The same value in the library, the API, the CLI and the agent tools.

    - ``tags_any``: the entry has at least one of these tags; ``tags_all``: it has every one of them.
    - ``source``: ``metadata.source`` equals this (``user``, ``tool:<name>``, ``inferred``, ...).
    - ``tier``: the entry's tier.
    - ``importance_min`` / ``importance_max``: importance within [min, max] (both inclusive, 0..1).
    - ``subject_from`` / ``subject_to``: the entry's subject time (``metadata.subjectTime``, or its
      ``subjectTimeStart``..``subjectTimeEnd`` range) overlaps these days (``YYYY``, ``YYYY-MM`` or
      ``YYYY-MM-DD``, both inclusive, each compared at the coarser of the two precisions); an entry with
      no subject time is left out when either is set.
    - ``created_from`` / ``created_to``: ``created_at`` in [from, to) (from inclusive, to exclusive).
    - ``updated_from`` / ``updated_to``: the last rewrite (``updated_at``, or ``created_at`` for an entry
      never rewritten) in [from, to).
    - ``pinned``: pinned (True) or not (False).
    - ``archived``: archived (True: ``archived_at`` set) or not (False).
    - ``superseded``: replaced by a later entry (True: ``superseded_by`` set, whether contradicted and
      still unarchived or folded and archived) or not (False).
    - ``metadata``: each key's value equals the given scalar, type included (``5`` is not ``"5"``; None
      matches a key that is absent or null).

    Visibility: a listing or search shows current entries only unless ``include_archived``; ``archived=True``
    or ``superseded=True`` asks for entries outside it, so either one alone widens the read to them (no
    ``include_archived`` needed; ``core.filters.reaches_retired``). False values only narrow.

    Build one freely; the services check it (``core.filters.entry_filter``) and say which field is wrong.
    """

    tags_any: tuple[str, ...] = ()
    tags_all: tuple[str, ...] = ()
    source: str | None = None
    tier: Tier | None = None
    importance_min: float | None = None
    importance_max: float | None = None
    subject_from: str | None = None
    subject_to: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    updated_from: datetime | None = None
    updated_to: datetime | None = None
    pinned: bool | None = None
    archived: bool | None = None
    superseded: bool | None = None
    # Left out of the hash (a dict is not hashable); equality still compares it.
    metadata: Mapping[str, MetadataScalar] = field(default_factory=dict, hash=False)

    @property
    def empty(self) -> bool:
        """Whether the filter keeps every entry (no field set)."""
        return self == EntryFilter()


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing: its ``items``, in the listing's order, and ``next_cursor``, the opaque token
    that asks for the page after this one (None on the last page). A walk from the first page to the last
    sees every item that existed for the whole walk exactly once, whatever is written meanwhile."""

    items: tuple[T, ...]
    next_cursor: str | None = None
