"""Reading introductions and queries that describe instead of naming (core.introductions)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reverie.core.introductions import (
    Introduction,
    asks_more,
    asks_what,
    covers,
    described,
    names_in,
    owned,
    possessors,
    read_introduction,
    rewritten,
    same_role,
)


@pytest.mark.parametrize(
    ("text", "name", "description"),
    [
        ("Leo is Dan's son; he started primary school in September 2025.", "Leo", "Dan's son"),
        ("Harbor is Northwind's payments platform: it takes card payments.", "Harbor", "Northwind's payments platform"),
        ("Beacon is the customer mobile app for iOS and Android.", "Beacon", "the customer mobile app"),
        ("Anna is my sister.", "Anna", "my sister"),
        ("Ruth's ward manager is Deepa Shah.", "Deepa Shah", "Ruth's ward manager"),
        ("Ruth's mother Grace lives in Leicester.", "Grace", "Ruth's mother"),
        ("My sister Anna lives in Leeds.", "Anna", "My sister"),
        ("The family's dog Pepper is scared of fireworks.", "Pepper", "The family's dog"),
        ("Our youngest, Noor, is six.", "Noor", "Our youngest"),
        ("Our dentist is Dr Kapoor at Byres Road Dental.", "Dr Kapoor", "Our dentist"),
    ],
)
def test_three_shapes_of_introduction(text: str, name: str, description: str) -> None:
    found = read_introduction(text)
    assert found is not None
    assert (found.name, found.description) == (name, description)


@pytest.mark.parametrize(
    "text",
    [
        "Ruth is a charge nurse on the cardiology ward.",  # says what she is, not who: an indefinite article
        "Ruth's birthday is on 2 November.",
        "Pepper's vet is Chorlton Vets, and her flea treatment is due monthly.",  # no word beyond the name
        "Dan drinks a flat white with oat milk every morning.",
        'Caroline said, "Melanie is my best friend."',  # a conversation turn opens with its speaker
        "",
    ],
)
def test_what_is_not_an_introduction(text: str) -> None:
    assert read_introduction(text) is None


def _intro(text: str) -> Introduction:
    found = read_introduction(text)
    assert found is not None
    return found


def test_a_query_describes_with_the_descriptions_words_never_the_owners() -> None:
    leo = _intro("Leo is Dan's son.")
    assert leo.owner == {"dan"} and leo.words == {"son"}
    assert described("son's drug allergy", leo) == {"son"}
    assert described("Dan's dentist", leo) == frozenset()  # the owner alone describes nobody
    assert described("Leo's allergy", leo) == frozenset()  # named already: nothing to resolve
    harbor = _intro("Harbor is Northwind's payments platform.")
    assert described("when do the platforms deploy", harbor) == {"platform"}  # a plural meets its singular


def test_roles_meet_their_everyday_words_and_stems_do_not_overreach() -> None:
    margaret = _intro("Margaret is Dan's mother.")
    assert described("Dan's mum's operation", margaret) == {"mum"}
    assert described("my mom's birthday", margaret) == {"mom"}
    helen = _intro("Helen Carter is Dan's engineering manager.")
    assert described("what does my boss want", helen) == {"boss"}
    aiko = _intro("Aiko Tanaka is the product manager.")
    # "production" and "product" share a stem; they do not describe one another.
    assert described("which region hosts production", aiko) == frozenset()


def test_a_description_is_its_head_noun_its_owner_and_never_a_day() -> None:
    cuisine = _intro("Thai is Dan's favourite cuisine.")
    assert cuisine.head == "cuisine"
    assert described("what's Dan's favourite drink?", cuisine) == frozenset()  # a modifier alone is not it
    assert described("Dan's favourite cuisine for a birthday", cuisine) == {"favourite", "cuisine"}
    band = _intro("Radiohead is Dan's favourite band.")
    assert described("what is Marco's favourite band?", band) == frozenset()  # someone else's favourite
    assert read_introduction("Wednesday is Dan's no-meeting day.") is None  # a day is when, not who


def test_a_query_covers_a_description_when_it_says_every_word_of_it() -> None:
    beacon = _intro("Beacon is the customer mobile app for iOS and Android.")
    assert not covers(described("how do I deploy a Django app to Heroku", beacon), beacon)
    assert covers(described("the customer mobile apps", beacon), beacon)
    layla = _intro("My wife Layla is a paediatric nurse.")
    assert covers(described("my wife's allergy", layla), layla)
    assert covers(described("my spouse's allergy", layla), layla)  # a role's other name says it too


def test_a_query_asks_more_when_a_topic_word_is_left() -> None:
    leo = _intro("Leo is Dan's son.")
    assert asks_more("son's drug allergy", {"son"}, leo)
    assert asks_more("what is my son allergic to?", {"son"}, leo)
    assert not asks_more("Dan's son", {"son"}, leo)
    assert not asks_more("who is Dan's son?", {"son"}, leo)  # the introduction is the answer
    marco = _intro("Marco Bellini is the site reliability engineer.")
    assert not asks_more("who looks after reliability for Lantern?", {"reliability"}, marco)


@pytest.mark.parametrize(
    ("intro", "query", "expected"),
    [
        ("Leo is Dan's son.", "son's drug allergy", "Leo's drug allergy"),
        ("Leo is Dan's son.", "Dan's son's drug allergy", "Leo's drug allergy"),
        ("Leo is Dan's son.", "what is my son allergic to?", "what is Leo allergic to?"),
        ("Leo is Dan's son.", "when does Dan's son see Dan's mum", "when does Leo see Dan's mum"),
        ("Margaret is Dan's mother.", "Dan's mum's operation", "Margaret's operation"),
        ("Helen Carter is Dan's engineering manager.", "the engineering manager quitting", "Helen quitting"),
        (
            "Harbor is Northwind's payments platform.",
            "release day for the payments platform",
            "release day for Harbor",
        ),
        (
            "Marco Bellini is the site reliability engineer for Harbor.",
            "the reliability engineer's summer break",
            "Marco's summer break",
        ),
        ("My wife Layla is a nurse.", "(my wife) allergic to", "(Layla) allergic to"),
    ],
)
def test_a_query_rewritten_by_name(intro: str, query: str, expected: str) -> None:
    introduction = _intro(intro)
    assert rewritten(query, described(query, introduction), introduction) == expected


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("what is Quill?", "Quill"),
        ("What's Harbor?", "Harbor"),
        ("who is Priya Raman?", "Priya Raman"),
        ("what does Aiko do?", "Aiko"),
        ("what does Elena do for a living?", "Elena"),
        ("what is Quill written in?", None),  # asks something of Quill, not what it is
        ("who is Dan's son?", None),  # a description: asked again by name instead
        ("what is the capital of Peru", None),
    ],
)
def test_a_question_for_what_a_name_is(query: str, name: str | None) -> None:
    assert asks_what(query) == name


def test_a_title_is_not_the_name_later_memories_use() -> None:
    kapoor = _intro("Our dentist is Dr Kapoor at Byres Road Dental.")
    assert kapoor.first == "Kapoor" and names_in("Kapoor wants to see the kids", kapoor)
    query = "when is the next dentist appointment?"
    assert rewritten(query, described(query, kapoor), kapoor) == "when is the next Kapoor appointment?"


def test_names_in_reads_the_first_name_as_naming() -> None:
    deepa = _intro("Ruth's ward manager is Deepa Shah.")
    assert names_in("Deepa is on leave in May", deepa)
    assert names_in("Deepa Shah signs the rota", deepa)
    assert not names_in("the ward manager signs the rota", deepa)


@given(st.lists(st.sampled_from(["son", "sons", "Dan's", "drug", "the", "allergy", "school", "of"]), max_size=8))
def test_a_rewrite_names_once_and_keeps_every_other_word_in_order(words: list[str]) -> None:
    leo = _intro("Leo is Dan's son.")
    query = " ".join(words)
    used = described(query, leo)
    assume(used)
    out = rewritten(query, used, leo).split()
    assert out.count("Leo") == 1  # the description's words become the name once
    out.remove("Leo")
    # The owner's possessive and a determiner go before the described word, every other word stays in order.
    gone = {i for i, w in enumerate(words[:-1]) if w in ("Dan's", "the") and words[i + 1] in ("son", "sons")}
    assert out == [w for i, w in enumerate(words) if w not in ("son", "sons") and i not in gone]


def test_a_role_has_other_names_and_other_words_have_none() -> None:
    assert same_role("dad") == {"father", "daddy", "pa"}
    assert "mother" in same_role("Mum") and "mum" not in same_role("mum")
    assert {"son", "daughter", "child"} <= same_role("kids")  # a plural as its singular
    assert same_role("partner") == {"wife", "husband", "spouse"}
    assert "husband" not in same_role("wife") and "daughter" not in same_role("son")  # never the other one
    assert same_role("allergy") == frozenset() and same_role("engineer") == frozenset()


def test_whose_things_a_query_asks_about() -> None:
    assert possessors("Dan's partner's job") == {"dan"}
    assert possessors("what is my wife allergic to?") == {"my"}
    assert possessors("when does our dentist open") == {"our"}
    assert possessors("partner's job") == frozenset()  # a role, not a name: no owner named


def test_a_query_owns_an_introduction_when_it_names_its_owner() -> None:
    elena, layla = _intro("Elena is Dan's wife."), _intro("My wife Layla is a nurse.")
    kapoor = _intro("Our dentist is Dr Kapoor.")
    assert owned("Dan's partner's job", elena) and not owned("Marco's partner's job", elena)
    assert not owned("the wife's job", elena)  # the description's words, but no owner named
    assert owned("my wife's allergy", layla) and owned("my dentist's hours", kapoor)  # my and our alike
    assert not owned("Dan's wife's allergy", layla) and not owned("the dentist's hours", kapoor)
