"""The JSON object an LLM was asked for, found in the text it answered. Pure: no I/O, no clock.

Models wrap the object in reasoning and prose: ``<think>…</think>`` first, then "Here is the JSON:", a code
fence, a closing remark. ``extract_json_object`` finds the object itself:

1. Leading reasoning is dropped: each leading ``<think>…</think>`` block; an unclosed leading ``<think>``
   (the model stopped while still reasoning, so there is no answer: an error); and everything up to an
   orphan ``</think>`` (servers whose chat template opens the block in the prompt show only its end),
   unless that tag sits inside a ``{…}`` span (closed or not), where it may be content and cutting there
   could leave a part of an object. Only *leading* reasoning is dropped, so ``<think>`` inside the
   object's strings stays content.
2. The rest is scanned for top-level ``{…}`` spans by string-aware brace matching: braces inside JSON
   strings (and escaped quotes) do not count. Prose and code fences are text the scanner walks past.
3. The first span that parses as a JSON object is the answer. A span that does not parse (prose such as
   "{name}") is skipped whole, its inner braces untried, so a broken object never yields one of its parts.
   Choice: when several objects parse, the *first* wins. Models put the answer first and follow it with
   remarks; taking the last or the largest would make a trailing example win, and a schema check after
   extraction catches a first object that is not the answer.
4. A ``{`` that never closes means the answer was cut off: an error, never a partial object.

Invariant: the result is exactly the object of one complete span, or ``JSONAnswerError`` is raised.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

Reason = Literal["empty", "unfinished_reasoning", "no_object", "truncated", "invalid"]

_THINK_OPEN = re.compile(r"\s*<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
# A complete JSON string, a brace, or a lone quote (a string the text ends inside). The two string
# alternatives are disjoint, so matching stays linear however long the text.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}"]', re.DOTALL)


class JSONAnswerError(ValueError):
    """The answer holds no usable JSON object. ``reason`` says why, for callers that branch on it:
    ``empty``, ``unfinished_reasoning``, ``no_object``, ``truncated`` or ``invalid``."""

    def __init__(self, message: str, reason: Reason) -> None:
        super().__init__(message)
        self.reason: Reason = reason


def extract_json_object(answer: str) -> dict[str, Any]:
    """The JSON object in ``answer`` (see the module docstring for the rules). Raises ``JSONAnswerError``."""
    text = strip_reasoning(answer)
    if not text.strip():
        raise JSONAnswerError("the answer is empty" + (" after its reasoning" if answer.strip() else ""), "empty")
    first_error: str | None = None
    position = text.find("{")
    while position != -1:
        end = _span_end(text, position)
        if end is None:
            raise JSONAnswerError(
                f"the JSON object starting at character {position} never closes (the answer was cut off)",
                "truncated",
            )
        parsed, error = _parse(text[position:end])
        if parsed is not None:
            return parsed
        first_error = first_error or f"the {{…}} at character {position} is not valid JSON: {error}"
        position = text.find("{", end)
    if first_error is not None:
        raise JSONAnswerError(first_error, "invalid")
    raise JSONAnswerError("the answer contains no JSON object", "no_object")


def strip_reasoning(answer: str) -> str:
    """``answer`` without its leading reasoning (rule 1). Raises ``JSONAnswerError`` when the answer ends
    inside a leading ``<think>`` block."""
    text = answer
    while opened := _THINK_OPEN.match(text):
        closed = _THINK_CLOSE.search(text, opened.end())
        if closed is None:
            raise JSONAnswerError(
                "the answer ends inside a <think> block: the model stopped before answering", "unfinished_reasoning"
            )
        text = text[closed.end() :]
    orphan = _THINK_CLOSE.search(text)
    if orphan is not None and not _inside_a_span(text, orphan.start()):
        text = text[orphan.end() :]
    return text


def excerpt(text: str, limit: int = 200) -> str:
    """``text`` with its whitespace collapsed, cut to about ``limit`` characters for an error message. A
    long text keeps its head and its tail (where a cut-off answer shows that it was cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    tail = limit // 3
    return f"{flat[: limit - tail - 3]} … {flat[-tail:]}"


def _span_end(text: str, start: int) -> int | None:
    """The index just past the brace closing the ``{`` at ``start``; None when the text ends first."""
    depth = 0
    for token in _TOKEN.finditer(text, start):
        mark = token.group()
        if mark == "{":
            depth += 1
        elif mark == "}":
            depth -= 1
            if depth == 0:
                return token.end()
        elif mark == '"':  # a lone quote: the text ends inside a string
            return None
    return None


def _inside_a_span(text: str, index: int) -> bool:
    """Whether ``index`` lies inside a top-level ``{…}`` span of ``text``: a complete one, an invalid one, or
    one the text ends inside. Cutting there could hand the scanner a part of an object."""
    position = text.find("{")
    while position != -1 and position < index:
        end = _span_end(text, position)
        if end is None or index < end:
            return True
        position = text.find("{", end)
    return False


def _parse(span: str) -> tuple[dict[str, Any] | None, str]:
    """The span as a JSON object, or None and why not. Strict JSON: NaN and Infinity are refused."""
    try:
        value = json.loads(span, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        return None, str(exc) if isinstance(exc, ValueError) else "nested too deeply"
    return (value, "") if isinstance(value, dict) else (None, "not an object")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
