"""A correction said in other words (core.correction): which later texts the save reads as correcting an older
entry it would not otherwise compare with, and which it must not."""

from __future__ import annotations

import pytest

from reverie.core.correction import MAX_WORDS, corrects, same_holder
from reverie.core.coverage_vocabulary import DEFAULT_VOCABULARY
from reverie.core.stance import StanceDifference


def _corrects(older: str, newer: str) -> StanceDifference | None:
    return corrects(older, newer, category=None, vocabulary=DEFAULT_VOCABULARY)


@pytest.mark.parametrize(
    ("older", "newer", "kind"),
    [
        # Too few topic words in common for the save's restatement lookup, a value named as replaced.
        ("The team uses Trello for planning", "The team replaced Trello with Linear", "value"),
        ("Priya works at Google", "Priya left Google and joined Stripe", "value"),
        ("I drive a Honda Civic", "I traded in the Civic for a Tesla Model 3", "value"),  # "Honda" is the value's
        ("My car is a blue Ford Focus", "I sold the Focus and now drive a red Toyota Yaris", "value"),  # my / I
        ("Our office is on Baker Street", "The office moved from Baker Street to Old Street", "value"),  # ours still
        ("The wifi password is sunflower42", "The wifi password changed to bluebird77", "value"),
        # Close enough for the save, but it may be saved under another category: the reading is the same.
        (
            "Lantern stores schedules in PostgreSQL 16",
            "Actually, Lantern stores schedules in PostgreSQL 17, not 16.",
            "value",
        ),
        ("The office is closed on Fridays", "The office is open on Fridays now", "antonym"),
        # A tense read as a moved time, with few words in common: the amount replaced makes it a value.
        ("The budget for the offsite is £5,000", "The offsite budget was cut to £3,500", "value"),
        ("The release is planned for version 2.3", "Actually the release will be version 2.4", "value"),
    ],
)
def test_a_stated_change_corrects_the_older_text(older: str, newer: str, kind: str) -> None:
    found = _corrects(older, newer)
    assert found is not None
    assert found.kind == kind


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # Someone else's: the holder before the value is not said again, or another holder is named.
        ("Hana uses a Windows laptop", "Leo swapped his Windows laptop for a MacBook"),
        ("We store backups in S3", "Acme moved their backups from S3 to Backblaze"),
        ("Oliver is learning Spanish", "Emma dropped Spanish and is learning French instead"),
        ("Our office is on Baker Street", "Sam's studio moved from Baker Street to Old Street"),
        # The newer text's holder is someone the older one names only after its value.
        (
            "Omar cooked the shiny saddle near the noisy bicycle in Accra last summer with Maya",
            "Kwame sold the noisy fence above the small motorcycle in Quito this morning with Omar",
        ),
        # No change said: a second value or a plain restatement is for the save's own lookup.
        ("The team uses Trello for planning", "The team uses Linear for roadmaps"),
        ("Maya drinks tea", "Maya now also drinks coffee"),
        # Chat, not statements: a question, several sentences in the older text, a long turn.
        ("Is Pepper adjusting well to her new home", "Keep me updated, Pepper is adjusting well now"),
        ("Sure thing Nate! See you later!", "Sure thing! They love it when I make them new things!"),
        ("Priya works at Google", "Priya left Google and joined Stripe, " + "and she told us all about it " * 5),
        # Only a tense or a negation with few topic words in common: not the same statement, even with a number.
        ("The budget for the offsite is £5,000", "The budget for the party was cut to £300"),
        ("I went to a convention with my colleagues", "I have a new convention badge"),
    ],
)
def test_what_is_not_a_correction(older: str, newer: str) -> None:
    assert _corrects(older, newer) is None


def test_a_long_text_is_not_read() -> None:
    padding = " ".join(["and"] * MAX_WORDS)
    assert _corrects("The team uses Trello for planning", "The team replaced Trello with Linear") is not None
    assert _corrects("The team uses Trello for planning " + padding, "The team replaced Trello with Linear") is None


def test_an_entry_holding_another_fact_is_not_corrected_whole() -> None:
    older = "The team uses Trello for planning\n\nThe team uses Trello boards for the hiring pipeline too"
    assert _corrects(older, "The team replaced Trello with Linear") is None


def test_the_holder_before_the_value_must_be_said_again() -> None:
    value = StanceDifference("value", ("laptop",), ("macbook",))
    vocabulary = DEFAULT_VOCABULARY
    assert same_holder(
        "Hana uses a laptop", "Hana swapped her laptop for a MacBook", value, category=None, vocabulary=vocabulary
    )
    assert not same_holder(
        "Hana uses a laptop", "Leo swapped his laptop for a MacBook", value, category=None, vocabulary=vocabulary
    )
    # A first person may give way to "the" when no other holder is named.
    assert same_holder(
        "Our laptop is old", "The laptop was swapped for a MacBook", value, category=None, vocabulary=vocabulary
    )
    assert not same_holder(
        "Our laptop is old", "Sam's laptop was swapped for a MacBook", value, category=None, vocabulary=vocabulary
    )
