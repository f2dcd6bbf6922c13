"""core.validate: every function returns the clean value or raises ValidationError naming the field."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from reverie import Scope, Tier, ValidationError
from reverie.core import validate
from reverie.core.validate import (
    MAX_CATEGORY_CHARS,
    MAX_ID_CHARS,
    MAX_METADATA_BYTES,
    MAX_TAG_CHARS,
    MAX_TAGS,
)

LONE_SURROGATE = "\ud800"


def _assert_field(exc: pytest.ExceptionInfo[ValidationError], field: str) -> None:
    assert isinstance(exc.value, ValueError)
    assert exc.value.field == field
    assert str(exc.value)


# --- content -------------------------------------------------------------------------------------


def test_content_returns_text_exactly_as_given() -> None:
    text = "  The user lives in Lisbon.\n"
    assert validate.content(text, max_chars=100) == text


def test_content_accepts_exactly_max_chars() -> None:
    assert validate.content("x" * 10, max_chars=10) == "x" * 10


def test_content_accepts_non_ascii() -> None:
    assert validate.content("東京 🌸 café", max_chars=100) == "東京 🌸 café"


@pytest.mark.parametrize("value", ["", " ", "\n\t  \r\n", "\u3000"])
def test_content_refuses_empty_or_whitespace(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.content(value, max_chars=100)
    _assert_field(exc, "content")
    assert "empty" in str(exc.value)


def test_content_refuses_too_long() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.content("x" * 11, max_chars=10)
    _assert_field(exc, "content")


@pytest.mark.parametrize("value", [None, 42, b"bytes", ["a"], {"content": "x"}])
def test_content_refuses_non_string(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.content(value, max_chars=100)
    _assert_field(exc, "content")


@pytest.mark.parametrize("value", [LONE_SURROGATE, f"ok {LONE_SURROGATE} text", "\udfff"])
def test_content_refuses_lone_surrogate(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.content(value, max_chars=100)
    _assert_field(exc, "content")


# --- category ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["general", "user-preferences/timezone", "a/b/c", "snake_case", "x1/2y/-_", "0", "anti-patterns/file-operations"],
)
def test_category_accepts_relative_paths(value: str) -> None:
    assert validate.category(value, default="general") == value


def test_category_default_when_none() -> None:
    assert validate.category(None, default="fallback") == "fallback"


def test_category_accepts_exactly_max_chars() -> None:
    value = "a" * MAX_CATEGORY_CHARS
    assert validate.category(value, default="general") == value


def test_category_refuses_too_long() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.category("a" * (MAX_CATEGORY_CHARS + 1), default="general")
    _assert_field(exc, "category")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "/leading",
        "trailing/",
        "/",
        "a//b",
        "..",
        "a/../b",
        "../a",
        "./a",
        "a/.",
        "Upper",
        "user-Preferences",
        "has space",
        "tab\there",
        "dot.ted",
        "back\\slash",
        "é",
        "a/b/",
        "new\nline",
    ],
)
def test_category_refuses_bad_shapes(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.category(value, default="general")
    _assert_field(exc, "category")


@pytest.mark.parametrize("value", ["general\n", "user-preferences/timezone\n"])
def test_category_refuses_trailing_newline(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.category(value, default="general")
    _assert_field(exc, "category")


@pytest.mark.parametrize("value", [5, 1.5, b"general", ["general"], ("a",)])
def test_category_refuses_non_string(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.category(value, default="general")
    _assert_field(exc, "category")


# --- category_prefix -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, ""])
def test_category_prefix_none_means_no_filter(value: object) -> None:
    assert validate.category_prefix(value) is None


@pytest.mark.parametrize(
    ("value", "clean"),
    [
        ("user-preferences", "user-preferences"),
        ("user-preferences/", "user-preferences"),
        ("a/b", "a/b"),
        ("a/b/", "a/b"),
    ],
)
def test_category_prefix_accepts_a_trailing_slash(value: str, clean: str) -> None:
    assert validate.category_prefix(value) == clean


@pytest.mark.parametrize("value", ["/", "a//", "/a", "a//b", "A/", "..", "../", "a b/", 7])
def test_category_prefix_refuses_bad_shapes(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.category_prefix(value)
    _assert_field(exc, "category")


# --- tags ----------------------------------------------------------------------------------------


def test_tags_none_is_empty() -> None:
    assert validate.tags(None) == ()


def test_tags_stripped_deduplicated_in_order() -> None:
    assert validate.tags([" b ", "a", "b", "c", " a"]) == ("b", "a", "c")


def test_tags_drop_empty_strings() -> None:
    assert validate.tags(["", "  ", "x", "\t"]) == ("x",)


def test_tags_keep_case_and_inner_spaces() -> None:
    assert validate.tags(["Time Zone", "time zone"]) == ("Time Zone", "time zone")


def test_tags_accept_any_iterable_of_strings() -> None:
    def gen() -> Iterator[str]:
        yield "x"
        yield "y"

    assert validate.tags(("p", "q")) == ("p", "q")
    assert validate.tags(gen()) == ("x", "y")


def test_tags_returns_a_tuple() -> None:
    assert isinstance(validate.tags(["a"]), tuple)


@pytest.mark.parametrize("value", ["a,b", "single", "", 5, 1.0, object()])
def test_tags_refuse_bare_string_or_non_iterable(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags(value)
    _assert_field(exc, "tags")


@pytest.mark.parametrize("value", [["a", 1], [None], ["ok", b"bytes"], [["nested"]]])
def test_tags_refuse_non_string_element(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags(value)
    _assert_field(exc, "tags")


def test_tags_accept_exactly_max_tags() -> None:
    values = [f"t{i}" for i in range(MAX_TAGS)]
    assert validate.tags(values) == tuple(values)


def test_tags_refuse_too_many() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags([f"t{i}" for i in range(MAX_TAGS + 1)])
    _assert_field(exc, "tags")


def test_tags_limit_counts_distinct_tags() -> None:
    assert validate.tags(["same"] * (MAX_TAGS * 2)) == ("same",)


def test_tags_accept_exactly_max_chars_after_stripping() -> None:
    tag = "x" * MAX_TAG_CHARS
    assert validate.tags([f"  {tag}  "]) == (tag,)


def test_tags_refuse_too_long() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags(["x" * (MAX_TAG_CHARS + 1)])
    _assert_field(exc, "tags")


@pytest.mark.parametrize("tag", ["a\tb", "a\nb", "a\x00b", "a\x7fb"])
def test_tags_refuse_inner_control_characters(tag: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags([tag])
    _assert_field(exc, "tags")


def test_tags_refuse_lone_surrogate() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tags(["ok", f"bad{LONE_SURROGATE}"])
    _assert_field(exc, "tags")


# --- unit_interval -------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "number"), [(0, 0.0), (1, 1.0), (0.0, 0.0), (1.0, 1.0), (0.25, 0.25), (-0.0, 0.0)])
def test_unit_interval_accepts_numbers_in_range(value: float, number: float) -> None:
    result = validate.unit_interval(value, name="importance")
    assert result == number
    assert type(result) is float


@pytest.mark.parametrize("value", [True, False])
def test_unit_interval_refuses_bool(value: bool) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.unit_interval(value, name="importance")
    _assert_field(exc, "importance")


@pytest.mark.parametrize("value", [math.nan, -0.001, 1.0001, -1, 2, math.inf, -math.inf])
def test_unit_interval_refuses_out_of_range_and_nan(value: float) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.unit_interval(value, name="confidence")
    _assert_field(exc, "confidence")


@pytest.mark.parametrize("value", ["0.5", "", None, [0.5], Decimal("0.5"), Fraction(1, 2), 0.5j])
def test_unit_interval_refuses_non_numbers(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.unit_interval(value, name="retention")
    _assert_field(exc, "retention")


# --- tier ----------------------------------------------------------------------------------------


def test_tier_default_when_none() -> None:
    assert validate.tier(None, default=Tier.SEMANTIC) is Tier.SEMANTIC


@pytest.mark.parametrize("tier", list(Tier))
def test_tier_accepts_member_and_value(tier: Tier) -> None:
    assert validate.tier(tier, default=Tier.EPISODIC) is tier
    assert validate.tier(tier.value, default=Tier.EPISODIC) is tier


@pytest.mark.parametrize("value", ["", "EPISODIC", "Semantic", "long-term", "episodic ", 1, 0.5])
def test_tier_refuses_unknown(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.tier(value, default=Tier.EPISODIC)
    _assert_field(exc, "tier")
    assert "episodic" in str(exc.value)


# --- identifier ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["agent-1", "user@example.com", "a b", "Ünïcødé", "x", "a" * MAX_ID_CHARS])
def test_identifier_accepts_printable_ids(value: str) -> None:
    assert validate.identifier(value, name="user_id") == value


@pytest.mark.parametrize(
    "value",
    [
        None,
        5,
        b"bytes",
        "",
        "   ",
        " leading",
        "trailing ",
        "\tab",
        "a" * (MAX_ID_CHARS + 1),
        "new\nline",
        "nul\x00",
        "del\x7f",
        f"sur{LONE_SURROGATE}",
    ],
)
def test_identifier_refuses(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.identifier(value, name="session_id")
    _assert_field(exc, "session_id")


@pytest.mark.parametrize("value", ["a\x85b", "a\x9fb"])
def test_identifier_refuses_c1_control_characters(value: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.identifier(value, name="agent_id")
    _assert_field(exc, "agent_id")


# --- scope ---------------------------------------------------------------------------------------


def test_scope_none_is_default_scope() -> None:
    assert validate.scope(None) == Scope()
    assert validate.scope(None).agent_id == "default"


def test_scope_returns_valid_scope_unchanged() -> None:
    scope = Scope(agent_id="a", user_id="u", session_id="s")
    assert validate.scope(scope) is scope


@pytest.mark.parametrize("value", [{"agent_id": "a"}, "default", ("a", None, None), 1])
def test_scope_refuses_non_scope(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.scope(value)
    _assert_field(exc, "scope")


@pytest.mark.parametrize(
    ("scope", "field"),
    [
        (Scope(agent_id=""), "agent_id"),
        (Scope(agent_id=" a"), "agent_id"),
        (Scope(agent_id="a", user_id=""), "user_id"),
        (Scope(agent_id="a", user_id="u\n"), "user_id"),
        (Scope(agent_id="a", user_id="u", session_id="   "), "session_id"),
        (Scope(agent_id="a", session_id="x" * (MAX_ID_CHARS + 1)), "session_id"),
    ],
)
def test_scope_refuses_bad_ids_naming_the_id(scope: Scope, field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.scope(scope)
    _assert_field(exc, field)


# --- metadata ------------------------------------------------------------------------------------


def test_metadata_none_is_empty_dict() -> None:
    assert validate.metadata(None) == {}


def test_metadata_returns_json_round_tripped_copy() -> None:
    original = {"source": "user", "n": 3, "f": 0.5, "ok": True, "none": None, "nested": {"list": [1, "two"]}}
    clean = validate.metadata(original)
    assert clean == original
    assert clean is not original
    clean["nested"]["list"].append(3)
    assert original["nested"]["list"] == [1, "two"]


def test_metadata_tuples_become_lists() -> None:
    assert validate.metadata({"t": (1, 2)}) == {"t": [1, 2]}


def test_metadata_accepts_any_mapping() -> None:
    from types import MappingProxyType

    assert validate.metadata(MappingProxyType({"a": 1})) == {"a": 1}


@pytest.mark.parametrize("value", [["a"], "text", 5, [("a", 1)]])
def test_metadata_refuses_non_mapping(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.metadata(value)
    _assert_field(exc, "metadata")


@pytest.mark.parametrize("value", [{1: "x"}, {None: "x"}, {("a",): 1}, {"ok": 1, 2: "no"}])
def test_metadata_refuses_non_string_keys(value: dict[Any, Any]) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.metadata(value)
    _assert_field(exc, "metadata")


@pytest.mark.parametrize(
    "value",
    [
        {"s": {1, 2}},
        {"o": object()},
        {"b": b"bytes"},
        {"nan": math.nan},
        {"inf": math.inf},
        {"deep": {"x": [math.nan]}},
        {"sur": LONE_SURROGATE},
    ],
)
def test_metadata_refuses_non_json_values(value: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.metadata(value)
    _assert_field(exc, "metadata")


def test_metadata_refuses_too_large() -> None:
    with pytest.raises(ValidationError) as exc:
        validate.metadata({"blob": "x" * MAX_METADATA_BYTES})
    _assert_field(exc, "metadata")


def test_metadata_accepts_just_under_the_limit() -> None:
    # {"b": "..."} serialises to 9 characters around the value.
    value = {"b": "x" * (MAX_METADATA_BYTES - 9)}
    assert validate.metadata(value) == value


def test_metadata_limit_is_in_utf8_bytes() -> None:
    value = {"k": "€" * (MAX_METADATA_BYTES // 2)}  # ~32k characters, ~96k bytes
    with pytest.raises(ValidationError) as exc:
        validate.metadata(value)
    _assert_field(exc, "metadata")


# --- limit ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 20, 1000])
def test_limit_accepts_whole_numbers_in_range(value: int) -> None:
    assert validate.limit(value) == value


def test_limit_custom_maximum() -> None:
    assert validate.limit(5, maximum=5) == 5
    with pytest.raises(ValidationError) as exc:
        validate.limit(6, maximum=5)
    _assert_field(exc, "limit")


@pytest.mark.parametrize("value", [0, -1, 1001, True, False, 5.0, "5", None, 2**70])
def test_limit_refuses(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.limit(value)
    _assert_field(exc, "limit")


def test_nul_characters_are_refused_in_json_values_on_every_backend() -> None:
    # PostgreSQL's jsonb cannot hold NUL; SQLite could, but the two backends must accept the same inputs.
    with pytest.raises(ValidationError, match="NUL"):
        validate.metadata({"note": "a\x00b"})
    with pytest.raises(ValidationError, match="NUL"):
        validate.metadata({"k\x00": 1})
    with pytest.raises(ValidationError, match="NUL"):
        validate.metadata({"deep": [{"x": ["\x00"]}]})
    assert validate.metadata({"text": "a literal \\u0000 is fine"}) == {"text": "a literal \\u0000 is fine"}


# -- observed_at and subject time ------------------------------------------------------------------------
NOW = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def test_observed_at_defaults_to_now_and_is_returned_in_utc() -> None:
    assert validate.observed_at(None, now=NOW) == NOW
    lisbon_summer = timezone(timedelta(hours=1))
    got = validate.observed_at(datetime(2023, 5, 8, 14, 56, tzinfo=lisbon_summer), now=NOW)
    assert got == datetime(2023, 5, 8, 13, 56, tzinfo=UTC) and got.tzinfo is UTC


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2023-05-08T13:56:00+00:00", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T13:56:00Z", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("2023-05-08T15:56:00.5+02:00", datetime(2023, 5, 8, 13, 56, 0, 500_000, tzinfo=UTC)),
    ],
)
def test_observed_at_reads_iso_8601_with_an_offset(text: str, expected: datetime) -> None:
    assert validate.observed_at(text, now=NOW) == expected


@pytest.mark.parametrize("value", [datetime(2023, 5, 8, 13, 56), "2023-05-08T13:56:00", "2023-05-08"])
def test_observed_at_refuses_a_naive_time(value: object) -> None:
    with pytest.raises(ValidationError, match="no timezone") as exc:
        validate.observed_at(value, now=NOW)
    _assert_field(exc, "observed_at")


def test_observed_at_refuses_the_future_beyond_the_tolerance_and_clamps_within_it() -> None:
    with pytest.raises(ValidationError, match="in the future") as exc:
        validate.observed_at(NOW + validate.OBSERVED_AT_TOLERANCE + timedelta(seconds=1), now=NOW)
    _assert_field(exc, "observed_at")
    assert validate.observed_at(NOW + validate.OBSERVED_AT_TOLERANCE, now=NOW) == NOW  # clock skew: now


@pytest.mark.parametrize(
    "value", ["", "yesterday", "2023-13-01T00:00:00Z", 1683554160, 1.5, date(2023, 5, 8), ["2023"], True]
)
def test_observed_at_refuses_what_is_not_a_time(value: object) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.observed_at(value, now=NOW)
    _assert_field(exc, "observed_at")


def test_observed_at_refuses_a_time_out_of_range_in_utc() -> None:
    with pytest.raises(ValidationError, match="out of range") as exc:
        validate.observed_at("0001-01-01T00:00:00+05:00", now=NOW)
    _assert_field(exc, "observed_at")


@pytest.mark.parametrize(
    "metadata, field",
    [
        ({"subjectTime": "last summer"}, "metadata.subjectTime"),
        ({"subjectTime": 2019}, "metadata.subjectTime"),
        ({"subjectTimeStart": "2019-02-30"}, "metadata.subjectTimeStart"),
        ({"subjectTimeEnd": "2019-06-14 10:00"}, "metadata.subjectTimeEnd"),
        ({"subjectTimeStart": "2021", "subjectTimeEnd": "2020-12"}, "metadata.subjectTimeStart"),
    ],
)
def test_subject_time_refuses_malformed_values_naming_the_key(metadata: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        validate.subject_time(metadata)
    _assert_field(exc, field)


def test_subject_time_accepts_the_forms_and_other_metadata() -> None:
    validate.subject_time({})
    validate.subject_time({"note": "last summer"})
    validate.subject_time(
        {"subjectTime": "2023-05-08T13:56:00+00:00", "subjectTimeStart": "2019", "subjectTimeEnd": "2019-06"}
    )
