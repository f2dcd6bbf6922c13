"""core.aging: importance decay (seed 000, "Importance decay shape")."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.aging import (
    DEFAULT_IMPORTANCE_DECAY,
    DecayStep,
    ImportanceDecay,
    days_to_floor,
    decay_importance,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def one_pass(importance: float, now: datetime, params: ImportanceDecay = DEFAULT_IMPORTANCE_DECAY) -> float:
    return decay_importance(importance, last_seen_at=T0, decayed_through=None, now=now, params=params).importance


def run_passes(importance: float, times: list[datetime], last_seen_at: datetime = T0) -> DecayStep:
    step = DecayStep(importance, None)
    for now in times:
        step = decay_importance(
            step.importance, last_seen_at=last_seen_at, decayed_through=step.decayed_through, now=now
        )
    return step


def test_defaults_are_the_seeds() -> None:
    assert (DEFAULT_IMPORTANCE_DECAY.grace_days, DEFAULT_IMPORTANCE_DECAY.half_life_days) == (30.0, 45.0)
    assert DEFAULT_IMPORTANCE_DECAY.floor == 0.10


@pytest.mark.parametrize(("start", "days"), [(0.95, 176), (0.70, 156), (0.50, 134), (0.30, 101)])
def test_seed_table_time_to_floor(start: float, days: int) -> None:
    assert days_to_floor(start) == pytest.approx(days, abs=1.0)
    # And the decay itself agrees with the table: just above the floor a day early, on it a day late.
    assert one_pass(start, day(days - 2)) > 0.10
    assert one_pass(start, day(days + 1)) == pytest.approx(0.10)


def test_untouched_during_grace() -> None:
    for n in (0, 1, 15, 29.99, 30):
        assert decay_importance(0.8, last_seen_at=T0, decayed_through=None, now=day(n)) == DecayStep(0.8, None)


def test_one_half_life_after_grace_halves() -> None:
    assert one_pass(0.8, day(30 + 45)) == pytest.approx(0.4)
    assert one_pass(0.8, day(30 + 90)) == pytest.approx(0.2)


def test_a_pass_records_how_far_it_applied_decay() -> None:
    step = decay_importance(0.8, last_seen_at=T0, decayed_through=None, now=day(60))
    assert step.decayed_through == day(60)
    again = decay_importance(step.importance, last_seen_at=T0, decayed_through=step.decayed_through, now=day(60))
    assert again == step


def test_reinforcement_restarts_grace() -> None:
    decayed = run_passes(0.8, [day(60)])
    # Reinforced on day 70: nothing more decays until day 100.
    for n in (70, 80, 99):
        step = decay_importance(
            decayed.importance, last_seen_at=day(70), decayed_through=decayed.decayed_through, now=day(n)
        )
        assert step.importance == decayed.importance
    later = decay_importance(
        decayed.importance, last_seen_at=day(70), decayed_through=decayed.decayed_through, now=day(100 + 45)
    )
    assert later.importance == pytest.approx(decayed.importance / 2)


def test_floor_is_respected() -> None:
    assert one_pass(0.9, day(10_000)) == 0.10
    assert one_pass(0.11, day(10_000)) == 0.10


@pytest.mark.parametrize("below", [0.0, 0.05, 0.10])
def test_scores_at_or_below_the_floor_are_left_alone(below: float) -> None:
    assert one_pass(below, day(500)) == below


def test_disabled_decay_changes_nothing() -> None:
    for half_life in (0.0, -1.0):
        params = ImportanceDecay(half_life_days=half_life)
        step = decay_importance(0.9, last_seen_at=T0, decayed_through=day(40), now=day(1000), params=params)
        assert step == DecayStep(0.9, day(40))
        assert days_to_floor(0.9, params) == math.inf


def test_clock_moving_backwards_is_a_no_op() -> None:
    step = run_passes(0.9, [day(100)])
    back = decay_importance(step.importance, last_seen_at=T0, decayed_through=step.decayed_through, now=day(90))
    assert back == step


def test_days_to_floor_edges() -> None:
    assert days_to_floor(0.10) == 0.0
    assert days_to_floor(0.05) == 0.0
    assert days_to_floor(0.5, ImportanceDecay(floor=0.0)) == math.inf
    assert days_to_floor(0.2, ImportanceDecay(grace_days=0, half_life_days=10)) == pytest.approx(10.0)


def test_invalid_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        ImportanceDecay(grace_days=-1)
    with pytest.raises(ValueError):
        ImportanceDecay(floor=1.0)


@given(
    start=st.floats(min_value=0.0, max_value=1.0),
    span_days=st.floats(min_value=0.0, max_value=800.0),
    offsets=st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=40),
    seen_offset_days=st.floats(min_value=-400.0, max_value=400.0),
)
def test_cadence_does_not_change_the_calendar_curve(
    start: float, span_days: float, offsets: list[float], seen_offset_days: float
) -> None:
    last_seen = day(seen_offset_days)
    end = day(span_days)
    many = run_passes(start, [*sorted(day(span_days * f) for f in offsets), end], last_seen_at=last_seen)
    once = run_passes(start, [end], last_seen_at=last_seen)
    assert many.importance == pytest.approx(once.importance, abs=1e-9)


@given(
    start=st.floats(min_value=0.0, max_value=1.0),
    times=st.lists(st.floats(min_value=0.0, max_value=1000.0), min_size=1, max_size=20),
)
def test_decay_never_raises_and_never_crosses_the_floor(start: float, times: list[float]) -> None:
    # Unsorted times: a clock that jumps back and forth.
    step = DecayStep(start, None)
    for n in times:
        before = step.importance
        step = decay_importance(before, last_seen_at=T0, decayed_through=step.decayed_through, now=day(n))
        assert step.importance <= before
        assert step.importance >= min(before, 0.10)
