"""recall.typos: which query words may be misspellings, and how many edits may separate them from a word."""

from __future__ import annotations

import pytest

from reverie.recall import typos


@pytest.mark.parametrize(
    ("word", "edits"),
    [("cat", 0), ("cofe", 1), ("swiming", 1), ("kubernets", 2), ("v1.31", 0), ("sha256sum", 0)],
)
def test_edits_grow_with_the_word_and_digits_allow_none(word: str, edits: int) -> None:
    assert typos.edits_allowed(word) == edits


@pytest.mark.parametrize("word", ["swiming", "lesons", "alergic", "recieve", "clsuter", "neovim"])
def test_a_word_outside_english_may_be_a_typo(word: str) -> None:
    assert typos.may_be_typo(word)


@pytest.mark.parametrize("word", ["tall", "world", "convert", "passport", "pride", "love", "hate", "cold"])
def test_an_english_word_the_memory_lacks_is_not_a_typo(word: str) -> None:
    # "how tall is Mount Everest" must not be read as "how call ...": the memory lacks the word, no more.
    assert typos.english(word)
    assert not typos.may_be_typo(word)


def test_short_words_are_never_typos_even_outside_english() -> None:
    assert not typos.english("xqz")
    assert not typos.may_be_typo("xqz")
