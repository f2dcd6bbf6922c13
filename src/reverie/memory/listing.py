"""Paged listings of long-term entries: one page at a time, in an order, through a filter, with an opaque cursor.

Invariants:
- A page is read by keyset (``FactRepository.page``): the cursor holds the last row's order key and id, never
  an offset, so entries written or archived elsewhere between pages never shift the next one. In the
  "newest" and "oldest" orders (creation time, which no write moves) a walk from the first page to the last
  returns every entry that was listed for the whole walk exactly once.
- A cursor carries a fingerprint of its listing (scope, category, archived, filter, order): used with another
  listing it is refused (``ValidationError`` on ``cursor``) rather than skipping or repeating entries.
- The page size is capped (``validate.limit``); the walk is not.
"""

from __future__ import annotations

from dataclasses import replace

from reverie.core.filters import fingerprint, keyset_page, order_key
from reverie.storage.base import FactFilter, Store
from reverie.types import EntryFilter, EntryVersion, MemoryEntry, Page, Scope, SearchHit, SearchResults

DEFAULT_PAGE = 100  # entries per page when the caller names no limit


def page(store: Store, flt: FactFilter, order: str, cursor: str | None, limit: int) -> Page[MemoryEntry]:
    """The page of ``flt``'s entries after ``cursor`` (None: the first page), at most ``limit`` long, and the
    cursor of the next (None when this is the last). ``order`` and ``limit`` are checked by the caller."""
    listing = fingerprint(flt.scope, flt.category_prefix, flt.include_archived, flt.entry, order)
    return keyset_page(
        lambda after, n: store.facts.page(flt, order, after, n),
        cursor,
        limit,
        listing,
        lambda entry: (order_key(entry, order), entry.id),
    )


def versions(store: Store, entry_id: str, scope: Scope, cursor: str | None, limit: int) -> Page[EntryVersion]:
    """A page of an entry's versions, oldest first, after ``cursor``: keyset on the version number
    (append-only), so a walk sees every version exactly once, new ones at its end."""
    return keyset_page(
        lambda after, n: store.versions.page(entry_id, scope, None if after is None else int(after[0]), n),
        cursor,
        limit,
        fingerprint("versions", scope, entry_id),
        lambda version: (version.version, str(version.version)),
    )


def pinned_first(store: Store, results: SearchResults, flt: FactFilter, most: int) -> SearchResults:
    """Up to ``most`` live pinned entries ``flt`` lets through, most recently reinforced first, ahead of
    ``results`` (which lose their copies of them; a pinned hit keeps its score). One indexed page read: the
    pinned condition is part of the filter, so no walk over the agent's entries."""
    pinned_only = replace(flt.entry or EntryFilter(), pinned=True)
    live = replace(flt, include_archived=False, entry=pinned_only)
    pinned = store.facts.page(live, "recent", None, most)
    scores = {h.entry.id: h.score for h in results}
    ahead = [SearchHit(e, scores.get(e.id, 0.0), "pinned") for e in pinned]
    taken = {e.id for e in pinned}
    rest = [h for h in results if h.entry.id not in taken]
    return SearchResults(ahead + rest, mode=results.mode, notes=results.notes)
