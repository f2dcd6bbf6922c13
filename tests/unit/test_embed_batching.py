"""Cutting an embedding call into runs by length under a budget of padded tokens (reverie.embed.batching)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.embed.batching import plan_runs


@given(
    lengths=st.lists(st.integers(min_value=1, max_value=256), max_size=300),
    max_texts=st.integers(min_value=1, max_value=64),
    max_tokens=st.integers(min_value=1, max_value=4096),
)
def test_every_text_runs_once_within_the_budget_shortest_first(
    lengths: list[int], max_texts: int, max_tokens: int
) -> None:
    runs = plan_runs(lengths, max_texts=max_texts, max_tokens=max_tokens)
    flat = [int(i) for run in runs for i in run]
    assert sorted(flat) == list(range(len(lengths)))
    assert flat == sorted(range(len(lengths)), key=lambda i: lengths[i])  # ascending, ties in their order
    for run in runs:
        longest = max(lengths[i] for i in run)
        assert len(run) >= 1
        assert len(run) <= max_texts
        assert len(run) * longest <= max_tokens or len(run) == 1  # only a text past the budget runs alone
    # Greedy: a run was cut only because the next text would not fit in it.
    for run, following in zip(runs, runs[1:], strict=False):
        first_next = following[0]
        grown = len(run) + 1
        assert grown > max_texts or grown * lengths[first_next] > max_tokens


def test_long_texts_run_in_smaller_batches_than_short_ones() -> None:
    short, long = [20] * 100, [60] * 100  # a 15-word fact; a 250-character chat turn (tokens)
    assert {len(r) for r in plan_runs(short, max_texts=64, max_tokens=512)} == {25}
    assert {len(r) for r in plan_runs(long, max_texts=64, max_tokens=512)} == {8, 4}  # 12 runs of 8, one of 4


def test_a_mixed_call_pads_little() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 256, size=500)
    runs = plan_runs(lengths, max_texts=64, max_tokens=512)
    padded = sum(len(r) * int(lengths[r].max()) for r in runs)
    assert padded <= 1.1 * int(lengths.sum())  # sorted runs: the padding is a few percent


def test_nothing_to_plan_and_bad_bounds() -> None:
    assert plan_runs([], max_texts=8, max_tokens=512) == []
    with pytest.raises(ValueError):
        plan_runs([3], max_texts=0, max_tokens=512)
