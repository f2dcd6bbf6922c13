"""A correction answers for what it replaced: a query that matches a superseded entry finds its successor.

When a later text contradicts an entry (``memory.contradiction``), search leaves the older entry out. But the
question a user asks is often worded like the older text: "what does the team use for planning" matches "The
team uses Trello for planning" and barely "The team replaced Trello with Linear", which alone may not reach
the evidence floor (the search answered nothing), and "where does Priya work" matched "Priya works at Google"
better than anything, while "Priya left Google and joined Stripe" ranked below "Priya lives in Camden". So
the superseded entries that say at least half the query's topic words, two of them at least or all (a word of
a relation read as the relation: "car" and "drive", ``core.stance.relation_topics``), hand that share, as a
score, to the current entry that superseded them (they are not in the search indexes: each caller's list of
them is read once per change of the agent's entries and kept), followed through a chain of corrections: a
successor among the hits is lifted to it when it is higher (the gain shown as ``context``, the superseded
entry named by ``succeeds``, as newer-first ranking does); one not among them joins them at it, labelled
``successor``.

Invariants: a successor must be current and visible through the caller's filter (scope, category, expiry);
it appears once; hits stay best first and at most ``count``; nothing is written. A search between two
writes of the agent costs one change-log read and a set intersection per superseded entry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from reverie.core.stance import relation_topics, topic_tokens
from reverie.core.stance_vocabulary import DEFAULT_STANCE_VOCABULARY, StanceVocabulary
from reverie.core.text import FILLER
from reverie.recall import newer
from reverie.storage.base import FactFilter, Store
from reverie.types import EntryFilter, MemoryEntry, Scope, SearchHit, SearchResults

# A superseded entry must say half the query's topic words (two at least, or all) to answer through its successor.
MIN_MATCH = 0.5
SUCCESSOR = "successor"  # matched_by of a hit found through the entry it superseded
CHAIN = 8  # corrections of corrections followed at most (a cycle cannot be written, but a bound is cheap)
READ = 2000  # superseded entries read per caller's view, most recently said first
VIEWS = 256  # the views kept (scope and category); more clears them
# A view: the agent's change-log position and the vocabulary it was read at, and its entries with their words.
_View = tuple[int, StanceVocabulary, list[tuple[MemoryEntry, frozenset[str]]]]


class Successors:
    """Finds the successors of the superseded entries a query matches (see the module). Thread-safe."""

    def __init__(self, store: Store, stance: Callable[[], StanceVocabulary] | None = None) -> None:
        """``stance``: the deployment's stance vocabulary, asked at each search (None: the built-in one)."""
        self._store = store
        self._stance = stance or (lambda: DEFAULT_STANCE_VOCABULARY)
        self._views: dict[tuple[Scope, str | None], _View] = {}
        self._lock = threading.Lock()

    def forwarded(self, query: str, flt: FactFilter, results: SearchResults, count: int) -> SearchResults:
        """``results`` with the successors of the superseded entries ``query`` matches merged in by score, up to
        ``count`` hits."""
        vocabulary = self._stance()
        asked = _asked(query, vocabulary)
        if flt.entry is not None or flt.include_archived or not asked:
            return results
        retired = self._retired(flt, vocabulary)
        matches = sorted(
            ((share, old) for old, words in retired if (share := _share(asked, words)) >= MIN_MATCH),
            key=lambda pair: -pair[0],
        )
        hits = list(results)
        at = {hit.entry.id: index for index, hit in enumerate(hits)}
        changed = False
        for score, old in matches[:count]:
            successor = _current(self._store, old, flt)
            if successor is None:
                continue
            index = at.get(successor.id)
            if index is None:
                at[successor.id] = len(hits)
                hits.append(SearchHit(successor, score, SUCCESSOR))
            elif hits[index].score < score:
                hits[index] = newer.lifted(hits[index], score, old.id)
            else:
                continue
            changed = True
        if not changed:
            return results
        kept = sorted(hits, key=lambda h: -h.score)[:count]  # stable: ties keep the search's order
        return SearchResults(kept, mode=results.mode, notes=results.notes)

    def _retired(self, flt: FactFilter, vocabulary: StanceVocabulary) -> list[tuple[MemoryEntry, frozenset[str]]]:
        """The superseded, unarchived entries ``flt``'s scope and category see, with their topic words: read
        again only when the agent's entries changed since (its change-log position moved) or the vocabulary
        did (an edited stance-vocabulary file)."""
        key = (flt.scope, flt.category_prefix)
        position = self._store.facts.log_position(flt.scope.agent_id)
        with self._lock:
            held = self._views.get(key)
        if held is not None and held[0] == position and held[1] is vocabulary:
            return held[2]
        retired = replace(flt, entry=EntryFilter(superseded=True, archived=False))
        page = self._store.facts.page(retired, "recent", None, READ)
        listed = [(e, relation_topics(e.content, vocabulary)) for e in page]
        with self._lock:
            if len(self._views) >= VIEWS:
                self._views.clear()
            self._views[key] = (position, vocabulary, listed)
        return listed


def _asked(query: str, vocabulary: StanceVocabulary) -> frozenset[str]:
    """The query's topic words (a relation's as the relation) without the words of asking that search leaves
    out of a query too (``core.text.FILLER``: "use", "like", "kind"), unless nothing else is left: "what laptop
    do I use" asks about the laptop."""
    relation = vocabulary.relation_of
    tokens = topic_tokens(query, vocabulary)
    topical = [(t, key) for t, key in tokens if t not in FILLER] or tokens
    return frozenset(relation.get(t, key) for t, key in topical)


def _share(asked: frozenset[str], words: frozenset[str]) -> float:
    """The share of the query's topic words a superseded entry says, counted only when it says two of them or
    all: one word of two ("user" of "where does the user live") is too little to answer for the entry."""
    said = len(asked & words)
    return said / len(asked) if said >= 2 or said == len(asked) else 0.0


def _current(store: Store, entry: MemoryEntry, flt: FactFilter) -> MemoryEntry | None:
    """The current entry at the end of ``entry``'s chain of successors, when ``flt`` lets it through (a link
    of the chain may be of another category)."""
    for _ in range(CHAIN):
        if entry.superseded_by is None:
            visible = entry.current and store.facts.get_many([entry.id], flt)
            return entry if visible else None
        following = store.facts.get(entry.superseded_by, entry.scope)
        if following is None:
            return None
        entry = following
    return None
