"""core.subject_time: the subject-time metadata convention and its merge (seed 000)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.subject_time import (
    SUBJECT_TIME,
    SUBJECT_TIME_END,
    SUBJECT_TIME_START,
    merge_subject_time,
    subject_time_problem,
    valid_subject_time,
)

POINT, START, END = SUBJECT_TIME, SUBJECT_TIME_START, SUBJECT_TIME_END


@pytest.mark.parametrize("value", ["2019", "2019-06", "2019-06-14", "2024-02-29", "0001", "9999-12-31"])
def test_valid_forms(value: str) -> None:
    assert valid_subject_time(value)


DATETIMES = [
    "2023-05-08T13:56:00+00:00",  # what the LoCoMo benchmark writes
    "2019-06-14T10:00:00Z",
    "2019-06-14T10:00Z",
    "2019-06-14T10:00",
    "2019-06-14T23:59:59.123456-05:00",
    "2024-02-29T00:00:00+14:00",
    "9999-12-31T23:59:59-12:00",
]
NOT_DATETIMES = [
    "2019-06-14T24:00",
    "2019-06-14T10:60",
    "2019-06-14T10:00:60",
    "2019-06-14T10",
    "2019-06-14 10:00",
    "2019-06-14t10:00",
    "2019-06-14T10:00z",
    "2019-06-14T10:00+0200",
    "2019-06-14T10:00+24:00",
    "2019-02-30T10:00Z",
    "20190614T100000Z",
    "2019-06-14T10:00:00Z ",
]


def test_an_iso_date_and_time_is_valid_in_the_extended_form_only() -> None:
    assert [v for v in DATETIMES if not valid_subject_time(v)] == []
    assert [v for v in NOT_DATETIMES if valid_subject_time(v)] == []


def test_a_date_and_time_means_its_day_as_written() -> None:
    # Day precision: more specific than a month, and the offset does not move the day (23:30 at -05:00 is the
    # next day in UTC, but the text says the 8th).
    late = "2023-05-08T23:30:00-05:00"
    assert merge_subject_time([{POINT: "2023-05"}, {POINT: late}]) == {POINT: late}
    assert merge_subject_time([{POINT: "2023-05-09"}, {POINT: late}]) == {POINT: late}
    assert merge_subject_time([{START: late, END: "2023-05-08"}]) == {START: late, END: "2023-05-08"}


def test_the_same_day_with_and_without_a_time_merges_the_same_in_any_order() -> None:
    timed, plain = "2023-05-08T13:56:00+00:00", "2023-05-08"
    assert merge_subject_time([{POINT: plain}, {POINT: timed}]) == {POINT: timed}
    assert merge_subject_time([{POINT: timed}, {POINT: plain}]) == {POINT: timed}
    other = "2023-05-08T09:00:00+00:00"
    assert merge_subject_time([{POINT: timed}, {POINT: other}]) == merge_subject_time([{POINT: other}, {POINT: timed}])


def test_subject_time_problem_names_the_key() -> None:
    assert subject_time_problem({}) is None
    assert subject_time_problem({"other": "last summer"}) is None
    assert subject_time_problem({POINT: "2023-05-08T13:56:00+00:00", START: "2019", END: "2020-01"}) is None
    for key in (POINT, START, END):
        for bad in ("last summer", 2019, "2019-13", ["2019"]):
            problem = subject_time_problem({key: bad})
            assert problem is not None and problem[0] == key and f"metadata.{key}" in problem[1]


def test_subject_time_problem_refuses_a_start_after_its_end() -> None:
    problem = subject_time_problem({START: "2020", END: "2019-06"})
    assert problem is not None and problem[0] == START and "after" in problem[1]
    assert subject_time_problem({START: "2019", END: "2019-06"}) is None  # within the year: not inverted
    assert subject_time_problem({START: "2019-06-14T18:00Z", END: "2019-06-14T09:00Z"}) is None  # one day


@pytest.mark.parametrize(
    "value",
    [
        "",
        "19",
        "2019-6",
        "2019-06-1",
        "2019-13",
        "2019-00",
        "2019-02-30",
        "2023-02-29",
        "0000",
        " 2019",
        "2019 ",
        "June 2019",
        "2019/06/14",
        "summer 2019",
        "20190614",
        2019,
        None,
        ["2019"],
    ],
)
def test_malformed_values_are_invalid(value: object) -> None:
    assert not valid_subject_time(value)


def test_nothing_to_merge() -> None:
    assert merge_subject_time([]) == {}
    assert merge_subject_time([{}, {"source": "user"}]) == {}


def test_a_single_source_is_kept() -> None:
    meta = {POINT: "2019-06", START: "2018", END: "2020-01-05", "other": "x"}
    assert merge_subject_time([meta]) == {POINT: "2019-06", START: "2018", END: "2020-01-05"}


# --- points ---------------------------------------------------------------------------------------


def test_point_prefers_the_most_specific() -> None:
    assert merge_subject_time([{POINT: "2019"}, {POINT: "2019-06-14"}, {POINT: "2019-06"}]) == {POINT: "2019-06-14"}


def test_more_specific_wins_even_when_it_disagrees() -> None:
    assert merge_subject_time([{POINT: "2019-06"}, {POINT: "2018"}]) == {POINT: "2019-06"}


def test_equally_specific_conflicting_points_take_the_earliest() -> None:
    assert merge_subject_time([{POINT: "2019-07-01"}, {POINT: "2019-06-14"}]) == {POINT: "2019-06-14"}
    assert merge_subject_time([{POINT: "2021"}, {POINT: "2019"}]) == {POINT: "2019"}


def test_malformed_points_are_ignored() -> None:
    assert merge_subject_time([{POINT: "2019-02-30"}, {POINT: "2019"}]) == {POINT: "2019"}
    assert merge_subject_time([{POINT: "last summer"}]) == {}


# --- ranges ---------------------------------------------------------------------------------------


def test_ranges_widen() -> None:
    merged = merge_subject_time([{START: "2015-03", END: "2017"}, {START: "2016", END: "2019-06-14"}])
    assert merged == {START: "2015-03", END: "2019-06-14"}


def test_bounds_compare_by_the_days_they_can_mean() -> None:
    # An end of "2019" reaches 2019-12-31, later than 2019-06-14; a start of "2019" begins before 2019-03.
    assert merge_subject_time([{START: "2019-03", END: "2019-06-14"}, {START: "2019", END: "2019"}]) == {
        START: "2019",
        END: "2019",
    }


def test_equal_bounds_prefer_the_more_specific_form() -> None:
    merged = merge_subject_time([{START: "2019", END: "2020"}, {START: "2019-01-01", END: "2020-12-31"}])
    assert merged == {START: "2019-01-01", END: "2020-12-31"}


def test_an_omitted_bound_is_open_and_stays_open() -> None:
    since = {START: "2015"}
    assert merge_subject_time([since, {START: "2014", END: "2018"}]) == {START: "2014"}
    until = {END: "2010-05"}
    assert merge_subject_time([until, {START: "2001", END: "2012"}]) == {END: "2012"}


def test_open_on_both_sides_leaves_no_range() -> None:
    assert merge_subject_time([{START: "2020"}, {END: "2010"}]) == {}


def test_a_malformed_bound_is_unknown_not_open() -> None:
    merged = merge_subject_time([{START: "2015", END: "someday"}, {START: "2016", END: "2018"}])
    assert merged == {START: "2015", END: "2018"}


def test_a_source_with_only_malformed_bounds_is_ignored() -> None:
    assert merge_subject_time([{START: "soon"}, {START: "2016", END: "2018"}]) == {START: "2016", END: "2018"}
    assert merge_subject_time([{START: "soon", END: "later"}]) == {}


def test_an_inverted_range_is_ignored() -> None:
    assert merge_subject_time([{START: "2020", END: "2019"}, {START: "2010", END: "2011"}]) == {
        START: "2010",
        END: "2011",
    }
    # Overlapping precisions are not inverted: "2019-06" ends within "2019".
    assert merge_subject_time([{START: "2019", END: "2019-06"}]) == {START: "2019", END: "2019-06"}


def test_sources_without_a_range_do_not_open_it() -> None:
    merged = merge_subject_time([{POINT: "2016"}, {}, {START: "2015", END: "2017"}])
    assert merged == {POINT: "2016", START: "2015", END: "2017"}


def test_none_counts_as_omitted() -> None:
    assert merge_subject_time([{START: "2015", END: None}, {START: "2016", END: "2017"}]) == {START: "2015"}


# --- properties -----------------------------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2019",
            "2019-06",
            "2019-06-14",
            "2018-12",
            "2020",
            "2019-12-31",
            "bad",
            "2019-02-30",
            "2019-06-14T10:00:00Z",
            "2019-06-14T08:30:00+02:00",
            "2019-12-31T23:59:59-05:00",
        ]
    ),
)
_META = st.fixed_dictionaries({}, optional={POINT: _VALUES, START: _VALUES, END: _VALUES})


@given(st.lists(_META, max_size=5))
def test_merge_is_independent_of_order(metadatas: list[dict[str, Any]]) -> None:
    expected = merge_subject_time(metadatas)
    for order in itertools.islice(itertools.permutations(metadatas), 24):
        assert merge_subject_time(list(order)) == expected


@given(st.lists(_META, max_size=5))
def test_merged_values_are_valid_and_come_from_the_sources(metadatas: list[dict[str, Any]]) -> None:
    merged = merge_subject_time(metadatas)
    for key, value in merged.items():
        assert valid_subject_time(value)
        assert any(meta.get(key) == value for meta in metadatas)


@given(st.lists(_META, max_size=5))
def test_merge_is_idempotent(metadatas: list[dict[str, Any]]) -> None:
    merged = merge_subject_time(metadatas)
    assert merge_subject_time([merged]) == merged
    assert merge_subject_time([merged, merged]) == merged
