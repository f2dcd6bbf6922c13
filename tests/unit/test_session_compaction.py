"""The summary text of session compaction: pure functions over turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reverie.conversation.compaction import (
    EARLIER,
    SECTION_CHARS,
    TOOLS,
    USER,
    extractive_summary,
    fit,
    llm_summary,
    summary_sections,
    tool_call_lines,
    transcript,
)
from reverie.types import TurnRecord

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def turn(index: int, role: str = "user", content: str = "", **fields: object) -> TurnRecord:
    return TurnRecord("a", "s", index, role, content, T0 + timedelta(minutes=index), **fields)  # type: ignore[arg-type]


def test_user_turns_give_their_first_sentence_and_assistant_turns_their_key_facts() -> None:
    turns = [
        turn(1, "user", "My name is Dana!\nI live in Porto. Anything else?"),
        turn(2, "assistant", "Nice to meet you. Porto is lovely. The flight costs 120 EUR. See ~/trips/porto.md too."),
        turn(3, "system", "You are helpful."),
    ]
    summary = extractive_summary(turns)
    lines = summary.splitlines()
    assert lines[0] == "Summary of turns 1–3, 2026-01-01 09:01 to 2026-01-01 09:03 UTC (extractive):"
    assert "- (turn 1) My name is Dana!" in lines
    assert "- (turn 2) Nice to meet you. The flight costs 120 EUR. See ~/trips/porto.md too." in lines
    assert "helpful" not in summary  # system turns are instructions, not conversation


def test_tool_calls_keep_name_id_arguments_and_the_start_of_the_result() -> None:
    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "tea"}'}},
        {"name": "flat", "arguments": {"b": 2, "a": 1}},
    ]
    turns = [turn(1, "assistant", "", tool_calls=calls), turn(2, "tool", "Found 3 teas.\nMore.", tool_call_id="call_1")]
    assert tool_call_lines(turns) == [
        '- (turn 1) search [call_1] {"q": "tea"} → Found 3 teas. More.',
        '- (turn 1) flat [?] {"a": 1, "b": 2}',
    ]
    assert summary_sections(extractive_summary(turns))[TOOLS] == tool_call_lines(turns)


def test_fit_shortens_lines_before_it_drops_the_middle() -> None:
    short = [f"- line {i}" for i in range(5)]
    assert fit(short) == short
    long = [f"- (turn {i}) " + "word " * 60 for i in range(40)]
    shortened = fit(long)
    assert len(shortened) == 40 and sum(len(x) + 1 for x in shortened) <= SECTION_CHARS
    many = [f"- (turn {i}) " + "word " * 60 for i in range(200)]
    kept = fit(many)
    assert sum(len(x) + 1 for x in kept) <= SECTION_CHARS
    assert kept[0].startswith("- (turn 0)") and kept[-1].startswith("- (turn 199)")
    assert any("lines omitted" in line for line in kept)


def test_repeated_folding_stays_flat_and_bounded() -> None:
    summary: str | None = None
    for start in range(1, 2000, 60):
        turns = [
            turn(i, "user" if i % 2 else "assistant", f"Point {i} is {i * 7}. " * 20) for i in range(start, start + 60)
        ]
        summary = extractive_summary(turns, summary)
    assert summary is not None
    assert summary.startswith("Summary of turns 1–")
    assert summary.count(USER) == 1 and summary.count("Summary of turns") == 1
    assert len(summary) < 3 * SECTION_CHARS + 500


def test_an_llm_summary_is_carried_as_the_earlier_summary_and_its_tool_calls_merge() -> None:
    first = [turn(1, "assistant", "", tool_calls=[{"id": "c1", "function": {"name": "web", "arguments": "{}"}}])]
    stored = llm_summary("The user likes tea.\nThey live in Porto.", first)
    sections = summary_sections(stored)
    assert sections[EARLIER] == ["The user likes tea.", "They live in Porto."]
    later = [turn(2, "user", "And coffee?")]
    folded = extractive_summary(later, stored)
    assert folded.startswith("Summary of turns 1–2, ")
    assert summary_sections(folded)[EARLIER] == ["The user likes tea.", "They live in Porto."]
    assert "[c1]" in folded
    prompt = transcript(later, stored)
    assert "The user likes tea." in prompt and "[c1]" not in prompt  # the host keeps the tool calls
    assert "[turn 2 · user · 2026-01-01 09:02]" in prompt
