"""memory_lint, confidence, explain and seed 003's query options (pin_first, include_superseded,
belief_authority_weight), through the engine and the CLI. Real SQLite files; the hash embedder unless said
otherwise."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.core.aging import confidence
from reverie.memory.lint import LintFinding
from reverie.storage.base import FactFilter
from reverie.types import Scope

MAY_3 = "Maya's flight to Lisbon leaves on May 3"
MAY_5 = "Maya's flight to Lisbon leaves on May 5"


def _twins(rv: reverie.Reverie, clock: FakeClock) -> tuple[str, str]:
    older = rv.memory.save(MAY_3, category="travel")
    clock.advance(timedelta(days=1))
    newer = rv.memory.save(MAY_5, category="travel/flights")  # the same top-level category
    assert (older.outcome, newer.outcome) == ("created", "created")  # dedup keeps twins apart
    return older.id, newer.id


def _noise(rv: reverie.Reverie) -> None:
    """A live duplicate pair, an elaboration pair and an unrelated entry: none of them is a finding."""
    rv.memory.save("Dana prefers green tea in the morning", category="home", dedup=False)
    rv.memory.save("Dana prefers green tea in the morning", category="home", dedup=False)
    rv.memory.save("The standup is held in the Aurora room", category="work", dedup=False)
    rv.memory.save("The standup is held in the Aurora room with Priya", category="work", dedup=False)
    rv.memory.save("The car needs new winter tyres", category="travel")


def _state(rv: reverie.Reverie) -> tuple[Any, ...]:
    entries = list(rv.store.facts.iter_all())
    versions = {e.id: rv.store.versions.history(e.id, e.scope) for e in entries}
    return entries, versions, rv.store.vectors.counts()


# -- memory_lint -------------------------------------------------------------------------------------------
def test_lint_finds_a_twin_pair_and_says_which_is_newer(rv: reverie.Reverie, clock: FakeClock) -> None:
    older, newer = _twins(rv, clock)
    _noise(rv)
    rv.embed_pending()
    report = rv.lint.run()
    assert report.examined == 7 and not report.truncated
    (finding,) = report.findings
    assert (finding.newer_id, finding.older_id, finding.category) == (newer, older, "travel")
    assert (finding.newer_specifics, finding.older_specifics) == (("May 5",), ("May 3",))
    assert finding.measure == "cosine" and 0.75 <= finding.similarity <= 1.0
    clock.advance(timedelta(days=1))
    assert rv.memory.save(MAY_3, category="travel").outcome == "reinforced"  # seen again: now the newer one
    (flipped,) = rv.lint.run().findings
    assert (flipped.newer_id, flipped.older_id) == (older, newer)


def test_lint_and_explain_edit_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    older, _ = _twins(rv, clock)
    _noise(rv)
    rv.embed_pending()
    before = _state(rv)
    assert rv.lint.run().findings
    assert rv.lint.explain(older).contradictions
    assert rv.lint.confidences(before[0], Scope())
    assert _state(rv) == before  # same rows (counters, read marks, confidence column), same versions


def test_without_vectors_lint_compares_words(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path, clock=clock, embedding={"provider": "none"}) as rv:
        older, newer = _twins(rv, clock)
        _noise(rv)
        (finding,) = rv.lint.run().findings
        assert (finding.newer_id, finding.older_id, finding.measure) == (newer, older, "jaccard")
        assert finding.similarity == pytest.approx(0.75)


def test_lint_sees_only_its_scope_and_category_and_is_bounded(rv: reverie.Reverie, clock: FakeClock) -> None:
    _twins(rv, clock)
    rv.memory.save(MAY_3, category="travel", scope=Scope(agent_id="other"))
    rv.memory.save(MAY_5, category="travel", scope=Scope(agent_id="other", user_id="u1"))
    _noise(rv)
    rv.embed_pending()
    assert len(rv.lint.run(category="travel").findings) == 1
    assert rv.lint.run(category="travel/flights").findings == ()  # the pair straddles the filter
    assert rv.lint.run(category="home").findings == ()
    assert rv.lint.run(Scope(agent_id="other")).findings == ()  # u1's entry is invisible without the user
    assert len(rv.lint.run(Scope(agent_id="other", user_id="u1")).findings) == 1
    bounded = rv.lint.run(limit=2)
    assert (bounded.examined, bounded.truncated) == (2, True)


def test_the_twin_is_found_above_the_dedup_threshold_with_the_local_model(
    rv_local: reverie.Reverie, clock: FakeClock
) -> None:
    """MiniLM puts the twins at cosine ~0.98, above deduplication's 0.88: no upper bound may hide them."""
    rv = rv_local
    older, newer = _twins(rv, clock)
    clock.advance(timedelta(days=1))
    restated = rv.memory.save("Maya's flight to Lisbon departs on May 3", category="travel", dedup=False).id
    rv.embed_pending()
    findings = rv.lint.run().findings
    assert findings and all(isinstance(f, LintFinding) for f in findings)
    pairs = {frozenset((f.newer_id, f.older_id)) for f in findings}
    # The May 5 twin is found against one of the two May 3 entries (whichever is nearest) ...
    assert frozenset((newer, older)) in pairs or frozenset((newer, restated)) in pairs
    assert all(newer in pair for pair in pairs)  # ... and the restatement and the original are not a finding
    assert max(f.similarity for f in findings) > 0.88


# -- confidence and explain --------------------------------------------------------------------------------
def test_explain_shows_why_an_entry_stands_where_it_does(rv: reverie.Reverie, clock: FakeClock) -> None:
    older, newer = _twins(rv, clock)
    rv.memory.edit(older, tags=["trip"])
    rv.embed_pending()
    clock.advance(timedelta(days=10))
    result = rv.lint.explain(older)
    assert result.entry.id == older and result.seen == "first seen 2026-01-01"
    assert result.retention == 1.0  # semantic entries do not age
    assert result.superseded_by is None and result.versions == 2
    assert [(f.newer_id, f.older_id) for f in result.contradictions] == [(newer, older)]
    conf = result.confidence
    assert (conf.supporting_sessions, conf.last_support_at, conf.contradictions) == (1, result.entry.last_seen_at, 1)
    assert conf.value == confidence(
        supporting_sessions=1, last_support_at=result.entry.last_seen_at, contradictions=1, now=clock.now()
    )


def test_confidence_rises_with_support_and_falls_with_age_and_contradictions(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    entry = rv.memory.save(MAY_3, category="travel", source="user").id
    rv.embed_pending()
    values = [rv.lint.explain(entry).confidence.value]
    for _ in range(3):
        clock.advance(timedelta(days=1))
        assert rv.memory.save(MAY_3, category="travel").outcome == "reinforced"
        values.append(rv.lint.explain(entry).confidence.value)
    assert values == sorted(values) and len(set(values)) == 4  # each observation raises it
    clock.advance(timedelta(days=200))
    aged = rv.lint.explain(entry).confidence.value
    assert aged < values[-1]
    rv.memory.save(MAY_5, category="travel")
    rv.embed_pending()
    contradicted = rv.lint.explain(entry).confidence
    assert contradicted.contradictions == 1 and contradicted.value < aged
    for _ in range(50):
        rv.memory.save(MAY_3, category="travel")
    assert 0 < rv.lint.explain(entry).confidence.value <= 0.95


def test_explain_of_an_unknown_or_invisible_entry_is_not_found(rv: reverie.Reverie) -> None:
    private = rv.memory.save("A note", scope=Scope(user_id="u1")).id
    with pytest.raises(reverie.NotFound):
        rv.lint.explain(private)
    with pytest.raises(reverie.NotFound):
        rv.lint.explain("0123456789ab")


# -- ranking by confidence ---------------------------------------------------------------------------------
def _office(rv: reverie.Reverie) -> tuple[str, str]:
    weak = rv.memory.save("The office wifi password is taped under the printer", category="office").id
    for _ in range(8):
        strong = rv.memory.save("Wifi in the office: the password hangs by the kitchen door", category="office").id
    rv.memory.save("The office plants need water on Fridays", category="office")
    rv.embed_pending()
    return weak, strong


def test_belief_authority_weight_zero_leaves_ranking_exactly_as_recall_made_it(rv: reverie.Reverie) -> None:
    _office(rv)
    assert rv.memory.config.belief_authority_weight == 0.0  # the default
    for mode in ("auto", "bm25", "vector"):
        hits = rv.memory.search("office wifi password", mode=mode)
        flt = FactFilter(scope=Scope(), now=rv.clock.now())
        raw = rv.recall.search("office wifi password", flt, 10, mode=mode)
        assert [(h.entry.id, h.score, h.matched_by) for h in hits] == [(h.entry.id, h.score, h.matched_by) for h in raw]


def test_a_positive_belief_authority_weight_ranks_by_confidence(tmp_path: Path, clock: FakeClock) -> None:
    embedding = {"provider": "hash", "background": False}
    with reverie.open(tmp_path, clock=clock, embedding=embedding) as rv:
        weak, strong = _office(rv)
        plain = {h.entry.id: h.score for h in rv.memory.search("office wifi password")}
        conf = rv.lint.confidences([rv.memory.get(weak), rv.memory.get(strong)], Scope())
    # Recall alone scores the two statements alike (each holds all three words; the hash embedder's similarities
    # differ a little and weigh on the word credit); the eight restatements make one far more trusted.
    assert abs(plain[weak] - plain[strong]) < 0.1
    assert conf[strong] > conf[weak]
    with reverie.open(tmp_path, clock=clock, embedding=embedding, recall={"belief_authority_weight": 0.8}) as rv:
        weighed = rv.memory.search("office wifi password")
        assert [h.entry.id for h in weighed][:2] == [strong, weak]
        assert weighed[0].score == pytest.approx(plain[strong] * (0.2 + 0.8 * conf[strong]))
        assert weighed[1].score == pytest.approx(plain[weak] * (0.2 + 0.8 * conf[weak]))
        assert weighed[0].score - weighed[1].score > 0.1
        assert weighed[0].score - weighed[1].score > abs(plain[strong] - plain[weak]) + 0.05  # confidence widened it


# -- pin_first and include_superseded ----------------------------------------------------------------------
def test_pin_first_puts_up_to_ten_pinned_entries_ahead(rv: reverie.Reverie, clock: FakeClock) -> None:
    pinned = []
    for n in range(12):
        clock.advance(timedelta(minutes=1))
        pinned.append(rv.memory.save(f"House rule number {n}: shoes off", pinned=True, dedup=False).id)
    rv.memory.save("A pinned rule for another category", category="elsewhere", pinned=True)
    rv.memory.save("A pinned rule of user one", pinned=True, scope=Scope(user_id="u1"))
    match = rv.memory.save("Shoes go on the rack by the door").id
    plain = rv.memory.search("shoes on the rack", category="general")
    assert all(h.matched_by != "pinned" for h in plain) and plain[0].entry.id == match
    hits = rv.memory.search("shoes on the rack", category="general", pin_first=True)
    assert [h.entry.id for h in hits[:10]] == pinned[::-1][:10]  # the most recently reinforced pinned first
    assert all(h.matched_by == "pinned" for h in hits[:10])
    assert hits[10].entry.id == match and not {h.entry.id for h in hits[10:]} & set(pinned[2:])  # none twice
    ids = [h.entry.id for h in hits]
    assert len(ids) == len(set(ids))
    scores = {h.entry.id: h.score for h in plain}
    assert hits[0].score == scores.get(pinned[-1], 0.0)  # a pinned hit keeps its score
    browse = rv.memory.search("", pin_first=True)
    assert browse[0].matched_by == "pinned"


def test_include_superseded_appends_folded_entries_labelled(rv_local: reverie.Reverie) -> None:
    rv = rv_local
    first = rv.memory.save("Maya bought a new bicycle in Lisbon last March.").id
    second = rv.memory.save("In March Maya purchased a new bike while in Lisbon.").id
    rv.embed_pending()
    assert rv.memory.get(second).superseded_by == first
    plain = rv.memory.search("Maya bike Lisbon")
    assert [h.entry.id for h in plain] == [first]
    hits = rv.memory.search("Maya bike Lisbon", include_superseded=True)
    assert [(h.entry.id, h.matched_by) for h in hits] == [(first, plain[0].matched_by), (second, "superseded")]
    archived = rv.memory.search("Maya bike Lisbon", include_archived=True, include_superseded=True)
    assert [(h.entry.id, h.matched_by) for h in archived if h.entry.id == second] == [(second, "superseded")]
    assert rv.lint.explain(second).superseded_by == first


def test_search_options_are_validated(rv: reverie.Reverie) -> None:
    with pytest.raises(reverie.ValidationError):
        rv.memory.search("x", pin_first="yes")  # type: ignore[arg-type]
    with pytest.raises(reverie.ValidationError):
        rv.memory.search("x", include_superseded=1)  # type: ignore[arg-type]


# -- the CLI -----------------------------------------------------------------------------------------------
runner = CliRunner()


def _cli(home: Path, *args: str) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def test_the_cli_explains_lints_and_searches_with_the_options(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "hash"\n')
    older = _cli(home, "memory", "save", "-q", "-c", "travel", MAY_3).strip()
    newer = _cli(home, "memory", "save", "-q", "-c", "travel", MAY_5).strip()
    rule = _cli(home, "memory", "save", "-q", "--pin", "Always book aisle seats").strip()
    report = json.loads(_cli(home, "memory", "lint", "--json"))
    (finding,) = report["findings"]
    assert {finding["newer_id"], finding["older_id"]} == {older, newer} and report["examined"] == 3
    assert "disagree" in _cli(home, "memory", "lint", "-c", "travel")
    explained = json.loads(_cli(home, "memory", "explain", older, "--json"))
    assert explained["entry"]["id"] == older and explained["confidence"]["contradictions"] == 1
    assert set(explained) >= {"seen", "retention", "confidence", "contradictions", "superseded_by", "versions"}
    text = _cli(home, "memory", "explain", older)
    assert "confidence" in text and "contradiction" in text and "retention" in text
    hits = json.loads(_cli(home, "memory", "search", "flight", "--pin-first", "--include-superseded", "--json"))
    assert hits["hits"][0]["entry"]["id"] == rule and hits["hits"][0]["matched_by"] == "pinned"
    assert "pinned" in _cli(home, "memory", "search", "flight", "--pin-first")
