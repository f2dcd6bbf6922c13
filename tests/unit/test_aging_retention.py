"""core.aging: tiers, reads, the retention score and confidence (seed 003)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.aging import (
    DEFAULT_CONFIDENCE,
    ReadState,
    RetentionParams,
    confidence,
    is_cold,
    read_strength,
    record_read,
    retention_score,
    tier_name,
)
from reverie.types import Tier

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def score(
    n: float,
    *,
    tier: Tier | str = "episodic",
    pinned: bool = False,
    reads: ReadState | None = None,
    stale: bool = False,
    params: RetentionParams | None = None,
) -> float:
    return retention_score(
        tier=tier,
        pinned=pinned,
        last_seen_at=T0,
        reads=reads,
        flagged_stale=stale,
        now=day(n),
        params=params or RetentionParams(),
    )


# --- tiers ---------------------------------------------------------------------------------------


def test_tier_names_accept_the_enum_and_strings() -> None:
    assert tier_name(Tier.EPISODIC) == "episodic"
    assert tier_name("Working") == "working"
    with pytest.raises(ValueError):
        tier_name("archival")


def test_only_episodic_ages_by_default() -> None:
    params = RetentionParams()
    assert params.half_life_days("episodic") == 35.0
    assert [params.half_life_days(t) for t in ("working", "semantic", "procedural")] == [None, None, None]


def test_per_tier_half_life_only_when_configured() -> None:
    params = RetentionParams(tier_half_life_days={"working": 7, "episodic": 365})
    assert params.half_life_days("working") == 7.0
    assert params.half_life_days(Tier.EPISODIC) == 365.0
    assert score(365, params=params) == pytest.approx(0.5)
    assert score(7, tier="working", params=params) == pytest.approx(0.5)
    # Configuring working leaves episodic on the shared curve.
    working_only = RetentionParams(tier_half_life_days={"working": 7})
    assert working_only.half_life_days("episodic") == 35.0
    assert score(35, params=working_only) == pytest.approx(0.5)


def test_a_non_positive_tier_half_life_stops_that_tier_ageing() -> None:
    params = RetentionParams(tier_half_life_days={"episodic": 0})
    assert params.half_life_days("episodic") is None
    assert score(10_000, params=params) == 1.0


@pytest.mark.parametrize("tier", ["semantic", "procedural", "martian"])
def test_half_life_for_a_tier_that_cannot_age_is_refused(tier: str) -> None:
    with pytest.raises(ValueError):
        RetentionParams(tier_half_life_days={tier: 30})


def test_configuration_is_copied() -> None:
    config = {"working": 7.0}
    params = RetentionParams(tier_half_life_days=config)
    config["working"] = 1.0
    assert params.half_life_days("working") == 7.0


# --- retention ------------------------------------------------------------------------------------


def test_half_life_is_about_35_days() -> None:
    assert score(0) == 1.0
    assert score(35) == pytest.approx(0.5)
    assert score(70) == pytest.approx(0.25)


def test_cold_below_020_within_months() -> None:
    assert not is_cold(0.20)
    assert is_cold(0.1999)
    assert not is_cold(score(80))
    assert is_cold(score(82))  # 35 · log2(5) ≈ 81.3 days


@pytest.mark.parametrize("tier", ["semantic", "procedural", "working", Tier.SEMANTIC, Tier.PROCEDURAL])
def test_durable_tiers_never_cold_by_age(tier: Tier | str) -> None:
    assert score(100_000, tier=tier) == 1.0


def test_pinned_never_cold_even_when_flagged() -> None:
    assert score(100_000, pinned=True) == 1.0
    assert score(100_000, pinned=True, stale=True) == 1.0


@pytest.mark.parametrize("tier", ["episodic", "semantic", "procedural"])
def test_stale_or_wrong_drops_to_the_lowest_salience(tier: str) -> None:
    assert score(0, tier=tier, stale=True) == 0.0
    assert is_cold(score(0, tier=tier, stale=True))


def test_a_future_last_seen_does_not_exceed_one() -> None:
    assert score(-10) == 1.0


# --- reads ----------------------------------------------------------------------------------------


def test_reads_raise_the_score_and_fade() -> None:
    read = record_read(None, now=day(70), tier="episodic")
    assert read == ReadState(strength=0.2, at=day(70))
    assert score(70, reads=read) == pytest.approx(0.25 + 0.2)
    assert read_strength(read, now=day(105), tier="episodic") == pytest.approx(0.1)
    assert score(105, reads=read) == pytest.approx(0.125 + 0.1)


def test_reads_accumulate_with_fading_and_are_capped() -> None:
    state = record_read(None, now=day(0), tier="episodic")
    state = record_read(state, now=day(35), tier="episodic")
    assert state.strength == pytest.approx(0.1 + 0.2)
    for _ in range(20):
        state = record_read(state, now=day(35), tier="episodic")
    assert state.strength == 1.0


def test_monthly_reads_keep_a_page_warm() -> None:
    state: ReadState | None = None
    for month in range(13):
        state = record_read(state, now=day(30 * month), tier="episodic")
    assert not is_cold(score(365, reads=state))
    assert is_cold(score(365))


def test_reads_fade_on_the_tiers_half_life() -> None:
    params = RetentionParams(tier_half_life_days={"working": 7})
    read = ReadState(strength=0.8, at=T0)
    assert read_strength(read, now=day(7), tier="working", params=params) == pytest.approx(0.4)
    assert read_strength(read, now=day(35), tier="episodic", params=params) == pytest.approx(0.4)


def test_a_read_stamped_in_the_past_keeps_the_later_stamp() -> None:
    state = ReadState(strength=0.5, at=day(10))
    earlier = record_read(state, now=day(5), tier="episodic")
    assert earlier.at == day(10)
    assert earlier.strength == pytest.approx(0.7)
    assert read_strength(state, now=day(5), tier="episodic") == 0.5


@given(
    age=st.floats(min_value=-100, max_value=2000),
    read_times=st.lists(st.floats(min_value=-100, max_value=2000), max_size=10),
    tier=st.sampled_from(["working", "episodic", "semantic", "procedural"]),
    pinned=st.booleans(),
    stale=st.booleans(),
)
def test_score_in_unit_interval_and_reads_only_raise(
    age: float, read_times: list[float], tier: str, pinned: bool, stale: bool
) -> None:
    state: ReadState | None = None
    for n in read_times:
        state = record_read(state, now=day(n), tier=tier)
    without = score(age, tier=tier, pinned=pinned, stale=stale)
    with_reads = score(age, tier=tier, pinned=pinned, stale=stale, reads=state)
    assert 0.0 <= without <= with_reads <= 1.0


# --- confidence -----------------------------------------------------------------------------------


def conf(sessions: int, age_days: float | None = 0.0, contradictions: int = 0) -> float:
    last = None if age_days is None else day(-age_days)
    return confidence(supporting_sessions=sessions, last_support_at=last, contradictions=contradictions, now=T0)


def test_no_support_is_zero() -> None:
    assert conf(0) == 0.0
    assert conf(-3) == 0.0


def test_confidence_values() -> None:
    assert conf(2) == pytest.approx(0.95 / 2)
    assert conf(2, contradictions=1) == pytest.approx(0.95 / 4)
    assert conf(2, age_days=180) == pytest.approx(0.95 / 2 * 0.75)
    assert conf(2, age_days=None) == pytest.approx(0.95 / 2 * 0.5)
    assert conf(2, age_days=-30) == conf(2)  # support stamped in the future counts as now


def test_confidence_approaches_but_never_exceeds_the_cap() -> None:
    assert 0.94 < conf(10_000) <= DEFAULT_CONFIDENCE.ceiling


@given(
    sessions=st.integers(min_value=0, max_value=10_000),
    age=st.floats(min_value=-1000, max_value=100_000),
    contradictions=st.integers(min_value=0, max_value=50),
)
def test_confidence_bounds_and_monotonicity(sessions: int, age: float, contradictions: int) -> None:
    value = conf(sessions, age, contradictions)
    assert 0.0 <= value <= 0.95
    assert conf(sessions + 1, age, contradictions) >= value
    assert conf(sessions, age + 1, contradictions) <= value
    assert conf(sessions, age, contradictions + 1) <= value
    if sessions > 0:
        assert conf(sessions + 1, age, contradictions) > value or value == 0.0
        assert conf(sessions, age, contradictions + 1) < value or value == 0.0
