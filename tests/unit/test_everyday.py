"""The everyday recall set: loading, validation and scoring as pure functions, and the bundled file itself."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from reverie.bench.everyday import (
    ALL_ON_TOPIC,
    KINDS,
    NEARMISS,
    OFFTOPIC,
    ON_TOPIC_KINDS,
    Query,
    QueryScore,
    load_everyday,
    parse_everyday,
    score_query,
    summarise,
)
from reverie.bench.everyday_recall import default_now, fact_item
from reverie.errors import ValidationError


def _data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "tiny",
        "now": "2026-06-01T09:00:00Z",
        "facts": [
            {
                "id": "f1",
                "category": "people/priya",
                "content": "Priya is allergic to peanuts.",
                "saved_at": "2025-02-11",
            },
            {"id": "f2", "content": "Harbor had an outage on 2026-03-14.", "subjectTime": "2026-03-14"},
        ],
        "queries": [
            {"id": "q1", "kind": "exact", "query": "Priya peanuts", "expected": ["f1"]},
            {"id": "q2", "kind": "time", "query": "what happened last month?", "expected": ["f2"], "now": "2026-04-02"},
            {"id": "q3", "kind": "offtopic", "query": "capital of Peru", "expected": []},
            {"id": "q4", "kind": "nearmiss", "query": "what is Priya's phone number?", "expected": []},
        ],
    }
    data.update(changes)
    return data


SUBJECTS = ("people", "pets", "projects")


def _query(kind: str, expected: tuple[str, ...], query_id: str = "q") -> Query:
    return Query(id=query_id, text="…", kind=kind, expected=expected, now=None)


# -- loading and validation -----------------------------------------------------------------------------


def test_a_good_file_parses_with_its_dates_and_subject_times() -> None:
    data = parse_everyday(_data())
    assert data.name == "tiny" and data.scope == "everyday"
    assert data.now == datetime(2026, 6, 1, 9, tzinfo=UTC)
    first, second = data.facts
    assert first.saved_at == datetime(2025, 2, 11, tzinfo=UTC) and first.category == "people/priya"
    assert second.saved_at is None and second.category is None and second.subject_time == "2026-03-14"
    q1, q2, q3, q4 = data.queries
    assert q1.expected == ("f1",) and q1.now is None and data.query_now(q1) == data.now
    assert not q1.unanswerable and not q1.offtopic
    assert q2.now == datetime(2026, 4, 2, tzinfo=UTC) and data.query_now(q2) == q2.now
    assert q3.offtopic and q3.unanswerable and q3.expected == ()
    assert q4.kind == NEARMISS and q4.unanswerable and not q4.offtopic and q4.expected == ()


def _fact_change(index: int, **changes: Any) -> dict[str, Any]:
    data = _data()
    data["facts"][index] = {**data["facts"][index], **changes}
    return data


def _query_change(index: int, **changes: Any) -> dict[str, Any]:
    data = _data()
    data["queries"][index] = {**data["queries"][index], **changes}
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_fact_change(1, id="f1"), "fact 'f1': duplicate id"),
        (_query_change(1, id="q1"), "query 'q1': duplicate id"),
        (_query_change(0, expected=["f1", "f9"]), "query 'q1': expects unknown fact ids f9"),
        (_query_change(0, expected=["f1", "f1"]), "query 'q1': 'expected' lists a fact twice"),
        (_query_change(0, expected="f1"), "query 'q1': 'expected' must be a list"),
        (_query_change(0, kind="fuzzy"), "query 'q1': kind must be one of exact, paraphrase"),
        (_query_change(2, expected=["f1"]), "query 'q3': an offtopic query expects no facts"),
        (_query_change(3, expected=["f1"]), "query 'q4': a nearmiss query expects no facts"),
        (_query_change(0, kind="near-miss"), "query 'q1': kind must be one of exact, paraphrase"),
        (_query_change(0, expected=[]), "query 'q1': a query of kind exact must expect at least one fact"),
        (_query_change(0, query="  "), "query 'q1': 'query' must be a non-empty string"),
        (_query_change(1, now="next Tuesday"), "query 'q2': 'now' is not an ISO date"),
        (_fact_change(1, subjectTime="2026-13"), "fact 'f2': subjectTime must be YYYY"),
        (_fact_change(1, subjectTime="2025-02-30"), "fact 'f2': subjectTime must be YYYY"),
        (_fact_change(1, subjectTime="March 2026"), "fact 'f2': subjectTime must be YYYY"),
        (_fact_change(1, subjectTime="2026-03-14T10:00Z"), "fact 'f2': subjectTime must be YYYY"),
        (_fact_change(1, subjectTime=2026), "fact 'f2': subjectTime must be YYYY"),
        (_fact_change(0, saved_at="2025-02-31"), "fact 'f1': 'saved_at' is not an ISO date"),
        (_fact_change(0, content=""), "fact 'f1': 'content' must be a non-empty string"),
        (_fact_change(0, id=None), "fact #1: 'id' must be a non-empty string"),
        (_data(facts=[]), "'facts' must be a non-empty list"),
        (_data(queries="q1"), "'queries' must be a non-empty list"),
        ([], "must be a JSON object"),
    ],
)
def test_bad_items_are_refused_naming_the_item(data: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_everyday(data)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_load_reads_a_path_and_refuses_bad_json(tmp_path: Path) -> None:
    good = tmp_path / "mine.json"
    good.write_text(json.dumps(_data(name=None)), encoding="utf-8")
    assert load_everyday(good).name == "mine"  # no name in the file: the file's stem
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValidationError, match="not JSON"):
        load_everyday(bad)
    with pytest.raises(ValidationError, match="cannot read"):
        load_everyday(tmp_path / "missing.json")


def test_default_now_is_the_files_or_a_day_after_the_last_save() -> None:
    assert default_now(parse_everyday(_data())) == datetime(2026, 6, 1, 9, tzinfo=UTC)
    assert default_now(parse_everyday(_data(now=None))) == datetime(2025, 2, 12, tzinfo=UTC)


def test_a_fact_is_saved_with_its_id_and_subject_time_in_the_metadata() -> None:
    first, second = parse_everyday(_data()).facts
    assert fact_item(first) == {
        "content": "Priya is allergic to peanuts.",
        "category": "people/priya",
        "metadata": {"fact_id": "f1"},
    }
    assert fact_item(second)["metadata"] == {"fact_id": "f2", "subjectTime": "2026-03-14"}


# -- scoring --------------------------------------------------------------------------------------------


def test_score_counts_the_top_hit_and_recall_over_the_first_k() -> None:
    query = _query("question", ("a", "b", "c", "d"))
    score = score_query(query, ["a", "x", "b", "y", "z", "c", "d"], k=5)
    assert score.hit_at_1 is True and score.recall == 0.5 and not score.empty  # c and d fall past k = 5
    assert score.ranked == ("a", "x", "b", "y", "z") and score.on_target == 2 / 5  # a and b of five returned
    missed = score_query(query, ["x", "d"], k=5)
    assert missed.hit_at_1 is False and missed.recall == 0.25 and missed.on_target == 0.5
    nothing = score_query(query, [], k=5)
    assert nothing.hit_at_1 is False and nothing.recall == 0.0 and nothing.empty and nothing.on_target is None


@pytest.mark.parametrize("kind", [OFFTOPIC, NEARMISS])
def test_offtopic_and_nearmiss_score_only_silence(kind: str) -> None:
    query = _query(kind, ())
    assert score_query(query, []) == QueryScore("q", kind, None, None, True, ())
    noisy = score_query(query, ["a"])
    assert noisy.empty is False and noisy.hit_at_1 is None and noisy.recall is None


def test_summary_rows_per_kind_then_all_on_topic_then_offtopic_and_nearmiss() -> None:
    scores = [
        score_query(_query("exact", ("a",), "q1"), ["a", "b"]),  # p@1 1, r 1
        score_query(_query("exact", ("a", "b"), "q2"), ["x", "b"]),  # p@1 0, r 0.5
        score_query(_query("time", ("c", "d", "e", "f"), "q3"), ["c"]),  # p@1 1, r 0.25
        score_query(_query(OFFTOPIC, (), "q4"), []),
        score_query(_query(OFFTOPIC, (), "q5"), []),
        score_query(_query(OFFTOPIC, (), "q6"), ["a"]),
        score_query(_query(OFFTOPIC, (), "q7"), ["b", "c"]),
        score_query(_query(NEARMISS, (), "q8"), ["a"]),
        score_query(_query(NEARMISS, (), "q9"), ["b"]),
        score_query(_query(NEARMISS, (), "q10"), ["c"]),
    ]
    rows = {row.label: row for row in summarise(scores)}
    assert [row.label for row in summarise(scores)] == [*ON_TOPIC_KINDS, ALL_ON_TOPIC, OFFTOPIC, NEARMISS]
    exact = rows["exact"]
    assert (exact.n, exact.precision_at_1, exact.recall_at_k, exact.empty) == (2, 0.5, 0.75, None)
    assert exact.on_target == pytest.approx((1 / 2 + 1 / 2) / 2)  # each returned one expected hit of two
    time = rows["time"]
    assert (time.n, time.precision_at_1, time.recall_at_k) == (1, 1.0, 0.25)
    everything = rows[ALL_ON_TOPIC]  # neither the offtopic nor the nearmiss queries count here
    assert everything.n == 3 and everything.precision_at_1 == pytest.approx(2 / 3)
    assert everything.recall_at_k == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert everything.on_target == pytest.approx((0.5 + 0.5 + 1) / 3)
    off = rows[OFFTOPIC]
    assert (off.n, off.precision_at_1, off.recall_at_k, off.empty, off.on_target) == (4, None, None, 0.5, None)
    near = rows[NEARMISS]  # reported on its own, never mixed into offtopic
    assert (near.n, near.precision_at_1, near.recall_at_k, near.empty) == (3, None, None, 0.0)
    assert rows["name"] == type(off)("name", 0, None, None, None)  # an empty group has no figures


# -- the bundled set ------------------------------------------------------------------------------------


def test_the_bundled_set_ships_as_package_data_and_is_complete() -> None:
    text = resources.files("reverie.bench").joinpath("data").joinpath("everyday.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    data = parse_everyday(raw)
    assert load_everyday() == data
    assert len(data.facts) >= 150 and len(data.queries) >= 300
    kinds = {kind: sum(1 for q in data.queries if q.kind == kind) for kind in KINDS}
    assert all(kinds[kind] > 0 for kind in KINDS), kinds
    assert kinds[OFFTOPIC] >= 45 and kinds[NEARMISS] >= 15, kinds
    fact_ids = {f.id for f in data.facts}
    assert all(set(q.expected) <= fact_ids for q in data.queries)
    assert all(q.expected for q in data.queries if not q.unanswerable)
    assert not any(q.expected for q in data.queries if q.unanswerable)
    assert len({q.text.lower() for q in data.queries}) == len(data.queries)  # no query asked twice
    assert len({f.content for f in data.facts}) == len(data.facts)
    assert sum(1 for f in data.facts if f.subject_time) >= 30
    saved = sorted(f.saved_at for f in data.facts if f.saved_at is not None)
    assert len(saved) == len(data.facts) and (saved[-1] - saved[0]).days > 600  # spread over about two years
    assert any(q.now is not None for q in data.queries if q.kind == "time")


def test_the_fresh_set_ships_beside_it_and_is_complete() -> None:
    """``everyday_fresh.json``: a smaller set about another user, written after the mechanisms were built
    (docs/benchmarks.md), read by ``reverie bench recall --dataset everyday <path>``."""
    path = resources.files("reverie.bench").joinpath("data").joinpath("everyday_fresh.json")
    data = parse_everyday(json.loads(path.read_text(encoding="utf-8")))
    assert len(data.facts) >= 40 and len(data.queries) >= 55
    assert {q.kind for q in data.queries} >= set(KINDS) - {NEARMISS}
    fact_ids = {f.id for f in data.facts}
    assert all(set(q.expected) <= fact_ids and bool(q.expected) != q.unanswerable for q in data.queries)
    assert len({q.text.lower() for q in data.queries}) == len(data.queries)


def test_the_people_set_ships_too_and_introduces_before_it_describes() -> None:
    """``everyday_people.json``: introductions ("My wife Layla …", "Ledgerly is our expenses app …") and queries
    that describe instead of naming ("my wife's allergy"), in the first person."""
    path = resources.files("reverie.bench").joinpath("data").joinpath("everyday_people.json")
    data = parse_everyday(json.loads(path.read_text(encoding="utf-8")))
    assert len(data.facts) >= 30 and len(data.queries) >= 40
    fact_ids = {f.id for f in data.facts}
    assert all(set(q.expected) <= fact_ids and bool(q.expected) != q.unanswerable for q in data.queries)
    assert sum(1 for f in data.facts if f.content.startswith(("My ", "Our "))) >= 5
    assert sum(1 for q in data.queries if q.kind == OFFTOPIC) >= 4


def test_the_kenji_set_ships_too_and_dates_some_facts_only_in_their_text() -> None:
    """``everyday_kenji.json``: a fourth set, scored once before the changes it led to (docs/benchmarks.md);
    its facts carry no subject time, so a time question is answered by a date in a fact's text."""
    path = resources.files("reverie.bench").joinpath("data").joinpath("everyday_kenji.json")
    data = parse_everyday(json.loads(path.read_text(encoding="utf-8")))
    assert len(data.facts) >= 40 and len(data.queries) >= 70
    fact_ids = {f.id for f in data.facts}
    assert all(set(q.expected) <= fact_ids and bool(q.expected) != q.unanswerable for q in data.queries)
    assert not any(f.subject_time for f in data.facts)
    assert sum(1 for q in data.queries if q.kind == OFFTOPIC) >= 12
    assert len({q.text.lower() for q in data.queries}) == len(data.queries)


def test_the_bundled_near_misses_name_someone_or_something_the_facts_cover() -> None:
    """A nearmiss asks what no fact answers about a person or project the facts do cover; an offtopic query
    names none of them (spot checks of the hand classification, both ways)."""
    data = load_everyday()
    by_text = {q.text: q.kind for q in data.queries}
    for text in ("which database does Beacon use?", "what is Jonas allergic to?", "when is Margaret's birthday?"):
        assert by_text[text] == NEARMISS, text
    for text in ("who is Kevin Walsh?", "when does Sentinel deploy?", "what is the capital of Peru", "weather"):
        assert by_text[text] == OFFTOPIC, text
    # the people, pets and projects of the facts, from their categories (people/priya, pets/biscuit, ...)
    names = {f.category.split("/")[1] for f in data.facts if f.category and f.category.split("/")[0] in SUBJECTS}
    assert {"dan", "priya", "biscuit", "harbor", "beacon"} <= names
    for query in data.queries:
        if query.kind == OFFTOPIC:
            words = set(re.findall(r"[a-z]+", query.text.lower()))
            assert not names & words, (query.text, names & words)
