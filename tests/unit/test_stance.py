"""core.stance: negations, antonyms, flipped comparisons and moved times are changed beliefs; re-wordings
are not. Pure: no store, no embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _stance_pairs import KINDS, SAME, TABLE
from reverie.core.coverage import DEFAULT_VOCABULARY
from reverie.core.dedup import Verdict, decide
from reverie.core.stance import (
    DEFAULT_STANCE_VOCABULARY,
    parse_failed,
    stance_difference,
    topic_overlap,
    topic_words,
)
from reverie.core.stance_merge import conflicting_sources, merge_stance_conflict
from reverie.core.stance_vocabulary import StanceVocabulary, load_stance_vocabulary, parse_stance_vocabulary


@pytest.mark.parametrize(("first", "second", "kind"), TABLE + KINDS)
def test_each_kind_of_stance_change_is_found_both_ways(first: str, second: str, kind: str) -> None:
    found = stance_difference(first, second)
    assert found is not None and found.kind == kind and found.evidence
    assert stance_difference(second, first) is not None  # symmetric
    assert found.describe()


@pytest.mark.parametrize(("first", "second"), SAME)
def test_rewordings_keep_their_stance(first: str, second: str) -> None:
    assert stance_difference(first, second) is None


@pytest.mark.parametrize(("first", "second", "kind"), TABLE + KINDS)
def test_decide_calls_a_contradiction_what_it_would_otherwise_fold(first: str, second: str, kind: str) -> None:
    """Without stance words the pair is a restatement or an elaboration (what the save did before the
    check); with them it is a contradiction."""
    blind = DEFAULT_VOCABULARY.__class__(stance=StanceVocabulary())
    before = decide(first, second, category="people", vocabulary=blind).verdict
    after = decide(first, second, category="people", vocabulary=DEFAULT_VOCABULARY)
    if before is Verdict.DISTINCT:
        assert after.verdict is Verdict.DISTINCT  # a replaced specific already keeps them apart
    else:
        assert after.verdict is Verdict.CONTRADICT and after.stance is not None and after.stance.kind == kind


def test_every_pair_of_the_issue_table_was_a_false_reinforcement_or_extension() -> None:
    blind = DEFAULT_VOCABULARY.__class__(stance=StanceVocabulary())
    for first, second, _ in TABLE:
        assert decide(first, second, category="people", vocabulary=blind).verdict is not Verdict.DISTINCT


def test_whitespace_only_differences_are_restatements_and_unparseable_text_is_new() -> None:
    assert decide("Priya  likes tea.", " Priya likes tea.\n", category=None, vocabulary=DEFAULT_VOCABULARY).verdict is (
        Verdict.REINFORCE
    )
    assert parse_failed("👍 ✅") and not parse_failed("ok 👍")
    assert decide("Priya likes 👍", "👍", category=None, vocabulary=DEFAULT_VOCABULARY).verdict is Verdict.DISTINCT
    assert decide("👍", "👍", category=None, vocabulary=DEFAULT_VOCABULARY).verdict is Verdict.REINFORCE


def test_an_extended_entry_is_compared_paragraph_by_paragraph() -> None:
    existing = "Priya likes green tea.\n\nPriya does not drink coffee."
    assert decide(existing, "Priya likes green tea.", category=None, vocabulary=DEFAULT_VOCABULARY).verdict is (
        Verdict.REINFORCE
    )
    contradicting = decide(existing, "Priya drinks coffee.", category=None, vocabulary=DEFAULT_VOCABULARY)
    assert contradicting.verdict is Verdict.CONTRADICT


def test_a_merge_never_joins_two_stances_or_flips_one() -> None:
    assert merge_stance_conflict(["Priya is allergic to peanuts.", "Priya is not allergic to peanuts."],
                                 "Priya is allergic to peanuts.") is not None  # fmt: skip
    assert merge_stance_conflict(["Harbor deploys on Tuesdays."], "Harbor never deploys on Tuesdays.") is not None
    # Two different facts of different polarity are not a contradiction, and a merge keeping both is fine.
    sources = ["Priya likes green tea.", "Priya doesn't drink coffee."]
    assert conflicting_sources(sources) is None
    assert merge_stance_conflict(sources, "Priya likes green tea and doesn't drink coffee.") is None
    assert merge_stance_conflict(sources, "Priya likes green tea and drinks coffee.") is not None


@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=4))
def test_a_merge_holding_every_source_verbatim_passes_unless_the_sources_disagree(sources: list[str]) -> None:
    merged = "\n\n".join(sources)
    if conflicting_sources(sources) is None:
        assert merge_stance_conflict(sources, merged) is None


@given(st.text(max_size=60), st.text(max_size=60))
def test_the_check_is_symmetric_and_total(a: str, b: str) -> None:
    assert (stance_difference(a, b) is None) == (stance_difference(b, a) is None)


def test_the_vocabulary_is_data_english_built_in_and_a_home_file_extends_it(tmp_path: Path) -> None:
    assert "en" in DEFAULT_STANCE_VOCABULARY.languages and "never" in DEFAULT_STANCE_VOCABULARY.negations
    assert load_stance_vocabulary(tmp_path / "missing.json") is DEFAULT_STANCE_VOCABULARY
    own = tmp_path / "stance-vocabulary.json"
    own.write_text(json.dumps({"language": "pt", "negations": ["não"], "antonyms": [["gosta", "odeia"]]}))
    extended = load_stance_vocabulary(own)
    assert "não" in extended.negations and "never" in extended.negations
    assert stance_difference("A Maria gosta de café.", "A Maria não gosta de café.", extended) is not None
    assert stance_difference("A Maria gosta de café.", "A Maria odeia café.", extended) is not None
    own.write_text(json.dumps({"builtIn": False, "negations": ["nicht"]}))
    alone = load_stance_vocabulary(own)
    assert alone.negations == frozenset({"nicht"})
    own.write_text("{not json")
    assert load_stance_vocabulary(own) is DEFAULT_STANCE_VOCABULARY  # malformed: the built-in, never none


@pytest.mark.parametrize(
    "document",
    ['{"negations": "not"}', '{"antonyms": [["a"]]}', '{"times": ["now"]}', '{"negativePrefixMinBase": 0}', "[]"],
)
def test_a_malformed_vocabulary_is_refused_with_a_reason(document: str) -> None:
    with pytest.raises(ValueError):
        parse_stance_vocabulary(document)


def test_an_entry_holding_other_facts_is_never_contradicted_whole() -> None:
    """Two lower-case facts extended into one entry: a correction of one of them is its own entry, so the
    other fact does not leave search with a superseded entry."""
    merged = "quarry runs the migrations before the release.\n\njuniper runs the migrations before the release."
    found = decide(
        merged, "Juniper runs the migrations after the release.", category=None, vocabulary=DEFAULT_VOCABULARY
    )
    assert found.verdict is Verdict.DISTINCT
    alone = decide(
        "juniper runs the migrations before the release.", "Juniper runs the migrations after the release.",
        category=None, vocabulary=DEFAULT_VOCABULARY,
    )  # fmt: skip
    assert alone.verdict is Verdict.CONTRADICT


def test_an_entry_extended_with_details_is_contradicted_whole() -> None:
    extended = "Priya is allergic to peanuts.\n\nPriya is allergic to peanuts, since 2019."
    said = "Priya is not allergic to peanuts."
    assert decide(extended, said, category=None, vocabulary=DEFAULT_VOCABULARY).verdict is Verdict.CONTRADICT


def test_a_slip_counts_as_the_same_word_only_when_asked() -> None:
    fact, slipped = "Harbor deploys on Tuesdays.", "Harbor never deplys on Tuesdays."
    assert topic_overlap(fact, slipped) == 0.5
    assert topic_overlap(fact, slipped, typos=True) == 1.0
    assert topic_overlap("Kenji owns a cat.", "Kenji owns a car.", typos=True) == 0.5  # too short to be a slip


def test_asides_and_the_pieces_of_a_contraction_are_about_no_topic(tmp_path: Path) -> None:
    """ "Turns out I'm not allergic to penicillin after all" is about what "I am allergic to penicillin" is
    about: "turns out", "after all" and the "m" of "I'm" (the "s" of "Anna's") are fillers, as data."""
    assert topic_words("Turns out I'm not allergic to penicillin after all") == topic_words(
        "I am allergic to penicillin"
    )
    assert topic_words("Anna's daughter is 4 years old") == topic_words("Anna daughter is 4 years old")
    assert topic_words("I've started drinking coffee again") == topic_words("I started drinking coffee")
    own = tmp_path / "stance-vocabulary.json"
    own.write_text(json.dumps({"fillers": ["to be fair"]}))
    fair = load_stance_vocabulary(own)
    assert topic_words("To be fair the rent is high", fair) == topic_words("the rent is high", fair)
    assert "to be fair" not in DEFAULT_STANCE_VOCABULARY.fillers


@pytest.mark.parametrize(
    ("existing", "candidate"),
    [
        ("Jamal prefers email over phone calls", "Jamal now prefers phone calls to email"),
        ("The standup is at 10:00", "Actually, the standup is at 10:00"),  # a claim of change kept as said
    ],
)
def test_a_text_that_says_a_change_is_never_folded_away_as_a_restatement(existing: str, candidate: str) -> None:
    """Reinforcing keeps only the entry's text: a candidate with a change word the entry lacks keeps its own."""
    assert decide(existing, candidate, category=None, vocabulary=DEFAULT_VOCABULARY).verdict is Verdict.DISTINCT


@pytest.mark.parametrize(
    ("existing", "candidate", "expected"),
    [
        ("Maya relocated to Lisbon with Omar", "Maya moved to Lisbon with Omar", Verdict.REINFORCE),  # a relation
        ("Ben's email is ben@oldmail.com", "Ben's email is ben.k@fastmail.com", Verdict.DISTINCT),
        ("Ben's email is ben@oldmail.com", "Ben's email address is ben@oldmail.com", Verdict.REINFORCE),
        # A favourite band is not a favourite film: the slot changed with its value, a twin.
        ("Omar's favourite band is Radiohead", "Omar's favourite film is Alien", Verdict.DISTINCT),
        ("Dan's favourite drink is green tea", "Dan's favourite drink is black coffee", Verdict.CONTRADICT),
    ],
)
def test_restatements_and_replaced_addresses(existing: str, candidate: str, expected: Verdict) -> None:
    assert decide(existing, candidate, category=None, vocabulary=DEFAULT_VOCABULARY).verdict is expected
