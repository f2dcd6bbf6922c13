"""Newer first (recall.newer): a correction the save did not compare with what it corrects (here saved with
``dedup=False``, as a bulk import may; corrections the save reads are superseded at save:
test_corrections_across.py) ranks above it when a question asks for both (real SQLite, real MiniLM)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock

FACTS = (
    ("Lantern stores schedules in PostgreSQL 16", "project-context/lantern"),
    ("Lantern is a scheduling service for clinics", "project-context/lantern"),
    ("Lantern's API is written in Go", "project-context/lantern"),
    ("The budget for the offsite is £5,000", "general"),
    ("Maya prefers short answers", "user-preferences"),
)
LATER = ("The offsite budget was cut to £3,500",)
ASKED = (("what is the offsite budget", 3, 0),)


def _remember(rv: reverie.Reverie, clock: FakeClock) -> tuple[list[str], list[str]]:
    first = [rv.memory.save(text, category=category).entry.id for text, category in FACTS]
    rv.embed_pending()
    clock.advance(timedelta(days=3))
    later = [rv.memory.save(text, dedup=False).entry.id for text in LATER]
    rv.embed_pending()
    return first, later


@pytest.fixture
def switched_off(tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    with reverie.open(tmp_path / "off", clock=clock, embedding={"background": False}, recall={"newer_first": 0}) as rv:
        yield rv


def test_a_correction_the_save_did_not_compare_ranks_above_what_it_corrects(
    rv_local: reverie.Reverie, clock: FakeClock
) -> None:
    first, later = _remember(rv_local, clock)
    for query, old, new in ASKED:
        # The save kept both current: this is the ranking's doing, not a supersession.
        assert rv_local.memory.get(first[old]).superseded_by is None, query
        hits = list(rv_local.memory.search(query, limit=3))
        ids = [h.entry.id for h in hits]
        assert later[new] in ids and first[old] in ids, query
        assert ids.index(later[new]) < ids.index(first[old]), query
        moved = hits[ids.index(later[new])]
        assert moved.evidence is not None and moved.evidence.succeeds == first[old], query
        assert moved.score >= hits[ids.index(first[old])].score


def test_switched_off_the_older_text_answers_first(switched_off: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _remember(switched_off, clock)
    for query, old, new in ASKED:
        ids = [h.entry.id for h in switched_off.memory.search(query, limit=5)]
        assert ids.index(first[old]) < ids.index(later[new]), query


def test_the_older_text_said_again_after_the_change_answers_first(rv_local: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _remember(rv_local, clock)
    clock.advance(timedelta(days=1))
    again = rv_local.memory.save("The budget for the offsite is £5,000")
    assert again.entry.id == first[3] and again.outcome == "reinforced"
    hits = list(rv_local.memory.search("what is the offsite budget", limit=3))
    ids = [h.entry.id for h in hits]
    assert ids.index(first[3]) < ids.index(later[0])
    assert all(h.evidence is None or h.evidence.succeeds is None for h in hits)


@pytest.mark.parametrize(
    ("older", "later", "question"),
    [
        ("The repo is hosted on GitHub", "The repo is hosted on GitLab", "where is the repo hosted"),
        ("My sister lives in Madrid", "My sister lives in Valencia", "where does my sister live"),
    ],
)
def test_a_value_replaced_without_a_word_of_change_answers_first(
    rv_local: reverie.Reverie, clock: FakeClock, older: str, later: str, question: str
) -> None:
    """The save keeps the later text beside the older (the repo may be mirrored, the sister may have two
    homes): both stay current, and the later one, which ranked below by its own evidence, answers first."""
    first = rv_local.memory.save(older).entry.id
    rv_local.memory.save("Alice's manager is Bob")
    rv_local.embed_pending()
    clock.advance(timedelta(days=3))
    saved = rv_local.memory.save(later)
    rv_local.embed_pending()
    assert saved.outcome == "created" and rv_local.memory.get(first).current
    hits = list(rv_local.memory.search(question, limit=3))
    assert [h.entry.id for h in hits[:2]] == [saved.entry.id, first]
    assert hits[0].evidence is not None and hits[0].evidence.succeeds == first  # moved, not ranked so by itself
