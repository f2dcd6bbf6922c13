"""When the vector index searches through the HNSW graph: the pure selection rule, including the fallback
to exact search when usearch is not installed."""

from __future__ import annotations

import pytest

from reverie.recall.ann import mode


@pytest.mark.parametrize("installed", [True, False])
def test_small_matrices_and_a_zero_threshold_search_exactly(installed: bool) -> None:
    assert mode(0, 20_000, installed) == "exact"
    assert mode(20_000, 20_000, installed) == "exact"
    assert mode(5_000_000, 0, installed) == "exact"  # 0 disables the graph whatever the size


def test_above_the_threshold_the_graph_is_used_when_usearch_is_installed() -> None:
    assert mode(20_001, 20_000, True) == "ann"


def test_without_usearch_a_large_matrix_falls_back_to_exact_and_says_so() -> None:
    assert mode(20_001, 20_000, False) == "missing"
    assert mode(20_001, 20_000, False, has_graph=True) == "missing"


def test_a_graph_is_kept_down_to_half_the_threshold_so_it_does_not_flap() -> None:
    assert mode(15_000, 20_000, True) == "exact"  # no graph yet: not built below the threshold
    assert mode(15_000, 20_000, True, has_graph=True) == "ann"
    assert mode(10_000, 20_000, True, has_graph=True) == "exact"
