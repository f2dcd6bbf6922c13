"""A replaced slot (core.slot, read through core.correction): a correction that says the statement in other
words but puts a value of the same kind in its place, about the same subject and holder — and the look-alikes
about something or someone else, which must correct nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reverie.core.correction import corrects
from reverie.core.coverage_vocabulary import DEFAULT_VOCABULARY
from reverie.core.slot import replaced_slot
from reverie.core.stance import StanceDifference
from reverie.core.stance_vocabulary import load_stance_vocabulary, parse_stance_vocabulary


def _corrects(older: str, newer: str) -> StanceDifference | None:
    return corrects(older, newer, category=None, vocabulary=DEFAULT_VOCABULARY)


@pytest.mark.parametrize(
    ("older", "newer", "first", "second"),
    [
        ("The team standup is at 10:00", "The standup moved to 9:30", "10:00", "9:30"),  # a time of day
        ("The deadline for the report is Friday", "The report deadline is now Monday", "friday", "monday"),
        ("Our band rehearses on Mondays", "Band practice is on Tuesdays now", "mondays", "tuesdays"),
        ("The newsletter goes out on Thursdays", "We now send the newsletter on Fridays", "thursdays", "fridays"),
        ("The project deadline is 30 June", "The project deadline slipped to 15 July", "30 june", "15 july"),
        ("The cat's name is Luna", "We renamed the cat Nova", "luna", "nova"),  # a name
        ("Our landlord is Mr Patel", "We have a new landlord, Mrs Okafor", "patel", "okafor"),
        # The relation said in other words ("relations" of the stance vocabulary).
        ("I live in Leeds", "I moved to Bristol last month", "leeds", "bristol"),
        ("Tom lives in Manchester", "Tom moved to Glasgow in the spring", "manchester", "glasgow"),
        ("Ravi's manager is Claire", "Ravi reports to Tom now", "claire", "tom"),
        ("Kenji's manager is Laura Chen", "Kenji's new manager is Omar Haddad", "laura chen", "omar haddad"),
        ("The user lives in Lyon", "The user moved to Grenoble", "lyon", "grenoble"),
        ("Jonas works at Siemens", "Jonas has a new job at Bosch", "siemens", "bosch"),
        # An amount counting the same thing ("a month" on one side only).
        ("The gym membership costs £35 a month", "The gym raised the membership fee to £42", "35", "42"),
        ("Priya's phone number ends in 4471", "Priya got a new number ending in 9023", "4471", "9023"),
        # An amount said before what it counts, in words; an e-mail address (its dots are no amounts).
        ("We have two cats", "We have three cats now, we adopted Pepper", "two", "three"),
        ("Ben's email is ben@oldmail.com", "Ben's new email address is ben.k@fastmail.com", "oldmail", "fastmail"),
    ],
)
def test_a_value_of_the_same_kind_replaced_in_other_words_corrects(
    older: str, newer: str, first: str, second: str
) -> None:
    found = _corrects(older, newer)
    assert found is not None and found.kind == "value", (older, newer, found)
    assert set(first.replace(":", " ").split()) <= set(found.first)
    assert set(second.replace(":", " ").split()) <= set(found.second)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # Another thing said before the subject: a twin, not a correction.
        ("The newsletter goes out on Thursdays", "The podcast now goes out on Fridays"),
        ("Maya leaves on May 3", "Maya's sister now leaves on May 5"),
        ("The quarterly report is due on 15 April", "The annual report deadline was pushed back to 29 April"),
        ("The book club meets on Tuesdays", "The film club now meets on Wednesdays"),
        ("Lena's piano lesson is at 4pm", "Lena's swimming lesson moved to 5pm"),
        ("My sister lives in Cardiff", "My brother moved to Edinburgh in March"),
        ("My sister lives in Cardiff", "I moved to Bristol last month"),  # "lives" said as "moved": not her
        ("I bank with Barclays", "My wife moved her account to Monzo"),
        ("The user lives in Lyon", "The user's brother moved to Paris"),  # something possessed: another holder
        ("My sister Ana lives in Cardiff", "Ana's boyfriend moved to Swansea"),
        ("The team retro is on Thursdays", "We moved the planning meeting to Fridays"),
        # Someone else holds it.
        ("Ravi's manager is Claire", "Nadia reports to Tom now"),
        ("Dad lives in Leeds", "Mum's sister relocated to York"),
        ("Jonas works at Siemens", "Lukas has a new job at Bosch"),
        # What it names as replaced is not the older value: conflicting, but no correction of it.
        ("Ravi lives in Oslo.", "Ravi moved from Kyoto to Dublin"),
        # Amounts that count other things.
        (
            "Harbor had a 40-minute outage on 2026-03-14 caused by an expired TLS certificate.",
            "After the certificate outage, Harbor moved certificate renewal to cert-manager, with an alert 21 days "
            "before expiry.",
        ),
        ("The rent is £950 a month", "The council tax went up to £160 a month"),
        # Chat: two sentences, "you" is not the holder.
        (
            "I bought it a year ago in Paris.",
            "You are amazing as always! Here are new photos of Seraphim in the new aquarium that I bought the day "
            "before yesterday.",
        ),
        # No change said.
        ("The standup is at 10:00", "The standup is at 9:30 for the visitors"),
        ("The cat's name is Luna", "The dog's name is Nova"),
    ],
)
def test_a_look_alike_about_something_or_someone_else_corrects_nothing(older: str, newer: str) -> None:
    assert _corrects(older, newer) is None


def test_the_reading_needs_a_stated_change_and_a_value_of_the_same_kind() -> None:
    vocabulary = DEFAULT_VOCABULARY
    assert replaced_slot("The standup is at 10:00", "The standup is on Friday now", vocabulary) is None  # kinds
    assert replaced_slot("The standup is at 10:00", "The standup is at 9:30", vocabulary) is None  # no change
    found = replaced_slot("The standup is at 10:00", "The standup is at 9:30 now", vocabulary)
    assert found is not None and "now" in found.second


def test_relations_are_data_a_home_file_extends_them(tmp_path: Path) -> None:
    assert "live" in DEFAULT_VOCABULARY.stance.related(["moved"])
    assert DEFAULT_VOCABULARY.stance.related(["standup"]) == []
    own = tmp_path / "stance-vocabulary.json"
    own.write_text(json.dumps({"relations": [["rehearses", "practice"]]}))
    extended = load_stance_vocabulary(own)
    assert extended.related(["practice"]) == ["rehearses"] and "live" in extended.related(["moved"])
    with pytest.raises(ValueError):
        parse_stance_vocabulary('{"relations": ["live", "moved"]}')


def test_two_values_replaced_or_names_unreadable_is_another_statement() -> None:
    """Dated events of one person (the dedup bench's generator): the place and the date both change, or the
    place cannot be read as a name in a text without capitals."""
    assert (
        _corrects("Felix relocated to Denver on October 23, 2025.", "Felix moved to Quito on October 27, 2025.") is None
    )
    assert (
        _corrects(
            "zara relocated to nairobi with mateo on august 4, 2019.",
            "Zara moved to Kyoto with Mateo on January 23, 2022.",
        )
        is None
    )
    assert (
        _corrects("omar relocated to seoul on october 14, 2025.", "OMAR MOVED TO PORTO ON DECEMBER 25, 2025.") is None
    )
    assert _corrects("the standup is at 10:00", "the standup moved to 9:30") is not None  # no name to read


def test_an_entry_losing_two_values_is_not_corrected_whole() -> None:
    """Superseding "I live in Leeds with my partner Sam" would hide the partner from search."""
    assert _corrects("I live in Leeds with my partner Sam", "I moved to Bristol last month") is None
    assert _corrects("Our landlord is Mr Patel", "We have a new landlord, Mrs Okafor") is not None  # one name run


def test_an_amount_before_a_noun_is_read_only_as_an_amount_of_the_subject() -> None:
    """ "two cats" counts the subject; "2 kids" before "the cat" counts something else, and a new pet is no
    correction of how many there are."""
    assert _corrects("We have two cats", "Our neighbours now have three cats") is None
    assert _corrects("We have two cats", "We have a new cat called Pepper") is None
    assert _corrects("Ben's email is ben@oldmail.com", "Ben's new phone is 07700 900123") is None
