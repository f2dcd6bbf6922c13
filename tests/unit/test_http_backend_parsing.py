"""The HTTP vector backend's untrusted-answer checks: the id filter, scores, and the answer shapes."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pytest

from reverie.errors import ReverieError, VectorBackendError
from reverie.memory.entries import new_id
from reverie.recall.http_backend import parse_embeddings, parse_results, valid_id

LOGGER = "reverie.recall.http"


@pytest.mark.parametrize("good", ["0123456789ab", "abcdefabcdef", "000000000000", "ffffffffffff"])
def test_reverie_ids_pass(good: str) -> None:
    assert valid_id(good)


def test_every_id_reverie_draws_passes() -> None:
    assert all(valid_id(new_id()) for _ in range(200))


@pytest.mark.parametrize(
    "bad",
    [
        "../etc",
        "DROP TABLE",
        "abcdef1234567",  # 13 characters
        "abcdef12345",  # 11
        "ABCDEF123456",  # uppercase
        "AbCdEf123456",
        "0123456789ag",  # not hex
        "0123456789a\n",
        "\n0123456789a",
        "0123456789ab\n",  # fullmatch, not match: a trailing newline does not slip through
        " 0123456789ab",
        "０１２３４５６７８９ａｂ",  # fullwidth digits and letters
        "",
        None,
        12,
        123456789012,
        b"0123456789ab",
        ["0123456789ab"],
        {"id": "0123456789ab"},
    ],
)
def test_anything_else_fails(bad: object) -> None:
    assert not valid_id(bad)


def test_results_are_filtered_ranked_capped_and_clamped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    payload: dict[str, Any] = {
        "results": [
            {"id": "aaaaaaaaaaaa", "score": 0.2},
            {"id": "../etc", "score": 0.9},
            {"id": "bbbbbbbbbbbb", "score": 0.8},
            {"id": "cccccccccccc", "score": "0.9"},
            {"id": "dddddddddddd", "score": True},
            {"id": "eeeeeeeeeeee", "score": math.nan},
            {"id": "ffffffffffff", "score": math.inf},
            {"id": "111111111111", "score": 7},  # an int is a number; clamped to cosine's range
            {"id": "222222222222", "score": -3.5},
            {"id": "aaaaaaaaaaaa", "score": 0.5},  # repeated: keeps its best score
            "not an object",
            None,
            {"score": 0.4},
        ]
    }
    assert parse_results(payload, 10) == [
        ("111111111111", 1.0),
        ("bbbbbbbbbbbb", 0.8),
        ("aaaaaaaaaaaa", 0.5),
        ("222222222222", -1.0),
    ]
    assert parse_results(payload, 2) == [("111111111111", 1.0), ("bbbbbbbbbbbb", 0.8)]
    assert parse_results(payload, 0) == []
    warned = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    for dropped in ("'../etc'", "cccccccccccc", "dddddddddddd", "eeeeeeeeeeee", "ffffffffffff", "'not an object'"):
        assert any(dropped in line for line in warned), dropped


def test_a_huge_or_hostile_id_is_logged_short_and_escaped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    hostile = "x\nFAKE LOG LINE " + "y" * 10_000
    assert parse_results({"results": [{"id": hostile, "score": 1.0}]}, 5) == []
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    message = record.getMessage()
    assert "\n" not in message and len(message) < 200 and "FAKE LOG LINE" in message


@pytest.mark.parametrize("payload", [None, [], "results", {"results": None}, {"results": {}}, {"hits": []}])
def test_an_answer_without_a_results_list_is_a_backend_error(payload: Any) -> None:
    with pytest.raises(VectorBackendError):
        parse_results(payload, 5)
    assert issubclass(VectorBackendError, ReverieError)


def test_embeddings_keep_requested_well_formed_vectors_only(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    payload = {
        "embeddings": {
            "aaaaaaaaaaaa": [1, 0.5, 0.0],
            "bbbbbbbbbbbb": [1.0, 2.0],  # wrong dimension
            "cccccccccccc": [1.0, "2", 3.0],
            "dddddddddddd": [1.0, math.nan, 3.0],
            "eeeeeeeeeeee": [1.0, 2.0, 3.0],  # not requested
            "ffffffffffff": "1,2,3",
        }
    }
    wanted = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd", "ffffffffffff"]
    got = parse_embeddings(payload, wanted, 3)
    assert list(got) == ["aaaaaaaaaaaa"]
    assert got["aaaaaaaaaaaa"].dtype == np.float32 and got["aaaaaaaaaaaa"].tolist() == [1.0, 0.5, 0.0]
    assert len([r for r in caplog.records if r.name == LOGGER]) == 5
    with pytest.raises(VectorBackendError):
        parse_embeddings({"embeddings": []}, wanted, 3)


def test_a_flood_of_malformed_results_logs_a_bounded_number_of_warnings(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    flood: list[Any] = [{"id": f"BAD{n}", "score": 0.5} for n in range(10_000)]
    assert parse_results({"results": [*flood, {"id": "aaaaaaaaaaaa", "score": 0.5}]}, 5) == [("aaaaaaaaaaaa", 0.5)]
    records = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(records) == 21 and "9980 more" in records[-1]
