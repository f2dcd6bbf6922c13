"""The rule-based entity extractor and the host's reading of an LLM's extraction (``reverie.core.extract``):
names (runs, particles, possessives, honorifics, the sentence start, ``known``), dates in one canonical spelling,
numbers with units, the ``mentioned_with`` pairs, the caps, and a property test of the invariants."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core.extract import (
    DATE,
    MENTIONED_WITH,
    NUMBER,
    ExtractedEntity,
    Mention,
    extract,
    from_answer,
    mentions,
    related_pairs,
)
from reverie.core.graph import THING, entity_key


def found(text: str, **options: Any) -> list[tuple[str, str]]:
    return [(m.type, m.name) for m in mentions(text, **options)]


def names(text: str, **options: Any) -> list[str]:
    return [name for kind, name in found(text, **options) if kind == THING]


def dates(text: str) -> list[str]:
    return [name for kind, name in found(text) if kind == DATE]


def numbers(text: str) -> list[str]:
    return [name for kind, name in found(text) if kind == NUMBER]


# -- names ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I met Ana at the meetup.", ["Ana"]),
        ("She moved to New York last year.", ["New York"]),
        ("He joined Acme Corp in the spring.", ["Acme Corp"]),
        ("We bank with Bank of America and sail like Vasco da Gama.", ["Bank of America", "Vasco da Gama"]),
        ("The merger of AT&T and Johnson & Johnson.", ["AT&T", "Johnson & Johnson"]),
        ("A job pulls tide tables from the NOAA CO-OPS API nightly.", ["NOAA CO-OPS API"]),
        ("We flew to São Paulo and then to Zürich.", ["São Paulo", "Zürich"]),
        ("A book by J. R. R. Tolkien, bought in St. Paul.", ["J. R. R. Tolkien", "St. Paul"]),
        ("She bought an iPhone from O'Brien.", ["iPhone", "O'Brien"]),
    ],
)
def test_capitalised_runs_are_names(text: str, expected: list[str]) -> None:
    assert names(text) == expected


def test_a_possessive_ends_a_name_and_is_not_part_of_it() -> None:
    assert names("Friday deploys need Maya's approval and the Joneses' car.") == ["Maya", "Joneses"]
    first = mentions("Approval needs Maya's signature.")[0]
    assert (first.name, "Approval needs Maya's signature."[first.start : first.end]) == ("Maya", "Maya")


def test_an_honorific_opens_no_name() -> None:
    assert names("Yesterday Dr. Ana Costa called Mr Smith.") == ["Ana Costa", "Smith"]


def test_a_line_break_or_punctuation_splits_names() -> None:
    assert names("I called Ana\nBruno will answer, said Carla.") == ["Ana", "Carla"]
    assert names("The route is Europe/Lisbon for Maya-Lee.") == ["Europe", "Lisbon", "Maya-Lee"]


def test_leading_function_words_at_a_sentence_start_are_dropped() -> None:
    assert names("The Acme board met. Yesterday Ana called.") == ["Acme", "Ana"]
    assert names("In March Ana left for Porto.") == ["Ana", "Porto"]


def test_a_run_of_two_words_at_a_sentence_start_is_a_name() -> None:
    assert names("New York is big. Acme Corp hired her.") == ["New York", "Acme Corp"]


def test_a_lone_word_at_a_sentence_start_needs_more_evidence() -> None:
    assert names("Ana works at the bakery.") == []  # a capital at the start is grammar
    assert names("Ana works at the bakery. I told Ana.") == ["Ana"]  # written capitalised mid-sentence too
    assert names("Ana works at the bakery.", known=lambda key: key == "ana") == ["Ana"]  # the graph knows her
    assert names("Yesterday was long.", known=lambda key: True) == []  # a common word, known or not
    assert names("Meeting moved. Ana said so: Lantern ships.") == []  # after ':' is a sentence start too


def test_sentence_starts_follow_periods_but_not_abbreviations() -> None:
    assert names("We met Dr. Smith today.") == ["Smith"]
    assert names("It rained. Smith stayed.") == []
    assert names("- Ana arrived\n- Bruno left", known=lambda key: key in {"ana", "bruno"}) == ["Ana", "Bruno"]


def test_acronyms_count_but_not_at_a_sentence_start_as_function_words() -> None:
    assert names("AT&T bought it. IT Corp sold it.") == ["AT&T", "IT Corp"]


@pytest.mark.parametrize(
    "text",
    [
        "The deploy is on Monday, and again on Tuesdays.",
        "See you in March, or in May.",
        "Then I left, and I came back.",
        "x is A or B.",
    ],
)
def test_months_weekdays_pronouns_and_single_letters_are_never_names(text: str) -> None:
    assert names(text) == []


def test_a_name_is_reported_once_as_first_written() -> None:
    assert found("We saw Ana, then ANA, then ana again; later Ana.") == [(THING, "Ana")]


# -- dates ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Due 2026-03-14.", "2026-03-14"),
        ("Due 2026-03-14T10:00Z.", "2026-03-14"),
        ("Due March 14, 2026.", "2026-03-14"),
        ("Due March 14 2026.", "2026-03-14"),
        ("Due Mar. 14th, 2026.", "2026-03-14"),
        ("Due 14 March 2026.", "2026-03-14"),
        ("Due 14th of March, 2026.", "2026-03-14"),
        ("Due 14 March.", "March 14"),
        ("Due March 14th.", "March 14"),
        ("Due in March 2026.", "2026-03"),
        ("Due 2026-03 at the latest.", "2026-03"),
        ("Founded in 2019 by two friends.", "2019"),
        ("Open since 1998.", "1998"),
        ("Due February 29.", "February 29"),
        ("Born Feb 29, 2024.", "2024-02-29"),
    ],
)
def test_dates_have_one_canonical_name(text: str, expected: str) -> None:
    assert dates(text) == [expected]


def test_spellings_of_one_date_are_one_entity() -> None:
    text = "Signed 2026-03-14, i.e. March 14, 2026 (14 March 2026)."
    assert dates(text) == ["2026-03-14"]


@pytest.mark.parametrize(
    "text",
    [
        "Due February 30, 2026.",
        "Due February 29, 2026.",  # not a leap year
        "Due 2026-13-01.",
        "Due 2026-04-31.",
        "Room 2019 is free.",  # a number, not a year: no preposition
        "Version 1.2026-03-14b",
        "May I come?",
    ],
)
def test_impossible_or_ambiguous_dates_are_not_dates(text: str) -> None:
    assert dates(text) == []


def test_a_date_consumes_its_words_and_digits() -> None:
    assert found("Due March 14, 2026 with Ana present.") == [(DATE, "2026-03-14"), (THING, "Ana")]


# -- numbers -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She has 3 kids.", ["3 kids"]),
        ("It costs $40 a month.", ["$40"]),
        ("It costs $ 40.", ["$40"]),
        ("Raised $3.5 million, then €1,200.50 and £3.5m.", ["$3.5 million", "€1,200.50", "£3.5m"]),
        ("Standup at 9:30, lunch at 12:15 pm, call at 9am, dinner at 7 p.m.", ["9:30", "12:15 pm", "9 am", "7 pm"]),
        ("Tips were 40% and 12.5 %.", ["40%", "12.5%"]),
        ("She ran 5km in 42min; 12h later, 16GB free.", ["5km", "42min", "12h", "16GB"]),
        ("1,200 people came; 2.5 hours late.", ["1,200 people", "2.5 hours"]),
        ("Three years ago 3 years passed.", ["3 years"]),
    ],
)
def test_numbers_with_units(text: str, expected: list[str]) -> None:
    assert numbers(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "She counted 40 of them.",  # "of" is no unit
        "PostgreSQL 16; staging on db.t4g.medium.",  # a bare number, a number inside a word
        "Python 3.12 with FastAPI.",
        "Call 555 and ask.",
        "It is 1st, 2nd or 3rd.",
        "Route /v2/routes, build A100.",
    ],
)
def test_bare_numbers_and_numbers_glued_into_words_are_skipped(text: str) -> None:
    assert numbers(text) == []


def test_a_time_inside_a_date_time_is_not_a_separate_number() -> None:
    assert found("At 2026-03-14T10:00 it began.") == [(DATE, "2026-03-14")]


# -- order, identity, caps -----------------------------------------------------------------------------------
def test_mentions_come_in_text_order_with_their_offsets() -> None:
    text = "I met Ana in New York on 2026-03-14 with her 3 kids."
    got = mentions(text)
    assert [(m.type, m.name) for m in got] == [
        (THING, "Ana"),
        (THING, "New York"),
        (DATE, "2026-03-14"),
        (NUMBER, "3 kids"),
    ]
    assert [text[m.start : m.end] for m in got] == ["Ana", "New York", "2026-03-14", "3 kids"]


def test_max_entities_keeps_the_first() -> None:
    text = "We met Ana, Bruno, Carla, Dinis and Eva."
    assert names(text, max_entities=2) == ["Ana", "Bruno"]
    with pytest.raises(ValueError):
        mentions(text, max_entities=0)


def test_empty_and_plain_texts_mention_nothing() -> None:
    assert mentions("") == [] and mentions("   \n\t") == []
    assert mentions("nothing capitalised here, and no numbers with units") == []


# -- mentioned_with ------------------------------------------------------------------------------------------
def _m(kind: str, name: str, at: int) -> Mention:
    return Mention(kind, name, at, at + 1)


def test_pairs_within_the_window_nearest_first_ordered_by_identity() -> None:
    ms = [_m(THING, "Zed", 0), _m(THING, "Ana", 1), _m(THING, "Bo", 2), _m(THING, "Cy", 3)]
    pairs = [(a.name, b.name) for a, b in related_pairs(ms, window=2)]
    assert pairs == [("Ana", "Zed"), ("Ana", "Bo"), ("Bo", "Cy"), ("Bo", "Zed"), ("Ana", "Cy")]
    assert [(a.name, b.name) for a, b in related_pairs(ms, window=1, limit=2)] == [("Ana", "Zed"), ("Ana", "Bo")]
    assert related_pairs(ms, limit=0) == []


def test_dates_and_numbers_are_linked_to_names_only() -> None:
    ms = [_m(DATE, "2026-03-14", 0), _m(NUMBER, "3 kids", 1), _m(THING, "Ana", 2)]
    pairs = {(a.name, b.name) for a, b in related_pairs(ms)}
    assert pairs == {("2026-03-14", "Ana"), ("3 kids", "Ana")}


def test_the_window_and_limit_are_checked() -> None:
    with pytest.raises(ValueError):
        related_pairs([], window=0)
    with pytest.raises(ValueError):
        related_pairs([], limit=-1)


def test_extract_gives_entities_and_mentioned_with_relations() -> None:
    got = extract("I met Ana Costa at Acme Corp on March 14, 2026.")
    assert got.entities == (
        ExtractedEntity(THING, "Ana Costa"),
        ExtractedEntity(THING, "Acme Corp"),
        ExtractedEntity(DATE, "2026-03-14"),
    )
    assert {(r.source.name, r.relation, r.target.name) for r in got.relations} == {
        ("Acme Corp", MENTIONED_WITH, "Ana Costa"),
        ("2026-03-14", MENTIONED_WITH, "Acme Corp"),
        ("2026-03-14", MENTIONED_WITH, "Ana Costa"),
    }
    assert got.dropped == 0
    assert ExtractedEntity(NUMBER, "9:30").ref == "number:9:30"  # typed, so the colon is never a type


def test_the_same_pair_in_either_order_is_one_relation() -> None:
    one = extract("I met Ana and Bruno.").relations
    other = extract("I met Bruno and Ana.").relations
    assert [(r.source, r.target) for r in one] == [(r.source, r.target) for r in other]


# -- an LLM's answer -----------------------------------------------------------------------------------------
def test_a_good_answer_is_taken_as_given_with_types_normalised() -> None:
    got = from_answer(
        [{"type": "Person", "name": "Ana  Costa"}, {"type": "organization", "name": "Acme"}, {"name": "Porto"}],
        [
            {"from": "Ana Costa", "relation": "Works At", "to": "Acme"},
            {"from": "Acme", "relation": "in", "to": "Porto"},
        ],
    )
    assert got.entities == (
        ExtractedEntity("person", "Ana Costa"),
        ExtractedEntity("organisation", "Acme"),
        ExtractedEntity(THING, "Porto"),
    )
    assert [(r.source.ref, r.relation, r.target.ref) for r in got.relations] == [
        ("person:Ana Costa", "works_at", "organisation:Acme"),
        ("organisation:Acme", "in", "thing:Porto"),
    ]
    assert got.dropped == 0


def test_a_relation_end_not_among_the_entities_is_a_thing() -> None:
    got = from_answer([], [{"from": "ana", "relation": "knows", "to": "Bruno"}])
    assert [(r.source.ref, r.target.ref) for r in got.relations] == [("thing:ana", "thing:Bruno")]


@pytest.mark.parametrize(
    "bad",
    [
        "Ana",
        None,
        {"type": "person"},
        {"type": "person", "name": "   "},
        {"type": "person", "name": 7},
        ["person", "Ana"],
    ],
)
def test_a_bad_entity_is_dropped_and_counted(bad: Any) -> None:
    got = from_answer([bad, {"type": "place", "name": "Porto"}], [])
    assert got.entities == (ExtractedEntity("place", "Porto"),) and got.dropped == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"from": "Ana", "to": "Porto"},
        {"from": "Ana", "relation": "!!!", "to": "Porto"},
        {"from": "Ana", "relation": "is", "to": "ana "},  # itself
        {"from": "", "relation": "in", "to": "Porto"},
        {"from": "Ana", "relation": 3, "to": "Porto"},
        "Ana -in-> Porto",
    ],
)
def test_a_bad_relation_is_dropped_and_counted(bad: Any) -> None:
    got = from_answer([{"type": "person", "name": "Ana"}], [bad, {"from": "Ana", "relation": "in", "to": "Porto"}])
    assert [(r.source.ref, r.relation, r.target.ref) for r in got.relations] == [("person:Ana", "in", "thing:Porto")]
    assert got.dropped == 1


def test_a_bad_type_is_a_thing_and_duplicates_are_one() -> None:
    got = from_answer([{"type": "???", "name": "Ana"}, {"type": None, "name": "ana"}], [])
    assert got.entities == (ExtractedEntity(THING, "Ana"),) and got.dropped == 0


def test_the_answer_is_capped() -> None:
    ents = [{"type": "person", "name": f"P{i}"} for i in range(5)]
    rels = [{"from": f"P{i}", "relation": "knows", "to": f"P{i + 1}"} for i in range(4)]
    got = from_answer(ents, rels, max_entities=3, max_relations=2)
    assert len(got.entities) == 3 and len(got.relations) == 2 and got.dropped == 4


# -- invariants ----------------------------------------------------------------------------------------------
_ALPHABET = st.sampled_from(
    list("abc AB  .,:;!?'&-/$€%\n") + ["Ana", "New York", "March", "14", "2026-03-14", "9:30", "kids", "of", "The"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_ALPHABET, st.text(max_size=6)), max_size=40).map("".join), st.integers(1, 10))
def test_any_text_gives_distinct_named_mentions_within_the_cap(text: str, cap: int) -> None:
    got = mentions(text, max_entities=cap)
    assert len(got) <= cap
    identities = [m.identity for m in got]
    assert len(identities) == len(set(identities))
    for m in got:
        assert entity_key(m.name)  # never empty
        assert 0 <= m.start < m.end <= len(text)
    assert mentions(text, max_entities=cap) == got  # deterministic
    pairs = related_pairs(got, window=3, limit=50)
    assert all(a.identity < b.identity for a, b in pairs) and len(pairs) == len({(a, b) for a, b in pairs})
