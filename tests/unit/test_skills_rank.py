"""Skill ranking (pure): BM25 over name, summary and content with their weights, cosine over stored vectors with
the floor, fusion by ``core.fusion``; and the name and feedback rules of ``skills.inputs``."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from reverie.errors import ValidationError
from reverie.skills import inputs
from reverie.skills.rank import lexical_scores, rank, semantic_scores
from reverie.types import Skill

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def skill(name: str, summary: str, content: str) -> Skill:
    return Skill("default", name, summary, content, T0, T0)


SKILLS = [
    skill("mcp/email", "Send an email", "Confirm the recipient, then send the message."),
    skill("mcp/calendar", "Schedule a meeting", "Find a slot, then create the event. Email the invitees."),
    skill("weather", "Look up the forecast", "Call the weather tool for the city."),
]


def unit(*values: float) -> bytes:
    vector = np.asarray(values, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tobytes()


def test_a_word_in_the_name_and_summary_outweighs_one_in_the_content() -> None:
    scores = lexical_scores(SKILLS, "email")
    assert set(scores) == {"mcp/email", "mcp/calendar"}
    assert scores["mcp/email"] > scores["mcp/calendar"] > 0


def test_no_query_word_no_score() -> None:
    assert lexical_scores(SKILLS, "zebra") == {}
    assert lexical_scores(SKILLS, "") == {}
    assert lexical_scores([], "email") == {}


def test_cosines_keep_the_floor_and_skip_other_dimensions() -> None:
    vectors = {"mcp/email": unit(1, 0, 0), "mcp/calendar": unit(1, 1, 0), "weather": unit(0, 0, 1), "odd": unit(1, 1)}
    query = np.frombuffer(unit(1, 0, 0), dtype=np.float32)
    found = semantic_scores(vectors, query, 0.5)
    assert set(found) == {"mcp/email", "mcp/calendar"} and found["mcp/email"] == pytest.approx(1.0)
    assert set(semantic_scores(vectors, query, None)) == {"mcp/email", "mcp/calendar", "weather"}


def test_rank_fuses_both_signals_and_says_which_matched() -> None:
    lexical = {"mcp/email": 4.0, "mcp/calendar": 1.0}
    semantic = {"mcp/email": 0.9, "weather": 0.6}
    hits = rank(SKILLS, lexical, semantic, semantic_weight=0.35, limit=10)
    assert [(h.skill.name, h.matched_by) for h in hits] == [
        ("mcp/email", "bm25+vector"),
        ("mcp/calendar", "bm25"),  # lexical 0 after min-max, semantic absent: 0, ties broken by name
        ("weather", "vector"),
    ]
    assert hits[0].score == pytest.approx(1.0)
    only_bm25 = rank(SKILLS, lexical, None, semantic_weight=0.35, limit=1)
    assert [(h.skill.name, h.score, h.matched_by) for h in only_bm25] == [("mcp/email", 1.0, "bm25")]


@pytest.mark.parametrize("name", ["mcp/email", "summarize-emails", "a_b/c-d/e1", "x"])
def test_good_names(name: str) -> None:
    assert inputs.name(name) == name


@pytest.mark.parametrize("name", ["", "Mcp", "mcp/", "/mcp", "mcp//email", "mcp email", "mcp.email", "ü", 5, None])
def test_bad_names(name: object) -> None:
    with pytest.raises(ValidationError) as caught:
        inputs.name(name)
    assert caught.value.field == "name"


def test_prefix_drops_a_trailing_slash_and_see_also_drops_the_skill_itself() -> None:
    assert inputs.prefix("mcp/") == "mcp" and inputs.prefix("") == "" and inputs.prefix(None) == ""
    assert inputs.see_also(["a", "mcp/email", "a", "b"], own="mcp/email") == ("a", "b")


def test_a_rating_belongs_to_a_session_summary_only() -> None:
    assert inputs.rating("poor", kind_="session_summary") == "poor"
    assert inputs.rating(None, kind_="correction") is None
    for value, kind in ((None, "session_summary"), ("great", "session_summary"), ("poor", "wrong")):
        with pytest.raises(ValidationError):
            inputs.rating(value, kind_=kind)
