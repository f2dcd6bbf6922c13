"""The graph upkeep rules (``core.graph_upkeep``): which duplicates merge into what, which stale groups may be
archived, and the validation of type groups (also through ``[dream] graph_merge_types``)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.graph_upkeep import MergePlan, archivable, merge_plan, type_groups
from reverie.errors import ConfigError
from reverie.settings import load_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class N:
    entity_id: str
    type: str
    key: str
    created_at: datetime | None = T0


@dataclass(frozen=True)
class E:
    relation_id: str
    source_id: str
    target_id: str


def pairs(plan: MergePlan[N]) -> list[tuple[str, str]]:
    return [(keep.entity_id, dup.entity_id) for keep, dup in plan.merges]


def test_a_thing_merges_into_the_one_typed_entity_of_its_name() -> None:
    plan = merge_plan([N("t", "thing", "ana"), N("p", "person", "ana"), N("x", "thing", "bob")])
    assert pairs(plan) == [("p", "t")] and plan.ambiguous == () and plan.homonyms == ()


def test_typed_homonyms_stay_apart_and_make_a_thing_ambiguous() -> None:
    plan = merge_plan([N("c", "company", "apple"), N("f", "fruit", "apple"), N("t", "thing", "apple")])
    assert pairs(plan) == [] and plan.homonyms == ("apple",) and plan.ambiguous == ("apple",)


def test_grouped_types_merge_into_the_first_type_of_the_group_then_the_oldest() -> None:
    groups = type_groups([["company", "organization", "org"]])
    entities = [
        N("o1", "org", "acme", T0 - timedelta(days=9)),
        N("o2", "organization", "acme", T0 - timedelta(days=5)),
        N("c", "company", "acme", T0),
        N("t", "thing", "acme"),
    ]
    plan = merge_plan(entities, groups)
    assert pairs(plan) == [("c", "o2"), ("c", "o1"), ("c", "t")]
    two = merge_plan([N("o1", "org", "x", None), N("o2", "organization", "x", T0)], groups)
    assert pairs(two) == [("o2", "o1")]  # the group's order first, age only within one type


@given(st.randoms(use_true_random=False))
def test_a_plan_does_not_depend_on_the_order_of_the_entities(rng: random.Random) -> None:
    entities = [
        N(f"{kind}-{key}", kind, key, T0 + timedelta(hours=rng.randrange(5)))
        for key in "abcd"
        for kind in ("thing", "person", "place", "company", "organization")
        if rng.random() < 0.5
    ]
    groups = type_groups([["company", "organization"]])
    shuffled = list(entities)
    rng.shuffle(shuffled)
    assert merge_plan(entities, groups) == merge_plan(shuffled, groups)
    plan = merge_plan(entities, groups)
    dups = [dup.entity_id for _, dup in plan.merges]
    assert len(dups) == len(set(dups))  # each merged once
    assert not set(dups) & {keep.entity_id for keep, _ in plan.merges}  # never a chain
    assert all(keep.key == dup.key for keep, dup in plan.merges)


def test_archivable_groups_are_whole_components_of_stale_nodes() -> None:
    nodes = ["a", "b", "c", "d", "e", "f"]
    edges = [E("1", "a", "b"), E("2", "b", "c"), E("3", "d", "e"), E("4", "f", "gone")]  # "gone": not a node
    assert archivable(nodes, edges, {"a", "b", "d", "e", "f"}) == [("d", "e"), ("f",)]  # c holds a and b
    assert archivable(nodes, edges, set()) == []


@given(
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=20),
    st.sets(st.integers(0, 11)),
)
def test_no_archived_node_is_left_next_to_a_kept_one(links: list[tuple[int, int]], stale: set[int]) -> None:
    nodes = [f"n{i:02d}" for i in range(12)]
    edges = [E(str(k), f"n{a:02d}", f"n{b:02d}") for k, (a, b) in enumerate(links)]
    chosen = {n for group in archivable(nodes, edges, {f"n{i:02d}" for i in stale}) for n in group}
    assert chosen <= {f"n{i:02d}" for i in stale}
    for edge in edges:
        assert (edge.source_id in chosen) == (edge.target_id in chosen)


@pytest.mark.parametrize(
    "groups",
    [[["company"]], [["company", "company"]], [["Company", "org"]], [["thing", "org"]], [["a", "b"], ["b", "c"]]],
)
def test_bad_type_groups_are_refused(groups: list[list[str]]) -> None:
    with pytest.raises(ValueError):
        type_groups(groups)


def test_the_setting_is_validated_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dream\.graph_merge_types"):
        load_settings(tmp_path, {"dream": {"graph_merge_types": [["company", "Thing Two"]]}})
    (tmp_path / "reverie.toml").write_text('[dream]\ngraph_merge_types = [["company", "organization"]]\n')
    settings = load_settings(tmp_path)
    assert settings.dream.graph_merge_types == [["company", "organization"]]
    assert settings.dream.graph_enabled is True and settings.dream.graph_stale_days == 180
