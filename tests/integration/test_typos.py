"""Misspelt query words: the in-memory index reads a word no entry holds, and no English word, as the indexed
word it most likely misspells; real words the memory lacks stay as they are (real SQLite, real MiniLM)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.core.text import query_terms
from reverie.core.tokens import word
from reverie.storage.base import FactFilter

FACTS = (
    "My daughter Mia has swimming lessons on Saturday mornings at 9.",
    "Priya is allergic to peanuts and carries an EpiPen.",
    "The Kubernetes clusters were upgraded to version 1.31 in February.",
    "Dan writes code in Neovim with the LazyVim setup.",
    "Dan calls his mother every Sunday around 6 pm.",
)


@pytest.fixture
def engine(rv_local: reverie.Reverie) -> reverie.Reverie:
    for content in FACTS:
        rv_local.memory.save(content, dedup=False)
    rv_local.embed_pending()
    return rv_local


def corrected(rv: reverie.Reverie, query: str) -> list[str]:
    written = query_terms(query)
    assert rv.recall.lexical is not None
    flt = FactFilter(scope=reverie.Scope(agent_id="default"), now=rv.clock.now())
    return rv.recall.lexical.search_corrected(flt, [word(w) for w in written], written, 10)[0]


def test_a_misspelt_word_is_read_as_the_indexed_word_it_misspells(engine: reverie.Reverie) -> None:
    assert corrected(engine, "swiming lesons") == [word("swimming"), word("lessons")]
    assert corrected(engine, "Priya alergic") == ["priya", word("allergic")]
    assert corrected(engine, "kubernets clsuter") == [word("kubernetes"), word("clusters")]  # two edits from 8


def test_a_real_word_the_memory_lacks_stays_as_written(engine: reverie.Reverie) -> None:
    # "tall" is one edit from "call(s)", "mothers" is an English word: neither is a typo.
    assert corrected(engine, "how tall is Mount Everest") == ["tall", "mount", word("everest")]
    assert list(engine.memory.search("how tall is Mount Everest", mode="hybrid")) == []


@pytest.mark.parametrize(
    ("query", "fact"),
    [
        ("swiming lesons", 0),
        ("what is Priya alergic to", 1),
        ("neovm setup", 3),
        ("when were the clsuters upgraded", 2),
    ],
)
def test_a_search_with_a_typo_finds_the_fact(engine: reverie.Reverie, query: str, fact: int) -> None:
    hits = engine.memory.search(query, mode="hybrid")
    assert hits and hits[0].entry.content == FACTS[fact], query
    assert "bm25" in hits[0].matched_by


def test_typo_tolerance_off_reads_words_as_written(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}, recall={"typo_tolerance": False}) as rv:
        for content in FACTS:
            rv.memory.save(content, dedup=False)
        rv.embed_pending()
        assert [h.entry.content for h in rv.memory.search("swiming lesons", mode="bm25")] == []
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}) as rv:
        assert [h.entry.content for h in rv.memory.search("swiming lesons", mode="bm25")] == [FACTS[0]]


def test_the_embedder_also_reads_the_query_as_meant(tmp_path: Path, clock: FakeClock) -> None:
    """A misspelt word the index corrected is respelt for the embedder too ("swiming lesons" is embedded
    as "swim lesson" as well): the fact's similarity is the better of the two readings."""
    similarity: dict[bool, float] = {}
    for tolerant in (False, True):
        recall = {"typo_tolerance": tolerant}
        with reverie.open(tmp_path, clock=clock, embedding={"background": False}, recall=recall) as rv:
            if not tolerant:
                for content in FACTS:
                    rv.memory.save(content, dedup=False)
                rv.embed_pending()
            hits = {h.entry.content: h for h in rv.memory.search("swiming lesons", mode="hybrid", limit=5)}
            evidence = hits[FACTS[0]].evidence if FACTS[0] in hits else None
            similarity[tolerant] = evidence.similarity or 0.0 if evidence is not None else 0.0
            if tolerant:
                meant = rv.memory.search("swim lesson", mode="vector", limit=1)
                assert meant[0].entry.content == FACTS[0] and meant[0].evidence is not None
                assert similarity[True] == pytest.approx(meant[0].evidence.similarity)
    assert similarity[True] > similarity[False] + 0.05, similarity


def test_a_role_word_the_memory_lacks_is_read_as_the_roles_other_name(engine: reverie.Reverie) -> None:
    """The word "mum" is no typo (an English word) and no entry holds it; the memory says "mother", so "mum" is
    read as "mother" (the role's other name most entries hold), and the fact is found by its words. A role word
    the memory holds, or one with no other name in it ("grandma"), stays as written."""
    assert corrected(engine, "when does Dan phone his mum") == ["dan", "phone", word("mother")]
    assert corrected(engine, "Dan's mother") == ["dan", word("mother")]
    assert corrected(engine, "grandma's recipes") == ["grandma", word("recipes")]
    (top, *_) = engine.memory.search("when does Dan phone his mum", mode="bm25")
    assert top.entry.content == FACTS[4]


def test_a_form_of_a_word_the_stemmer_left_apart_is_read_as_the_indexed_form(tmp_path: Path, clock: FakeClock) -> None:
    """The stemmer makes "allergi" of "allergy" and "allerg" of "allergic", "postgr" of "Postgres" and
    "postgresql" of "PostgreSQL": a query word no entry holds is read as the indexed form it extends or that
    extends it, by at most four letters, from six letters up. A word an entry holds, a short stem ("organ"
    is not "organis") and a misspelling (read as the word it misspells first) are not."""
    facts = (
        "Kenji has a mild peanut allergy and carries antihistamines.",
        "Fernweh's production database is PostgreSQL 16 on AWS RDS.",
        "The organisation moved its chat to Slack.",
        "Harbor moved to PaymentIntents in the payment service.",
    )
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}) as rv:
        for content in facts:
            rv.memory.save(content, dedup=False)
        rv.embed_pending()
        assert corrected(rv, "is Kenji allergic") == ["kenji", word("allergy")]
        assert corrected(rv, "which Postgres version") == [word("postgresql"), word("version")]
        assert corrected(rv, "organic chat") == ["organ", "chat"]
        assert corrected(rv, "PaymentIIntents") == [word("PaymentIntents")]
        (top, *_) = rv.memory.search("is the user allergic to anything?", mode="bm25")
        assert top.entry.content == facts[0]
