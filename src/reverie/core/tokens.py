"""BM25 tokens: the words SQLite FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer makes, in Python.

The in-memory lexical index (``recall.lexical``) indexes ``tokens(text)`` and searches ``search_terms(query)``,
so both sides of a match go through one function, ``word``.

Invariants:
- A token is a run of letters and digits (``core.text``'s rule, unicode61's: ``_`` and punctuation split),
  lower-cased one token at a time, with diacritics removed from Latin letters (``é`` -> ``e``; Cyrillic
  ``й`` keeps its breve, as in FTS5), then Porter-stemmed when it is 3 to 64 bytes long (FTS5's bounds).
- ``search_terms`` keeps repeated stems: an FTS5 OR query scores each phrase, so "run running" counts
  "run" twice, and so does the index.
- Stemming is Snowball's ``porter`` (PyStemmer, C). FTS5 carries two later revisions of Porter's that the
  published algorithm lacks (``-logi`` -> ``-log``, ``-bli`` -> ``-bl``) and drops a doubled ``k`` after
  ``-ed``: on LoCoMo's 11,400 distinct words 13 stems differ ("psychology", "possibly", "trekked"). The index
  is self-consistent either way; only which of two related words meet differs. Letter folding differs for
  about 200 of the 50,000 letters and digits of the BMP (Greek symbol variants, case pairs newer than
  SQLite's tables, such as Cherokee).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import Stemmer  # type: ignore[import-not-found]  # PyStemmer is one C module without type information

from reverie.core.text import query_terms

# The same rule as core.text's query terms (and unicode61): letters and digits, "_" splits.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MARK = "\x00"  # between texts in ``split_many``; never part of a token
_JOIN = f" {MARK} "
_TOKEN_OR_MARK = re.compile(r"[^\W_]+|\x00", re.UNICODE)
_ASCII_SEPARATORS = bytes(c if chr(c).isalnum() or c == 0 else 32 for c in range(128)) + bytes(range(128, 256))
# FTS5's porter tokenizer leaves tokens shorter than 3 or longer than 64 bytes as they are.
_STEM_MIN, _STEM_MAX = 3, 64
_stemmer = Stemmer.Stemmer("porter")
_stemmer_lock = threading.Lock()  # a PyStemmer object is not thread-safe


def _fold_table() -> dict[int, str]:
    """Lower-case letters that unicode61 folds differently from ``str.lower``, and Latin letters with
    diacritics mapped to their base letter (a character whose canonical decomposition is an ASCII letter
    followed by combining marks)."""
    table = {
        ord("ς"): "σ",  # str.lower gives a final sigma; unicode61 folds one character at a time
        ord("µ"): "μ",  # micro sign -> Greek mu
        ord("ſ"): "s",  # long s
        0x0307: "",  # "İ".lower() is "i" + combining dot above; unicode61 folds "İ" to "i"
    }
    for code in range(0x80, 0x2000):
        decomposed = unicodedata.normalize("NFD", chr(code))
        base, marks = decomposed[0], decomposed[1:]
        if marks and base.isascii() and base.isalpha() and all(unicodedata.combining(m) for m in marks):
            table[code] = base.lower()
    return table


_FOLD = _fold_table()


@lru_cache(maxsize=1 << 16)
def word(token: str) -> str:
    """One token as the index holds it: lower-cased, diacritics removed, Porter-stemmed."""
    folded = token.lower()
    if not folded.isascii():
        folded = folded.translate(_FOLD)
    size = len(folded) if folded.isascii() else len(folded.encode())
    if size < _STEM_MIN or size > _STEM_MAX:
        return folded
    with _stemmer_lock:
        return str(_stemmer.stemWord(folded))


def split_many(texts: Sequence[str]) -> list[str]:
    """The raw tokens of every text in order, with ``MARK`` between one text's and the next's: one pass
    over the joined texts instead of one call per text (the index's bulk load tokenises 100k of them)."""
    if not texts:
        return []
    joined = _JOIN.join(texts)
    if joined.count(MARK) != len(texts) - 1:
        # A text holds the mark itself; NUL separates words anyway, so a space changes no token.
        joined = _JOIN.join(t.replace(MARK, " ") for t in texts)
    if joined.isascii():
        # Byte translation is several times faster than the regex: letters and digits stay, as does the mark.
        return joined.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    found: list[str] = _TOKEN_OR_MARK.findall(joined)
    return found


def tokens(text: str) -> list[str]:
    """Every token of ``text`` as an index word, in order, repeats included (their count is the document
    length)."""
    return [word(t) for t in _TOKEN.findall(text)]


def search_terms(query: str) -> list[str]:
    """The query's terms (``core.text.query_terms``: stopwords dropped when others remain) as index words,
    repeats kept."""
    return [word(term) for term in query_terms(query)]
