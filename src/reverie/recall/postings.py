"""BM25 postings and arithmetic for the in-memory lexical index: FTS5's ``bm25()``, in numpy.

Invariants:
- A document is one entry's content, tags and category; a word's weighted frequency in it is the sum of
  its columns' weights per occurrence (content 1.0, tags 0.6, category 0.4: ``SqliteFacts``' bm25()
  weights), and its length counts the tokens of all three columns.
- ``bm25`` is FTS5's formula: k1 1.2, b 0.75 (another ``b`` on request: ``recall.bm25_b``), idf
  ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6.
- ``build`` and ``weighted_terms`` give the same frequencies and lengths for the same rows: the first
  builds a whole corpus at once (one sort), the second one entry (replayed changes).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from reverie.core.tokens import MARK, split_many, tokens, word
from reverie.storage.base import TextRow

K1 = 1.2
B = 0.75  # FTS5's length normalisation; the lexical index takes another (``recall.bm25_b``)
IDF_FLOOR = 1e-6
CONTENT_WEIGHT, TAGS_WEIGHT, CATEGORY_WEIGHT = 1.0, 0.6, 0.4
CHUNK = 10_000  # rows tokenised at once in ``build``: bounds the token lists' memory, costs no speed

Ints = npt.NDArray[np.int32]
Floats = npt.NDArray[np.float32]


def bm25(
    tf: Floats,
    length: Floats,
    *,
    documents: int,
    matching: int,
    average_length: float,
    repeats: int = 1,
    b: float = B,
) -> Floats:
    """FTS5's bm25() contribution of one query phrase to each document: ``tf`` the weighted frequency
    and ``length`` the token count of each, ``documents`` the corpus size, ``matching`` how many hold the
    phrase, ``repeats`` how often the query holds it (FTS5 scores every phrase of an OR, repeats too); ``b``
    how much a long document's length discounts its matches (0: not at all, 1: in full)."""
    weight = idf(documents, matching) * repeats
    norm = K1 * (1.0 - b + b * length / average_length)
    result: Floats = (weight * tf * (K1 + 1.0) / (tf + norm)).astype(np.float32)
    return result


def idf(documents: int, matching: int) -> float:
    """FTS5's idf of a phrase ``matching`` of ``documents`` hold, floored at ``IDF_FLOOR``."""
    return max(math.log((documents - matching + 0.5) / (matching + 0.5)), IDF_FLOOR)


def weighted_terms(row: TextRow) -> tuple[dict[str, float], int]:
    """Each word's weighted frequency in one entry, and the entry's length in tokens over all columns."""
    columns = ((CONTENT_WEIGHT, row.content), (TAGS_WEIGHT, " ".join(row.tags)), (CATEGORY_WEIGHT, row.category))
    return weighted_document(columns)


@dataclass
class Postings:
    """One word's (row, weighted frequency, row length) triples: compact arrays, plus a small append buffer
    folded in when the word is next searched. Rows ascend; dead rows stay until the index is rebuilt. A row's
    length never changes (an edit makes a new row), so it is kept beside each posting: a search reads it in
    order instead of gathering it from the whole index at random."""

    rows: Ints
    tfs: Floats
    lengths: Floats
    new_rows: list[int] = field(default_factory=list)
    new_tfs: list[float] = field(default_factory=list)
    new_lengths: list[float] = field(default_factory=list)

    @classmethod
    def empty(cls) -> Postings:
        return cls(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32))

    def append(self, row: int, tf: float, length: float) -> None:
        self.new_rows.append(row)
        self.new_tfs.append(tf)
        self.new_lengths.append(length)

    def arrays(self) -> tuple[Ints, Floats, Floats]:
        """Every (row, tf, length), compacting the append buffer first."""
        if self.new_rows:
            self.rows = np.concatenate([self.rows, np.asarray(self.new_rows, dtype=np.int32)])
            self.tfs = np.concatenate([self.tfs, np.asarray(self.new_tfs, dtype=np.float32)])
            self.lengths = np.concatenate([self.lengths, np.asarray(self.new_lengths, dtype=np.float32)])
            self.new_rows.clear()
            self.new_tfs.clear()
            self.new_lengths.clear()
        return self.rows, self.tfs, self.lengths

    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.tfs.nbytes + self.lengths.nbytes)


@dataclass
class Corpus:
    """A whole corpus's postings (rows numbered in the order given) and each row's length."""

    terms: dict[str, Postings]
    lengths: Floats


class _Words:
    """Term ids for raw tokens: each distinct raw token is normalised (``word``) once."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}  # index word -> term id
        self._known: dict[str, int] = {MARK: -1}  # raw token -> term id

    def ids(self, texts: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The term ids of every token of ``texts`` in order, and how many tokens each text has."""
        flat = split_many(texts)
        known, vocabulary = self._known, self.vocabulary
        for token in dict.fromkeys(flat):
            if token not in known:
                known[token] = vocabulary.setdefault(word(token), len(vocabulary))
        ids = np.fromiter(map(known.__getitem__, flat), dtype=np.int64, count=len(flat))
        marks = np.flatnonzero(ids < 0)  # len(texts) - 1 of them: the boundaries between texts
        counts = np.diff(np.concatenate(([-1], marks, [ids.size]))) - 1
        return ids[ids >= 0], counts


def build(rows: Sequence[TextRow]) -> Corpus:
    """Postings of ``rows`` in a few array operations. Python splits each column of ``CHUNK`` rows at
    once (``split_many``) and normalises each distinct raw token once; counting and grouping are numpy
    sorts over one (term, row) key per token."""
    n = len(rows)
    words = _Words()
    keys: list[npt.NDArray[np.int64]] = []  # term id * n + row: sorting groups by term, then row
    weights: list[Floats] = []
    lengths = np.zeros(n, dtype=np.int64)
    for start in range(0, n, CHUNK):
        chunk = rows[start : start + CHUNK]
        for weight, texts in (
            (CONTENT_WEIGHT, [r.content for r in chunk]),
            (TAGS_WEIGHT, [" ".join(r.tags) for r in chunk]),
            (CATEGORY_WEIGHT, [r.category for r in chunk]),
        ):
            ids, counts = words.ids(texts)
            keys.append(ids * n + np.repeat(np.arange(start, start + len(chunk), dtype=np.int64), counts))
            weights.append(np.full(ids.size, weight, dtype=np.float32))
            lengths[start : start + len(chunk)] += counts
    if not keys:
        return Corpus({}, lengths.astype(np.float32))
    key, weight_of = np.concatenate(keys), np.concatenate(weights)
    keys.clear()
    weights.clear()
    row_lengths = lengths.astype(np.float32)
    return Corpus(_group(words.vocabulary, key, weight_of, row_lengths), row_lengths)


def _group(
    vocabulary: dict[str, int], key: npt.NDArray[np.int64], weights: Floats, lengths: Floats
) -> dict[str, Postings]:
    """Tokens' (term * n + row) keys and weights summed per key and grouped per term, rows ascending, each
    with its row's length. The postings are views into three shared arrays (no copy per word)."""
    n = lengths.shape[0]
    order = np.argsort(key)
    key = key[order]
    weights = weights[order]
    del order
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    tfs = np.add.reduceat(weights, starts).astype(np.float32)
    key = key[starts]
    term_of = key // n
    rows = (key - term_of * n).astype(np.int32)
    row_lengths = lengths[rows]
    bounds = np.searchsorted(term_of, np.arange(len(vocabulary) + 1, dtype=np.int64))
    return {
        w: Postings(
            rows[bounds[i] : bounds[i + 1]], tfs[bounds[i] : bounds[i + 1]], row_lengths[bounds[i] : bounds[i + 1]]
        )
        for w, i in vocabulary.items()
    }


Document = tuple[dict[str, float], int]  # a document's weighted word frequencies, and its length in words


def weighted_document(columns: Sequence[tuple[float, str]]) -> Document:
    """A small document's weighted word frequencies and its length in words over all ``(weight, text)``
    columns (a word counts ``weight`` per occurrence in its column)."""
    counts: dict[str, float] = {}
    length = 0
    for weight, text in columns:
        words = tokens(text)
        length += len(words)
        for term, occurrences in Counter(words).items():
            counts[term] = counts.get(term, 0.0) + weight * occurrences
    return counts, length


def score_documents(documents: Sequence[Document], terms: Sequence[str]) -> dict[int, float]:
    """BM25 (``bm25``) of every document holding at least one of ``terms``, by position, with the documents
    themselves as the corpus: for the small candidate sets scored where they stand (working memory, skills)."""
    if not terms or not documents:
        return {}
    lengths = np.asarray([length for _, length in documents], dtype=np.float32)
    average = max(float(lengths.mean()), 1.0)
    total = np.zeros(len(documents), dtype=np.float64)
    matched = np.zeros(len(documents), dtype=bool)
    for term, repeats in Counter(terms).items():
        tf = np.asarray([counts.get(term, 0.0) for counts, _ in documents], dtype=np.float32)
        holding = tf > 0
        if not holding.any():
            continue
        matched |= holding
        total += bm25(
            tf, lengths, documents=len(documents), matching=int(holding.sum()), average_length=average, repeats=repeats
        )
    return {int(i): float(total[i]) for i in np.flatnonzero(matched)}
