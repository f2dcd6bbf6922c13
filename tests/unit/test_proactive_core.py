"""Proactive memory's pure logic (core.proactive, core.proactive_rules): the scope fallback, the decay formula
with exact values, the duplicate ladder and its clusters, the cap's order, reciprocal rank fusion, the host's
check of an LLM's proposals, the bookkeeping codec, and the rule-based extractor per category."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.proactive import (
    AGENT,
    CATEGORIES,
    SESSION,
    USER,
    Candidate,
    CapRow,
    State,
    current_confidence,
    decayed_confidence,
    duplicate_clusters,
    duplicate_rung,
    effective_kind,
    merged_state,
    normalised,
    over_cap,
    proposals,
    reciprocal_rank_fusion,
    state_of,
)
from reverie.core.proactive_rules import DEFAULT_KIND, extract

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LADDER = {"cosine_threshold": 0.9, "jaccard_threshold": 0.7}


# -- scopes ------------------------------------------------------------------------------------------------------
def test_a_user_memory_needs_a_user_and_a_session_memory_a_session() -> None:
    assert effective_kind(USER, user_id="u", session_id=None) == USER
    assert effective_kind(USER, user_id=None, session_id="s") == AGENT
    assert effective_kind(SESSION, user_id="u", session_id="s") == SESSION
    assert effective_kind(SESSION, user_id="u", session_id=None) == AGENT
    assert effective_kind(AGENT, user_id="u", session_id="s") == AGENT
    with pytest.raises(ValueError):
        effective_kind("global", user_id="u", session_id="s")


# -- decay -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("base", "days", "count", "expected"),
    [
        (0.6, 30.0, 0, 0.6 * math.exp(-0.3)),
        (0.6, 30.0, 1, 0.6 * math.exp(-0.3)),
        (0.6, 30.0, 2, 0.6 * math.exp(-0.3) * 2),
        (0.4, 69.3147, 1, 0.4 * math.exp(-0.693147)),  # halves in about 70 days at 0.01
        (0.5, 10.0, 4, min(0.5 * math.exp(-0.1) * 3, 1.0)),  # boost 1 + log2(4) = 3, capped at 1
        (0.6, 1.0, 1, 0.6),  # accessed within the last day: not decayed
        (0.6, 0.5, 2, 1.0),  # 0.6 x 2 capped
        (0.0, 400.0, 9, 0.0),
    ],
)
def test_decay_is_the_seed_formula(base: float, days: float, count: int, expected: float) -> None:
    got = decayed_confidence(base, days_since_access=days, access_count=count, rate=0.01)
    assert got == pytest.approx(expected, abs=1e-12)


@given(
    base=st.floats(0, 1),
    days=st.floats(0, 10_000),
    count=st.integers(0, 10_000),
    rate=st.floats(0, 10),
)
def test_decay_stays_in_the_unit_interval_and_never_grows_with_time(
    base: float, days: float, count: int, rate: float
) -> None:
    now = decayed_confidence(base, days_since_access=days, access_count=count, rate=rate)
    later = decayed_confidence(base, days_since_access=days + 5, access_count=count, rate=rate)
    assert 0.0 <= later <= now <= 1.0


def test_decay_refuses_nonsense() -> None:
    for base, rate, count in ((1.5, 0.01, 0), (float("nan"), 0.01, 0), (0.5, -1.0, 0), (0.5, 0.01, -1)):
        with pytest.raises(ValueError):
            decayed_confidence(base, days_since_access=1.0, access_count=count, rate=rate)


def test_user_memory_never_decays_and_the_others_decay_from_their_last_access() -> None:
    user = State(USER, 0.8, 5, T0)
    agent = State(AGENT, 0.8, 1, T0)
    later = T0 + timedelta(days=100)
    assert current_confidence(user, later, 0.01) == 0.8
    assert current_confidence(agent, later, 0.01) == pytest.approx(0.8 * math.exp(-1.0))
    assert current_confidence(State(SESSION, 0.8, 1, None), later, 0.01) == pytest.approx(0.8)


# -- the duplicate ladder ----------------------------------------------------------------------------------------
def _c(id_: str, text: str, hours: int, group: str = "g", vector: list[float] | None = None) -> Candidate:
    vec = None if vector is None else np.asarray(vector, dtype=np.float32)
    return Candidate(id_, group, text, T0 + timedelta(hours=hours), vec)


def test_the_ladder_tries_containment_then_cosine_then_jaccard() -> None:
    a = _c("a", "User prefers dark mode.", 0)
    assert duplicate_rung(a, _c("b", "  user PREFERS dark   mode", 1), **LADDER) == "substring"  # exact
    assert duplicate_rung(a, _c("b", "User prefers dark mode in every editor", 1), **LADDER) == "substring"
    assert duplicate_rung(_c("x", "dark mode", 0), a, **LADDER) == "substring"  # subset
    near, far = [1.0, 0.0, 0.1], [0.0, 1.0, 0.0]
    assert duplicate_rung(_c("x", "alpha beta", 0, vector=near), _c("y", "gamma delta", 1, vector=near), **LADDER) == (
        "cosine"
    )
    # With vectors on both sides, cosine decides: words in common do not make them duplicates.
    assert (
        duplicate_rung(_c("x", "likes green tea", 0, vector=near), _c("y", "likes green teas", 1, vector=far), **LADDER)
        is None
    )
    assert (
        duplicate_rung(_c("x", "User likes green tea a lot", 0), _c("y", "User likes green teas a lot", 1), **LADDER)
        is None
    )
    assert (
        duplicate_rung(
            _c("x", "User prefers Helix with a dark theme", 0),
            _c("y", "User prefers a dark theme with Helix", 1),
            **LADDER,
        )
        == "jaccard"
    )
    assert duplicate_rung(_c("x", "User prefers tea", 0), _c("y", "User prefers coffee", 1), **LADDER) is None


def test_a_cluster_keeps_its_newest_member_and_never_chains_or_crosses_groups() -> None:
    found = duplicate_clusters(
        [
            _c("old", "User prefers dark mode", 0),
            _c("mid", "User prefers dark mode in editors", 5),
            _c("new", "user prefers dark mode", 9),
            _c("other-user", "User prefers dark mode", 10, group="h"),
            _c("chain", "in editors at night only please", 3),  # a duplicate of "mid" only: not chained
        ],
        **LADDER,
    )
    assert [(m.keep, m.archive, m.rungs) for m in found] == [("new", ("mid", "old"), ("substring", "substring"))]
    assert duplicate_clusters([], **LADDER) == []
    with pytest.raises(ValueError):
        duplicate_clusters([_c("a", "x", 0), _c("a", "y", 1)], **LADDER)


@given(st.permutations(["a", "b", "c", "d"]))
def test_clusters_do_not_depend_on_the_input_order(order: list[str]) -> None:
    texts = {"a": "User likes tea", "b": "user likes tea!", "c": "User lives in Porto", "d": "User likes tea a lot"}
    hours = {"a": 1, "b": 2, "c": 3, "d": 4}
    merges = duplicate_clusters([_c(i, texts[i], hours[i]) for i in order], **LADDER)
    assert [(m.keep, set(m.archive)) for m in merges] == [("d", {"a", "b"})]


def test_normalised_text() -> None:
    assert normalised("  “User   likes TEA.”  ") == "user likes tea"
    assert normalised("User's tea, black!") == "user's tea black"


# -- the cap -----------------------------------------------------------------------------------------------------
def test_the_cap_archives_the_lowest_confidence_then_the_oldest() -> None:
    rows = [
        CapRow("strong-old", 0.9, T0),
        CapRow("weak-new", 0.3, T0 + timedelta(days=2)),
        CapRow("weak-old", 0.3, T0),
        CapRow("mid", 0.5, T0 + timedelta(days=1)),
    ]
    assert over_cap(rows, 4) == []
    assert over_cap(rows, 3) == ["weak-old"]
    assert over_cap(rows, 1) == ["weak-old", "weak-new", "mid"]
    assert over_cap(rows, 0) == ["weak-old", "weak-new", "mid", "strong-old"]
    with pytest.raises(ValueError):
        over_cap(rows, -1)


# -- fusion ------------------------------------------------------------------------------------------------------
def test_reciprocal_rank_fusion() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["x", "b"]])
    assert [i for i, _ in fused] == ["b", "a", "x", "c"]
    assert dict(fused)["b"] == pytest.approx(1 / 62 + 1 / 62)
    assert dict(fused)["a"] == pytest.approx(1 / 61)
    assert reciprocal_rank_fusion([]) == []


# -- an LLM's proposals ------------------------------------------------------------------------------------------
def test_only_well_formed_proposals_of_known_categories_are_kept() -> None:
    items = [
        {"content": "User prefers  tea", "category": "preference", "scope": "user", "confidence": 0.9},
        {"content": "User is tired", "category": "mood", "scope": "session", "confidence": 0.5},  # unknown category
        {"content": "", "category": "preference"},
        {"content": "x" * 1001, "category": "preference"},
        {"content": "ok", "category": "preference", "scope": "global"},
        {"content": "ok", "category": "preference", "confidence": 1.5},
        {"content": "ok", "category": "preference", "confidence": True},
        {"content": "ok", "category": "preference", "confidence": float("nan")},
        "User likes tea",
        {"content": "We ship Fridays", "category": "project_context", "scope": "agent"},
    ]
    kept, dropped = proposals(items, CATEGORIES)
    assert [(p.content, p.category, p.kind, p.confidence) for p in kept] == [
        ("User prefers tea", "preference", "user", 0.9),
        ("We ship Fridays", "project_context", "agent", 0.7),
    ]
    assert dropped == 8


def test_at_most_twenty_proposals_are_kept() -> None:
    kept, dropped = proposals([{"content": f"fact {i}", "category": "preference"} for i in range(25)], CATEGORIES)
    assert (len(kept), dropped) == (20, 5)


# -- bookkeeping -------------------------------------------------------------------------------------------------
def test_bookkeeping_round_trips_and_is_read_defensively() -> None:
    state = State(SESSION, 0.4, 3, T0)
    assert state_of({"proactive": state.as_metadata()}) == state
    assert state_of({}) is None
    assert state_of({"proactive": "x"}) is None
    odd = state_of({"proactive": {"scope": "?", "base_confidence": "high", "access_count": -2, "accessed_at": "no"}})
    assert odd == State(AGENT, 0.5, 0, None)
    merged = merged_state([State(USER, 0.4, 2, T0), State(USER, 0.9, 1, None), State(USER, 0.1, 0, T0 + timedelta(1))])
    assert merged == State(USER, 0.9, 3, T0 + timedelta(1))


# -- the rules ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Please be brief.", [("communication_style", "User wants brief answers")]),
        ("Don't use emojis!", [("communication_style", "User does not want emojis in answers")]),
        ("Answer in Portuguese", [("communication_style", "User wants replies in Portuguese")]),
        ("I really love my coffee black.", [("preference", "User loves their coffee black")]),
        ("My favourite editor is Helix", [("preference", "User's favorite editor is Helix")]),
        ("I can't stand tabs", [("preference", "User can't stand tabs")]),
        ("I'm a senior backend engineer.", [("expertise", "User is a senior backend engineer")]),
        ("I know Rust and Go", [("expertise", "User knows Rust and Go")]),
        ("I usually work late at night", [("work_style", "User usually works late at night")]),
        ("I prefer to write tests first.", [("work_style", "User prefers to write tests first")]),
        ("We're building a payments API in Go", [("project_context", "The team is building a payments API in Go")]),
        ("Our stack is Python 3.12", [("project_context", "The user's stack is Python 3.12")]),
        ("The deadline is March 3", [("project_context", "The deadline is March 3")]),
        ("My name is Ana Costa", [("personal_detail", "User's name is Ana Costa")]),
        ("I live in Lisbon", [("personal_detail", "User lives in Lisbon")]),
        ("My daughter Maya is 7", [("personal_detail", "User's daughter Maya is 7")]),
        ("Ugh, this still doesn't work.", [("frustration", "User is frustrated: Ugh, this still doesn't work.")]),
        ("Why is this so frustrating?", [("frustration", "User is frustrated: Why is this so frustrating?")]),
        ("Do I prefer tea?", []),  # a question states nothing
        ("I know you are busy", []),
        ("I like that.", []),
        ("The weather is nice today.", []),
    ],
)
def test_each_category_has_its_rules(message: str, expected: list[tuple[str, str]]) -> None:
    found = extract(message, CATEGORIES)
    assert [(p.category, p.content) for p in found] == expected
    for p in found:
        assert p.kind == DEFAULT_KIND[p.category]


def test_one_message_gives_several_memories_in_the_order_stated() -> None:
    found = extract("I prefer dark mode and I live in Lisbon. We're migrating the billing service!", CATEGORIES)
    assert [(p.category, p.content, p.kind) for p in found] == [
        ("preference", "User prefers dark mode", USER),
        ("personal_detail", "User lives in Lisbon", USER),
        ("project_context", "The team is migrating the billing service", AGENT),
    ]


def test_only_the_configured_categories_are_extracted() -> None:
    assert extract("I prefer tea. I live in Porto.", ["personal_detail"])[0].content == "User lives in Porto"
    assert extract("I prefer tea.", ["frustration"]) == []
