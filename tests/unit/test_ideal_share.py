"""The ideal lexical match of a query (issue 18): half the query's weight, more for a short query."""

from __future__ import annotations

import pytest

from reverie.recall.hybrid import IDEAL_SHARE, IDEAL_WORDS, ideal_share


def test_a_long_query_needs_half_its_weight_for_full_lexical_evidence() -> None:
    for words in (3, 5, 12, 64):
        assert ideal_share(words) == IDEAL_SHARE == 0.5


def test_a_two_word_query_needs_more_than_one_of_its_words() -> None:
    assert ideal_share(2) == pytest.approx(IDEAL_WORDS / 2) == pytest.approx(0.7)
    assert ideal_share(2) > 0.5  # one of two equal words is no longer full evidence


def test_a_one_word_query_needs_its_word_and_nothing_ever_exceeds_the_whole_query() -> None:
    assert ideal_share(1) == 1.0
    assert ideal_share(0) == 1.0
    assert all(0.5 <= ideal_share(n) <= 1.0 for n in range(0, 100))
