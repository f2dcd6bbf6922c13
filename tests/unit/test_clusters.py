"""Near-duplicate candidate clusters: the indexed search must equal brute force over ``similarity``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reverie.core.clusters import Blocks, Cluster, Item, duplicate_pairs, near_duplicate_clusters, similarity
from reverie.core.dedup import content_tokens

# -- brute-force reference ---------------------------------------------------------------------------


def _brute_candidates(items: Sequence[Item], seeds: set[str], threshold: float, max_size: int) -> list[Cluster]:
    out = []
    for seed in items:
        if seed.id not in seeds:
            continue
        others = [other for other in items if other is not seed and other.group == seed.group]
        scored = [(*similarity(seed, other), other.id) for other in others]
        hits = sorted((h for h in scored if h[0] >= threshold), key=lambda h: (-h[0], h[2]))[: max_size - 1]
        if hits:
            out.append(Cluster((seed.id, *(h[2] for h in hits)), hits[-1][0], hits[-1][1]))
    return out


def _brute_merge(candidates: list[Cluster], max_size: int) -> list[Cluster]:
    def fits(a: Cluster, b: Cluster) -> bool:
        return bool(set(a.ids) & set(b.ids)) and len(set(a.ids) | set(b.ids)) <= max_size

    def union(a: Cluster, b: Cluster) -> Cluster:
        low = b if b.similarity < a.similarity else a
        return Cluster(a.ids + tuple(i for i in b.ids if i not in a.ids), low.similarity, low.by)

    out: list[Cluster] = []
    for candidate in candidates:
        target = next((k for k, c in enumerate(out) if fits(c, candidate)), None)
        if target is None:
            out.append(candidate)
            continue
        out[target] = union(out[target], candidate)
        while (other := next((k for k in range(target + 1, len(out)) if fits(out[target], out[k])), None)) is not None:
            out[target] = union(out[target], out.pop(other))
    return out


def _brute(items: Sequence[Item], seeds: set[str], threshold: float, max_size: int) -> list[Cluster]:
    return _brute_merge(_brute_candidates(items, seeds, threshold, max_size), max_size)


def _brute_duplicates(items: Sequence[Item], threshold: float) -> int:
    return sum(
        any(o is not a and o.group == a.group and similarity(a, o)[0] >= threshold for o in items) for a in items
    )


# -- strategies --------------------------------------------------------------------------------------

_TOKENS = st.frozensets(st.sampled_from("abcdefgh"), max_size=6)
# Small integer coordinates: exact ties, duplicates, zero vectors and pairs exactly at a threshold.
_SMALL = st.lists(st.integers(-2, 2), min_size=3, max_size=3)
_ROUGH = st.lists(st.floats(-1, 1, width=32), min_size=3, max_size=3)
_VECTORS = st.one_of(st.none(), _SMALL, _ROUGH, st.lists(st.integers(-1, 1), min_size=4, max_size=4))
_THRESHOLDS = st.one_of(st.sampled_from([0.5, 0.6, 0.75, 0.8, 0.88, 0.9, 1.0]), st.floats(0.05, 1.0))


@st.composite
def _corpora(draw: st.DrawFn, vectors: st.SearchStrategy[list[Any] | None] = _VECTORS) -> list[Item]:
    rows = draw(st.lists(st.tuples(st.integers(0, 2), _TOKENS, vectors), min_size=1, max_size=14))
    return [
        Item(f"i{k:02d}", group, tokens, None if vector is None else np.asarray(vector, dtype=np.float32))
        for k, (group, tokens, vector) in enumerate(rows)
    ]


# Blocks of 2 seeds by 3 rows, and every block crowded, so chunking and pruning paths all run.
TINY = Blocks(rows=3, seeds=2, crowd=0)


# -- equivalence with brute force --------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(_corpora(), st.data(), _THRESHOLDS, st.integers(2, 5))
def test_clusters_equal_brute_force(items: list[Item], data: st.DataObject, threshold: float, max_size: int) -> None:
    seeds = data.draw(st.sets(st.sampled_from([item.id for item in items])))
    expected = _brute(items, seeds, threshold, max_size)
    assert near_duplicate_clusters(items, seeds, threshold=threshold, max_size=max_size) == expected
    assert near_duplicate_clusters(items, seeds, threshold=threshold, max_size=max_size, blocks=TINY) == expected


@settings(max_examples=100, deadline=None)
@given(_corpora(vectors=st.none()), st.data(), _THRESHOLDS, st.integers(2, 4))
def test_token_only_clusters_equal_brute_force(
    items: list[Item], data: st.DataObject, threshold: float, max_size: int
) -> None:
    seeds = data.draw(st.sets(st.sampled_from([item.id for item in items])))
    got = near_duplicate_clusters(items, seeds, threshold=threshold, max_size=max_size)
    assert got == _brute(items, seeds, threshold, max_size)
    assert all(c.by == "jaccard" for c in got)


@settings(max_examples=100, deadline=None)
@given(_corpora(), _THRESHOLDS)
def test_duplicate_pairs_equal_brute_force(items: list[Item], threshold: float) -> None:
    expected = _brute_duplicates(items, threshold)
    assert duplicate_pairs(items, threshold=threshold) == expected
    assert duplicate_pairs(items, threshold=threshold, blocks=TINY) == expected


def test_random_embeddings_equal_brute_force() -> None:
    # Realistic vectors: 200 items of 32 dimensions around 20 centres, compared at several thresholds.
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((20, 32))
    raw = centres[rng.integers(0, 20, 200)] + rng.normal(0, 0.35, (200, 32))
    vectors = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    items = [Item(f"e{k:03d}", k % 2, frozenset(), vectors[k]) for k in range(200)]
    seeds = {item.id for item in items[::7]}
    for threshold in (0.8, 0.88, 0.95):
        expected = _brute(items, seeds, threshold, 3)
        assert expected  # the fixture has clusters to find
        assert near_duplicate_clusters(items, seeds, threshold=threshold) == expected
        assert near_duplicate_clusters(items, seeds, threshold=threshold, blocks=TINY) == expected


def test_random_token_sets_equal_brute_force() -> None:
    rng = np.random.default_rng(5)
    base = [frozenset(f"w{t}" for t in rng.integers(0, 400, rng.integers(8, 20))) for _ in range(150)]
    variants = [s - {min(s)} | {f"x{k}"} for k, s in enumerate(base[:100])]  # one token swapped
    items = [Item(f"e{k:03d}", "g", tokens) for k, tokens in enumerate(base + variants)]
    seeds = {item.id for item in items[::3]}
    for threshold in (0.6, 0.75, 0.88):
        assert near_duplicate_clusters(items, seeds, threshold=threshold) == _brute(items, seeds, threshold, 3)
        assert duplicate_pairs(items, threshold=threshold) == _brute_duplicates(items, threshold)


# -- behaviour ---------------------------------------------------------------------------------------


def _text(id_: str, text: str, group: object = "g", vector: list[float] | None = None) -> Item:
    array = None if vector is None else np.asarray(vector, dtype=np.float32)
    return Item(id_, group, content_tokens(text), array)


def test_a_seed_gathers_its_nearest_neighbours() -> None:
    items = [
        _text("a", "maya flies to lisbon on friday morning"),
        _text("b", "maya flies to lisbon on friday morning early"),
        _text("c", "the office printer is broken again"),
    ]
    (cluster,) = near_duplicate_clusters(items, ["a"], threshold=0.8)
    assert cluster.ids == ("a", "b") and cluster.by == "jaccard"
    assert cluster.similarity == pytest.approx(7 / 8)


class _Untouchable(Sequence[Item]):
    """A corpus that fails on any access: the idle path must not look at it."""

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...
    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        raise AssertionError("scanned")

    def __len__(self) -> int:
        raise AssertionError("scanned")

    def __iter__(self) -> Iterator[Item]:
        raise AssertionError("scanned")


def test_no_seeds_costs_nothing() -> None:
    assert near_duplicate_clusters(_Untouchable(), []) == []
    assert near_duplicate_clusters(_Untouchable(), set()) == []


def test_unknown_seeds_and_lonely_seeds_form_no_cluster() -> None:
    items = [_text("a", "alpha beta gamma"), _text("b", "delta epsilon zeta")]
    assert near_duplicate_clusters(items, ["zzz"]) == []
    assert near_duplicate_clusters(items, ["a", "b"]) == []


def test_groups_never_mix() -> None:
    items = [_text("a", "same words here", group="scope-1"), _text("b", "same words here", group="scope-2")]
    assert near_duplicate_clusters(items, ["a", "b"], threshold=0.5) == []
    assert duplicate_pairs(items, threshold=0.5) == 0
    items.append(_text("c", "same words here", group="scope-1"))
    assert [c.ids for c in near_duplicate_clusters(items, ["a", "b"], threshold=0.5)] == [("a", "c")]
    assert duplicate_pairs(items, threshold=0.5) == 2


def test_clusters_are_capped_at_max_size_and_nearest_win() -> None:
    items = [
        _text("s", "one two three four five six seven eight nine ten"),
        _text("far", "one two three four five six seven eight nine ten x1 x2"),
        _text("near", "one two three four five six seven eight nine ten x1"),
        _text("twin", "one two three four five six seven eight nine ten"),
    ]
    (cluster,) = near_duplicate_clusters(items, ["s"], threshold=0.8, max_size=3)
    assert cluster.ids == ("s", "twin", "near")
    assert cluster.similarity == pytest.approx(10 / 11)
    assert near_duplicate_clusters(items, ["s"], threshold=0.8, max_size=2)[0].ids == ("s", "twin")
    assert len(near_duplicate_clusters(items, ["s"], threshold=0.8, max_size=10)[0].ids) == 4


def test_overlapping_clusters_merge_only_within_max_size() -> None:
    items = [
        _text("a", "red green blue"),
        _text("b", "red green blue"),
        _text("c", "cyan magenta yellow"),
        _text("d", "cyan magenta yellow"),
    ]
    # a and b are each other's duplicates: one cluster, not two.
    assert [c.ids for c in near_duplicate_clusters(items, ["a", "b"])] == [("a", "b")]
    chain = [_text(k, words) for k, words in [("p", "1 2 3 4"), ("q", "1 2 3 4 5"), ("r", "1 2 3 4 5 6")]]
    # p ~ q and q ~ r at 0.8, p !~ r: q's cluster overlaps p's; within 3 ids it merges.
    got = near_duplicate_clusters(chain, ["p", "q"], threshold=0.8, max_size=3)
    assert [c.ids for c in got] == [("p", "q", "r")]
    # At max_size 2 the union would not fit: both are kept, and q appears in two clusters.
    got = near_duplicate_clusters(chain, ["p", "q"], threshold=0.8, max_size=2)
    assert [c.ids for c in got] == [("p", "q"), ("q", "r")]


def test_vectors_decide_when_both_have_them() -> None:
    same_words = "identical words in both entries"
    items = [
        _text("a", same_words, vector=[1.0, 0.0, 0.0]),
        _text("b", same_words, vector=[0.0, 1.0, 0.0]),  # orthogonal: not a duplicate, whatever the words
        _text("c", same_words),  # no vector: compared with everyone by tokens
        _text("d", "unrelated text", vector=[0.99, 0.141, 0.0]),  # cosine ~0.99 with a
    ]
    got = near_duplicate_clusters(items, ["a", "b"], threshold=0.88)
    assert [(c.ids, c.by) for c in got] == [(("a", "c", "d"), "cosine"), (("b", "c"), "jaccard")]
    assert similarity(items[0], items[1]) == (0.0, "cosine")
    assert similarity(items[0], items[2]) == (1.0, "jaccard")


def test_unusable_vectors_fall_back_to_tokens() -> None:
    items = [
        _text("a", "the same words", vector=[0.0, 0.0, 0.0]),
        _text("b", "the same words", vector=[1.0, 0.0, 0.0]),
        _text("c", "the same words", vector=[float("nan"), 1.0, 0.0]),
        _text("d", "the same words", vector=[1.0, 0.0]),  # another vector length: not comparable by cosine
    ]
    assert similarity(items[0], items[1]) == (1.0, "jaccard")
    assert similarity(items[1], items[2]) == (1.0, "jaccard")
    assert similarity(items[1], items[3]) == (1.0, "jaccard")
    assert duplicate_pairs(items, threshold=1.0) == 4


def test_identical_vectors_meet_a_threshold_of_one() -> None:
    vector = [0.1, 0.7, -0.3, 0.2]
    items = [_text("a", "x", vector=vector), _text("b", "y", vector=vector)]
    assert near_duplicate_clusters(items, ["a"], threshold=1.0) == [Cluster(("a", "b"), 1.0, "cosine")]


def test_output_is_deterministic_and_ordered_by_seed_position() -> None:
    rng = np.random.default_rng(11)
    words = [f"w{k}" for k in range(30)]
    items = [Item(f"e{k:02d}", "g", frozenset(rng.choice(words, 4, replace=False).tolist())) for k in range(60)]
    seeds = [item.id for item in items[::2]]
    first = near_duplicate_clusters(items, seeds, threshold=0.6)
    assert first == near_duplicate_clusters(items, list(reversed(seeds)), threshold=0.6)
    assert first == near_duplicate_clusters(items, set(seeds), threshold=0.6)
    positions = {item.id: k for k, item in enumerate(items)}
    assert [positions[c.ids[0]] for c in first] == sorted(positions[c.ids[0]] for c in first)


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.01, float("nan")])
def test_threshold_is_validated(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        near_duplicate_clusters([], ["a"], threshold=threshold)
    with pytest.raises(ValueError, match="threshold"):
        duplicate_pairs([], threshold=threshold)


def test_max_size_and_ids_are_validated() -> None:
    with pytest.raises(ValueError, match="max_size"):
        near_duplicate_clusters([], [], max_size=1)
    twice = [_text("a", "x"), _text("a", "y")]
    with pytest.raises(ValueError, match="unique"):
        near_duplicate_clusters(twice, ["a"])
    with pytest.raises(ValueError, match="unique"):
        duplicate_pairs(twice)


def test_exact_ties_are_broken_by_id_whatever_float32_says() -> None:
    # Permutations of one vector have exactly the same cosine to an all-ones seed, but float32 products sum
    # them in different orders. The float32 pass must not drop the smallest id before exact scoring.
    rng = np.random.default_rng(1)
    base = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    perms = [base[rng.permutation(8)] for _ in range(40)]
    unit = np.array(perms) / np.linalg.norm(perms, axis=1, keepdims=True)
    rough = unit @ (np.ones(8, dtype=np.float32) / np.sqrt(8, dtype=np.float32))
    order = np.argsort(rough, kind="stable")  # the float32-weakest copy gets the smallest id
    items = [Item("s", "g", frozenset(), np.ones(8, dtype=np.float32))]
    items += [Item(f"p{rank:02d}", "g", frozenset(), perms[k]) for rank, k in enumerate(order)]
    expected = _brute(items, {"s"}, 0.9, 2)
    assert expected[0].ids == ("s", "p00")
    assert near_duplicate_clusters(items, ["s"], threshold=0.9, max_size=2) == expected
    assert near_duplicate_clusters(items, ["s"], threshold=0.9, max_size=2, blocks=TINY) == expected
