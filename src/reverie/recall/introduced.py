"""Asking again by name: a query that describes someone its best hits introduce (``core.introductions``).

"son's drug allergy" ranks "Leo is Dan's son" first (it shares "son") and the answer, "Leo is allergic to
penicillin", nowhere near: MiniLM relates "son" and "Leo" weakly. When one of a hybrid search's first
``LOOK`` hits is an introduction the query describes without naming (or one of the first ``DEEP`` whose owner
the query also names: "Dan's partner's job" for "Elena is Dan's wife"), the search is asked again with the name
in place of the description ("Leo's drug allergy") and the rankings merge, the second scaled by
``recall.introduction_share``. The other way round, a question for what a name is ("what is Quill?") moves the
name's introduction first (``definition_first``).

Invariants:
- At most one second search per query, for the best-ranked introduction the query describes; queries that
  describe none cost nothing more, except that one naming a possessor ("Dan's", "my") with no introduction
  among its first ``LOOK`` hits reads the entries below them, to ``DEEP``. The second search never runs a
  third.
- A hit that names the introduced person (the introduction too) is ranked by the second search alone: the
  question is about them. Any other first hit keeps the better of its first score and its scaled second one.
  When the first ranking was too weak to answer (below ``recall.min_evidence``), only the second's hits count.
- A hit ranked by the second search is labelled ``matched_by = "introduction"`` with ``evidence.asked_as``;
  its ``own``, ``context`` and ``time`` are scaled like its score, so ``score = own + context + time`` holds,
  and so it does for a definition moved first (its gain is shown as context).
- The result is best first; ties fall by entry id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from reverie.core.introductions import (
    Introduction,
    asks_more,
    asks_what,
    covers,
    described,
    names_in,
    owned,
    possessors,
    read_introduction,
    rewritten,
)
from reverie.types import MemoryEntry, SearchHit

LOOK = 5  # how many of the first hits are read for an introduction
DEEP = 20  # how far down the first ranking an introduction whose owner the query names is read


def resolve(
    query: str,
    hits: Sequence[SearchHit],
    ask: Callable[[str], Sequence[SearchHit]],
    share: float,
    *,
    weak: bool,
    deeper: Callable[[], Sequence[MemoryEntry]] | None = None,
) -> list[SearchHit] | None:
    """``hits`` ranked again with ``query`` asked by the introduced name, best first; None when no introduction
    the query describes and asks something more about is found (or ``share`` is 0). The first ``LOOK`` hits
    are read for any introduction the query describes; ``deeper`` (the first ranking's entries below them, to
    ``DEEP``, fetched only when needed) for one whose owner the query also names ("Dan's partner's job" for
    "Elena is Dan's wife"). ``weak``: the first ranking's evidence is below the floor, so only a query that
    says the whole description is asked again, and only the second search's hits count."""
    if share <= 0:
        return None
    found = next((f for hit in hits[:LOOK] if (f := _asked(query, hit.entry.content, weak)) is not None), None)
    if found is None and deeper is not None and possessors(query):
        found = next((f for e in deeper() if (f := _asked(query, e.content, weak, owner=True)) is not None), None)
    if found is None:
        return None
    introduction, asked = found
    return _merged(() if weak else hits, ask(asked), introduction, share, asked)


def _asked(query: str, content: str, weak: bool, *, owner: bool = False) -> tuple[Introduction, str] | None:
    """The introduction ``content`` opens with and ``query`` asked by its name, when the query describes it (and
    names its owner, with ``owner``) and asks something more about it."""
    introduction = read_introduction(content)
    if introduction is None or (owner and not owned(query, introduction)):
        return None
    words = described(query, introduction)
    # A ranking too weak to answer is read only for a query that says the whole description: "how do I deploy
    # a Django app" says "app", not "the customer mobile app".
    if words and asks_more(query, words, introduction) and (not weak or covers(words, introduction)):
        return introduction, rewritten(query, words, introduction)
    return None


def _merged(
    first: Sequence[SearchHit], again: Sequence[SearchHit], introduction: Introduction, share: float, asked: str
) -> list[SearchHit]:
    """Each hit at the better of its first score and ``share`` of its second, except that a hit naming the
    introduced person (the introduction too) is ranked by the second alone: the question is about them."""
    second = {hit.entry.id: hit for hit in again}
    best: dict[str, SearchHit] = {}
    for hit in first:
        if names_in(hit.entry.content, introduction):
            found = second.get(hit.entry.id)
            best[hit.entry.id] = _scaled(found, share, asked) if found is not None else _scaled(hit, share, None)
        else:
            best[hit.entry.id] = hit
    for hit in again:
        known = best.get(hit.entry.id)
        if known is None or known.score < share * hit.score:
            best[hit.entry.id] = _scaled(hit, share, asked)
    return sorted(best.values(), key=lambda h: (-h.score, h.entry.id))


def _scaled(hit: SearchHit, share: float, asked: str | None) -> SearchHit:
    """``hit`` with its score and evidence scaled by ``share``: labelled ``introduction`` with the query
    ``asked`` again, or keeping its label when it kept its first ranking (``asked`` None)."""
    evidence = hit.evidence
    if evidence is not None:
        own, context, time = share * evidence.own, share * evidence.context, share * evidence.time
        evidence = replace(evidence, own=own, context=context, time=time, asked_as=asked)
    return SearchHit(hit.entry, share * hit.score, hit.matched_by if asked is None else "introduction", evidence)


def definition_first(query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` with the introduction of the name ``query`` asks about ("what is Quill?", "what does Aiko do?")
    first when it is among the first ``LOOK``: it gains what it lacked of the best score, shown as context."""
    name = asks_what(query)
    ranked = list(hits)
    if name is None or not ranked:
        return ranked
    for i, hit in enumerate(ranked[:LOOK]):
        introduction = read_introduction(hit.entry.content)
        if introduction is not None and names_in(name, introduction):
            if i == 0:
                return ranked
            gain = ranked[0].score - hit.score
            evidence = hit.evidence
            if evidence is not None:
                evidence = replace(evidence, context=evidence.context + gain)
            return [SearchHit(hit.entry, ranked[0].score, hit.matched_by, evidence), *ranked[:i], *ranked[i + 1 :]]
    return ranked
