"""LoCoMo loading, cleaning and scoring: pure functions on hand-made examples."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reverie.bench.locomo import (
    Question,
    QuestionScore,
    Turn,
    clean_evidence,
    load_locomo,
    normalise_dia_id,
    parse_locomo,
    parse_session_date,
    score_question,
    session_of,
    session_recall,
    split_evidence,
    summarise,
    turn_recall,
    turn_text,
)
from reverie.bench.recall import engine_settings, percentile, session_items
from reverie.errors import ValidationError

# -- dates ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:40 am on 27 March, 2022", datetime(2022, 3, 27, 0, 40, tzinfo=UTC)),
        ("12:05 pm on 1 September, 2022", datetime(2022, 9, 1, 12, 5, tzinfo=UTC)),
        ("10:18 am on 27 August, 2023", datetime(2023, 8, 27, 10, 18, tzinfo=UTC)),
        ("9:58 PM on 16 august 2023", datetime(2023, 8, 16, 21, 58, tzinfo=UTC)),
    ],
)
def test_session_dates_parse_as_utc(text: str, expected: datetime) -> None:
    parsed = parse_session_date(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text", ["", "8 May 2023", "1:56 pm on 8 Mai, 2023", "13:10 pm on 8 May, 2023", "1:56 on 8 May, 2023"]
)
def test_bad_session_dates_raise(text: str) -> None:
    with pytest.raises(ValueError):
        parse_session_date(text)


# -- evidence cleaning ---------------------------------------------------------------------------------


def test_evidence_splits_on_semicolons_and_whitespace() -> None:
    assert split_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert split_evidence(["D9:1 D4:4 D4:6", "D2:2"]) == ["D9:1", "D4:4", "D4:6", "D2:2"]
    assert split_evidence(["", "  ", ";"]) == []


@pytest.mark.parametrize(
    ("token", "expected"),
    [("D11:26", "D11:26"), ("D:11:26", "D11:26"), ("D30:05", "D30:5"), ("D", None), ("X1:2", None), ("D1", None)],
)
def test_dia_ids_normalise(token: str, expected: str | None) -> None:
    assert normalise_dia_id(token) == expected


def test_clean_evidence_fixes_dedupes_and_drops_unknown_ids() -> None:
    known = {"D11:26", "D30:5", "D1:1", "D2:3"}
    clean = clean_evidence(["D:11:26; D1:1", "D30:05 D", "D1:1", "D9:99"], known)
    assert clean.ids == ("D11:26", "D1:1", "D30:5")
    assert clean.fixed == 2
    assert clean.dropped == ("D", "D9:99")


def test_session_numbers_come_from_dia_ids() -> None:
    assert session_of("D12:3") == 12
    assert session_of("D1:40") == 1


def test_turn_text_quotes_the_speaker_and_adds_the_image_caption() -> None:
    assert turn_text(Turn("D1:1", "Caroline", "Hi Mel!")) == 'Caroline said, "Hi Mel!"'
    shared = Turn("D1:2", "Mel", "Look at this", blip_caption="a photo of a dog on a beach")
    assert turn_text(shared) == 'Mel said, "Look at this" and shared a photo of a dog on a beach'


def _sample(sample_id: str, qa: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_2_date_time": "3:00 pm on 2 June, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Later."}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hello."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Look.", "blip_caption": "a red kite", "img_url": "x"},
            ],
            "session_3_date_time": "4:00 pm on 3 June, 2023",  # a date without a session: ignored
        },
        "qa": qa,
    }


def test_parse_locomo_orders_sessions_cleans_evidence_and_drops_empty_questions() -> None:
    qa = [
        {"question": "q1", "answer": "a", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "q2", "answer": "a", "evidence": ["D:1:2", "D"], "category": 4},
        {"question": "q3", "answer": "a", "evidence": [], "category": 3},
        {"question": "q4", "adversarial_answer": "a", "evidence": ["D7:7"], "category": 5},
    ]
    data = parse_locomo([_sample("conv-x", qa)])
    (conv,) = data.conversations
    assert [s.number for s in conv.sessions] == [1, 2]
    assert conv.sessions[0].date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.sessions[0].turns[1].blip_caption == "a red kite"
    assert conv.turn_count == 3
    assert [(q.question, q.category, q.evidence) for q in conv.questions] == [
        ("q1", 1, ("D1:1", "D2:1")),
        ("q2", 4, ("D1:2",)),
    ]
    cleaning = data.cleaning
    assert cleaning.ids_fixed == 1
    assert cleaning.ids_dropped == ("conv-x:D", "conv-x:D7:7")
    assert [(q.question, q.raw_evidence) for q in cleaning.questions_dropped] == [("q3", ()), ("q4", ("D7:7",))]


def test_parse_locomo_rejects_what_is_not_locomo() -> None:
    with pytest.raises(ValueError, match="list"):
        parse_locomo({"conversation": {}})
    with pytest.raises(ValueError, match="sample 0"):
        parse_locomo([{"qa": []}])


def test_load_locomo_turns_file_problems_into_a_validation_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as missing:
        load_locomo(tmp_path / "absent.json")
    assert missing.value.field == "dataset"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValidationError):
        load_locomo(bad)


# -- scoring -------------------------------------------------------------------------------------------


def test_turn_recall_is_the_share_of_evidence_in_the_top_k() -> None:
    evidence = ["D1:2", "D3:4"]
    ranked = ["D3:4", "D1:5", "D2:1", "D1:2"]
    assert turn_recall(evidence, ranked, 1) == 0.5
    assert turn_recall(evidence, ranked, 3) == 0.5
    assert turn_recall(evidence, ranked, 4) == 1.0
    assert turn_recall(evidence, [], 5) == 0.0
    assert turn_recall(["D1:1", "D1:1"], ["D1:1"], 5) == 1.0  # E is a set


def test_session_recall_counts_unique_sessions_for_evidence_spanning_two_sessions() -> None:
    evidence = ["D1:2", "D1:3", "D3:4"]  # sessions {1, 3}
    ranked = ["D1:9", "D2:1", "D3:1"]
    assert session_recall(evidence, ranked, 1) == 0.5  # a different turn of session 1 still counts
    assert session_recall(evidence, ranked, 2) == 0.5
    assert session_recall(evidence, ranked, 3) == 1.0
    assert turn_recall(evidence, ranked, 3) == 0.0


def test_recall_of_a_question_without_evidence_is_an_error() -> None:
    with pytest.raises(ValueError):
        turn_recall([], ["D1:1"], 5)
    with pytest.raises(ValueError):
        session_recall([], ["D1:1"], 5)


def test_score_question_and_summary_average_per_category_and_overall() -> None:
    ks = (1, 2)
    questions = [
        (Question("a", 1, ("D1:1", "D2:1")), ["D2:1", "D1:1"]),  # turn 0.5, 1.0
        (Question("b", 1, ("D1:1",)), ["D5:1", "D6:1"]),  # turn 0, 0
        (Question("c", 4, ("D3:3",)), ["D3:3"]),  # turn 1, 1
        (Question("d", 5, ("D4:1",)), ["D4:2", "D9:9"]),  # turn 0; session 1, 1
    ]
    scores = [score_question(q, ranked, ks) for q, ranked in questions]
    assert scores[0] == QuestionScore(1, {1: 0.5, 2: 1.0}, {1: 0.5, 2: 1.0})
    rows = {row.label: row for row in summarise(scores, ks)}
    assert list(rows) == ["1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop", "5 adversarial", "1-4", "1-5"]
    assert rows["1 multi-hop"].n == 2
    assert rows["1 multi-hop"].turn == {1: 0.25, 2: 0.5}
    assert rows["2 temporal"].n == 0 and rows["2 temporal"].turn == {1: None, 2: None}
    assert rows["1-4"].n == 3
    assert rows["1-4"].turn == {1: pytest.approx(0.5), 2: pytest.approx(2 / 3)}
    assert rows["1-5"].n == 4
    assert rows["1-5"].turn == {1: pytest.approx(1.5 / 4), 2: pytest.approx(2 / 4)}
    assert rows["1-5"].session == {1: pytest.approx(2.5 / 4), 2: pytest.approx(3 / 4)}


# -- harness helpers -----------------------------------------------------------------------------------


def test_percentile_interpolates() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([float(i) for i in range(101)], 95) == 95.0


def test_session_items_carry_the_dia_id_session_and_subject_time() -> None:
    data = parse_locomo([_sample("c", [])])
    session = data.conversations[0].sessions[0]
    items = session_items(session)
    assert items[1] == {
        "content": 'Ben said, "Look." and shared a red kite',
        "category": "conversation/session-1",
        "metadata": {
            "dia_id": "D1:2",
            "session": 1,
            "subjectTime": "2023-05-08T13:56:00+00:00",
            "thread": "session-1",
            "position": 1,
        },
    }


def test_engine_settings_keep_background_embedding_off_under_overrides() -> None:
    assert engine_settings(None) == {"embedding": {"background": False}}
    merged = engine_settings({"embedding": {"provider": "hash"}, "recall": {"candidates": 10}})
    assert merged == {"embedding": {"background": False, "provider": "hash"}, "recall": {"candidates": 10}}
