"""Outermost-JSON extraction from LLM answers: reasoning, prose, fences, truncation, never a partial object."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reverie.core.jsonanswer import JSONAnswerError, excerpt, extract_json_object, strip_reasoning

OBJECT = {"facts": [{"text": "The user lives in Lisbon", "confidence": 0.9}], "note": 'a {brace} and "quote"'}
DUMPED = json.dumps(OBJECT)


@pytest.mark.parametrize(
    "answer",
    [
        DUMPED,
        f"  {DUMPED}\n",
        f"Here is the JSON you asked for:\n{DUMPED}\nLet me know if you need anything else.",
        f"```json\n{DUMPED}\n```",
        f"Sure!\n```\n{DUMPED}\n```\nDone.",
        f'<think>The user wants JSON. Maybe {{"facts": []}}? No.</think>\n{DUMPED}',
        f"<THINK>shouting</THINK>{DUMPED}",
        f"<think>one</think>\n<think>two {{</think>\nAnswer: {DUMPED}",
        f"reasoning with {{braces}} but the template opened the block</think>\n\n{DUMPED}",
        f"<think>\nplan\n</think>\n\nHere you go:\n```json\n{DUMPED}\n```",
        json.dumps(OBJECT, indent=2),
    ],
)
def test_extracts_the_object_from_many_shapes(answer: str) -> None:
    assert extract_json_object(answer) == OBJECT


def test_braces_and_quotes_inside_strings_do_not_count() -> None:
    tricky = {"a": "}}}", "b": "{{{", "c": 'say "}" then \\ and \\"', "d": {"e": "}"}}
    assert extract_json_object(f"prefix {json.dumps(tricky)} suffix }}}}") == tricky


def test_think_inside_the_object_is_content() -> None:
    value = {"content": "models write <think>...</think> before answering"}
    assert extract_json_object(json.dumps(value)) == value
    assert extract_json_object("<think>hmm</think>" + json.dumps(value)) == value


def test_the_first_of_several_objects_wins() -> None:
    assert extract_json_object('{"answer": 1} and an example: {"answer": 2}') == {"answer": 1}


def test_a_complete_first_object_wins_over_a_cut_second_one() -> None:
    assert extract_json_object('{"a": 1} and then {"b": {"c": 2}') == {"a": 1}


def test_prose_in_braces_before_the_object_is_skipped_whole() -> None:
    assert extract_json_object('I will fill in {name} and {place}: {"name": "Ana"}') == {"name": "Ana"}


def test_a_broken_object_never_yields_one_of_its_parts() -> None:
    # The outer span is invalid (a trailing comma); its valid inner object must not be returned.
    with pytest.raises(JSONAnswerError) as caught:
        extract_json_object('{"inner": {"a": 1}, }')
    assert caught.value.reason == "invalid"
    assert "not valid JSON" in str(caught.value)


@pytest.mark.parametrize(
    "answer",
    [
        '{"facts": [{"text": "a"}, {"text": "b"',
        '{"facts": [{"text": "a"}], "note": "cut in the mid',
        'Here it is: ```json\n{"a": {"b": 1}',
        '<think>ok</think>{"a": "\\"',
    ],
)
def test_truncated_json_is_an_error_never_a_partial_object(answer: str) -> None:
    with pytest.raises(JSONAnswerError) as caught:
        extract_json_object(answer)
    assert caught.value.reason == "truncated"
    assert "cut off" in str(caught.value)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("<think>only reasoning</think>  ", "empty"),
        ('<think>still thinking when max_tokens ran out {"a": 1}', "unfinished_reasoning"),
        ("I cannot help with that.", "no_object"),
        ("[1, 2, 3]", "no_object"),
        ("{'single': 'quotes'}", "invalid"),
        ('{"a": NaN}', "invalid"),
        ('{"a": Infinity}', "invalid"),
        ("{not json at all}", "invalid"),
    ],
)
def test_unusable_answers_say_why(answer: str, reason: str) -> None:
    with pytest.raises(JSONAnswerError) as caught:
        extract_json_object(answer)
    assert caught.value.reason == reason
    assert str(caught.value)


def test_json_answer_error_is_a_value_error() -> None:
    assert issubclass(JSONAnswerError, ValueError)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(JSONAnswerError) as caught:
        extract_json_object('{"a": ' + deep + "}")
    assert caught.value.reason == "invalid"


def test_strip_reasoning() -> None:
    assert strip_reasoning("<think>x</think> answer") == " answer"
    assert strip_reasoning("no reasoning") == "no reasoning"
    assert strip_reasoning("the template opened it</think>answer") == "answer"
    # An orphan close inside a complete object is content, not the end of reasoning.
    assert strip_reasoning('{"tag": "</think>", "then": {}}') == '{"tag": "</think>", "then": {}}'
    assert strip_reasoning('I was {unsure} </think>{"a": 1}') == '{"a": 1}'
    # Inside a broken or cut-off span the tag is left alone: cutting there could expose a part of an object.
    assert strip_reasoning('{"x": "</think>", "y": {"z": 1},}') == '{"x": "</think>", "y": {"z": 1},}'
    assert strip_reasoning('{"x": "</think>", "y": {"z": 1}') == '{"x": "</think>", "y": {"z": 1}'


def test_excerpt_keeps_head_and_tail() -> None:
    assert excerpt("  a\n\n b  ") == "a b"
    long = "head " + "x" * 1000 + " tail"
    cut = excerpt(long, 60)
    assert cut.startswith("head") and cut.endswith("tail")
    assert len(cut) <= 60


# -- properties ---------------------------------------------------------------------------------------------

# Strings that look like the syntax the extractor handles: tags, braces, quotes, backslashes, fences.
tricky_text = st.lists(
    st.sampled_from(["<think>", "</think>", "{", "}", '"', "\\", "```", "\n"]) | st.text(max_size=3), max_size=6
).map("".join)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | tricky_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=10) | tricky_text, json_values, max_size=5)
# Prose without braces (and without angle brackets, so it cannot spell a reasoning tag).
prose = st.text(alphabet=st.characters(blacklist_characters="{}<>"), max_size=80)


@given(value=json_objects, before=prose, after=prose, indent=st.sampled_from([None, 2]))
def test_any_object_in_prose_round_trips(value: dict[str, Any], before: str, after: str, indent: int | None) -> None:
    assert extract_json_object(before + json.dumps(value, indent=indent) + after) == value


@given(value=json_objects, thinking=prose, after=prose)
def test_any_object_after_reasoning_round_trips(value: dict[str, Any], thinking: str, after: str) -> None:
    assert extract_json_object(f"<think>{thinking}</think>{json.dumps(value)}{after}") == value


@given(value=json_objects.filter(lambda v: len(json.dumps(v)) > 2), cut=st.integers(min_value=1))
def test_any_cut_of_an_object_is_never_a_partial_object(value: dict[str, Any], cut: int) -> None:
    dumped = json.dumps(value)
    prefix = dumped[: cut % (len(dumped) - 1) + 1]  # a proper, non-empty prefix
    # The opening brace closes only at the last character, so every proper prefix is cut off.
    with pytest.raises(JSONAnswerError) as caught:
        extract_json_object(prefix)
    assert caught.value.reason == "truncated"
