"""The one JSON-shape check every write of caller JSON goes through (``core.validate.json_shape`` and the
functions built on it): at most 64 levels of nesting, checked without recursion, so a value nested 100,000
deep is a ``ValidationError`` naming the field, never a ``RecursionError``; wide values are fine."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reverie import ValidationError
from reverie.core import validate
from reverie.skills.activity_logs import tool_arguments

LIMIT = 64  # the documented limit (docs/concepts.md); the constant must say the same


def nested(levels: int, leaf: Any = "x") -> Any:
    """``levels`` arrays, one inside the next, around ``leaf``: ``[[…["x"]…]]``."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def nested_objects(levels: int) -> dict[str, Any]:
    """``levels`` objects, one inside the next: ``{"a": {"a": … {} …}}``."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_the_limit_is_one_constant_shared_by_kv_and_the_graph() -> None:
    from reverie.kv import service as kv

    assert validate.MAX_JSON_DEPTH == LIMIT
    assert kv.MAX_DEPTH is validate.MAX_JSON_DEPTH


@pytest.mark.parametrize("make", [nested, nested_objects], ids=["arrays", "objects"])
def test_metadata_nested_64_levels_is_accepted(make: Any) -> None:
    value = {"k": make(LIMIT - 1)}  # the metadata object is the first level
    assert validate.metadata(value) == value


@pytest.mark.parametrize("make", [nested, nested_objects], ids=["arrays", "objects"])
def test_metadata_nested_65_levels_is_refused_naming_the_field(make: Any) -> None:
    with pytest.raises(ValidationError, match="metadata is nested deeper than 64 levels") as exc:
        validate.metadata({"k": make(LIMIT)})
    assert exc.value.field == "metadata"


@pytest.mark.parametrize("levels", [300, 5_000, 100_000])
def test_absurd_nesting_is_a_validation_error_not_a_recursion_error(levels: int) -> None:
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        validate.metadata({"k": nested(levels)})
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        validate.metadata(nested_objects(levels))
    with pytest.raises(ValidationError, match="arguments is nested deeper") as exc:
        tool_arguments({"k": nested(levels)})
    assert exc.value.field == "arguments"


def test_has_nul_walks_any_depth_without_recursion() -> None:
    assert validate.has_nul(nested(100_000, "a\x00b"))
    assert not validate.has_nul(nested(100_000, "ab"))
    assert validate.has_nul(nested(50_000, {"k\x00": 1}))


def test_json_shape_names_the_field_it_is_given() -> None:
    with pytest.raises(ValidationError, match="tool_calls is nested deeper than 64 levels") as exc:
        validate.json_shape([nested(LIMIT)], field="tool_calls")
    assert exc.value.field == "tool_calls"
    validate.json_shape(nested(LIMIT), field="value")  # 64 levels: fine
    validate.json_shape("scalar at the top", field="value")


def test_a_value_that_contains_itself_is_refused_not_looped_on() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValidationError, match="nested deeper"):
        validate.metadata(loop)
    wide_loop: list[Any] = []
    wide_loop.extend([wide_loop, wide_loop, wide_loop])
    with pytest.raises(ValidationError, match="nested deeper"):
        validate.json_shape(wide_loop, field="value")


def test_wide_values_are_fine() -> None:
    wide = {f"k{i}": i for i in range(3_000)}
    assert validate.metadata(wide) == wide
    rows = {"rows": [{"n": i, "tags": ["a", "b"], "ok": True, "none": None, "f": 0.5} for i in range(500)]}
    assert validate.metadata(rows) == rows
    shared = [1, 2, 3]
    assert validate.metadata({"a": shared, "b": shared}) == {"a": [1, 2, 3], "b": [1, 2, 3]}  # shared, no cycle


@pytest.mark.parametrize(
    "value, problem",
    [
        (nested(40, math.nan), "NaN or an infinity"),
        (nested(40, {"x": math.inf}), "NaN or an infinity"),
        (nested(40, "a\x00b"), "NUL"),
        (nested(40, {"a\x00": 1}), "NUL"),
        (nested(40, "\ud800"), "lone surrogate"),
        (nested(40, {1: "x"}), "non-string object key"),
        (nested(40, {1, 2}), "not JSON"),
        (nested(40, b"bytes"), "not JSON"),
        (nested(40, object()), "not JSON"),
    ],
    ids=["nan", "inf", "nul", "nul-key", "surrogate", "int-key", "set", "bytes", "object"],
)
def test_deep_inside_every_problem_is_found_and_named(value: Any, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem) as exc:
        validate.metadata({"k": value})
    assert exc.value.field == "metadata"


def test_any_mapping_and_tuples_at_any_level_read_back_as_json() -> None:
    from types import MappingProxyType

    value = {"m": MappingProxyType({"t": (1, (2, 3))})}
    assert validate.metadata(value) == {"m": {"t": [1, [2, 3]]}}
