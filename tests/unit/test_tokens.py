"""core.tokens: the words of FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, and BM25's arithmetic."""

from __future__ import annotations

import math
import re
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.tokens import MARK, search_terms, split_many, tokens, word
from reverie.recall.postings import bm25, build, weighted_terms
from reverie.storage.base import TextRow


def fts5_tokens(texts: list[str]) -> list[list[str]]:
    """What SQLite's own tokenizer makes of each text (an in-memory FTS5 table read through fts5vocab)."""
    with sqlite3.connect(":memory:") as c:
        c.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
        c.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        c.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", list(enumerate(texts, 1)))
        found: dict[int, list[tuple[int, str]]] = {}
        for term, doc, offset in c.execute("SELECT term, doc, offset FROM v"):
            found.setdefault(doc, []).append((offset, term))
    return [[t for _, t in sorted(found.get(i, []))] for i in range(1, len(texts) + 1)]


SENTENCES = [
    "Maya repaired the old bicycle near the green garden in Oslo last week with Omar",
    "User prefers dark roast coffee; timezone is UTC-6 (America/Chicago)",
    "snake_case_name and user_id split like unicode61 does",
    "Café naïve façade — résumé of the Ñandú in São Paulo, Škoda from Zürich",
    "Running runners ran; connections connected, generously and relational",
    "The caresses of ponies agreed, happily: 2024-06-01 v2.0 x86_64",
    "日本語のテキスト and 中文 with emoji 🎉 and ΟΔΟΣ İstanbul",
    '["tag one","tag-two"] user-preferences/timezone',
]


@pytest.mark.parametrize("text", SENTENCES)
def test_tokens_match_fts5s_tokenizer(text: str) -> None:
    assert tokens(text) == fts5_tokens([text])[0]


def test_tokens_stem_fold_and_split() -> None:
    assert tokens("Running CAFÉS, user_id!") == ["run", "cafe", "user", "id"]
    assert word("Connections") == "connect"
    # Tokens shorter than 3 bytes are left alone, as FTS5's porter tokenizer does.
    assert word("as") == "as" and word("is") == "is"


def test_known_departures_from_fts5_are_the_later_porter_revisions() -> None:
    # FTS5 applies Porter's later -logi / -bli rules; Snowball's published algorithm does not.
    assert fts5_tokens(["psychology possibly"])[0] == ["psycholog", "possibl"]
    assert tokens("psychology possibly") == ["psychologi", "possibli"]


def test_search_terms_drop_stopwords_and_keep_repeated_stems() -> None:
    assert search_terms("What is the runner running?") == ["runner", "run"]
    assert search_terms("run running ran") == ["run", "run", "ran"]
    assert search_terms("Café İstanbul") == ["cafe", "istanbul"] == tokens("cafe Istanbul")
    assert search_terms("  ,;  ") == []


def test_weighted_terms_sum_column_weights_and_count_every_token() -> None:
    row = TextRow(
        content="coffee coffee beans",
        tags=("coffee", "morning routine"),
        category="user-preferences/coffee",
        user_id=None,
        session_id=None,
        archived=False,
    )
    counts, length = weighted_terms(row)
    assert counts == pytest.approx({"coffe": 2 + 0.6 + 0.4, "bean": 1.0, "morn": 0.6, "routin": 0.6, "user": 0.4,
                                    "prefer": 0.4})  # fmt: skip
    assert length == 3 + 3 + 3  # content, tags, category tokens


def test_bm25_by_hand() -> None:
    # 4 documents averaging 2.75 tokens; the phrase is in 1 of them, once, in a 3-token document.
    idf = math.log((4 - 1 + 0.5) / (1 + 0.5))  # 0.8473
    expected = idf * (1 * 2.2) / (1 + 1.2 * (1 - 0.75 + 0.75 * 3 / 2.75))  # 0.8169
    got = bm25(np.array([1.0], dtype=np.float32), np.array([3.0], dtype=np.float32), documents=4, matching=1,
               average_length=2.75)  # fmt: skip
    assert got[0] == pytest.approx(expected, rel=1e-6)
    assert got[0] == pytest.approx(0.81692, abs=1e-5)


def test_bm25_floors_idf_for_common_words_and_counts_repeated_phrases() -> None:
    tf, length = np.array([1.0], dtype=np.float32), np.array([2.0], dtype=np.float32)
    common = bm25(tf, length, documents=4, matching=3, average_length=2.0)
    assert common[0] == pytest.approx(1e-6, rel=1e-3)  # log(1.5/3.5) < 0: floored, still positive
    once = bm25(tf, length, documents=10, matching=1, average_length=2.0)
    twice = bm25(tf, length, documents=10, matching=1, average_length=2.0, repeats=2)
    assert twice[0] == pytest.approx(2 * once[0])


def per_text(flat: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in flat:
        if token == MARK:
            out.append([])
        else:
            out[-1].append(token)
    return out


@given(st.lists(st.text(alphabet=st.sampled_from("ab_ -é1\x00Σ日\n"), max_size=12), min_size=1, max_size=6))
def test_split_many_is_each_text_split_on_its_own(texts: list[str]) -> None:
    assert per_text(split_many(texts)) == [re.findall(r"[^\W_]+", t) for t in texts]


def test_split_many_takes_the_ascii_path_and_the_unicode_path_alike() -> None:
    assert split_many(["a_b c-1", "", "x"]) == ["a", "b", "c", "1", MARK, MARK, "x"]
    assert split_many(["café_au lait", "", "x"]) == ["café", "au", "lait", MARK, MARK, "x"]
    assert split_many([]) == []


def test_building_a_corpus_at_once_equals_one_row_at_a_time() -> None:
    rows = [
        TextRow(content=c, tags=t, category=g, user_id=None, session_id=None, archived=False)
        for c, t, g in [
            ("Coffee beans, coffee grinder", ("coffee", "kitchen gear"), "home/kitchen"),
            ("", (), "general"),
            ("Café naïve façade", ("français",), "travel"),
            ("tea", ("",), "home/kitchen"),
        ]
    ]
    corpus = build(rows)
    for index, row in enumerate(rows):
        counts, length = weighted_terms(row)
        assert corpus.lengths[index] == length
        held = {w: float(p.tfs[list(p.rows).index(index)]) for w, p in corpus.terms.items() if index in p.rows}
        assert held == pytest.approx(counts)
    assert build([]).terms == {}
