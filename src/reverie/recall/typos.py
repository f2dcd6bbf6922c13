"""Reading a misspelt query word: which words may be typos, and how far from the word meant.

A query word is read as a typo only when no entry holds it AND it is not an English word: "swiming" is a
typo of the memory's "swimming", but "tall" in "how tall is Mount Everest" is a word the memory simply
lacks, and reading it as "call" would answer an off-topic question with noise. The English word list is
pyspellchecker's (loaded on first use, about a quarter of a second); words of other languages count as
unknown, so they are read as typos too when an indexed word is near enough.

Invariants:
- ``edits_allowed`` is 0 under four letters and for words with digits (too many near neighbours), 1 up to
  seven letters, 2 from eight: edits are insertions, deletions, substitutions and swaps of two neighbours.
- ``english`` answers for lower-case words and is thread-safe.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from reverie.core import tokens

if TYPE_CHECKING:
    from spellchecker import SpellChecker

_lock = threading.Lock()


def edits_allowed(word: str) -> int:
    """How many edits may separate a misspelt ``word`` from the indexed word it is read as."""
    if len(word) < 4 or any(ch.isdigit() for ch in word):
        return 0
    return 1 if len(word) < 8 else 2


@lru_cache(maxsize=1)
def _dictionary() -> SpellChecker:
    from spellchecker import SpellChecker  # only when a query first holds a word no entry has: start-up stays fast

    return SpellChecker(language="en", distance=1)


@lru_cache(maxsize=1 << 14)
def english(word: str) -> bool:
    """Whether ``word`` (lower case) is in the English word list."""
    with _lock:
        return word in _dictionary()


def may_be_typo(word: str) -> bool:
    """Whether a query ``word`` no entry holds may be read as a misspelling: long enough, no digits, and not
    an English word."""
    return edits_allowed(word) > 0 and not english(word)


@lru_cache(maxsize=1 << 12)
def spelling(written: str, term: str) -> str | None:
    """An English word that a misspelt ``written`` was likely meant as and that the index reads as ``term``
    (the index word it was corrected to, a stem: "swiming" → "swim" → "swimming"), or None when no English
    word one edit away, nor ``term`` itself, is one: the embedder is then left the word as typed."""
    with _lock:
        dictionary = _dictionary()
        near = dictionary.candidates(written) or set()
        found = [w for w in {*near, term} if w in dictionary and tokens.word(w) == term]
        return max(found, key=lambda w: (dictionary.word_usage_frequency(w), w)) if found else None


def respell(query: str, respelt: Sequence[tuple[str, str]]) -> str:
    """``query`` with each misspelt word (``written``, lower case, as the lexical search read it) replaced by
    its ``spelling`` where one is known; unchanged otherwise."""
    out = query
    for written, term in respelt:
        meant = spelling(written, term)
        if meant is not None:
            out = re.sub(rf"(?<!\w){re.escape(written)}(?!\w)", meant, out, flags=re.IGNORECASE)
    return out
