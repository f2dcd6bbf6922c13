"""A correction is never swallowed (issue 17): a text that contradicts a stored one (a negation, an antonym, a
flipped comparison, a moved time) is a changed belief, not a restatement. Through every path that decides
whether two texts say the same thing — the save's lexical lookup, the semantic fold after embedding, the
forget sweep's cold fold, memory_semantic_consolidate and dream consolidation with a scripted model that
proposes the merge — both texts are kept and the newer one is the current belief. Real SQLite files (and
PostgreSQL for the save), the real bundled embedder for the semantic fold, a real loopback model server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from _stance_pairs import KINDS, TABLE
from _template import new_store_file
from reverie.bench.truth_said import CORRECTIONS, TWINS
from reverie.clock import FakeClock
from reverie.core.dedup import jaccard
from reverie.testing import ScriptedOpenAIServer
from reverie.tools import ToolContext, ToolRegistry
from reverie.types import Change, Tier

from ._api import client, make_keys, memory, serving
from ._dream import open_engine

LEXICAL = [pair for pair in TABLE + KINDS if jaccard(pair[0], pair[1]) >= 0.6]  # the save's own lookup finds them
# Paraphrases MiniLM puts above the 0.88 fold threshold, of each kind.
SEMANTIC = [
    ("Priya is allergic to peanuts.", "Priya isn't allergic to peanuts at all.", "negation"),
    ("Priya likes dark mode in her editor.", "In her code editor, Priya dislikes the dark mode.", "antonym"),
    ("Priya prefers tabs over spaces for indentation.", "For indenting, Priya favours spaces over tabs.", "order"),
    ("Priya works remotely now.", "Priya previously worked remotely from home.", "time"),
]
ONE_OF_EACH = [
    ("Priya is allergic to peanuts.", "Priya is not allergic to peanuts.", "negation"),
    ("Priya likes dark mode in her editor.", "Priya dislikes dark mode in her editor.", "antonym"),
    ("Priya prefers tabs over spaces.", "Priya prefers spaces over tabs.", "order"),
    ("Kenji Sato is on call this week.", "Kenji Sato was on call last week.", "time"),
]


def assert_changed_belief(rv: reverie.Reverie, older_id: str, newer_id: str, *, query: str) -> None:
    """Both texts kept; the newer current; the older superseded by it, unarchived, with its end of validity;
    search shows the newer and the older only when asked."""
    older, newer = rv.memory.get(older_id), rv.memory.get(newer_id)
    assert not older.archived and older.superseded_by == newer_id and older.valid_to is not None
    assert newer.current and not older.current
    assert older_id in newer.metadata["supersedes"]
    assert rv.memory.history(older_id)[-1].change is Change.CONTRADICTED
    found = [h.entry.id for h in rv.memory.search(query, limit=10)]
    assert newer_id in found and older_id not in found
    asked = {h.entry.id: h.matched_by for h in rv.memory.search(query, limit=10, include_superseded=True)}
    assert asked.get(older_id) == "superseded"


@pytest.fixture(params=["sqlite", "postgresql"])
def rv_any(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, sqlite_template: Path
) -> Iterator[reverie.Reverie]:
    options: dict[str, Any] = {"embedding": {"provider": "hash", "background": False}}
    if request.param == "postgresql":
        options["store"] = {"url": request.getfixturevalue("pg_url")}
    else:
        new_store_file(sqlite_template, tmp_path / "home" / "reverie.db", clock.now())
    with reverie.open(tmp_path / "home", clock=clock, **options) as engine:
        yield engine


# -- the save --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("first", "second", "kind"), TABLE, ids=[t[2] + "-" + t[0][:20] for t in TABLE])
def test_each_contradiction_of_the_table_supersedes_on_both_backends(
    rv_any: reverie.Reverie, clock: FakeClock, first: str, second: str, kind: str
) -> None:
    rv = rv_any
    old = rv.memory.save(first, category="people")
    clock.advance(timedelta(hours=1))
    new = rv.memory.save(second, category="people")
    assert old.outcome == "created" and new.outcome == "superseded" and new.id != old.id
    assert new.entry.content == second  # the new text is stored whole, as said
    found = new.contradiction
    assert found is not None and (found.entry_id, found.kind, found.superseded) == (old.id, kind, True)
    assert any(old.id in note and "current belief" in note and "kept as superseded" in note for note in new.notes)
    assert_changed_belief(rv, old.id, new.id, query=first)
    assert rv.memory.get(old.id).valid_to == clock.now().isoformat()


@pytest.mark.parametrize(("first", "second", "kind"), LEXICAL, ids=[t[2] + "-" + t[0][:24] for t in LEXICAL])
def test_one_of_each_kind_supersedes_at_save(
    rv: reverie.Reverie, clock: FakeClock, first: str, second: str, kind: str
) -> None:
    old = rv.memory.save(first)
    clock.advance(timedelta(minutes=5))
    new = rv.memory.save(second)
    assert new.outcome == "superseded" and new.contradiction is not None and new.contradiction.kind == kind
    assert_changed_belief(rv, old.id, new.id, query=first)


def test_restating_the_current_belief_reinforces_it_and_a_reversal_back_supersedes_again(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    allergic = rv.memory.save("Priya is allergic to peanuts.")
    clock.advance(days=1)
    not_allergic = rv.memory.save("Priya is not allergic to peanuts.")
    again = rv.memory.save("Priya is NOT allergic to peanuts.")  # re-cased restatement of the current belief
    assert again.outcome == "reinforced" and again.id == not_allergic.id
    clock.advance(days=1)
    back = rv.memory.save("Priya is allergic to peanuts again.")
    assert back.outcome == "superseded" and back.contradiction is not None
    assert back.contradiction.entry_id == not_allergic.id
    assert [h.entry.id for h in rv.memory.search("is Priya allergic to peanuts", limit=5)] == [back.id]
    every = {allergic.id, not_allergic.id, back.id}
    assert {h.entry.id for h in rv.memory.search("Priya peanuts", limit=10, include_superseded=True)} == every


def test_stance_words_never_make_two_different_facts_look_alike(rv: reverie.Reverie) -> None:
    """The save's lookup compares what texts are about: shared stance words ("no longer") do not make two
    facts one, and an antonym counts as its axis, not as nothing ("remotely" is not "from the office")."""
    gluten = rv.memory.save("Leila is no longer allergic to gluten.")
    eggs = rv.memory.save("Leila is no longer allergic to eggs.")
    assert eggs.outcome == "created" and rv.memory.get(gluten.id).content == "Leila is no longer allergic to gluten."
    rv.memory.save("Priya works remotely.")
    office = rv.memory.save("Priya works from the office.")
    assert office.outcome == "created"


def test_a_correction_with_a_typo_still_supersedes(rv: reverie.Reverie) -> None:
    old = rv.memory.save("Harbor deploys on Tuesdays.")
    new = rv.memory.save("Harbor never deplys on Tuesdays.")
    assert new.outcome == "superseded" and rv.memory.get(old.id).superseded_by == new.id


def test_keep_both_keeps_both_current_and_still_tells_the_caller(tmp_path: Path) -> None:
    with reverie.open(tmp_path, embedding={"provider": "none"}, memory={"on_contradiction": "keep_both"}) as rv:
        old = rv.memory.save("Harbor deploys on Tuesdays.")
        new = rv.memory.save("Harbor never deploys on Tuesdays.")
        assert new.outcome == "created" and new.contradiction is not None and not new.contradiction.superseded
        assert "both are kept as current" in new.notes[-1]
        assert rv.memory.get(old.id).current and rv.memory.get(new.id).current
        findings = rv.lint.run().findings
        assert [(f.kind, f.newer_id, f.older_id) for f in findings] == [("stance", new.id, old.id)]
        assert "never" in findings[0].newer_specifics


def test_restore_makes_a_superseded_entry_current_again(rv: reverie.Reverie) -> None:
    old = rv.memory.save("The nightly backup job is on.")
    new = rv.memory.save("The nightly backup job is off.")
    assert new.outcome == "superseded" and not rv.memory.get(old.id).current
    restored = rv.memory.restore(old.id)
    assert restored.current and restored.valid_to is None and "contradiction" not in restored.metadata
    assert {h.entry.id for h in rv.memory.search("nightly backup job", limit=5)} == {old.id, new.id}


def test_lint_lists_superseded_pairs_with_their_evidence(rv: reverie.Reverie) -> None:
    old = rv.memory.save("Priya likes dark mode in her editor.")
    new = rv.memory.save("Priya dislikes dark mode in her editor.")
    report = rv.lint.run()
    assert report.findings == ()
    assert [(f.kind, f.newer_id, f.older_id, f.measure) for f in report.superseded] == [
        ("superseded", new.id, old.id, "antonym")
    ]
    assert (report.superseded[0].older_specifics, report.superseded[0].newer_specifics) == (("likes",), ("dislikes",))


def test_the_save_memory_tool_tells_the_model_both_ids(rv: reverie.Reverie) -> None:
    tools, ctx = ToolRegistry(rv), ToolContext(agent_id="default")
    tools.call("save_memory", {"content": "Kenji Sato is on call this week."}, ctx)
    told = tools.call("save_memory", {"content": "Kenji Sato was on call last week."}, ctx)
    assert not told.is_error, told.text
    assert told.data["outcome"] == "superseded"
    earlier = told.data["contradicts"]["id"]
    assert earlier != told.data["id"] and f"[{earlier}]" in told.text and "current belief" in told.text
    assert "Already known" not in told.text


def test_memory_explore_walks_the_supersession_both_ways(rv: reverie.Reverie) -> None:
    old = rv.memory.save("Harbor deploys on Tuesdays.")
    new = rv.memory.save("Harbor never deploys on Tuesdays.")
    tools, ctx = ToolRegistry(rv), ToolContext(agent_id="default")
    forward = tools.call("memory_explore", {"id": new.id}, ctx).data["related"]
    assert {(r["id"], r["relation"]) for r in forward} >= {(old.id, "supersedes")}
    back = tools.call("memory_explore", {"id": old.id}, ctx).data["related"]
    assert (new.id, "superseded_by") in {(r["id"], r["relation"]) for r in back}
    assert [r for r in forward if r["id"] == old.id][0]["valid_to"] is not None


# -- the semantic fold after embedding -----------------------------------------------------------------------
@pytest.mark.parametrize(("first", "second", "kind"), SEMANTIC, ids=[t[2] for t in SEMANTIC])
def test_the_semantic_fold_supersedes_instead_of_folding(
    tmp_path: Path, clock: FakeClock, first: str, second: str, kind: str
) -> None:
    """The save's lexical lookup is made exact-only (threshold 1.0), so these paraphrases reach the fold after
    embedding, as paraphrases with fewer shared words do at the default threshold."""
    memory = {"dedupe_lexical_similarity_threshold": 1.0}
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}, memory=memory) as rv:
        old = rv.memory.save(first)
        clock.advance(timedelta(minutes=5))
        new = rv.memory.save(second)
        assert new.outcome == "created" and rv.memory.get(new.id).fold_pending  # the lexical lookup missed it
        rv.embed_pending()
        assert rv.memory.get(new.id).current and not rv.memory.get(new.id).fold_pending  # not folded away
        assert_changed_belief(rv, old.id, new.id, query=first)
        assert rv.memory.get(old.id).metadata["contradiction"]["kind"] == kind


# Corrections as people say them (one of each cue), and the same shapes about something else.
SAID_CORRECTIONS = [
    c
    for c in CORRECTIONS
    if c[1].startswith(("Actually, Dan's", "No, the deploy", "Correction: Maya", "The rent went"))
]
SAID_TWINS = [t for t in TWINS if t[1].startswith(("Dan's eye test", "Lantern deploys", "Lucy's flat"))]


def _said_later(rv: reverie.Reverie, clock: FakeClock, first: str, second: str) -> tuple[str, str]:
    """``first`` saved and embedded, two days later ``second``: both ids."""
    old = rv.memory.save(first)
    rv.embed_pending()
    clock.advance(timedelta(days=2))
    new = rv.memory.save(second)
    rv.embed_pending()
    return old.id, new.id


@pytest.mark.parametrize(("first", "second", "query"), SAID_CORRECTIONS, ids=[c[1][:24] for c in SAID_CORRECTIONS])
def test_a_correction_that_says_so_supersedes(
    tmp_path: Path, clock: FakeClock, first: str, second: str, query: str
) -> None:
    """Before the correction cues (a value taken back by name, an opening "No,", "Correction:", "went up to")
    each of these was saved as a new fact beside the old one, and a search ranked the old value first."""
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}) as rv:
        old_id, new_id = _said_later(rv, clock, first, second)
        assert_changed_belief(rv, old_id, new_id, query=query)
        assert rv.memory.get(old_id).metadata["contradiction"]["kind"] == "value"


@pytest.mark.parametrize(("first", "second"), SAID_TWINS, ids=[t[1][:24] for t in SAID_TWINS])
def test_a_value_taken_back_about_something_else_supersedes_nothing(
    tmp_path: Path, clock: FakeClock, first: str, second: str
) -> None:
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}) as rv:
        old_id, new_id = _said_later(rv, clock, first, second)
        assert rv.memory.get(old_id).current and rv.memory.get(new_id).current
        assert rv.memory.get(new_id).content == second


def test_the_semantic_fold_still_folds_a_paraphrase_of_the_same_stance(tmp_path: Path, clock: FakeClock) -> None:
    memory = {"dedupe_lexical_similarity_threshold": 1.0}
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}, memory=memory) as rv:
        old = rv.memory.save("Priya is not allergic to peanuts.")
        new = rv.memory.save("Priya isn't allergic to peanuts at all.")
        rv.embed_pending()
        folded = rv.memory.get(new.id)
        assert folded.archived and folded.superseded_by == old.id and rv.memory.get(old.id).current


# -- the forget sweep's cold fold ----------------------------------------------------------------------------
@pytest.mark.parametrize(("first", "second", "kind"), ONE_OF_EACH, ids=[t[2] for t in ONE_OF_EACH])
def test_the_cold_fold_keeps_both_and_the_newer_current(
    tmp_path: Path, clock: FakeClock, first: str, second: str, kind: str
) -> None:
    options: dict[str, Any] = {"embedding": {"background": False}, "decay": {"dedup_cold_clusters": True}}
    with reverie.open(tmp_path, clock=clock, **options) as rv:
        old = rv.memory.save(first, tier=Tier.EPISODIC, dedup=False)  # both live: the save did not pair them
        clock.advance(timedelta(minutes=5))
        new = rv.memory.save(second, tier=Tier.EPISODIC, dedup=False)
        rv.embed_pending()
        clock.advance(timedelta(days=400))  # both cold
        report = rv.aging.forget()
        assert report.superseded == () and report.contradicted == (old.id,)  # not folded: superseded
        older = rv.memory.get(old.id)
        assert older.content == first and not older.archived and older.superseded_by == new.id
        # The newer entry is as cold as before: the sweep evicts it like any cold entry (archived, restorable),
        # while the superseded one is never aged out. Restored, it is the current belief.
        assert new.id in report.archived and rv.memory.get(new.id).superseded_by is None
        rv.memory.restore(new.id)
        assert_changed_belief(rv, old.id, new.id, query=first)
        assert rv.memory.get(new.id).content == second


# -- memory_semantic_consolidate ------------------------------------------------------------------------------
@pytest.mark.parametrize(("first", "second", "kind"), ONE_OF_EACH, ids=[t[2] for t in ONE_OF_EACH])
def test_semantic_consolidate_never_archives_a_contradicting_member(
    tmp_path: Path, clock: FakeClock, first: str, second: str, kind: str
) -> None:
    agents = {"default": {"allow_self_consolidation": True}}
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}, agents=agents) as rv:
        old = rv.memory.save(first, dedup=False)
        clock.advance(timedelta(minutes=5))
        new = rv.memory.save(second, dedup=False)
        rv.embed_pending()
        tools, ctx = ToolRegistry(rv), ToolContext(agent_id="default")
        groups = tools.call("memory_semantic_duplicates", {}, ctx).data["groups"]
        assert groups and groups[0]["keep"]["id"] == new.id and groups[0]["members"][0]["covered"] is False
        done = tools.call("memory_semantic_consolidate", {}, ctx).data
        assert done["archived"] == [] and done["groups"][0]["contradicted"] == [old.id]
        assert_changed_belief(rv, old.id, new.id, query=first)


# -- dream consolidation with a scripted model that proposes the merge -----------------------------------------
@pytest.mark.parametrize(("first", "second", "kind"), ONE_OF_EACH, ids=[t[2] for t in ONE_OF_EACH])
def test_dream_consolidation_refuses_the_merge_and_supersedes(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, first: str, second: str, kind: str
) -> None:
    with open_engine(home, clock, server) as rv:
        old = rv.memory.save(first, dedup=False).id
        clock.advance(timedelta(minutes=5))
        new = rv.memory.save(second, dedup=False).id
        merged = {"content": first, "sourceIds": [old, new]}  # the model keeps one stance and drops the other
        server.script_chat([json.dumps({"toDelete": [new], "toSave": [merged]})])
        report = rv.dream.run()
        assert report.phase == "completed", report.as_dict()
        counts = report.passes["consolidation"].counts
        assert (counts["merged"], counts["rejected"], counts["contradictions"]) == (0, 1, 1)
        live = {e.id for e in rv.store.facts.iter_all("default") if not e.archived}
        assert live == {old, new}  # no merged entry, nothing archived; the toDelete of a kept source lost
        assert_changed_belief(rv, old, new, query=first)


def test_dream_consolidation_refuses_a_merge_that_flips_a_stance(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_engine(home, clock, server, dream={"merge_repair_enabled": False}) as rv:
        deploys = rv.memory.save("Harbor deploys on Tuesdays.", dedup=False).id
        oncall = rv.memory.save("Kenji is on call for Harbor deploys.", dedup=False).id
        merged = {
            "content": "Harbor never deploys on Tuesdays; Kenji is on call for them.",
            "sourceIds": [deploys, oncall],
        }
        server.script_chat([json.dumps({"toDelete": [], "toSave": [merged]})])
        counts = rv.dream.run().passes["consolidation"].counts
        assert (counts["merged"], counts["contradictions"]) == (0, 1)
        assert rv.memory.get(deploys).current and rv.memory.get(oncall).current  # nothing superseded either


# -- the API ---------------------------------------------------------------------------------------------------
def test_the_api_answers_superseded_with_both_ids(rv: reverie.Reverie) -> None:
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.a) as http:
        first = http.post(memory("a", "/entries"), json={"content": "Priya prefers tabs over spaces."})
        second = http.post(memory("a", "/entries"), json={"content": "Priya prefers spaces over tabs."})
        assert first.status_code == second.status_code == 201
        body = second.json()
        assert body["outcome"] == "superseded" and body["contradicts"]["id"] == first.json()["entry"]["id"]
        assert body["contradicts"]["kind"] == "order" and body["contradicts"]["superseded"] is True
        older = http.get(memory("a", f"/entries/{first.json()['entry']['id']}")).json()
        assert older["superseded_by"] == body["entry"]["id"] and older["archived"] is False


def test_a_correction_in_another_category_supersedes_and_answers_for_the_old_words_on_both_backends(
    rv_any: reverie.Reverie, clock: FakeClock
) -> None:
    """core.correction at save and memory.successor at search, through each store's SQL (the partial index of
    superseded entries on both)."""
    rv = rv_any
    old = rv.memory.save("The team uses Trello for sprint planning", category="project-context")
    clock.advance(timedelta(days=1))
    new = rv.memory.save("The team replaced Trello with Linear")
    assert new.outcome == "superseded" and rv.memory.get(old.id).superseded_by == new.id
    hits = list(rv.memory.search("what does the team use for sprint planning", limit=5))
    assert hits and hits[0].entry.id == new.id and all(h.entry.id != old.id for h in hits)
    again = rv.memory.save("The team uses Linear boards for the hiring pipeline", category="project-context")
    assert again.outcome == "created"  # a write: the superseded entries are read again, still found
    assert [h.entry.id for h in rv.memory.search("sprint planning Trello", limit=5)][0] == new.id
