"""core.coverage_vocabulary: the per-deployment vocabulary file and segment-aware categories (seed 001)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from reverie.core.coverage import (
    BASELINE_COMMON_WORDS,
    DEFAULT_VOCABULARY,
    ROUTING_EXEMPT_CATEGORY,
    Vocabulary,
    category_matches,
    load_vocabulary,
    specifics,
)

LOGGER = "reverie.coverage"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "merge-coverage-vocabulary.json"
    path.write_text(text, encoding="utf-8")
    return path


# --- baseline and the Vocabulary type ------------------------------------------------------------------


@pytest.mark.parametrize(
    "word",
    ["may", "will", "some", "first", "last", "valid", "direct", "alternative", "through", "the", "this", "when", "if"]
    + ["a", "an"],
)
def test_the_baseline_holds_the_words_the_seed_names(word: str) -> None:
    assert word in BASELINE_COMMON_WORDS


@pytest.mark.parametrize("name", ["personal", "class", "benefit", "extended", "rose", "austin", "august", "grace"])
def test_the_baseline_leaves_out_words_that_name_real_things(name: str) -> None:
    assert name not in BASELINE_COMMON_WORDS


def test_the_baseline_is_lowercase() -> None:
    assert all(word == word.lower() for word in BASELINE_COMMON_WORDS)


def test_the_default_vocabulary_adds_nothing_and_exempts_routing() -> None:
    assert Vocabulary(frozenset(), frozenset(), (ROUTING_EXEMPT_CATEGORY,)) == DEFAULT_VOCABULARY
    assert DEFAULT_VOCABULARY.numeric_exempt_categories == ("anti-patterns/routing",)


def test_words_are_held_lowercased_and_trimmed() -> None:
    vocabulary = Vocabulary(extra_common_words=frozenset({" Briefing ", "TRIAGE", ""}))
    assert vocabulary.extra_common_words == frozenset({"briefing", "triage"})


def test_the_routing_exemption_cannot_be_removed() -> None:
    vocabulary = Vocabulary(numeric_exempt_categories=("metrics/cost/", "metrics/cost"))
    assert vocabulary.numeric_exempt_categories == ("anti-patterns/routing", "metrics/cost")
    assert vocabulary.is_numeric_exempt("anti-patterns/routing/high-tier")
    assert not vocabulary.is_numeric_exempt(None)


# --- category_matches ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "pattern", "expected"),
    [
        ("anti-patterns/routing", "anti-patterns/routing", True),
        ("anti-patterns/routing/high-tier", "anti-patterns/routing", True),
        ("anti-patterns/routing/high-tier/x", "anti-patterns/routing", True),
        ("anti-patterns/routing-notes", "anti-patterns/routing", False),
        ("anti-patterns", "anti-patterns/routing", False),
        ("anti-patterns/routingx", "anti-patterns/routing", False),
        ("x/anti-patterns/routing", "anti-patterns/routing", False),
        ("metrics/cost", "metrics/cost/", True),
        ("metrics", "", False),
        ("metrics", "/", False),
    ],
)
def test_category_matching_is_segment_aware(category: str, pattern: str, expected: bool) -> None:
    assert category_matches(category, pattern) is expected


# --- load_vocabulary -----------------------------------------------------------------------------------


def test_no_path_or_a_missing_file_is_the_baseline_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert load_vocabulary(None) == DEFAULT_VOCABULARY
        assert load_vocabulary(tmp_path / "absent.json") == DEFAULT_VOCABULARY
    assert caplog.records == []


def test_a_valid_file_round_trips(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"extraCommonWords": ["briefing", "Triage"], "alwaysSpecificWords": ["May", "Will", "Rose"],'
        ' "numericExemptCategories": ["metrics/cost"]}',
    )
    vocabulary = load_vocabulary(path)
    assert vocabulary.extra_common_words == frozenset({"briefing", "triage"})
    assert vocabulary.always_specific_words == frozenset({"may", "will", "rose"})
    # Additive: the built-in exemption survives a file that names its own categories.
    assert vocabulary.numeric_exempt_categories == ("anti-patterns/routing", "metrics/cost")


def test_every_field_is_optional(tmp_path: Path) -> None:
    assert load_vocabulary(write(tmp_path, "{}")) == DEFAULT_VOCABULARY
    assert load_vocabulary(write(tmp_path, '{"alwaysSpecificWords": ["May"]}')).always_specific_words == {"may"}


@pytest.mark.parametrize(
    "text",
    [
        "{ not json",
        "",
        '["briefing"]',
        '"briefing"',
        '{"extraCommonWords": "briefing"}',
        '{"extraCommonWords": ["briefing", 3]}',
        '{"alwaysSpecificWords": null}',
        '{"numericExemptCategories": {"metrics": true}}',
        '{// a comment\n "extraCommonWords": []}',
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_a_malformed_file_falls_back_to_the_baseline_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        vocabulary = load_vocabulary(write(tmp_path, text))
    assert vocabulary == DEFAULT_VOCABULARY
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "malformed" in caplog.records[0].getMessage()


def test_a_malformed_file_never_disables_the_check(tmp_path: Path) -> None:
    vocabulary = load_vocabulary(write(tmp_path, "{ not json"))
    assert specifics("Rockford filed", category=None, vocabulary=vocabulary).texts == ("Rockford",)


def test_an_unreadable_file_falls_back_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "merge-coverage-vocabulary.json"
    directory.mkdir()
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert load_vocabulary(directory) == DEFAULT_VOCABULARY
        assert load_vocabulary(binary) == DEFAULT_VOCABULARY
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]


def test_an_unknown_key_is_ignored_with_a_warning_and_the_rest_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A typo must not also throw away the protections listed beside it.
    path = write(tmp_path, '{"alwaysSpecificWords": ["May"], "alwaysSpecificWord": ["Will"]}')
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        vocabulary = load_vocabulary(path)
    assert vocabulary.always_specific_words == frozenset({"may"})
    assert "alwaysSpecificWord" in caplog.records[0].getMessage()
