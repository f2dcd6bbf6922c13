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


@pytest.mark.parametrize(
    ("written", "term", "meant"),
    [("alergic", "allerg", "allergic"), ("opertion", "oper", "operation"), ("raisns", "raisin", "raisins")],
)
def test_a_misspelling_is_spelt_as_an_english_word_the_index_reads_as_its_correction(
    written: str, term: str, meant: str
) -> None:
    assert typos.spelling(written, term) == meant


def test_no_spelling_when_no_english_word_near_reads_as_the_correction() -> None:
    assert typos.spelling("kubernets", "kubernet") is None  # two edits, and no English word: left as typed
    assert typos.spelling("alergic", "allergi") is None  # "allergic" is near, but the index read another word


def test_respell_replaces_whole_words_whatever_their_case_and_leaves_the_rest() -> None:
    query = "Is Priya Alergic to nuts? alergic-free snacks"
    assert typos.respell(query, [("alergic", "allerg")]) == "Is Priya allergic to nuts? allergic-free snacks"
    assert typos.respell(query, [("kubernets", "kubernet")]) == query
