"""A LangGraph store kept in Reverie: ``ReverieStore`` (docs/portability.md, "LangGraph and LangMem").

One LangGraph item is one long-term entry of the store's agent:
- namespace: the agent is the store's ``agent_id``; the label at ``user_at`` (when set) is the entry's user
  (``Scope.user_id``, so Reverie's per-user isolation holds); the whole namespace is the category
  ``langgraph/<label>/…`` (labels lower-cased, other characters as ``-``: a path to browse) and, exactly,
  ``metadata.langgraph.namespace``.
- key: the entry id is a hash of (agent, namespace, key) (``entry_id``), so a put with a key that exists
  rewrites that entry as a new version, never a second entry; the key is ``metadata.langgraph.key``.
- value: kept whole in ``metadata.langgraph.value`` (JSON, lossless); the entry's content is the text at the
  ``index`` paths (the store's ``fields``, by default ``$``: the whole value as JSON), which BM25 and the
  embedder index. ``index=False`` indexes only the namespace and key.
- delete: archive, as everywhere in Reverie: the item is gone for get, search and list_namespaces, its
  entry stays (with every version) until the purge pass; a put with the same key brings it back.
- TTL (minutes): ``expires_at`` = the last write (or read, with ``refresh_ttl``) + ttl; an expired item is
  never returned; the dream's forget sweep archives it (still pinned, so the purge pass spares it; a put
  revives it).

Invariants:
- Every op of a batch is checked before any is applied, so a batch with a bad op changes nothing.
- A live item's entry is pinned: the dream's consolidation and rewrite passes leave an application's values
  as written; delete unpins it, so the purge pass may remove it after the archive retention.
- Only the agent's entries carrying ``metadata.langgraph`` under the ``langgraph`` category are items: its
  other memories never show in get, search or list_namespaces.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
)

from reverie.core import validate
from reverie.engine import Reverie
from reverie.errors import Conflict, ValidationError
from reverie.storage.base import FactFilter
from reverie.types import DEFAULT_AGENT, Change, MemoryEntry, Scope, Tier

ROOT = "langgraph"  # the category every item lives under, and its metadata key
SOURCE = "tool:langgraph"  # provenance of every item
SEGMENT_CHARS = 40  # a namespace label's slug in the category is cut here (the category is for reading)
FETCH_MAX = 1000  # the most hits one ranked search asks memory search for (its limit's maximum)
Scored = tuple[MemoryEntry, float | None]  # an item's entry and its search score (None: listed, not ranked)
_SLACK = 20  # fetched beyond offset + limit: entries the exact namespace or the filter may drop
_NOT_SLUG = re.compile(r"[^a-z0-9_-]+")
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def entry_id(agent_id: str, namespace: tuple[str, ...], key: str) -> str:
    """The id of the entry that holds ``key`` in ``namespace`` for ``agent_id``: 12 hex characters, as every
    entry id, derived so a put finds its entry without an index (48 bits: a clash is refused, ``Conflict``)."""
    blob = json.dumps([agent_id, list(namespace), key])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def category_of(namespace: Sequence[str]) -> str:
    """``langgraph/<slug>/…``: each label lower-cased, runs of other characters as ``-``, cut at
    ``SEGMENT_CHARS``; labels past the category length limit are left out. A prefix of a namespace always
    maps to a prefix of its category, so the category narrows a search by namespace prefix."""
    segments = [ROOT]
    for label in namespace:
        slug = _NOT_SLUG.sub("-", label.lower())[:SEGMENT_CHARS] or "-"
        if len(segments) + sum(map(len, segments)) + len(slug) > validate.MAX_CATEGORY_CHARS:
            break
        segments.append(slug)
    return "/".join(segments)


class _Taken(Exception):
    """A new entry's insert met its id taken (rolls the put's transaction back, to try again)."""


@dataclass(frozen=True, slots=True)
class _Write:
    """A checked put with a value: where it goes and what it stores."""

    op: PutOp
    scope: Scope
    id: str
    content: str
    metadata: dict[str, Any]


class ReverieStore(BaseStore):
    """A LangGraph ``BaseStore`` over an open ``reverie.Reverie`` engine (which the caller opens and closes).

    ``agent_id``: the Reverie agent every item belongs to. ``user_at``: the position of the namespace label
    that names the user (``("memories", "<user>")``: 1), or None when no label does (items are agent-wide).
    ``fields``: the JSON paths whose text is indexed when a put gives no ``index`` (``$``: the whole value).
    ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``); expired items are always
    omitted, and the dream's forget sweep archives them (no sweeper thread here)."""

    supports_ttl = True

    def __init__(
        self,
        engine: Reverie,
        *,
        agent_id: str = DEFAULT_AGENT,
        user_at: int | None = None,
        fields: Sequence[str] = ("$",),
        ttl: TTLConfig | None = None,
    ) -> None:
        if user_at is not None and (isinstance(user_at, bool) or not isinstance(user_at, int) or user_at < 0):
            raise ValidationError("user_at must be a label position from 0, or None", field="user_at")
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ValidationError("fields must be a list of JSON paths such as '$' or 'text'", field="fields")
        self.engine = engine
        self.agent_id = validate.agent_id(agent_id)
        self.user_at = user_at
        self.fields = list(fields)
        self.ttl_config = ttl

    # -- the batch ---------------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, one result each (None for a put). Every op is checked first."""
        checked = [self._check(op) for op in ops]
        return [self._run(op) for op in checked]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread: the engine is synchronous (SQLite, or PostgreSQL through a pool)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: GetOp | SearchOp | ListNamespacesOp | PutOp | _Write) -> Result:
        if isinstance(op, _Write):
            self._put(op)
            return None
        if isinstance(op, PutOp):
            self._delete(op)
            return None
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._list_namespaces(op)

    # -- checking ----------------------------------------------------------------------------------------
    def _check(self, op: object) -> GetOp | SearchOp | ListNamespacesOp | PutOp | _Write:
        """The op, validated (a put with a value prepared as a ``_Write``); raises before anything is written."""
        if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
            raise ValidationError(f"unknown store operation {type(op).__name__}", field="ops")
        _check_labels(op)
        if isinstance(op, GetOp):
            self._scope(op.namespace)
            return op
        if isinstance(op, SearchOp):
            _count(op.limit, "limit")
            _count(op.offset, "offset")
            if op.query is not None:
                validate.query(op.query)
            _check_filter(op.filter)
            self._scopes_checked(op.namespace_prefix)
            return op
        if isinstance(op, ListNamespacesOp):
            _count(op.limit, "limit")
            _count(op.offset, "offset")
            if op.max_depth is not None:
                _count(op.max_depth, "max_depth")
            return op
        return self._check_put(op)

    def _check_put(self, op: PutOp) -> PutOp | _Write:
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.namespace[0] == ROOT:
            raise InvalidNamespaceError(f'Root label for namespace cannot be "{ROOT}". Got: {op.namespace}')
        if not isinstance(op.key, str):
            raise ValidationError("key must be a string", field="key")
        scope = self._scope(op.namespace)
        if op.value is None:
            return op
        if not isinstance(op.value, Mapping):
            raise ValidationError("value must be a mapping of strings to JSON values", field="value")
        ttl = op.ttl
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0):
            raise ValidationError("ttl must be a positive number of minutes, or None", field="ttl")
        item = {"namespace": list(op.namespace), "key": op.key, "value": dict(op.value), "ttl": ttl}
        try:
            metadata = validate.metadata({"source": SOURCE, ROOT: item})
        except ValidationError as exc:
            raise ValidationError(f"value: {exc}", field="value") from None
        content = self._content(op)
        return _Write(op, scope, entry_id(self.agent_id, op.namespace, op.key), content, metadata)

    def _content(self, op: PutOp) -> str:
        """The text to index: the ``index`` paths' text (the store's ``fields`` when None), one per line; the
        namespace and key when ``index`` is False or the paths hold no text. Cut at the content maximum."""
        assert op.value is not None
        paths = [] if op.index is False else (self.fields if op.index is None else op.index)
        if isinstance(paths, str) or not all(isinstance(p, str) for p in paths):
            raise ValidationError("index must be False, None or a list of JSON paths", field="index")
        texts: list[str] = []
        for path in paths:
            try:
                texts.extend(get_text_at_path(op.value, path))
            except (ValueError, IndexError, KeyError, TypeError) as exc:
                raise ValidationError(f"index path {path!r}: {exc}", field="index") from None
        text = "\n".join(texts).replace("\x00", "").strip()
        if not text:
            text = "/".join(op.namespace) + f": {op.key}".rstrip()
        return text[: self.engine.memory.config.max_content_chars]

    def _scope(self, namespace: Sequence[str]) -> Scope:
        """The scope an item of ``namespace`` is stored in (its user label checked as a Reverie id)."""
        user = None
        if self.user_at is not None and len(namespace) > self.user_at:
            user = validate.identifier(namespace[self.user_at], name="user_id")
        return Scope(self.agent_id, user)

    def _scopes_checked(self, prefix: Sequence[str]) -> None:
        if self.user_at is not None and len(prefix) > self.user_at:
            self._scope(prefix)

    # -- get, put, delete --------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        now = self.engine.clock.now()
        entry = self.engine.store.facts.get(entry_id(self.agent_id, op.namespace, op.key), self._scope(op.namespace))
        if entry is None or not _live(entry, now) or _owned(entry, op.namespace, op.key) is None:
            return None
        if op.refresh_ttl:
            entry = self._refresh([entry], now)[0]
        return _item(entry)

    def _put(self, write: _Write) -> None:
        """Create the item's entry, or rewrite it as a new version (reviving it when archived or expired)."""
        # A second attempt when another writer created the key between our read and our insert (PostgreSQL lets
        # both read "absent"): our insert rolled back, and the entry is there to rewrite now.
        if not self._put_once(write) and not self._put_once(write):
            raise Conflict(f"entry {write.id} (derived from key {write.op.key!r}) is taken in another scope")
        if self.engine.embedding is not None:
            self.engine.embedding.notify()  # the new text waits for its vector; BM25 finds it meanwhile

    def _put_once(self, write: _Write) -> bool:
        """One attempt at ``_put`` in one transaction; False when the insert of a new entry met its id taken."""
        op, facts = write.op, self.engine.store.facts
        now = self.engine.clock.now()
        expires = None if op.ttl is None else now + timedelta(minutes=float(op.ttl))
        try:
            with self.engine.store.transaction():
                existing = facts.get(write.id, write.scope)
                if existing is None:
                    try:
                        facts.add(_new_entry(write, now, expires), at=now)
                    except Conflict:
                        raise _Taken from None
                elif _owned(existing, op.namespace, op.key) is None:
                    raise Conflict(f"entry {write.id} (derived from key {op.key!r}) belongs to something else")
                elif _live(existing, now) and (existing.content, existing.metadata) == (write.content, write.metadata):
                    # The same value again: no new version, only the expiry moves (as a read's refresh would).
                    if existing.expires_at != expires:
                        facts.write(replace(existing, expires_at=expires), change=Change.HOUSEKEEPING, at=now)
                else:
                    change = Change.EDITED if existing.archived_at is None else Change.RESTORED
                    revived = replace(
                        existing,
                        content=write.content,
                        category=category_of(op.namespace),
                        metadata=write.metadata,
                        updated_at=now,
                        last_seen_at=now,
                        archived_at=None,
                        superseded_by=None,
                        pinned=True,
                        expires_at=expires,
                    )
                    facts.write(revived, change=change, at=now)
        except _Taken:
            return False
        return True

    def _delete(self, op: PutOp) -> None:
        """Archive the item's entry (unpinned, so the purge pass may remove it); a missing key is no error."""
        facts = self.engine.store.facts
        now = self.engine.clock.now()
        with self.engine.store.transaction():
            entry = facts.get(entry_id(self.agent_id, op.namespace, op.key), self._scope(op.namespace))
            if entry is None or entry.archived or _owned(entry, op.namespace, op.key) is None:
                return
            facts.write(replace(entry, archived_at=now, pinned=False), change=Change.ARCHIVED, at=now)

    def _refresh(self, entries: list[MemoryEntry], now: datetime) -> list[MemoryEntry]:
        """Move the expiry of the entries that have a TTL to ``now`` + TTL (no version: the text is unchanged).
        A read-only store reads without refreshing, as the engine's own reads do."""
        if self.engine.store.read_only:
            return entries
        out: list[MemoryEntry] = []
        for entry in entries:
            ttl = _meta(entry).get("ttl")
            if isinstance(ttl, int | float) and not isinstance(ttl, bool):
                entry = replace(entry, expires_at=now + timedelta(minutes=float(ttl)))
                self.engine.store.facts.write(entry, change=Change.HOUSEKEEPING, at=now)
            out.append(entry)
        return out

    # -- search and list ---------------------------------------------------------------------------------
    def _search(self, op: SearchOp) -> list[SearchItem]:
        """Hybrid search when ``query`` has words (best first, ``score`` = Reverie's score), else the items
        most recently written first (``score`` None); both narrowed by namespace prefix and ``filter``."""
        if op.limit == 0:
            return []
        now = self.engine.clock.now()
        scopes = self._scopes(op.namespace_prefix)
        want = op.offset + op.limit
        found: list[tuple[MemoryEntry, float | None]]
        if op.query and op.query.strip():
            found = list(self._ranked(op, scopes, want, now))
            if len(found) < want:
                found += self._filled(op, scopes, want, now, found)
        else:
            found = [(entry, None) for entry in self._listed(op, scopes, want, now)]
        page = found[op.offset : want]
        entries = [entry for entry, _ in page]
        if op.refresh_ttl:
            entries = self._refresh(entries, now)
        return [_search_item(entry, score) for entry, (_, score) in zip(entries, page, strict=True)]

    def _ranked(self, op: SearchOp, scopes: list[Scope], want: int, now: datetime) -> list[tuple[MemoryEntry, float]]:
        """Memory search per scope, kept to the matching items, merged best first; asks for more while the
        namespace or the filter drop hits, up to ``FETCH_MAX`` per scope."""
        assert op.query is not None
        category = category_of(op.namespace_prefix)
        fetch = min(FETCH_MAX, want + _SLACK)
        while True:
            scores: dict[str, tuple[MemoryEntry, float]] = {}
            exhausted = True
            for scope in scopes:
                hits = self.engine.memory.search(op.query, category=category, limit=fetch, scope=scope)
                exhausted = exhausted and len(hits) < fetch
                for hit in hits:
                    kept = scores.get(hit.entry.id)
                    if self._matches(hit.entry, op, now) and (kept is None or kept[1] < hit.score):
                        scores[hit.entry.id] = (hit.entry, hit.score)
            ranked = sorted(scores.values(), key=lambda pair: -pair[1])
            if len(ranked) >= want or exhausted or fetch == FETCH_MAX:
                return ranked
            fetch = min(FETCH_MAX, fetch * 4)

    def _filled(
        self, op: SearchOp, scopes: list[Scope], want: int, now: datetime, ranked: list[Scored]
    ) -> list[Scored]:
        """The namespace's other items after the hybrid hits, as LangGraph's stores answer a query: up to ``want``
        in all, those the embedder finds nearest first (scored below every hybrid hit: Reverie's own search
        drops what it finds too weak to call a match), then the rest most recently written first, unscored."""
        seen = {entry.id for entry, _ in ranked}
        below = min((score for _, score in ranked if score is not None), default=1.0)
        out: list[tuple[MemoryEntry, float | None]] = []
        if self.engine.embedder is not None:
            category = category_of(op.namespace_prefix)
            fetch = min(FETCH_MAX, want + _SLACK)
            near: dict[str, tuple[MemoryEntry, float]] = {}
            for scope in scopes:
                hits = self.engine.memory.search(
                    op.query or "", category=category, limit=fetch, scope=scope, mode="vector", min_similarity=0.0
                )
                for hit in hits:
                    if hit.entry.id not in seen and self._matches(hit.entry, op, now):
                        near.setdefault(hit.entry.id, (hit.entry, below * min(max(hit.score, 0.0), 1.0) * 0.5))
            nearest = sorted(near.values(), key=lambda pair: -pair[1])[: want - len(ranked)]
            out = [(entry, score) for entry, score in nearest]
            seen.update(entry.id for entry, _ in out)
        left = want - len(ranked) - len(out)
        if left > 0:
            rest = [e for e in self._listed(op, scopes, want + len(seen), now) if e.id not in seen]
            out += [(entry, None) for entry in rest[:left]]
        return out

    def _listed(self, op: SearchOp, scopes: list[Scope], want: int, now: datetime) -> list[MemoryEntry]:
        """The matching items, most recently written first (``last_seen_at``), reading more while the
        namespace or the filter drop entries."""
        category = category_of(op.namespace_prefix)
        fetch = want + _SLACK
        while True:
            found: dict[str, MemoryEntry] = {}
            exhausted = True
            for scope in scopes:
                rows = self.engine.store.facts.recent(FactFilter(scope, now, category_prefix=category), fetch)
                exhausted = exhausted and len(rows) < fetch
                found.update((e.id, e) for e in rows if e.id not in found and self._matches(e, op, now))
            ordered = list(found.values())
            if len(scopes) > 1:  # merge the scopes' lists; the sort is stable, so ties keep each list's order
                ordered.sort(key=lambda e: e.last_seen_at, reverse=True)
            if len(ordered) >= want or exhausted:
                return ordered
            fetch *= 4

    def _matches(self, entry: MemoryEntry, op: SearchOp, now: datetime) -> bool:
        meta = _meta(entry)
        namespace = meta.get("namespace")
        if not isinstance(namespace, list) or not _live(entry, now):
            return False
        prefix = list(op.namespace_prefix)
        if namespace[: len(prefix)] != prefix:
            return False
        return not op.filter or _matches(meta.get("value"), op.filter)

    def _scopes(self, prefix: Sequence[str]) -> list[Scope]:
        """The scopes a search under ``prefix`` reads: one when the prefix names the user (or no label
        does); else agent-wide plus every user with items (found by walking the agent's entries)."""
        if self.user_at is None or len(prefix) > self.user_at:
            return [self._scope(prefix)]
        users = sorted({e.scope.user_id for e in self._items() if e.scope.user_id is not None})
        return [Scope(self.agent_id), *(Scope(self.agent_id, user) for user in users)]

    def _items(self) -> Iterable[MemoryEntry]:
        """Every current entry of the agent that is an item (a walk of all its entries)."""
        return (e for e in self.engine.store.facts.iter_all(self.agent_id) if e.current and _meta(e))

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        """The namespaces holding live items (a walk of the agent's entries), matched, cut at ``max_depth``
        (deduplicated), sorted, then paged."""
        now = self.engine.clock.now()
        names: set[tuple[str, ...]] = set()
        for entry in self._items():
            namespace = _meta(entry).get("namespace")
            if isinstance(namespace, list) and _live(entry, now):
                names.add(tuple(namespace))
        conditions = op.match_conditions or ()
        matched = {ns for ns in names if all(_namespace_matches(c, ns) for c in conditions)}
        if op.max_depth is not None:
            matched = {ns[: op.max_depth] for ns in matched}
        return sorted(matched)[op.offset : op.offset + op.limit]


# -- values ------------------------------------------------------------------------------------------------
def _meta(entry: MemoryEntry) -> dict[str, Any]:
    """The item record in an entry's metadata (``{}`` when the entry is not an item)."""
    meta = entry.metadata.get(ROOT)
    return meta if isinstance(meta, dict) and entry.category.split("/", 1)[0] == ROOT else {}


def _owned(entry: MemoryEntry, namespace: tuple[str, ...], key: str) -> dict[str, Any] | None:
    """The entry's item record when it is the item (``namespace``, ``key``); None for anything else."""
    meta = _meta(entry)
    return meta if meta.get("namespace") == list(namespace) and meta.get("key") == key else None


def _new_entry(write: _Write, now: datetime, expires: datetime | None) -> MemoryEntry:
    """The entry a put of a new key creates: pinned, semantic (never aged out), in the item's category."""
    return MemoryEntry(
        id=write.id,
        content=write.content,
        category=category_of(write.op.namespace),
        tags=(),
        tier=Tier.SEMANTIC,
        scope=write.scope,
        created_at=now,
        last_seen_at=now,
        pinned=True,
        expires_at=expires,
        metadata=write.metadata,
    )


def _live(entry: MemoryEntry, now: datetime) -> bool:
    return entry.current and (entry.expires_at is None or entry.expires_at > now)


def _item(entry: MemoryEntry) -> Item:
    meta = _meta(entry)
    return Item(
        value=meta["value"],
        key=meta["key"],
        namespace=tuple(meta["namespace"]),
        created_at=entry.created_at,
        updated_at=entry.updated_at or entry.created_at,
    )


def _search_item(entry: MemoryEntry, score: float | None) -> SearchItem:
    item = _item(entry)
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)


def _check_labels(op: GetOp | SearchOp | ListNamespacesOp | PutOp) -> None:
    """LangGraph's namespace label rule, also for ops handed to ``batch`` directly: non-empty strings without
    a period or a NUL."""
    if isinstance(op, ListNamespacesOp):
        paths = [tuple(c.path) for c in op.match_conditions or ()]
    else:
        paths = [op.namespace_prefix if isinstance(op, SearchOp) else op.namespace]
    for path in paths:
        if not isinstance(path, tuple | list):
            raise InvalidNamespaceError(f"a namespace must be a tuple of strings, got {type(path).__name__}")
        for label in path:
            if not isinstance(label, str) or not label or "." in label or "\x00" in label:
                raise InvalidNamespaceError(
                    f"Invalid namespace label {label!r} in {path}: labels are non-empty strings without '.' or NUL"
                )


def _count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(f"{name} must be a whole number from 0", field=name)


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's prefix / suffix match, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want in ("*", got) for want, got in zip(path, labels, strict=True))


def _check_filter(flt: object) -> None:
    """A filter is a mapping of value fields to a value, a nested filter, or ``{"$op": value}``."""
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise ValidationError("filter must be a mapping of value fields to values", field="filter")
    for name, expected in flt.items():
        if isinstance(name, str) and name.startswith("$") and name not in _OPERATORS:
            raise ValidationError(f"filter operator {name!r} is not one of {sorted(_OPERATORS)}", field="filter")
        if isinstance(expected, Mapping):
            _check_filter(expected)


def _matches(value: object, expected: object) -> bool:
    """LangGraph's filter semantics (as its in-memory store): equality, nested mappings field by field,
    lists element by element, and the comparison operators."""
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_compare(value, op, arg) for op, arg in expected.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(expected)
            and all(_matches(v, e) for v, e in zip(value, expected, strict=True))
        )
    return value == expected


def _compare(value: object, operator: str, arg: object) -> bool:
    if operator == "$eq":
        return value == arg
    if operator == "$ne":
        return value != arg
    if not _number(value) or not _number(arg):
        return False  # an ordering of non-numbers matches nothing (no TypeError mid-search)
    left, right = float(value), float(arg)  # type: ignore[arg-type]
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
