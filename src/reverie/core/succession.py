"""Newer first: a hit that says it changed what an older hit says ranks above it.

A correction the save did not compare with what it corrects stays its own current entry: "The offsite budget
was cut to £3,500" after "The budget for the offsite is £5,000" shares too few topic words for the save to read
one as the other changed (``core.stance.same_topic``), and "Actually, Lantern stores schedules in PostgreSQL
17, not 16" saved in another category is never compared. The older text, which matches the question's words
as well or better, answered first. The question shows that the two compete: both answer it. So among a
search's first hits, a hit said later than one ranked above it is moved just above that one when

- it says a change (``core.stance.change_words``: "now", "moved", "cut", "actually", "correction", "replaced",
  "left"…) the older one does not say: a conversation is full of texts that merely differ, and only a stated
  change is read (or a replaced value, below);
- the stance check reads it as changing the older one (``core.stance.stance_difference``: a value replaced or
  named as replaced, a time moved, a negation…);
- the two share at least ``MIN_OVERLAP`` of their topic words (half of what the save asks: the question
  vouches for the rest), or it names the older one's value as replaced (``core.stance.names_replaced``: "I
  traded in the Civic for a Tesla" after "I drive a Honda Civic" share one topic word of seven);
- it scores at least ``ratio`` of the older hit's score.

A hit said later that says no change but the older one's statement with a value replaced ("Alice works at
Microsoft" after "Alice works at Google": ``core.stance.replaced_tokens``, the same frame around the value)
moves the same way: the save keeps such a pair as two facts (Alice may work at both), so nothing is hidden,
but the later one is the likelier answer.

Invariants: pure and deterministic; a hit only moves up, just above the best-ranked older hit it changes, and
at most once; "said" is when a text was last said (a restatement of the older text after the change keeps it
first); nothing moves when ``ratio`` is 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from reverie.core.stance import (
    StanceDifference,
    StanceVocabulary,
    change_words,
    names_replaced,
    replaced_tokens,
    stance_difference,
    statement_tokens,
    topic_overlap,
)
from reverie.core.stance_vocabulary import DEFAULT_STANCE_VOCABULARY

# Topic-word overlap from which two competing hits are about the same thing: half the save's
# (``core.stance.TOPIC_OVERLAP``). On LoCoMo's long turns the first version moved 82 questions' hits at 0.2, 30 at
# 0.25 and 11 at 0.3 (docs/benchmarks.md, "Corrections worded unlike what they correct").
MIN_OVERLAP = 0.25


_FIRST_WORD = re.compile(r"\s*([^\W_]+)")


@dataclass(frozen=True, slots=True)
class Said:
    """What succession reads of one hit: its text, when it was last said and its score."""

    text: str
    at: datetime
    score: float


def successions(
    said: Sequence[Said], ratio: float, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> list[tuple[int, int]]:
    """``(newer, older)`` index pairs of ``said`` (best first): each hit that changes an older hit ranked above
    it, paired with the one of those it shares most topic words with (see the module); an empty list when
    ``ratio`` is not in (0, 1]."""
    if not 0 < ratio <= 1:
        return []
    changes = [change_words(s.text, vocabulary) for s in said]
    # Read only for a pair that opens alike: the frame of a replaced value opens both texts.
    firsts = [m.group(1) if (m := _FIRST_WORD.match(s.text.lower())) else None for s in said]
    tokens: dict[int, list[str]] = {}

    def tokens_of(k: int) -> list[str]:
        if k not in tokens:
            tokens[k] = statement_tokens(said[k].text, vocabulary)
        return tokens[k]

    pairs: list[tuple[int, int]] = []
    for j, newer in enumerate(said):
        best: tuple[float, int] | None = None
        for i in range(j):
            older = said[i]
            if older.at >= newer.at or newer.score < ratio * older.score:
                continue
            if changes[j] - changes[i]:
                read = _changed(older.text, newer.text, vocabulary)
                overlap = None if read is None else read[0]
            elif firsts[i] is not None and firsts[i] == firsts[j]:
                # A value replaced with no word of change: the same statement, read as a full overlap.
                overlap = 1.0 if replaced_tokens(tokens_of(i), tokens_of(j), vocabulary) else None
            else:
                overlap = None
            if overlap is not None and (best is None or overlap > best[0]):
                best = (overlap, i)
        if best is not None:
            pairs.append((j, best[1]))
    return pairs


def changes(
    older: str, newer: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> StanceDifference | None:
    """How ``newer``, said later, changes what ``older`` says: it says a change ``older`` does not, the two are
    about the same thing (``MIN_OVERLAP`` of their topic words, or a value of ``older`` named as replaced) and
    the stance check reads the difference; None otherwise. The reading ``successions`` makes of one pair."""
    if not change_words(newer, vocabulary) - change_words(older, vocabulary):
        return None
    read = _changed(older, newer, vocabulary)
    return None if read is None else read[1]


def _changed(older: str, newer: str, vocabulary: StanceVocabulary) -> tuple[float, StanceDifference] | None:
    """The topic-word overlap and the stance difference of a pair whose later text says a change the older
    does not (the caller has checked), when they are about the same thing and differ in stance."""
    overlap = topic_overlap(older, newer, vocabulary)
    if overlap < MIN_OVERLAP and not names_replaced(older, newer, vocabulary):
        return None
    difference = stance_difference(older, newer, vocabulary)
    return None if difference is None else (overlap, difference)


def newer_first(said: Sequence[Said], pairs: Sequence[tuple[int, int]]) -> list[int]:
    """The indices of ``said`` (best first) with every hit that changes another, directly or through a chain
    of changes, moved to the place of the one first changed, newest first, just above it."""
    root = dict(pairs)

    def first_changed(index: int) -> int:
        while index in root:
            index = root[index]
        return index

    followers: dict[int, list[int]] = {}
    for newer in root:
        followers.setdefault(first_changed(newer), []).append(newer)
    order: list[int] = []
    for index in range(len(said)):
        if index in root:
            continue
        later = sorted(followers.get(index, []), key=lambda i: (said[i].at, -i), reverse=True)
        order.extend([*later, index])
    return order
