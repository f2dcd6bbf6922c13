"""Newer first among a search's hits (core.succession, recall.newer): a hit said later that changes what an
older hit above it says is moved just above it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.stance import DEFAULT_STANCE_VOCABULARY as DEFAULT_VOCABULARY
from reverie.core.stance import change_words
from reverie.core.succession import Said, newer_first, successions
from reverie.recall import newer
from reverie.types import HitEvidence, MemoryEntry, Scope, SearchHit, Tier

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
LATER = T0 + timedelta(days=2)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("The offsite budget was cut to £3,500", {"cut"}),
        ("Biscuit weighs 14 kg now", {"now"}),
        ("No, the deploy freeze starts on 18 December", {"correction"}),  # an opening "No," is a correction
        ("The gym opens at 7am from now on", {"from now on"}),
        ("Biscuit weighs 14 kg", set()),
        ("Maya now also drinks coffee", set()),  # a second value replaces nothing
    ],
)
def test_change_words_are_the_markers_a_text_says(text: str, words: set[str]) -> None:
    assert change_words(text) == frozenset(words)


@pytest.mark.parametrize(
    ("older", "newer_text"),
    [
        ("The budget for the offsite is £5,000", "The offsite budget was cut to £3,500"),
        ("The conference talk is 30 minutes long", "The conference talk was cut to 20 minutes"),
        ("Lantern stores schedules in PostgreSQL 16", "Actually, Lantern stores schedules in PostgreSQL 17, not 16."),
        ("Biscuit weighs 12 kg", "Biscuit weighs 14 kg now"),
        ("Priya works at Google", "Priya left Google and joined Stripe"),
        ("I drive a Honda Civic", "I traded in the Civic for a Tesla Model 3"),  # one topic word of seven shared
        # A value replaced with no word of change: the save keeps two facts, the later one answers first.
        ("Biscuit weighs 12 kg", "Biscuit weighs 14 kg"),
        ("Alice works at Google", "Alice works at Microsoft"),
        ("I use Firefox as my browser", "I use Chrome as my browser"),
    ],
)
def test_a_later_change_ranks_above_the_older_text_it_changes(older: str, newer_text: str) -> None:
    said = [Said("Lantern is a scheduling service", T0, 1.0), Said(older, T0, 0.9), Said(newer_text, LATER, 0.6)]
    assert successions(said, 0.5) == [(2, 1)]
    assert newer_first(said, [(2, 1)]) == [0, 2, 1]


@pytest.mark.parametrize(
    ("older", "newer_text", "why"),
    [
        ("Biscuit weighs 12 kg", "Bella weighs 14 kg", "someone else"),
        ("Maya leaves on May 3", "Maya's sister leaves on May 5", "someone else's statement"),
        ("Maya drinks tea", "Maya now also drinks coffee", "an added value"),
        ("The rent is £1,200 a month", "The parking space costs £80 a month now", "about something else"),
        ("Leo's school starts at 8:45", "Leo's new teacher is Mr Park", "the same subject, no changed statement"),
    ],
)
def test_a_later_text_that_changes_nothing_stays_where_it_ranked(older: str, newer_text: str, why: str) -> None:
    assert successions([Said(older, T0, 1.0), Said(newer_text, LATER, 0.9)], 0.5) == [], why


def test_only_a_text_said_later_with_enough_of_the_score_moves() -> None:
    older, changed = "Biscuit weighs 12 kg", "Biscuit weighs 14 kg now"
    assert successions([Said(older, LATER, 1.0), Said(changed, T0, 0.9)], 0.5) == []  # the older was said again
    assert successions([Said(older, T0, 1.0), Said(changed, T0, 0.9)], 0.5) == []  # said together
    assert successions([Said(older, T0, 1.0), Said(changed, LATER, 0.4)], 0.5) == []  # answers far worse
    assert successions([Said(older, T0, 1.0), Said(changed, LATER, 0.9)], 0.0) == []  # switched off
    assert successions([Said(changed, LATER, 1.0), Said(older, T0, 0.9)], 0.5) == []  # already above


def test_a_chain_of_changes_ends_with_the_newest_first() -> None:
    said = [
        Said("Biscuit weighs 12 kg", T0, 1.0),
        Said("Biscuit weighs 14 kg now", LATER, 0.9),
        Said("Biscuit weighs 15 kg now, not 14 kg", LATER + timedelta(days=1), 0.8),
    ]
    pairs = successions(said, 0.5)
    assert pairs == [(1, 0), (2, 0)]  # "now" again says no change the 14 kg did not
    assert newer_first(said, pairs) == [2, 1, 0]


@given(st.data(), st.integers(min_value=2, max_value=7))
def test_newer_first_only_moves_a_changing_hit_above_what_it_changes(data: st.DataObject, size: int) -> None:
    days = data.draw(st.lists(st.integers(min_value=0, max_value=5), min_size=size, max_size=size))
    said = [Said(f"text {i}", T0 + timedelta(days=d), 1.0 - i / 10) for i, d in enumerate(days)]
    pairs = []
    for newer_index in range(1, size):
        older = [i for i in range(newer_index) if days[i] < days[newer_index]]  # said earlier, ranked above
        if older and data.draw(st.booleans()):
            pairs.append((newer_index, data.draw(st.sampled_from(older))))
    order = newer_first(said, pairs)
    assert sorted(order) == list(range(size))
    for newer_index, older_index in pairs:
        assert order.index(newer_index) < order.index(older_index)
    moved = {newer_index for newer_index, _ in pairs}
    unmoved = [i for i in order if i not in moved]
    assert unmoved == sorted(unmoved)  # what changes nothing keeps its order


def _hit(text: str, at: datetime, score: float) -> SearchHit:
    entry = MemoryEntry(
        id=text[:12],
        content=text,
        category="general",
        tags=(),
        tier=Tier.SEMANTIC,
        scope=Scope(agent_id="a"),
        created_at=at,
        last_seen_at=at,
    )
    return SearchHit(entry, score, "bm25+vector", HitEvidence(own=score))


def test_a_moved_hit_takes_the_older_hits_score_as_context_and_names_it() -> None:
    hits = [_hit("Biscuit weighs 12 kg", T0, 0.9), _hit("Biscuit weighs 14 kg now", LATER, 0.7)]
    moved = newer.ranked(hits, 0.5, DEFAULT_VOCABULARY)
    assert [h.entry.content for h in moved] == ["Biscuit weighs 14 kg now", "Biscuit weighs 12 kg"]
    assert moved[0].score == pytest.approx(0.9) and moved[1].score == pytest.approx(0.9)
    evidence = moved[0].evidence
    assert evidence is not None and evidence.succeeds == hits[0].entry.id
    assert evidence.own + evidence.context + evidence.time == pytest.approx(moved[0].score)
    assert newer.ranked(hits, 0.0, DEFAULT_VOCABULARY) == hits
