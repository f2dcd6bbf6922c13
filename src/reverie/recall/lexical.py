"""An in-memory BM25 index per agent, kept in step with the store: the lexical twin of ``recall.index``.

FTS5 scores every row an OR query matches (~20k rows per query at 100k entries: 70-110 ms); this index
holds each term's postings as numpy arrays and scores them in a few vector operations (~1.5 ms at 100k).

Invariants:
- Tokens and scores are FTS5's: ``core.tokens`` makes the words of ``porter unicode61 remove_diacritics 2``,
  and the score is ``bm25()`` with k1 1.2, b 0.75 (unless ``b`` is given: the engine passes
  ``recall.bm25_b``, 0.3), column weights content 1.0, tags 0.6, category 0.4, idf floored at 1e-6, a
  document's length counted over all three columns. N, the document frequencies and the average length
  are those of the agent's live (unarchived) entries, not of the whole table.
- Before every search the index replays the store's text log after its watermark, so a save, an edit,
  an archive, a restore or a purge made by any process is seen by the next search here.
- A row is one version of one entry. An entry's change kills its row (postings stay, masked by ``alive``)
  and appends a new one; archived entries have no live row. Dead rows beyond a quarter trigger a reload.
- Scope is exact: the index applies the user/session rule of ``Scope.sees`` and the category prefix with
  masks. Expiry is not known here: the caller reads the ids through ``FactRepository.candidates`` with its
  filter, which drops expired entries (and fetches a few more candidates than it keeps).
- ``search_corrected`` reads only words no live entry of the agent holds (a role's other name, a misspelling,
  another form of an indexed word, in that order); a word an entry holds is always searched as written.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from reverie.core.introductions import same_role
from reverie.core.tokens import word
from reverie.recall.postings import B, Floats, Ints, Postings, bm25, build, idf, weighted_terms
from reverie.recall.typos import edits_allowed, may_be_typo
from reverie.storage.base import FactFilter, Store, TextRow, TextSnapshot

FORM_STEM = 6  # letters the shorter of two forms of one word needs ("organ" of organic is not "organis"...)
FORM_TAIL = 4  # ...and letters the longer may add ("postgresql" is a form of "postgr", "marketplac" none of "market")
NO_CODE = -1  # user_id / session_id NULL: the entry is visible to every user / session of the agent


def _read(index: _AgentIndex, term: str, said: str) -> str:
    """``term`` as ``LexicalIndex.search_corrected`` reads it (``said``: the word as written)."""
    if index.matching(term):
        return term
    # Role names are words, not typos: "boss" is never one edit from anything an entry holds about a manager.
    held = [(entries, w) for w in sorted({word(r) for r in same_role(said)}) if (entries := index.matching(w))]
    if held:
        return max(held)[1]
    # A misspelling is read as the word it misspells before any other form: "PaymentIIntents" is no "payment".
    typo = index.nearest_word(term) if may_be_typo(said) else None
    return typo or index.other_form(term) or term


class _Codes:
    """Small integer codes for user ids, session ids and categories (masks compare integers)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.names: list[str] = []

    def code(self, name: str | None) -> int:
        if name is None:
            return NO_CODE
        found = self.codes.get(name)
        if found is None:
            found = self.codes[name] = len(self.names)
            self.names.append(name)
        return found


_COLUMNS = ("length", "alive", "user", "session", "category")


class _AgentIndex:
    """The rows and postings of one agent's live entries, as of ``watermark``."""

    def __init__(self) -> None:
        self.watermark = 0
        self.ids: list[str | None] = []  # row -> fact id; None once dead
        self.live: dict[str, int] = {}  # fact id -> its live row
        self.dead = 0
        self.live_tokens = 0  # summed length of live rows (for the average length)
        self.terms: dict[str, Postings] = {}
        self.users, self.sessions, self.categories = _Codes(), _Codes(), _Codes()
        self.length: Floats = np.zeros(0, dtype=np.float32)
        self.alive: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self.user: Ints = np.zeros(0, dtype=np.int32)
        self.session: Ints = np.zeros(0, dtype=np.int32)
        self.category: Ints = np.zeros(0, dtype=np.int32)
        self.narrowed = 0  # rows ever added with a user or session id: none means every row is agent-wide
        # The indexed words in order, for a misspelt word (``nearest_word``) and another form (``other_form``).
        self._sorted: list[str] = []
        self._unsorted: list[str] = []  # words indexed since ``_sorted`` was last brought up to date

    # -- building -------------------------------------------------------------------------------------
    def load(self, snapshot: TextSnapshot) -> None:
        """Build from a full snapshot at once (``postings.build``); archived and purged rows are left out."""
        kept: list[tuple[str, TextRow]] = [
            (fid, row) for fid, row in snapshot.rows if row is not None and not row.archived
        ]
        n = len(kept)
        self._reserve(n)
        corpus = build([row for _, row in kept])
        self.terms = corpus.terms
        self._sorted, self._unsorted = [], []  # sorted again whole on the next look
        self.ids = [fid for fid, _ in kept]
        self.live = {fid: index for index, (fid, _) in enumerate(kept)}
        self.length[:n] = corpus.lengths
        self.alive[:n] = True
        self.live_tokens = int(corpus.lengths.sum())
        for codes, column, values in (
            (self.users, self.user, [row.user_id for _, row in kept]),
            (self.sessions, self.session, [row.session_id for _, row in kept]),
            (self.categories, self.category, [row.category for _, row in kept]),
        ):
            column[:n] = np.fromiter(map(codes.code, values), dtype=np.int32, count=n)
        self.narrowed = int(np.count_nonzero((self.user[:n] != NO_CODE) | (self.session[:n] != NO_CODE)))
        self.watermark = snapshot.watermark

    def apply(self, changes: TextSnapshot) -> None:
        """Replay changes: each changed entry loses its row and, unless purged or archived, gets a new one."""
        for fid, row in changes.rows:
            self._kill(fid)
            if row is not None and not row.archived:
                counts, length = weighted_terms(row)
                self._reserve(len(self.ids) + 1)
                index = self._add_row(fid, row, length)
                for word, tf in counts.items():
                    postings = self.terms.get(word)
                    if postings is None:
                        postings = self.terms[word] = Postings.empty()
                        self._unsorted.append(word)
                    postings.append(index, tf, length)
        self.watermark = max(self.watermark, changes.watermark)

    def _reserve(self, rows: int) -> None:
        if rows <= self.length.shape[0]:
            return
        size = max(64, rows, self.length.shape[0] * 2)
        for name in _COLUMNS:
            old = getattr(self, name)
            grown = np.zeros(size, dtype=old.dtype)
            grown[: old.shape[0]] = old
            setattr(self, name, grown)

    def _add_row(self, fid: str, row: TextRow, length: int) -> int:
        index = len(self.ids)
        self.ids.append(fid)
        self.live[fid] = index
        self.length[index] = length
        self.alive[index] = True
        self.user[index] = self.users.code(row.user_id)
        self.session[index] = self.sessions.code(row.session_id)
        self.category[index] = self.categories.code(row.category)
        if row.user_id is not None or row.session_id is not None:
            self.narrowed += 1
        self.live_tokens += length
        return index

    def _kill(self, fid: str) -> None:
        index = self.live.pop(fid, None)
        if index is None:
            return
        self.ids[index] = None
        self.alive[index] = False
        self.live_tokens -= int(self.length[index])
        self.dead += 1

    # -- searching ------------------------------------------------------------------------------------
    def top(self, flt: FactFilter, terms: Sequence[str], k: int, b: float) -> list[tuple[str, float]]:
        """The ``k`` best rows visible through ``flt`` (expiry aside) with their BM25 scores (length
        normalisation ``b``), best first; equal scores: the oldest row first (the order FTS5 gives ties)."""
        documents = len(self.live)
        if documents == 0 or k <= 0 or not terms:
            return []
        candidates, values = self._scores(terms, documents, b)
        if candidates.size == 0:
            return []
        visible = self._visible(candidates, flt)
        if visible is not None:
            candidates, values = candidates[visible], values[visible]
            if candidates.size == 0:
                return []
        if candidates.size > k:
            # Everything tied with the k-th score stays in, so the tie-break below is exact.
            kth = np.partition(values, candidates.size - k)[candidates.size - k]
            keep = values >= kth
            candidates, values = candidates[keep], values[keep]
        order = np.lexsort((candidates, -values))[:k]
        return [(self.ids[int(candidates[i])] or "", float(values[i])) for i in order]

    def _scores(self, terms: Sequence[str], documents: int, b: float) -> tuple[Ints, npt.NDArray[np.float64]]:
        """The rows some term matched (ascending) and each one's summed BM25 score (positive)."""
        average = self.live_tokens / documents
        rows: list[Ints] = []
        weights: list[Floats] = []
        for term, repeats in Counter(terms).items():
            postings = self.terms.get(term)
            if postings is None:
                continue
            term_rows, term_tfs, term_lengths = postings.arrays()
            if self.dead:  # without dead rows every posting is live: no mask to gather
                live = self.alive[term_rows]
                term_rows, term_tfs, term_lengths = term_rows[live], term_tfs[live], term_lengths[live]
            if term_rows.size == 0:
                continue
            rows.append(term_rows)
            weights.append(
                bm25(
                    term_tfs,
                    term_lengths,
                    documents=documents,
                    matching=int(term_rows.size),
                    average_length=average,
                    repeats=repeats,
                    b=b,
                )
            )
        if not rows:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
        matching = np.concatenate(rows)
        # One bincount over all postings beats per-term fancy-indexed adds into a scratch array (1M rows: 4 ms
        # against 6); its float64 sums are FTS5's. Which rows matched comes from a boolean array: scanning it
        # is cheaper than scanning the float scores (1M rows: 1 ms against 7).
        summed = np.bincount(matching, weights=np.concatenate(weights), minlength=len(self.ids))
        matched = np.zeros(len(self.ids), dtype=bool)
        matched[matching] = True
        candidates = np.flatnonzero(matched).astype(np.int32)
        values: npt.NDArray[np.float64] = np.asarray(summed[candidates], dtype=np.float64)  # float64 already: no copy
        return candidates, values

    def nearest_word(self, term: str) -> str | None:
        """The live indexed word ``term`` (one no live row holds) most likely misspells: the fewest edits
        within ``edits_allowed``, then the most rows; None when none is that near."""
        allowed = edits_allowed(term)
        if allowed == 0:
            return None
        self._sort_words()
        from rapidfuzz import process  # on the first misspelt word only: start-up stays fast
        from rapidfuzz.distance import OSA

        near = process.extract(term, self._sorted, scorer=OSA.distance, score_cutoff=allowed, limit=None)
        ranked = sorted(((edits, -self.matching(word), word) for word, edits, _ in near if word != term))
        return next((word for _, rows, word in ranked if rows < 0), None)

    def other_form(self, term: str) -> str | None:
        """The live indexed word that is another form of ``term`` (one no live row holds), where the stemmer
        left two forms of one word apart: one is the other plus at most ``FORM_TAIL`` letters, and the shorter
        has at least ``FORM_STEM`` ("allergic" and "allergy", "postgres" and "postgresql", "religious" and
        "religion"). The one most rows hold, the nearer in length first on a tie; None when there is none."""
        if len(term) < FORM_STEM or any(ch.isdigit() for ch in term):
            return None
        self._sort_words()
        longer = self._sorted[bisect_left(self._sorted, term) : bisect_left(self._sorted, term + "\uffff")]
        shorter = [term[:n] for n in range(FORM_STEM, len(term))]
        forms = [w for w in (*longer, *shorter) if w != term and abs(len(w) - len(term)) <= FORM_TAIL]
        ranked = sorted((-self.matching(w), abs(len(w) - len(term)), w) for w in forms)
        return next((w for rows, _, w in ranked if rows < 0), None)

    def _sort_words(self) -> None:
        """Bring the sorted word list up to date: sorted whole after a load (or many new words), else the words
        indexed since inserted in place, so a store taking writes never re-sorts its vocabulary per search."""
        if len(self._sorted) + len(self._unsorted) != len(self.terms) or len(self._unsorted) > len(self._sorted):
            self._sorted = sorted(self.terms)
        else:
            for new in self._unsorted:
                insort(self._sorted, new)
        self._unsorted.clear()

    def matching(self, term: str) -> int:
        """How many live rows hold ``term``."""
        postings = self.terms.get(term)
        if postings is None:
            return 0
        rows = postings.arrays()[0]
        return int(np.count_nonzero(self.alive[rows])) if self.dead else int(rows.size)

    def _visible(self, rows: Ints, flt: FactFilter) -> npt.NDArray[np.bool_] | None:
        """Which rows ``flt``'s scope (``Scope.sees``) and category prefix let through; None: all of them
        (no row narrowed to a user or session, and no prefix asked)."""
        prefix = flt.category_prefix
        if not self.narrowed and not prefix:
            return None
        mask = np.ones(rows.size, dtype=bool)
        scoped = (
            (self.users, self.user, flt.scope.user_id),
            (self.sessions, self.session, flt.scope.session_id),
        )
        for codes, column, wanted in scoped if self.narrowed else ():
            values = column[rows]
            if wanted is None:
                mask &= values == NO_CODE
            else:
                # An id the index never saw gets a code no row holds: only the NULL rows pass.
                mask &= (values == NO_CODE) | (values == codes.codes.get(wanted, -2))
        if prefix:
            allowed = np.fromiter(
                (name == prefix or name.startswith(prefix + "/") for name in self.categories.names),
                dtype=bool,
                count=len(self.categories.names),
            )
            mask &= allowed[self.category[rows]]
        return mask

    def nbytes(self) -> int:
        """Bytes held in numpy arrays (rows and postings), for reports."""
        postings = sum(p.nbytes() for p in self.terms.values())
        return int(postings + sum(getattr(self, name).nbytes for name in _COLUMNS))


class LexicalIndex:
    """BM25 over the store's long-term entries, one ``_AgentIndex`` per agent, thread-safe.

    Results are candidates: the caller reads them through ``FactRepository.candidates`` with its filter
    (expiry).
    Archived entries are not indexed, so a filter with ``include_archived`` is not ``supported``.
    """

    def __init__(self, store: Store, *, b: float = B) -> None:
        """``b``: BM25's length normalisation (FTS5's 0.75 by default; 0 ignores a document's length)."""
        if not 0.0 <= b <= 1.0:
            raise ValueError("b must be between 0 and 1")
        self._store = store
        self.b = b
        self._agents: dict[str, _AgentIndex] = {}
        self._lock = threading.Lock()

    @staticmethod
    def supports(flt: FactFilter) -> bool:
        """Whether ``search`` can answer for ``flt``: it holds no archived entries, and knows none of the fields
        an ``EntryFilter`` tests (the store's full-text search applies one in its query, so a filter never
        cuts the matches at the candidate depth)."""
        return not flt.include_archived and flt.entry is None

    def search(self, flt: FactFilter, terms: Sequence[str], k: int) -> list[tuple[str, float]]:
        """The ``k`` best entries for ``terms`` (index words, ``core.tokens.search_terms``) that ``flt``'s
        scope and category prefix let through, with their BM25 scores (positive, larger is better)."""
        if not self.supports(flt):
            raise ValueError("the lexical index holds no archived entries; search the store instead")
        with self._lock:
            return self._current(flt.scope.agent_id).top(flt, terms, k, self.b)

    def search_corrected(
        self, flt: FactFilter, terms: Sequence[str], written: Sequence[str], k: int
    ) -> tuple[list[str], list[tuple[str, float]]]:
        """``search`` after reading words the memory lacks: each of ``terms`` (index words) that no live entry of
        the agent holds is read as the other name of its family or work role that most entries hold ("dad" as
        "father", "boss" as "manager"); failing that, when its ``written`` form (the query word, lower case)
        ``typos.may_be_typo``, as the indexed word it most likely misspells (``_AgentIndex.nearest_word``:
        "swiming" is read as "swimming"); failing that, as another form of an indexed word
        (``_AgentIndex.other_form``: "allergic" as "allergy"); else it is kept. Returns the terms searched and
        the hits; one catch-up with the store serves both."""
        if not self.supports(flt):
            raise ValueError("the lexical index holds no archived entries; search the store instead")
        with self._lock:
            index = self._current(flt.scope.agent_id)
            searched = [_read(index, term, said) for term, said in zip(terms, written, strict=True)]
            return searched, index.top(flt, searched, k, self.b)

    def ideal(self, agent_id: str, terms: Sequence[str]) -> float:
        """The BM25 score of an average-length entry holding each of ``terms`` once: the sum of their idfs
        (repeats counted, as in ``search``); a term no entry holds counts as one entry's word (in a small
        store an unseen word's idf would dwarf every other); 0 for an agent without entries."""
        with self._lock:
            # The search just before caught the index up: no second read of the store's change log.
            index = self._agents.get(agent_id) or self._current(agent_id)
            documents = len(index.live)
            if documents == 0:
                return 0.0
            total = 0.0
            for term, repeats in Counter(terms).items():
                total += idf(documents, max(index.matching(term), 1)) * repeats
            return total

    def size(self, agent_id: str) -> int:
        """How many live entries the agent's index holds (after catching up)."""
        with self._lock:
            return len(self._current(agent_id).live)

    def nbytes(self, agent_id: str) -> int:
        with self._lock:
            return self._current(agent_id).nbytes()

    def _current(self, agent_id: str) -> _AgentIndex:
        index = self._agents.get(agent_id)
        if index is not None and index.dead <= max(1024, len(index.ids) // 4):
            changes = self._store.facts.text_changes(agent_id, index.watermark)
            if changes.watermark >= index.watermark:
                index.apply(changes)
                return index
            # The log went backwards: the store was restored from a backup. Start again.
        # First use, many dead rows, or a replaced log: load afresh (also compacts).
        index = _AgentIndex()
        index.load(self._store.facts.text_snapshot(agent_id))
        self._agents[agent_id] = index
        return index
