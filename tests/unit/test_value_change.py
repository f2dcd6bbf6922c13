"""A replaced value: "Dan's favourite drink is tea" then "… is coffee". An ordinary word can be a statement's
value as much as a name or a number, so a save that replaces it is never reinforced away; it is a changed
belief when the new text says so ("now", "switched") or only one value can hold ("favourite"). Pure."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from reverie.core.coverage import DEFAULT_VOCABULARY
from reverie.core.dedup import Verdict, decide
from reverie.core.proactive import Candidate, duplicate_rung
from reverie.core.stance import (
    names_replaced,
    replaced_value,
    stance_difference,
    stance_either_way,
    topic_overlap,
)
from reverie.core.stance_merge import conflicting_sources, merge_flips_stance, merge_stance_conflict
from reverie.core.stance_vocabulary import parse_stance_vocabulary

CHANGED = [
    ("Dan's favourite drink is tea.", "Dan's favourite drink is coffee.", ("tea",), ("coffee",)),
    ("Leo's favourite colour is blue.", "Leo's favourite colour is green.", ("blue",), ("green",)),
    ("Maya lives in Lisbon.", "Maya lives in Porto now.", ("lisbon",), ("porto", "now")),
    (
        "Harbor deploys on Tuesdays.",
        "Harbor deploys on Thursdays these days.",
        ("tuesdays",),
        ("thursdays", "these days"),
    ),
    ("The standup is at 10:00.", "The standup is at 9:30 now.", ("10", "00"), ("9", "30", "now")),
    ("Priya uses Vim as her editor.", "Priya uses Helix as her editor now.", ("vim",), ("helix", "now")),
    (
        "Our CI runs on Jenkins.",
        "Our CI actually runs on GitHub Actions.",
        ("jenkins",),
        ("github", "actions", "actually"),
    ),
]
NOT_CHANGED = [
    ("Dan likes tea.", "Dan likes coffee."),  # another value, no word saying it replaces: two facts
    ("Dan likes tea.", "Dan also likes coffee now."),  # "also": a second value
    ("Joss owns the mobile client.", "Priya owns the mobile client now."),  # the subject changed: someone else
    ("Dan's favourite colour is blue.", "Dan's favorite color is blue."),  # spelling variants
    ("Dan bought a bicycle in Porto.", "Dan purchased a bicycle in Porto."),  # a verb swapped mid-sentence
    ("Maya prefers short answers.", "Maya likes answers that are brief."),  # a paraphrase
    ("Dan's team uses Python.", "Dan's team uses Python and Go now."),  # an addition
]


@pytest.mark.parametrize(("first", "second", "old", "new"), CHANGED)
def test_a_replaced_value_said_to_replace_is_a_changed_belief(
    first: str, second: str, old: tuple[str, ...], new: tuple[str, ...]
) -> None:
    found = stance_difference(first, second)
    assert found is not None and found.kind == "value"
    assert found.first == old and found.second == new
    assert "value replaced" in found.describe()


@pytest.mark.parametrize(("first", "second"), NOT_CHANGED)
def test_other_differences_are_not_a_replaced_value(first: str, second: str) -> None:
    found = stance_difference(first, second)
    assert found is None or found.kind != "value"


def test_replaced_value_reads_the_last_words_unless_asked_for_any_run() -> None:
    assert replaced_value("Dan likes tea.", "Dan likes coffee.") == (("tea",), ("coffee",))
    assert replaced_value("Priya uses Vim as her editor.", "Priya uses Helix as her editor.") is None
    assert replaced_value("Priya uses Vim as her editor.", "Priya uses Helix as her editor.", anywhere=True) == (
        ("vim",),
        ("helix",),
    )
    assert replaced_value("Tea.", "Coffee.") is None  # no frame: nothing says what the value is of
    assert replaced_value("Dan likes tea.", "Tea is what Dan likes.") is None  # reordered, nothing replaced


@pytest.mark.parametrize(
    ("existing", "candidate", "verdict"),
    [
        # Reinforcing would have stored "coffee" nowhere: a correction swallowed.
        ("Dan likes tea.", "Dan likes coffee.", Verdict.DISTINCT),
        ("Dan's favourite drink is tea.", "Dan's favourite drink is coffee.", Verdict.CONTRADICT),
        # A name replaced is a twin (someone else) unless the new text says it replaces the old value.
        ("Maya lives in Lisbon.", "Maya lives in Porto.", Verdict.DISTINCT),
        ("Maya lives in Lisbon.", "Maya lives in Porto now.", Verdict.CONTRADICT),
        ("The standup is at 10:00.", "The standup is at 9:30 now.", Verdict.CONTRADICT),
        # A negation that only adds a specific is still the same statement, negated.
        ("Harbor deploys on Tuesdays.", "Harbor no longer deploys on Tuesdays, only on Thursdays.", Verdict.CONTRADICT),
        ("Maya is allergic to peanuts.", "Joss is not allergic to peanuts.", Verdict.DISTINCT),
        # Restatements still reinforce.
        ("Maya prefers short answers.", "Maya prefers brief answers.", Verdict.REINFORCE),
        ("Dan bought a bicycle in Porto.", "Dan purchased a bicycle in Porto.", Verdict.REINFORCE),
    ],
)
def test_deduplication_never_reinforces_a_replaced_value(existing: str, candidate: str, verdict: Verdict) -> None:
    assert decide(existing, candidate, category=None, vocabulary=DEFAULT_VOCABULARY).verdict is verdict


def test_a_replaced_value_meets_its_fact_on_the_statement_frame() -> None:
    first, second = "Maya lives in Lisbon.", "Maya lives in Porto now."
    assert topic_overlap(first, second) < 0.6  # the save's lexical lookup would not have met it
    found = stance_difference(first, second)
    assert found is not None
    assert topic_overlap(first, second, ignore=found.evidence) == 1.0


def test_the_markers_are_vocabulary_a_file_can_extend() -> None:
    vocabulary = parse_stance_vocabulary(
        '{"changeMarkers": ["ahora"], "singleValued": ["favorita"], "additionMarkers": ["tambien"]}'
    )
    assert vocabulary.change_markers == {"ahora"}
    assert vocabulary.single_valued == {"favorita"}
    assert vocabulary.addition_markers == {"tambien"}
    found = stance_difference("Ana vive en Lisboa.", "Ana vive en Oporto ahora.", vocabulary)
    assert found is not None and found.kind == "value"
    assert stance_difference("Ana vive en Lisboa.", "Ana tambien vive en Oporto ahora.", vocabulary) is None
    with pytest.raises(ValueError, match="changeMarkers"):
        parse_stance_vocabulary('{"changeMarkers": "now"}')


# A correction says so: it names the value it takes back ("not Tuesday"), opens with "No," or a word of
# correction ("Correction:", "Sorry, I was wrong"), or says how a quantity moved ("went up to", "raised").
CORRECTIONS = [
    (
        "Dan's dentist appointment is on Tuesday at 3pm.",
        "Actually, Dan's dentist appointment is on Thursday, not Tuesday.",
        ("tuesday",),
    ),
    ("We use Jenkins for CI.", "We use GitHub Actions instead of Jenkins for CI.", ("jenkins",)),
    ("The deploy freeze starts on 15 December.", "No, the deploy freeze starts on 18 December.", ("15",)),
    ("Maya's flight lands at 6pm on Friday.", "Correction: Maya's flight lands at 8pm on Friday.", ("6pm",)),
    ("Priya's birthday is on 12 March.", "Sorry, I was wrong: Priya's birthday is on 21 March.", ("12",)),
    ("The rent is £1,200 a month.", "The rent went up to £1,350 a month.", ("200",)),
    (
        "The API rate limit is 100 requests per minute.",
        "We raised the API rate limit to 500 requests per minute.",
        ("100",),
    ),
]
NOT_CORRECTIONS = [
    # Another thing named, a value taken back: its own fact ("eye test" is not the dentist appointment).
    ("Dan's dentist appointment is on 4 March.", "Dan's eye test is on 6 March, not 4 March."),
    ("Harbor deploys on Tuesdays.", "Lantern deploys on Thursdays, not Tuesdays."),
    # The statement itself negated: a negation, not a value.
    ("Priya is allergic to peanuts.", "Priya isn't allergic to peanuts at all."),
    # "No" inside a statement still negates; only an opening "No," is an answer.
    ("Dan takes sugar in his tea.", "Dan takes no sugar in his tea."),
]


@pytest.mark.parametrize(("first", "second", "old"), CORRECTIONS)
def test_a_correction_that_says_so_replaces_the_value(first: str, second: str, old: tuple[str, ...]) -> None:
    found = stance_difference(first, second)
    assert found is not None and found.kind == "value", found
    assert set(old) <= set(found.first), found
    if "not" in second or "instead" in second:  # a value taken back by name is read either way round
        assert stance_difference(second, first) is not None
    decision = decide(first, second, category="people", vocabulary=DEFAULT_VOCABULARY)
    assert decision.verdict is Verdict.CONTRADICT, decision


@pytest.mark.parametrize(("first", "second"), NOT_CORRECTIONS)
def test_a_value_taken_back_about_something_else_or_a_plain_negation_is_no_correction(first: str, second: str) -> None:
    found = stance_difference(first, second)
    assert found is None or found.kind != "value", found


def test_an_opening_no_is_read_as_a_correction_only_when_the_vocabulary_says_so() -> None:
    first, second = "The deploy freeze starts on 15 December.", "No, the deploy freeze starts on 18 December."
    assert stance_difference(first, second) is not None and stance_difference(first, second).kind == "value"  # type: ignore[union-attr]
    bare = parse_stance_vocabulary(json.dumps({"negations": ["no"], "changeMarkers": ["correction"]}))
    found = stance_difference(first, second, bare)
    assert found is not None and found.kind == "negation"  # without correctionInterjections: a negation


def test_merges_and_duplicate_folds_refuse_a_marked_value_whichever_text_comes_first() -> None:
    """A value replaced with a change marker is read in the later text only; the checks that refuse any
    difference (a merge's sources, a merged text, the proactive duplicate ladder) read both ways round. Before
    ``stance_either_way`` the newer-first order passed: a merge into one text of both beliefs was allowed."""
    newer, older = "Maya lives in Porto now.", "Maya lives in Lisbon."
    assert stance_difference(newer, older) is None  # the directional reading, as deduplication wants it
    found = stance_either_way(newer, older)
    assert found is not None and found.kind == "value" and found.first == ("porto", "now")
    assert conflicting_sources([newer, older]) is not None
    assert merge_stance_conflict([newer, older], f"{newer} {older}") is not None
    assert merge_flips_stance([newer], older) is not None  # a merge that turns the new belief back
    when = datetime(2026, 1, 1, tzinfo=UTC)
    rung = duplicate_rung(
        Candidate("a", 0, newer, when), Candidate("b", 0, older, when), cosine_threshold=0.5, jaccard_threshold=0.1
    )
    assert rung is None
    assert stance_either_way("Maya lives in Lisbon.", "Maya lives in Lisbon!") is None


LEFT_OUT = [
    # The later text leaves out the older one's opening qualifier and says the rest of its frame.
    ("The kids' swimming lessons are on Saturdays at 10.", "The swimming lessons moved to Sundays at 11 now.", "10"),
    ("Our weekly team standup is at 10:00.", "The team standup is at 9:30 now.", "10"),
    # ...or the details after its value ("at 3pm").
    (
        "Maya's dentist appointment is on Tuesday 9 December at 3pm.",
        "No, Maya's dentist appointment is on Thursday 11 December.",
        "9",
    ),
]


@pytest.mark.parametrize(("first", "second", "old"), LEFT_OUT)
def test_a_value_replaced_without_the_opening_qualifier_is_a_changed_belief(first: str, second: str, old: str) -> None:
    found = stance_difference(first, second)
    assert found is not None and found.kind == "value" and old in found.first


def test_a_qualifier_replaced_by_another_is_someone_elses_value() -> None:
    assert (
        stance_difference(
            "The kids' swimming lessons are on Saturdays at 10.",
            "The adults' swimming lessons are on Sundays at 11 now.",
        )
        is None
    )


NAMED = [
    ("We use Jenkins for CI.", "We switched from Jenkins to GitHub Actions for CI.", "jenkins"),
    ("The team uses Trello for planning.", "The team replaced Trello with Linear.", "trello"),
    ("Priya works at Google.", "Priya left Google and joined Stripe.", "google"),
    ("I drive a Honda Civic.", "I traded in the Civic for a Tesla Model 3.", "civic"),
    ("My car is a blue Ford Focus.", "I sold the Focus and now drive a red Toyota Yaris.", "focus"),
]
NOT_NAMED = [
    ("Tom works at Google.", "Priya left Google and joined Stripe."),  # someone else's job
    ("We use Jenkins for CI.", "Maya replaced Jenkins with GitHub Actions at her company."),  # someone else's CI
    ("Priya is from Leeds.", "Ana moved here from Leeds last year."),  # no word of the statement said again
    ("Ana lives in Leeds.", "Ana is from Leeds originally."),  # "from" alone says no change
    ("We replaced Jenkins with GitHub Actions.", "We switched from Jenkins to GitHub Actions."),  # a restatement
    ("The bakery is next to the station.", "The bakery is on the left of the station near the park."),  # a noun
    (
        "Ruth is a charge nurse on the cardiology ward.",
        "The cardiology ward moved from ward 4 to the new ward 12.",  # "ward" is the frame, not Ruth's value
    ),
]


@pytest.mark.parametrize(("first", "second", "old"), NAMED)
def test_a_value_named_as_replaced_is_a_changed_belief_read_in_the_later_text(
    first: str, second: str, old: str
) -> None:
    found = stance_difference(first, second)
    assert found is not None and found.kind == "value" and found.first == (old,)
    assert found.second and old not in found.second
    assert names_replaced(first, second) and not names_replaced(second, first)


@pytest.mark.parametrize(("first", "second"), NOT_NAMED)
def test_a_value_named_after_a_replacement_word_elsewhere_changes_nothing(first: str, second: str) -> None:
    assert not names_replaced(first, second)
