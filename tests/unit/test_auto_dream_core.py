"""The auto-dream's pure rules (``reverie.core.auto_dream``): the allowlist, the gates, how a dream's saves are
attributed, and the text its tool results go back in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reverie.core.auto_dream import (
    DREAM_SOURCE,
    DREAM_TAG,
    DREAM_TOOLS,
    SELF_CONSOLIDATE,
    CallResult,
    clip,
    dream_arguments,
    opt_in_gate,
    permitted,
    refusal,
    render_tools,
    results_message,
    session_gate,
    time_gate,
)
from reverie.tools.specs import SPECS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_allowlist_names_real_memory_tools_only() -> None:
    names = {spec.name for spec in SPECS}
    assert names >= DREAM_TOOLS
    # Left out on purpose: working memory (live sessions' scratch) and memory_query (an LLM call of its own).
    # Tools added later are outside the allowlist until it names them.
    assert not DREAM_TOOLS & {
        "save_to_working_memory",
        "get_from_working_memory",
        "search_working_memory",
        "memory_query",
    }
    assert {n for n in names if n.startswith(("kv_", "knowledge_", "memory_semantic_"))} <= DREAM_TOOLS


@pytest.mark.parametrize("name", ["run_shell", "save_to_working_memory", "memory_query", "", "SEARCH_MEMORY", None, 3])
def test_anything_outside_the_allowlist_is_not_permitted(name: object) -> None:
    assert not permitted(name, self_consolidation=True)
    assert refusal(name).startswith("Error: tool ") and refusal(name).endswith(" is not available during a dream")


def test_self_consolidation_needs_the_agents_own_switch() -> None:
    assert not permitted(SELF_CONSOLIDATE, self_consolidation=False)
    assert permitted(SELF_CONSOLIDATE, self_consolidation=True)
    assert permitted("search_memory", self_consolidation=False)


def test_a_refusal_quotes_a_long_name_bounded() -> None:
    assert len(refusal("x" * 10_000)) < 200


def test_a_dreams_save_is_an_inference_tagged_as_the_dreams() -> None:
    args = {"content": "c", "source": "user", "tags": ["work"]}
    assert dream_arguments("save_memory", args) == {"content": "c", "source": DREAM_SOURCE, "tags": ["work", DREAM_TAG]}
    assert args["source"] == "user"  # the model's arguments are not mutated
    assert dream_arguments("save_memory", {"content": "c"}) == {
        "content": "c",
        "source": "inferred",
        "tags": [DREAM_TAG],
    }
    # Malformed arguments pass unchanged, for the tool's own validation to refuse.
    assert dream_arguments("save_memory", {"content": "c", "tags": "x"})["tags"] == "x"  # type: ignore[index]
    assert dream_arguments("save_memory", ["not", "an", "object"]) == ["not", "an", "object"]
    assert dream_arguments("kv_set", {"key": "k", "value": 1, "source": "user"}) == {
        "key": "k",
        "value": 1,
        "source": "user",
    }


def test_the_gates_name_the_setting_that_closes_them() -> None:
    assert "[dream] auto_dream_enabled" in (opt_in_gate(enabled=False, agent_opted_in=True, agent_id="a") or "")
    assert "[agents.a] auto_dream" in (opt_in_gate(enabled=True, agent_opted_in=False, agent_id="a") or "")
    assert opt_in_gate(enabled=True, agent_opted_in=True, agent_id="a") is None
    assert time_gate(None, T0, 24) is None
    assert time_gate(T0, T0 + timedelta(hours=24), 24) is None
    assert "auto_dream_min_hours" in (time_gate(T0, T0 + timedelta(hours=23), 24) or "")
    assert session_gate(5, 5) is None and session_gate(0, 0) is None
    assert (session_gate(4, 5) or "").startswith("4 of 5 sessions")


def test_results_are_cut_and_reported_in_call_order() -> None:
    assert clip("abc", 3) == "abc"
    assert clip("abcdef", 3) == "abc\n… [3 more characters cut]"
    text = results_message(
        2,
        [CallResult("search_memory", "x" * 50, False), CallResult("run_shell", "Error: no", True)],
        turns_left=4,
        limit=10,
    )
    assert "[1] search_memory -> ok\nxxxxxxxxxx\n… [40 more characters cut]" in text
    assert "[2] run_shell -> error\nError: no" in text and "Turns left: 4." in text
    assert "(you made no tool calls)" in results_message(1, [], turns_left=0, limit=10)


def test_tools_render_with_their_schema() -> None:
    rendered = render_tools([("kv_get", "Read one value.", {"type": "object", "required": ["key"]})])
    assert rendered == '### kv_get\nRead one value.\narguments (JSON Schema): {"required":["key"],"type":"object"}'
    assert render_tools([]) == "(no tools)"
