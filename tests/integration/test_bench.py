"""The benchmark harnesses end to end, on a tiny LoCoMo-shaped file and the deterministic hash embedder."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.bench.dedup import run_dedup, twin
from reverie.bench.dedup import synthetic_facts as dedup_facts
from reverie.bench.latency import run_latency, synthetic_facts, synthetic_queries
from reverie.bench.locomo import load_locomo
from reverie.bench.recall import MODES, run_recall
from reverie.bench.truth import run_truth
from reverie.bench.truth_data import truth_facts
from reverie.cli import app
from reverie.errors import ValidationError

HASH = {"embedding": {"provider": "hash"}}
runner = CliRunner()


def _turn(dia_id: str, speaker: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def _conversations() -> list[dict[str, Any]]:
    first = {
        "speaker_a": "Maya",
        "speaker_b": "Tomas",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("D1:1", "Maya", "Good morning! How was the weekend?"),
            _turn("D1:2", "Tomas", "Busy. I repainted my bicycle bright teal.", blip_caption="a teal bicycle"),
            _turn("D1:3", "Maya", "Nice. I started pottery classes on Tuesdays."),
        ],
        "session_2_date_time": "10:18 am on 27 August, 2023",
        "session_2": [
            _turn("D2:1", "Tomas", "We adopted a grey kitten called Pebble."),
            _turn("D2:2", "Maya", "My pottery teacher loved the vase I glazed."),
            _turn("D2:3", "Tomas", "Let us meet in Porto next spring."),
        ],
    }
    second = {
        "speaker_a": "Ada",
        "speaker_b": "Omar",
        "session_1_date_time": "4:18 pm on 4 October, 2023",
        "session_1": [
            _turn("D1:1", "Ada", "I finally finished the marathon in Berlin."),
            _turn("D1:2", "Omar", "Congratulations! I am learning the cello."),
        ],
        "session_2_date_time": "7:03 pm on 1 February, 2024",
        "session_2": [_turn("D2:1", "Ada", "My cello teacher says hello."), _turn("D2:2", "Omar", "Ha, thanks.")],
        "session_3_date_time": "5:00 pm on 11 May, 2024",
        "session_3": [_turn("D3:1", "Omar", "The marathon medal is framed on my wall.")],
    }
    return [
        {
            "sample_id": "tiny-1",
            "conversation": first,
            "qa": [
                _qa("What colour is Tomas's bicycle?", ["D1:2"], 4),
                _qa("What did Maya start?", ["D1:3; D2:2"], 1),
                _qa("When was the kitten adopted?", ["D:2:1"], 2),
                _qa("Is Pebble a dog?", ["D2:01"], 5),
                _qa("Would Maya like Porto?", [], 3),
            ],
        },
        {
            "sample_id": "tiny-2",
            "conversation": second,
            "qa": [
                _qa("Where did Ada run a marathon?", ["D1:1 D3:1"], 1),
                _qa("What instrument is Omar learning?", ["D1:2", "D"], 4),
                _qa("Who plays the cello?", ["D1:2"], 3),
            ],
        },
    ]


def _qa(question: str, evidence: list[str], category: int) -> dict[str, Any]:
    answer = "adversarial_answer" if category == 5 else "answer"
    return {"question": question, answer: "(not scored)", "evidence": evidence, "category": category}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps(_conversations()), encoding="utf-8")
    return path


def test_recall_report_structure_and_a_word_match_scores_one(tiny: Path) -> None:
    report = run_recall(load_locomo(tiny), overrides=HASH)
    d = report.dataset
    assert (d.conversations, d.sessions, d.turns) == (2, 5, 11)
    assert d.questions == {"1 multi-hop": 2, "2 temporal": 1, "3 open-domain": 1, "4 single-hop": 2, "5 adversarial": 1}
    assert d.cleaning.ids_fixed == 2 and d.cleaning.ids_dropped == ("tiny-2:D",)
    assert [q.question for q in d.cleaning.questions_dropped] == ["Would Maya like Porto?"]
    assert report.ingestion.memories == 11 and report.ingestion.embedded == 11
    assert report.ingestion.model == "hash-256"
    assert report.ks == (5, 10, 20)
    assert set(report.recall_settings) == {
        *("semantic_weight", "candidates", "min_similarity", "neighbour_share", "thread_share", "time_weight"),
        "min_evidence",
        "relative_floor",
    }
    # The modes asked, then the sanity row: the same vectors by plain cosine.
    assert [m.mode for m in report.modes] == [*MODES, "cosine"]
    for result in report.modes:
        assert result.ran_as == {result.mode: 7}, result.notes
        rows = {row.label: row for row in result.rows}
        assert rows["1-4"].n == 6 and rows["1-5"].n == 7
        assert set(rows["1-5"].turn) == {5, 10, 20} and set(rows["1-5"].session) == {5, 10, 20}
        assert result.latency_p95_ms >= result.latency_p50_ms > 0
    bm25 = {row.label: row for row in report.modes[0].rows}
    # "What colour is Tomas's bicycle?" shares "bicycle" with D1:2 only: found first.
    assert bm25["4 single-hop"].turn[5] == 1.0
    assert bm25["1-5"].turn[20] == 1.0  # every question shares a word with its evidence


def test_one_mode_limited_to_one_conversation(tiny: Path) -> None:
    report = run_recall(load_locomo(tiny), modes=("bm25",), limit_conversations=1, overrides=HASH)
    assert report.dataset.conversations == 1 and report.dataset.turns == 6
    assert report.dataset.cleaning.ids_dropped == ()  # only the conversations used
    assert [m.mode for m in report.modes] == ["bm25"]
    assert {row.label: row.n for row in report.modes[0].rows}["1-5"] == 4


def test_kept_store_holds_turns_at_their_session_time_in_their_own_scope(tiny: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    run_recall(load_locomo(tiny), modes=("bm25",), store=kept, overrides=HASH)
    with reverie.open(kept, embedding={"provider": "hash", "background": False}) as rv:
        hits = rv.memory.search("bicycle", scope=reverie.Scope(agent_id="locomo-0"), mode="bm25")
        entry = hits[0].entry
        assert entry.content == 'Tomas said, "Busy. I repainted my bicycle bright teal." and shared a teal bicycle'
        assert entry.created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert entry.category == "conversation/session-1"
        mapped = {key: entry.metadata.get(key) for key in ("dia_id", "session", "subjectTime")}
        assert mapped == {"dia_id": "D1:2", "session": 1, "subjectTime": "2023-05-08T13:56:00+00:00"}
        assert not rv.memory.search("bicycle", scope=reverie.Scope(agent_id="locomo-1"), mode="bm25")
        assert rv.embedding_status()["pending"] == 0
    with pytest.raises(ValidationError, match="empty store"):
        run_recall(load_locomo(tiny), modes=("bm25",), store=kept, overrides=HASH)


def test_bad_arguments_are_refused_before_any_work(tiny: Path) -> None:
    data = load_locomo(tiny)
    with pytest.raises(ValidationError):
        run_recall(data, modes=("fuzzy",), overrides=HASH)
    with pytest.raises(ValidationError):
        run_recall(data, ks=(0, 5), overrides=HASH)
    with pytest.raises(ValidationError):
        run_latency([0], overrides=HASH)


def test_latency_run_measures_throughput_latency_and_footprint() -> None:
    report = run_latency([200], searches=40, overrides=HASH)
    (result,) = report.results
    assert result.n == 200 and result.model == "hash-256"
    assert result.save_rate and result.embed_rate and result.total_rate and result.model_rate
    assert result.total_rate < result.save_rate
    by_mode = {s.mode: s for s in result.searches}
    assert set(by_mode) == {"hybrid", "hybrid-serial", "bm25"}
    assert by_mode["hybrid"].ran_as == {"hybrid": 40} and by_mode["bm25"].ran_as == {"bm25": 40}
    assert by_mode["hybrid-serial"].ran_as == {"hybrid": 40}  # the one-thread baseline of the same pipeline
    assert result.warmup == 100
    assert by_mode["hybrid"].p95_ms >= by_mode["hybrid"].p50_ms > 0
    assert result.db_bytes > 0 and (result.peak_rss_mb or 0) > 0
    assert report.notes
    assert result.graph_seconds is None  # below recall.ann_threshold: exact search, nothing to wait for


def test_latency_run_waits_for_the_approximate_index_above_the_threshold() -> None:
    report = run_latency([300], searches=10, overrides={**HASH, "recall": {"ann_threshold": 100}})
    (result,) = report.results
    assert result.graph_seconds is not None and result.graph_seconds >= 0


def test_synthetic_text_is_deterministic_english_and_queries_are_distinct() -> None:
    facts = synthetic_facts(50, seed=7)
    assert facts == synthetic_facts(50, seed=7)
    assert all(len(f.split()) == 15 for f in facts)
    queries = synthetic_queries(300, seed=1)
    assert len(set(queries)) == 300
    assert not set(synthetic_queries(50, seed=2, exclude=frozenset(queries))) & set(queries)


def test_cli_recall_json_and_text(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_EMBEDDING__PROVIDER", "hash")
    result = runner.invoke(app, ["bench", "recall", "--dataset", "locomo", str(tiny), "--mode", "bm25", "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert [m["mode"] for m in report["modes"]] == ["bm25"]
    assert report["modes"][0]["rows"][-1]["label"] == "1-5"
    assert report["modes"][0]["rows"][-1]["turn"]["5"] is not None
    text = runner.invoke(app, ["bench", "recall", "--dataset", "locomo", str(tiny), "--limit-conversations", "1"])
    assert text.exit_code == 0, text.stderr
    for needle in ("turn@5", "session@20", "1 multi-hop", "1-4", "1-5", "mode vector", "every mode"):
        assert needle in text.stdout
    bad = runner.invoke(app, ["bench", "recall", "--dataset", "locomo", str(tiny), "--mode", "fuzzy"])
    assert bad.exit_code == 2 and "mode" in bad.stderr
    other = runner.invoke(app, ["bench", "recall", "--dataset", "msc", str(tiny)])
    assert other.exit_code == 2


def test_cli_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVERIE_EMBEDDING__PROVIDER", "hash")
    result = runner.invoke(app, ["bench", "latency", "--n", "50", "--n", "80", "--searches", "5", "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert [r["n"] for r in json.loads(result.stdout)["results"]] == [50, 80]
    text = runner.invoke(app, ["bench", "latency", "--n", "50", "--searches", "5"])
    assert text.exit_code == 0, text.stderr
    assert (
        "hybrid p95 ms" in text.stdout and "one-thread p95 ms" in text.stdout and "save+embed entries/s" in text.stdout
    )
    bad = runner.invoke(app, ["bench", "latency", "--n", "50", "--warmup", "-1"])
    assert bad.exit_code != 0 and "warmup" in bad.stderr


def test_dedup_bench_converges_and_keeps_twins_apart() -> None:
    report = run_dedup(facts=30, restated=4, twins=6, overrides={"embedding": {"provider": "hash"}})
    on, off = report.runs
    assert (on.dedup, off.dedup) == (True, False)
    assert on.live <= 33 and on.false_merges == 0 and on.collisions == 0 and on.twins_live == 6
    assert on.reinforcement_total == 30 * 4  # every observation is counted in the entry that holds it
    assert off.live == 30 * 4 and off.outcomes == {"created": 30 * 4 + 6}


def test_dedup_bench_facts_and_twins_differ_in_a_specific() -> None:
    facts = dedup_facts(200)
    assert len({f.text() for f in facts}) == 200
    rng = random.Random(1)
    for fact in facts[:50]:
        assert twin(fact, rng).text() != fact.text()


def test_truth_bench_swallows_no_correction_and_the_baseline_does() -> None:
    report = run_truth(facts=28, restated=3, twins=6, overrides={"embedding": {"provider": "hash"}})
    on, off = report.runs
    assert (on.stance_check, off.stance_check) == (True, False)
    assert on.contradictions == 28 and set(on.by_kind) == {"negation", "antonym", "order", "time", "value"}
    assert on.false_reinforcements == 0 and on.findable_by_id == 28 and on.superseded_kept == 28
    assert on.current_above >= 26 and on.twins_apart == 6
    assert off.false_reinforcements > 10 and off.superseded_kept == 0  # what saves did before the check
    assert on.outcomes["contradiction:superseded"] == 28
    said_on, said_off = report.said  # the hand-written corrections, through the hash embedder here
    assert (said_on.stance_check, said_off.stance_check) == (True, False)
    assert said_on.kept_whole == said_on.corrections + said_on.twins + said_on.unmarked
    assert said_on.twins_superseded == 0
    assert said_on.superseded > said_off.superseded == 0


def test_truth_bench_facts_are_distinct_and_twins_are_other_subjects() -> None:
    facts = truth_facts(120, 7)
    assert len({f.text for f in facts}) == 120 and all(f.contradiction != f.text for f in facts)
    texts = {f.text for f in facts}
    assert all(f.twin not in texts for f in facts if f.twin)
