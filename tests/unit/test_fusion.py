"""The hybrid ranking arithmetic of core.fusion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core import fusion


def test_minmax_maps_best_to_one_and_worst_to_zero() -> None:
    assert fusion.minmax({"a": 3.0, "b": 1.0, "c": 2.0}) == {"a": 1.0, "b": 0.0, "c": 0.5}


def test_minmax_of_equal_scores_is_all_ones_and_of_nothing_is_empty() -> None:
    assert fusion.minmax({"a": 0.4, "b": 0.4}) == {"a": 1.0, "b": 1.0}
    assert fusion.minmax({"only": -7.0}) == {"only": 1.0}
    assert fusion.minmax({}) == {}


@given(st.dictionaries(st.text(max_size=3), st.floats(-1e6, 1e6), min_size=1))
def test_minmax_stays_in_the_unit_interval_and_keeps_order(scores: dict[str, float]) -> None:
    out = fusion.minmax(scores)
    assert set(out) == set(scores)
    assert all(0.0 <= v <= 1.0 for v in out.values())
    for a in scores:
        for b in scores:
            if scores[a] > scores[b]:
                assert out[a] >= out[b]


def test_floor_drops_vector_candidates_below_it_and_none_keeps_all() -> None:
    sims = {"a": 0.61, "b": 0.5, "c": 0.49}
    assert fusion.above_floor(sims, 0.5) == {"a": 0.61, "b": 0.5}
    assert fusion.above_floor(sims, None) == sims


def test_fuse_is_the_weighted_mean_over_the_union() -> None:
    lexical = {"a": 10.0, "b": 5.0, "c": 0.0}  # -> a 1, b 0.5, c 0
    semantic = {"b": 0.9, "d": 0.5}  # -> b 1, d 0
    out = fusion.fuse(lexical, semantic, semantic_weight=0.5)
    assert out == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.0})
    only_lexical = fusion.fuse(lexical, semantic, semantic_weight=0.0)
    assert only_lexical == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0, "d": 0.0})


def test_an_item_found_by_both_signals_beats_one_found_by_one() -> None:
    out = fusion.fuse({"both": 2.0, "lex": 2.0}, {"both": 0.8, "sem": 0.8})
    assert out["both"] > out["lex"] and out["both"] > out["sem"]


def test_fuse_refuses_a_weight_outside_zero_one() -> None:
    with pytest.raises(ValueError):
        fusion.fuse({}, {}, semantic_weight=1.5)


def test_floor_resolution_takes_the_first_set_value() -> None:
    assert fusion.resolve_floor(None, 0.45, 0.3, 0.25) == 0.45  # agent override beats deployment and model
    assert fusion.resolve_floor(0.1, 0.45, 0.3) == 0.1  # per call beats everything
    assert fusion.resolve_floor(None, None, None, 0.25) == 0.25  # the model's calibrated default
    assert fusion.resolve_floor(None, None) is None  # no floor at all
    assert fusion.resolve_floor(0.0, 0.5) == 0.0  # an explicit 0 is a value, not "unset"


def test_ranked_is_best_first_with_deterministic_ties_and_a_limit() -> None:
    assert fusion.ranked({"b": 0.5, "a": 0.5, "c": 0.9}, 2) == [("c", 0.9), ("a", 0.5)]


def test_spread_adds_a_share_of_the_best_neighbour_and_brings_in_unscored_neighbours() -> None:
    scores = {"t3": 1.0, "t7": 0.4}
    near = {"t3": ["t2", "t4"], "t4": ["t3", "t5"], "t2": ["t1", "t3"], "t7": []}
    out = fusion.spread(scores, near, 0.5)
    assert out["t3"] == 1.0  # its neighbours had nothing to give
    assert out["t4"] == 0.5 and out["t2"] == 0.5  # pulled in by t3
    assert out["t7"] == 0.4
    assert fusion.spread(scores, near, 0.0) == scores


# -- evidence (issue 18) ---------------------------------------------------------------------------------
def test_lexical_evidence_is_relative_to_the_larger_of_the_best_and_an_ideal_match() -> None:
    # The best hit matched the whole query: it is full evidence, the rest in proportion.
    assert fusion.lexical_evidence({"a": 8.0, "b": 2.0}, ideal=4.0) == {"a": 1.0, "b": 0.25}
    # The best hit matched only a weak word: nothing is stretched to 1.
    assert fusion.lexical_evidence({"a": 1.0, "b": 0.5}, ideal=4.0) == {"a": 0.25, "b": 0.125}
    # Without an ideal (the store's full-text search), the best is the scale.
    assert fusion.lexical_evidence({"a": 1.0, "b": 0.5}, ideal=None) == {"a": 1.0, "b": 0.5}
    assert fusion.lexical_evidence({}, ideal=4.0) == {}
    assert fusion.lexical_evidence({"a": 0.0}, ideal=0.0) == {"a": 0.0}


def test_semantic_evidence_runs_from_the_floor_to_a_strong_similarity() -> None:
    found = fusion.semantic_evidence({"a": 0.7, "b": 0.45, "c": 0.2}, floor=0.25, strong=0.6)
    assert found["a"] == 1.0
    assert found["b"] == pytest.approx(0.2 / 0.45)
    assert found["c"] == 0.0  # below the floor: no evidence
    # A query whose best candidate is weak keeps it weak.
    weak = fusion.semantic_evidence({"a": 0.35}, floor=0.25, strong=0.6)
    assert weak["a"] == pytest.approx(0.1 / 0.35)
    assert fusion.semantic_evidence({}, floor=0.25, strong=0.6) == {}


def test_weighted_mixes_two_evidence_maps_over_their_union() -> None:
    mixed = fusion.weighted({"a": 1.0, "b": 0.5}, {"b": 1.0, "c": 0.4}, 0.25)
    assert mixed == pytest.approx({"a": 0.75, "b": 0.625, "c": 0.1})
    with pytest.raises(ValueError, match="between 0 and 1"):
        fusion.weighted({}, {}, 1.5)


def test_thread_gain_is_a_share_of_the_threads_best_evidence_of_each_kind() -> None:
    lexical = {"t1": 1.0, "t2": 0.2}
    semantic = {"t2": 0.6, "u1": 0.8}
    threads = {"t1": "s1", "t2": "s1", "t3": "s1", "u1": "s2"}
    gains = fusion.thread_gain(lexical, semantic, threads, 0.5)
    # s1: best lexical 1.0 (t1), best semantic 0.6 (t2): every turn of s1 gains 0.5 * 0.8.
    assert gains == pytest.approx({"t1": 0.4, "t2": 0.4, "t3": 0.4, "u1": 0.2})
    assert fusion.thread_gain(lexical, semantic, threads, 0.0) == {}
    assert "loose" not in fusion.thread_gain({"loose": 1.0}, {}, threads, 0.5)


def test_corroboration_credits_a_word_match_as_far_as_the_embedder_agrees() -> None:
    lexical = {"agreed": 0.8, "half": 0.8, "unrelated": 0.8, "unjudged": 0.8, "missing": 0.8}
    semantic = {"agreed": 1.0, "half": 0.5, "missing": 0.0}
    judged = {"agreed": 0.7, "half": 0.4, "missing": 0.1}  # similarities: "unjudged" has no vector yet
    out = fusion.corroborated(lexical, semantic, judged, {"unrelated"}, 0.5)
    assert out["agreed"] == pytest.approx(0.8)  # full semantic evidence: all of it
    assert out["half"] == pytest.approx(0.8 * 0.75)
    assert out["missing"] == pytest.approx(0.4)  # below the floor: the share
    assert out["unrelated"] == pytest.approx(0.4)  # judged unrelated without a similarity: the share
    assert out["unjudged"] == pytest.approx(0.8)  # nothing to judge it by: trusted
    assert fusion.corroborated(lexical, semantic, judged, {"unrelated"}, 1.0) == lexical


@given(
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_corroboration_never_adds_and_grows_with_agreement(value: float, low: float, high: float, share: float) -> None:
    low, high = sorted((low, high))
    out = fusion.corroborated({"a": value, "b": value}, {"a": low, "b": high}, {"a", "b"}, set(), share)
    assert share * value - 1e-12 <= out["a"] <= out["b"] <= value + 1e-12


def test_corroboration_refuses_a_share_outside_zero_one() -> None:
    with pytest.raises(ValueError, match="share"):
        fusion.corroborated({}, {}, set(), set(), 1.5)


def test_near_best_drops_hits_under_a_share_of_the_best_score() -> None:
    hits = [("answer", 0.9), ("related", 0.2), ("noise", 0.05)]
    assert fusion.near_best(hits, 0.1) == [("answer", 0.9), ("related", 0.2)]
    assert fusion.near_best(hits, 0.25) == [("answer", 0.9)]
    # A hit exactly at the share is kept; 0 keeps everything; an empty or all-zero list is left as it is.
    assert fusion.near_best([("a", 1.0), ("b", 0.1)], 0.1) == [("a", 1.0), ("b", 0.1)]
    assert fusion.near_best(hits, 0.0) == hits
    assert fusion.near_best([], 0.5) == []
    assert fusion.near_best([("a", 0.0), ("b", 0.0)], 0.5) == [("a", 0.0), ("b", 0.0)]


@given(
    st.lists(st.floats(0, 3), min_size=1, max_size=12).map(lambda v: sorted(v, reverse=True)),
    st.floats(0, 1),
)
def test_near_best_keeps_the_best_and_a_prefix_of_the_ranking(scores: list[float], share: float) -> None:
    hits = [(f"h{i}", v) for i, v in enumerate(scores)]
    kept = fusion.near_best(hits, share)
    assert kept[0] == hits[0]
    assert kept == hits[: len(kept)]  # a cut never reorders or skips
    assert all(v >= share * scores[0] for _, v in kept)
