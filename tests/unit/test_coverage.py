"""core.coverage: the merge coverage check (seed 001, Merge coverage check; seed 000, Save-time deduplication)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.coverage import (
    DEFAULT_VOCABULARY,
    CoverageSource,
    DateValue,
    Specific,
    SpecificKind,
    Vocabulary,
    check_coverage,
    lowercase_words,
    specifics,
)


def found(text: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY, *, category: str | None = None) -> tuple[str, ...]:
    return specifics(text, category=category, vocabulary=vocabulary).texts


def missing(
    sources: list[str] | list[CoverageSource], merged: str, vocabulary: Vocabulary = DEFAULT_VOCABULARY
) -> tuple[str, ...]:
    wrapped = [s if isinstance(s, CoverageSource) else CoverageSource(s) for s in sources]
    return check_coverage(wrapped, merged, vocabulary=vocabulary).missing


def words(*items: str) -> frozenset[str]:
    return frozenset(items)


# --- what is a specific --------------------------------------------------------------------------------


def test_proper_nouns_acronyms_and_numbers_are_specifics_in_source_order() -> None:
    text = "Rocky filed the PWOP Productions W-9 on 2026-08-02 with Trish Roberts."
    assert found(text) == ("Rocky", "PWOP", "Productions", "2026-08-02", "Trish", "Roberts")


def test_specifics_carry_their_kind_and_date() -> None:
    result = specifics("we met Trish about the MVP on 2026-08-02.", category=None, vocabulary=DEFAULT_VOCABULARY)
    assert result.items == (
        Specific("Trish", SpecificKind.NAME),
        Specific("MVP", SpecificKind.ACRONYM),
        Specific("2026-08-02", SpecificKind.NUMBER, DateValue(8, 2026, 2)),
    )
    assert "Trish" in result and "trish" not in result and len(result) == 3


def test_repeated_specifics_are_listed_once() -> None:
    assert found("Xebia hired Trish. Trish left Xebia in 2025, then rejoined Xebia in 2025.") == (
        "Xebia",
        "Trish",
        "2025",
    )


def test_text_without_specifics_imposes_nothing() -> None:
    assert found("the user prefers concise replies") == ()
    assert missing(["the user prefers concise replies"], "user prefers brevity") == ()


@pytest.mark.parametrize("acronym", ["MVP", "IMAP", "S3", "EC2", "4K", "LLC"])
def test_all_caps_tokens_of_two_or_more_characters_are_acronyms(acronym: str) -> None:
    result = specifics(f"the team uses {acronym} daily", category=None, vocabulary=DEFAULT_VOCABULARY)
    assert result.items == (Specific(acronym, SpecificKind.ACRONYM),)


def test_single_capitals_are_too_short_to_be_specifics() -> None:
    assert found("so I think plan B is a go, says J. Doe") == ("Doe",)


@pytest.mark.parametrize("name", ["OAuth", "IDs", "iPhone", "macOS", "eBay", "OneDrive"])
def test_mixed_case_words_are_names(name: str) -> None:
    result = specifics(f"the team uses {name} daily", category=None, vocabulary=DEFAULT_VOCABULARY)
    assert result.items == (Specific(name, SpecificKind.NAME),)


def test_acronyms_are_not_exempt_at_sentence_start() -> None:
    # All-caps is never grammatical, so opening a sentence says nothing about it.
    assert missing(["IMAP delivery is configured."], "Delivery is configured.") == ("IMAP",)


def test_inner_capitals_are_not_grammatical_so_position_is_moot() -> None:
    vocabulary = Vocabulary()
    assert found("iPhone sync is on. macOS too.", vocabulary) == ("iPhone", "macOS")


def test_possessive_yields_the_plain_name_which_the_plain_name_satisfies() -> None:
    assert found("Rocky's Blazor Online Class launches soon") == ("Rocky", "Blazor", "Online", "Class")
    assert missing(["Rocky's Blazor Online Class launches soon"], "The Blazor Online Class run by Rocky launches") == ()


# --- numbers -------------------------------------------------------------------------------------------


def test_single_digits_are_not_specifics() -> None:
    assert missing(["review the top 3 items"], "review the top three items") == ()


def test_multi_digit_numbers_are_required_even_inside_words() -> None:
    assert missing(["the deadline is the 10th, in 2026, at 12h"], "the deadline is soon") == ("10", "2026", "12")


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("averages 8.33 calls", "8.33"),
        ("at 14:00 sharp", "14:00"),
        ("costs $1,200 a year", "1,200"),
        ("due 2026-09-10 latest", "2026-09-10"),
        ("since 2026-08 only", "2026-08"),
        ("dated 19/08/2026 here", "19/08/2026"),
        ("runs 24/7 now", "24/7"),
        ("version 1.5 shipped", "1.5"),
    ],
)
def test_numeric_tokens_are_kept_whole(text: str, token: str) -> None:
    assert found(text) == (token,)


def test_hyphenated_number_ranges_split_into_their_numbers() -> None:
    assert found("pages 10-12 and years 2024-2025") == ("10", "12", "2024", "2025")
    assert missing(["pages 10-12"], "pages 10 to 12") == ()


def test_a_dropped_date_is_reported_as_written() -> None:
    assert missing(["Estimated taxes are due 2026-09-10"], "Estimated taxes are due in the autumn") == ("2026-09-10",)


def test_a_number_survives_as_a_component_of_a_date() -> None:
    assert missing(["Rockford filed in 2026"], "Rockford Duane Lhotka filed on 2026-04-15") == ()


@pytest.mark.parametrize("merged", ["took 10.5 hours", "ended at 9:10", "took 110 hours", "took 1,010 hours"])
def test_a_number_inside_a_different_value_does_not_survive(merged: str) -> None:
    assert missing(["it took 10 hours"], merged) == ("10",)


def test_reordered_date_components_do_not_survive() -> None:
    assert missing(["due 2026-08-19"], "due 2026-09-08, 19 days later") == ("2026-08-19",)


def test_clock_reformatting_is_a_known_conservative_false_positive() -> None:
    # Seed 001: "Known conservative false positives include 12h→24h clock reformatting." Crediting it would
    # need real time parsing, and would also accept "2:00 PM" collapsing to a meridiem-less "2:00".
    assert missing(["The recording runs 2:00 PM to 3:00 PM"], "The recording runs 14:00 to 15:00") == (
        "2:00",
        "PM",
        "3:00",
    )


# --- position-scoped baseline --------------------------------------------------------------------------


def test_ordinary_sentence_openers_are_not_specifics() -> None:
    assert found("The user prefers email. This is a durable preference. Should always apply.") == ()
    assert found("When asked, reply. If unsure: Some caution. First check. Last resort? Will do.") == ()


@pytest.mark.parametrize("opener", ["Valid", "Direct", "Alternative", "Through"])
def test_openers_in_the_baseline_are_ordinary_sentence_initially(opener: str) -> None:
    assert found(f"The list follows. {opener} paths are documented.") == ()


@pytest.mark.parametrize("word", ["Valid", "Direct", "Alternative", "Through", "Some", "First", "May", "Will"])
def test_baseline_words_mid_sentence_stay_specific(word: str) -> None:
    assert found(f"the team met {word} yesterday") == (word,)


def test_generic_looking_words_in_names_stay_protected_mid_phrase() -> None:
    # Seed 001: Personal, Class, Benefit and Extended name real things; position-scoping protects them.
    text = "Backups go to OneDrive Personal, notes to the Blazor Online Class and the MVP Azure Extended Benefit."
    for word in ("OneDrive", "Personal", "Blazor", "Online", "Class", "MVP", "Azure", "Extended", "Benefit"):
        assert word in found(text)
    merged = "Backups go to OneDrive, notes to the Blazor Online course and the MVP Azure Benefit."
    assert missing([text], merged) == ("Personal", "Class", "Extended")


def test_a_name_after_an_ordinary_first_word_is_still_mid_sentence() -> None:
    assert missing(["The venue moved to New Orleans last spring."], "The venue moved to Orleans last spring.") == (
        "New",
    )


def test_story_characters_colliding_with_the_baseline_are_lost_without_always_specific() -> None:
    line = "May left at dawn. Will followed her. Rose waited by the gate."
    assert found(line) == ("Rose",)
    storytelling = Vocabulary(always_specific_words=words("May", "Will", "Rose"))
    assert found(line, storytelling) == ("May", "Will", "Rose")
    assert missing([line], "She left at dawn; he followed; Rose waited.", storytelling) == ("May", "Will")


def test_story_characters_mid_sentence_are_protected_by_position_alone() -> None:
    assert found("at dawn May left, and Will followed") == ("May", "Will")


@pytest.mark.parametrize(
    "text",
    [
        "Accounts follow\n- Direct billing applies",
        "Accounts follow\n* Direct billing applies",
        "Accounts follow\n1. Direct billing applies",
        "## Direct billing",
        "> Direct billing applies",
        'He said: "Direct billing applies"',
        "**Direct** billing applies",
        "(Direct billing applies)",
        "Billing! Direct billing? Direct billing… Direct billing.",
    ],
)
def test_line_starts_bullets_quotes_and_marks_are_sentence_initial(text: str) -> None:
    assert "Direct" not in found(text)


@pytest.mark.parametrize("text", ["The show is in St. Paul with Dr. May attending.", "Notes by J. May and Mr. Will"])
def test_an_abbreviation_period_does_not_start_a_sentence(text: str) -> None:
    assert {"May"} <= set(found(text))
    assert "Will" in found("Notes by J. May and Mr. Will")


def test_a_period_inside_a_number_or_word_does_not_start_a_sentence() -> None:
    assert found("costs rose 2.5 percent. Direct costs fell") == ("2.5",)
    assert found("see v2 Direct mode") == ("Direct",)


# --- extraCommonWords and alwaysSpecificWords ----------------------------------------------------------


def test_extra_common_words_apply_in_every_position() -> None:
    vocabulary = Vocabulary(extra_common_words=words("briefing", "triage", "Rocky"))
    assert found("Briefing and Triage completed", vocabulary) == ()
    assert found("Briefing and Triage completed") == ("Briefing", "Triage")
    text = "in Rocky's environment, calendar-mcp requires a token"
    assert found(text) == ("Rocky",)
    assert found(text, vocabulary) == ()


def test_extra_common_words_compare_case_insensitively() -> None:
    vocabulary = Vocabulary(extra_common_words=words("ROCKY"))
    assert found("ask Rocky or ROCKY", vocabulary) == ()


def test_always_specific_wins_over_extra_common() -> None:
    vocabulary = Vocabulary(extra_common_words=words("rose"), always_specific_words=words("Rose"))
    assert found("Rose arrived; later Rose left", vocabulary) == ("Rose",)


def test_always_specific_wins_at_sentence_start() -> None:
    vocabulary = Vocabulary(extra_common_words=words("Rose"), always_specific_words=words("rose"))
    assert missing(["Rose left the harbour before dawn."], "She left the harbour before dawn.", vocabulary) == ("Rose",)


def test_always_specific_never_promotes_a_lowercase_word() -> None:
    vocabulary = Vocabulary(always_specific_words=words("Rose"))
    assert found("the rose garden", vocabulary) == ()


# --- corpus evidence -----------------------------------------------------------------------------------


def test_a_sibling_source_writing_the_word_lowercase_makes_it_ordinary() -> None:
    sources = [
        "Todo items are not accepted for updates. Marking a task complete needs the id.",
        "The agent keeps marking finished todos so the list stays short.",
    ]
    merged = "Todo items are not accepted for updates; completing one needs the id, and the agent keeps todos short."
    assert missing(sources, merged) == ()
    assert missing(sources[:1], merged) == ("Marking",)


def test_corpus_evidence_applies_mid_phrase() -> None:
    sources = ["To close one, use Marking on the task.", "keep marking tasks done"]
    assert missing(sources, "Tasks are closed by hand.") == ()


def test_lowercase_twin_in_the_same_source_makes_ids_ordinary() -> None:
    source = "Contact IDs are account-scoped, so the contact ids differ per mailbox."
    assert missing([source], "Contacts are account-scoped and differ per mailbox.") == ()


def test_corpus_evidence_cannot_unprotect_a_name_never_written_lowercase() -> None:
    sources = [
        "The Eventbrite listing was set up by Xebia for the Austin workshop.",
        "the listing and the workshop were set up by the team",
    ]
    assert missing(sources, "The listing was set up for a workshop.") == ("Eventbrite", "Xebia", "Austin")


def test_corpus_evidence_comes_from_the_sources_never_the_merged_text() -> None:
    # Otherwise a merge could unprotect a name by lower-casing it.
    assert missing(["The workshop is in Austin."], "The workshop is in austin.") == ("Austin",)


def test_a_word_glued_into_an_identifier_is_not_evidence() -> None:
    source = "Rocky Lhotka also appears as Rockford Duane Lhotka; accounts include marimer-work and lhotka.net."
    merged = "Rocky has accounts marimer-work and lhotka.net."
    assert missing([source], merged) == ("Lhotka", "Rockford", "Duane")
    assert lowercase_words(["lhotka.net rocky-lhotka user_id a@b.org x/y", "plain words."]) == words("plain", "words")


def test_always_specific_beats_corpus_evidence() -> None:
    vocabulary = Vocabulary(always_specific_words=words("May"))
    source = "at dawn May said the crossing may take three days."
    assert missing([source], "The crossing takes three days.") == ()
    assert missing([source], "The crossing takes three days.", vocabulary) == ("May",)


def test_specifics_takes_corpus_evidence_as_an_argument() -> None:
    text = "the Contact record"
    assert found(text) == ("Contact",)
    result = specifics(text, category=None, vocabulary=DEFAULT_VOCABULARY, corpus_lowercase=words("contact"))
    assert result.texts == ()


# --- equivalent date spellings -------------------------------------------------------------------------


def test_a_written_date_is_covered_by_the_iso_date() -> None:
    source = "A Red Fletcher show at White Rock Lounge on August 19, 2026."
    assert missing([source], "A Red Fletcher show at White Rock Lounge on 2026-08-19.") == ()


def test_an_iso_date_is_covered_by_the_written_date() -> None:
    assert missing(["The summit ran on 2026-08-19."], "The summit ran on August 19, 2026.") == ()


@pytest.mark.parametrize(
    "source",
    [
        "booked for 19 August 2026",
        "booked for the 19th of August, 2026",
        "booked for Aug. 19th, 2026",
        "booked for Aug 19 2026",
        "booked for August 19",
    ],
)
def test_written_spellings_are_covered_by_a_numeric_date(source: str) -> None:
    assert missing([source], "booked for 2026-08-19") == ()
    assert missing([source], "booked for 2026/8/19") == ()


def test_a_month_and_year_is_covered_by_the_numeric_month_or_any_day_of_it() -> None:
    assert missing(["signed in August 2026"], "signed 2026-08") == ()
    assert missing(["signed in August 2026"], "signed on 2026-08-04") == ()
    assert missing(["signed 2026-08"], "signed in August 2026") == ()


def test_a_month_name_that_is_not_part_of_a_date_is_never_credited() -> None:
    # A person or release named August gets no credit from an unrelated numeric date.
    source = "August Wilson wrote the play; the ticket is dated 2026-08-19."
    assert missing([source], "The ticket is dated 2026-08-19.") == ("August", "Wilson")


def test_a_month_on_the_next_line_after_a_number_is_not_a_date() -> None:
    source = "Chapter 12\nAugust Wilson wrote it"
    assert missing([source], "Chapter 12: Wilson wrote it (2026-08-12)") == ("August",)


def test_the_numeric_date_must_carry_the_source_year() -> None:
    assert missing(["The contract was signed in August 2026."], "The contract was signed on 2025-08-04.") == (
        "August",
        "2026",
    )
    assert missing(["The summit ran on 2026-08-19."], "The summit ran on August 19.") == ("2026-08-19",)


def test_the_numeric_date_must_carry_the_same_month_and_day() -> None:
    assert "October" in missing(["The show is on October 3, 2026."], "The show is on 2026-08-03.")
    assert "August" in missing(["The show is on August 3, 2026."], "The show is on 2026-08-04.")


def test_a_date_dropped_in_both_spellings_is_rejected() -> None:
    assert missing(["The show is on August 19, 2026."], "The show is later this year.") == ("August", "19", "2026")
    assert missing(["The show is on 2026-08-19."], "The show is later this year.") == ("2026-08-19",)


def test_day_first_numeric_dates_are_ambiguous_so_never_credit_a_month() -> None:
    assert missing(["booked for August 3, 2026"], "booked for 03/08/2026") == ("August",)


def test_a_sentence_initial_may_in_a_date_is_a_date_not_the_modal_verb() -> None:
    assert found("May 5, 2026 was the launch.") == ("May", "2026")
    assert missing(["May 5, 2026 was the launch."], "The launch was in 2026.") == ("May",)
    assert missing(["May 5, 2026 was the launch."], "The launch was on 2026-05-05.") == ()


# --- numeric-exempt categories -------------------------------------------------------------------------

ROUTING_TEXT = "Balanced sessions average 8.33 tool calls before escalating."
ROUTING_MERGE = "Balanced sessions make many tool calls before escalating."


@pytest.mark.parametrize("category", ["anti-patterns/routing", "anti-patterns/routing/high-tier"])
def test_routing_numbers_are_exempt_by_category(category: str) -> None:
    assert missing([CoverageSource(ROUTING_TEXT, category)], ROUTING_MERGE) == ()


@pytest.mark.parametrize("category", [None, "anti-patterns/routing-notes", "anti-patterns", "agent-knowledge/infra"])
def test_numbers_outside_an_exempt_category_are_required(category: str | None) -> None:
    assert missing([CoverageSource(ROUTING_TEXT, category)], ROUTING_MERGE) == ("8.33",)


def test_the_exemption_skips_numeric_dates_but_not_month_names() -> None:
    source = CoverageSource("The routing review ran on August 19, 2026, and again 2026-09-02.", "anti-patterns/routing")
    assert missing([source], "The routing review ran recently.") == ("August",)
    assert missing([source], "The routing review ran on 2026-08-19.") == ()


def test_a_configured_exempt_category_is_exempt_and_the_builtin_stays() -> None:
    vocabulary = Vocabulary(numeric_exempt_categories=("metrics/cost",))
    cost = CoverageSource("Calls cost 0.42 on average", "metrics/cost/daily")
    routing = CoverageSource(ROUTING_TEXT, "anti-patterns/routing")
    assert check_coverage([cost, routing], "Calls cost little; Balanced sessions escalate.", vocabulary=vocabulary).ok
    assert missing([cost], "Calls cost little") == ("0.42",)


def test_only_the_exempt_source_loses_its_numbers() -> None:
    exempt = CoverageSource("average 8.33 calls", "anti-patterns/routing")
    plain = CoverageSource("average 8.33 calls", "agent-knowledge")
    assert missing([exempt, plain], "many calls") == ("8.33",)


# --- check_coverage ------------------------------------------------------------------------------------


def test_a_merge_that_keeps_every_specific_passes() -> None:
    sources = ["Rocky has a dog named Milo", "Rocky has a Sheltie named Milo"]
    result = check_coverage(
        [CoverageSource(s) for s in sources], "Rocky has a dog — a Sheltie (Shetland Sheepdog) named Milo"
    )
    assert result.ok and result.missing == ()


def test_a_merge_that_drops_one_name_is_rejected_with_that_name() -> None:
    sources = [CoverageSource("Allen Conway works at Xebia"), CoverageSource("Trish Roberts works at Xebia")]
    result = check_coverage(sources, "Allen Conway and Trish work at Xebia")
    assert not result.ok
    assert result.missing == ("Roberts",)


def test_missing_is_in_source_order_and_deduplicated_across_sources() -> None:
    sources = ["Zulu Alpha went to Boston", "Mike went to Boston with Alpha"]
    assert missing(sources, "someone travelled") == ("Zulu", "Alpha", "Boston", "Mike")


def test_survival_is_case_sensitive() -> None:
    # The names most at risk collide with ordinary words: "Will" must not survive as "will".
    vocabulary = Vocabulary(always_specific_words=words("Will"))
    assert missing(["Will sailed at dawn."], "He will sail at dawn.", vocabulary) == ("Will",)
    assert missing(["the team uses MVP"], "the team uses mvp") == ("MVP",)


def test_survival_is_whole_word() -> None:
    assert missing(["paid by Ann"], "paid Annually") == ("Ann",)
    assert missing(["the AWS bill"], "the AWSCLI bill") == ("AWS",)


def test_save_time_dedup_reads_the_check_as_does_the_existing_entry_carry_the_candidate() -> None:
    existing = "Trish Roberts joined Xebia in 2024."
    assert check_coverage([CoverageSource("Trish joined Xebia")], existing).ok
    assert check_coverage([CoverageSource("Trish joined Xebia in Austin")], existing).missing == ("Austin",)


def test_no_sources_pass() -> None:
    assert check_coverage([], "anything") == check_coverage([], "")
    assert check_coverage([], "").ok


# --- properties ----------------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "August", "May", "Will", "Rose", "Dr.", "St.", "IDs", "ids", "OAuth", "MVP", "S3", "iPhone", "the", "The",
        "Direct", "direct", "Marking", "marking", "19", "2026", "2026-08-19", "2026/8/9", "8.33", "1,200", "10-12",
        "2:00", "PM", "12h", "3rd", "of", "lhotka.net", "Rocky's", " ", " ", " ", ", ", ". ", "! ", ": ", "\n",
        "- ", "* ", '"', "(", ")", "…", "/", "-", "_", "'", "Ünïcødé", "٣٤",
    ]
)  # fmt: skip
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=25).map("".join)
_CATEGORIES = st.sampled_from([None, "anti-patterns/routing", "anti-patterns/routing-notes", "people"])
_SOURCES = st.lists(st.builds(CoverageSource, _TEXTS, _CATEGORIES), min_size=1, max_size=4)
_VOCABULARIES = st.builds(
    Vocabulary,
    st.frozensets(st.sampled_from(["rocky", "Direct", "may"])),
    st.frozensets(st.sampled_from(["May", "will", "Rose"])),
    st.tuples(st.sampled_from(["people", "metrics"])),
)


@given(_SOURCES, _VOCABULARIES, st.sampled_from(["\n", " ", "\n\n", " \t "]))
def test_the_concatenation_of_the_sources_always_passes(
    sources: list[CoverageSource], vocabulary: Vocabulary, separator: str
) -> None:
    merged = separator.join(source.text for source in sources)
    assert check_coverage(sources, merged, vocabulary=vocabulary) == check_coverage(
        sources, merged + "\nextra", vocabulary=vocabulary
    )
    assert check_coverage(sources, merged, vocabulary=vocabulary).ok


@given(_SOURCES, st.randoms(use_true_random=False))
def test_the_sources_in_any_order_pass(sources: list[CoverageSource], rnd: random.Random) -> None:
    shuffled = list(sources)
    rnd.shuffle(shuffled)
    assert check_coverage(sources, "\n".join(s.text for s in shuffled)).ok


@given(_TEXTS, _CATEGORIES)
def test_every_specific_is_an_exact_string_of_its_source(text: str, category: str | None) -> None:
    for specific in specifics(text, category=category, vocabulary=DEFAULT_VOCABULARY):
        assert specific.text in text


@given(_TEXTS)
def test_an_empty_merge_misses_exactly_the_specifics(text: str) -> None:
    expected = specifics(text, category=None, vocabulary=DEFAULT_VOCABULARY, corpus_lowercase=lowercase_words([text]))
    assert missing([text], "") == expected.texts
