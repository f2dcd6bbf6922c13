"""Hybrid recall through the engine: embedding after saves, the vector index kept in step with edits,
archives, purges and other processes, model mismatches, failing embedders, and the real local model."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.errors import ModelMismatch
from reverie.recall import introduced
from reverie.testing import ScriptedOpenAIServer

HASH = {"provider": "hash", "background": False}


@contextmanager
def _remembering(home: Path, share: float, facts: list[str]) -> Iterator[reverie.Reverie]:
    """A new engine with the real embedder, ``recall.introduction_share`` at ``share``, holding ``facts``."""
    with reverie.open(home, embedding={"background": False}, recall={"introduction_share": share}) as rv:
        rv.memory.save_many([{"content": f} for f in facts])
        rv.embed_pending()
        yield rv


def ids(results: list[reverie.SearchHit]) -> list[str]:
    return [h.entry.id for h in results]


def test_a_save_is_searchable_by_bm25_before_its_vector_exists(rv: reverie.Reverie) -> None:
    saved = rv.memory.save("the lighthouse keeper logs the tides")
    assert rv.embedding_status()["pending"] == 1
    assert ids(rv.memory.search("lighthouse tides", mode="bm25")) == [saved.id]
    assert ids(rv.memory.search("lighthouse tides", mode="vector")) == []
    assert rv.embed_pending() == 1
    assert rv.embedding_status()["pending"] == 0
    found = rv.memory.search("lighthouse tides", mode="vector")
    assert ids(found) == [saved.id] and found.mode == "vector" and found[0].matched_by == "vector"
    hybrid = rv.memory.search("lighthouse tides")
    assert hybrid.mode == "hybrid" and hybrid[0].matched_by == "bm25+vector"


def test_an_edit_drops_the_stale_vector_and_the_next_embedding_follows_the_new_text(rv: reverie.Reverie) -> None:
    saved = rv.memory.save("coffee grinder settings for espresso")
    rv.embed_pending()
    assert ids(rv.memory.search("espresso grinder", mode="vector")) == [saved.id]
    rv.memory.edit(saved.id, content="train timetable for the weekend")
    assert rv.embedding_status()["pending"] == 1
    # The index replays the drop: the old text's vector no longer answers for this entry.
    assert ids(rv.memory.search("espresso grinder", mode="vector")) == []
    rv.embed_pending()
    assert ids(rv.memory.search("weekend timetable", mode="vector")) == [saved.id]


def test_archived_and_purged_entries_never_come_back_from_the_vector_index(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    kept = rv.memory.save("sailing knots and ropes").id
    gone = rv.memory.save("sailing knots and ropes, again", dedup=False).id  # a second entry, on purpose
    rv.embed_pending()
    rv.memory.archive(gone)
    assert ids(rv.memory.search("sailing knots", mode="vector")) == [kept]
    assert set(ids(rv.memory.search("sailing knots", mode="vector", include_archived=True))) == {kept, gone}
    clock.advance(days=91)
    assert rv.purge().purged == (gone,)
    assert ids(rv.memory.search("sailing knots", mode="vector", include_archived=True)) == [kept]
    assert rv.store.vectors.counts() == {"hash-256": 1}


def test_vector_search_respects_agent_and_user_scope(rv: reverie.Reverie) -> None:
    mine = rv.memory.save("quarterly budget review notes").id
    rv.memory.save("quarterly budget review notes", scope=Scope(agent_id="other"))
    private = rv.memory.save("quarterly budget review notes", scope=Scope(user_id="u1")).id
    rv.embed_pending()
    assert ids(rv.memory.search("budget review", mode="vector")) == [mine]
    assert set(ids(rv.memory.search("budget review", mode="vector", scope=Scope(user_id="u1")))) == {mine, private}
    assert ids(rv.memory.search("budget review", mode="vector", scope=Scope(user_id="u2"))) == [mine]


def test_another_process_sees_vectors_written_here_and_we_see_its_edits(tmp_path: Path) -> None:
    home = tmp_path / "shared"
    with reverie.open(home, embedding=HASH) as rv:
        first = rv.memory.save("orchard apples harvest").id
        rv.embed_pending()
        assert ids(rv.memory.search("apples harvest", mode="vector")) == [first]  # index now loaded here
        script = textwrap.dedent(
            f"""
            import reverie
            with reverie.open({str(home)!r}, embedding={HASH!r}) as other:
                other.memory.edit({first!r}, content="vineyard grapes harvest")
                print(other.memory.save("orchard apples picking").id)
                other.embed_pending()
            """
        )
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
        second = out.stdout.strip()
        # Our in-memory index replays the other process's writes: the edit and the new vector.
        assert ids(rv.memory.search("orchard apples", mode="vector")) == [second]
        assert ids(rv.memory.search("vineyard grapes", mode="vector")) == [first]


def test_a_model_change_is_refused_by_name_until_reindex(tmp_path: Path) -> None:
    home = tmp_path / "models"
    with reverie.open(home, embedding=HASH) as rv:
        rv.memory.save("one fact")
        rv.embed_pending()
    with pytest.raises(ModelMismatch) as refused:
        reverie.open(home, embedding={**HASH, "dim": 128})
    assert "hash-256" in str(refused.value) and "hash-128" in str(refused.value)
    with reverie.open(home, reindex=True, embedding={**HASH, "dim": 128}) as rv:
        assert rv.embedding_status()["pending"] == 1
        assert rv.embed_pending() == 1
        assert rv.store.vectors.counts() == {"hash-128": 1}
    with reverie.open(home, embedding={**HASH, "dim": 128}) as rv:  # the new model is now the store's
        assert ids(rv.memory.search("one fact", mode="vector"))


def test_a_failing_embedder_never_fails_a_save_and_search_says_it_fell_back(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(dim=32) as server:
        settings = {"provider": "openai", "endpoint": server.url, "model": "m", "dim": 32, "background": False}
        with reverie.open(tmp_path / "flaky", embedding=settings) as rv:
            saved = rv.memory.save("the ferry leaves at noon")
            server.fail_next(503)
            with pytest.raises(reverie.EmbeddingError, match="503"):
                rv.embed_pending()
            # The save stands and the entry waits for its vector.
            assert rv.memory.get(saved.id).content == "the ferry leaves at noon"
            assert rv.embedding_status()["pending"] == 1
            server.fail_next(503)
            results = rv.memory.search("ferry noon")
            assert ids(results) == [saved.id]
            assert results.mode == "bm25" and any("BM25 only" in note for note in results.notes)
            assert rv.embed_pending() == 1  # the server is healthy again: the entry gets its vector
            assert ids(rv.memory.search("ferry noon", mode="vector")) == [saved.id]


def test_the_background_worker_embeds_after_a_save(tmp_path: Path) -> None:
    with reverie.open(tmp_path / "bg", embedding={"provider": "hash"}) as rv:
        saved = rv.memory.save("background embedding works")
        deadline = time.monotonic() + 20
        while rv.embedding_status()["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rv.embedding_status()["pending"] == 0
        assert ids(rv.memory.search("background embedding", mode="vector")) == [saved.id]


def test_no_embedder_means_bm25_with_no_loss_of_function(tmp_path: Path) -> None:
    with reverie.open(tmp_path / "plain", embedding={"provider": "none"}) as rv:
        saved = rv.memory.save("plain keyword recall")
        results = rv.memory.search("keyword recall")
        assert ids(results) == [saved.id] and results.mode == "bm25"
        assert rv.embedding_status()["model"] is None and rv.embed_pending() == 0


def test_save_many_is_all_or_nothing_and_embeds_in_batches(rv: reverie.Reverie) -> None:
    with pytest.raises(reverie.ValidationError, match="item 1"):
        rv.memory.save_many([{"content": "fine"}, {"content": "  "}])
    assert rv.stats().live == 0
    results = rv.memory.save_many([{"content": f"fact number {i}", "tags": ["bulk"]} for i in range(150)])
    assert len(results) == 150 and rv.stats().live == 150
    assert rv.embed_pending() == 150
    assert rv.embedding_status()["pending"] == 0


def test_an_empty_query_browses(rv: reverie.Reverie, clock: FakeClock) -> None:
    old = rv.memory.save("older").id
    clock.advance(minutes=1)
    new = rv.memory.save("newer").id
    results = rv.memory.search("   ")
    assert results.mode == "browse" and ids(results) == [new, old]


def test_a_per_call_floor_can_empty_the_vector_results(rv: reverie.Reverie) -> None:
    rv.memory.save("lighthouse tides and the keeper")
    rv.embed_pending()
    assert rv.memory.search("lighthouse", mode="vector")
    assert list(rv.memory.search("lighthouse", mode="vector", min_similarity=0.99)) == []
    with pytest.raises(reverie.ValidationError):
        rv.memory.search("lighthouse", min_similarity=1.5)
    with pytest.raises(reverie.ValidationError):
        rv.memory.search("lighthouse", mode="telepathy")


def test_the_local_model_recalls_by_meaning(rv_local: reverie.Reverie) -> None:
    lisbon = rv_local.memory.save("Maya works from Lisbon and keeps Europe/Lisbon hours").id
    rv_local.memory.save("The Lantern backend is written in Python with FastAPI")
    rv_local.memory.save("Deploys happen on Tuesdays and Thursdays")
    assert rv_local.embed_pending() == 3
    # "located" shares no word with the answer (and "Maya" is in no other fact's neighbourhood of meaning):
    # the embedding has to carry it.
    results = rv_local.memory.search("Where is Maya located?", mode="vector")
    assert ids(results)[0] == lisbon
    assert rv_local.embedder is not None and rv_local.embedder.model_id == "all-MiniLM-L6-v2-int8"


def test_a_strong_answer_is_not_padded_with_hits_that_barely_relate(tmp_path: Path) -> None:
    """recall.relative_floor: with the real model, Mia's kiwi allergy relates to "grapes raisins" only through
    fruit (about 0.04 of the answer's score); it fills the list when the floor is off, never by default."""
    facts = [
        "Biscuit must never get grapes or raisins: the vet warned they can damage his kidneys.",
        "Mia is allergic to kiwi fruit; it makes her mouth itch.",
        "Biscuit is the family's beagle and loves the beach.",
        "Harbor deploys on Tuesdays after the 10:00 stand-up.",
    ]
    found: dict[float, list[str]] = {}
    for share in (0.0, 0.1):
        with reverie.open(
            tmp_path / f"floor-{share}", embedding={"background": False}, recall={"relative_floor": share}
        ) as rv:
            assert rv.recall.config.relative_floor == share
            rv.memory.save_many([{"content": f} for f in facts])
            rv.embed_pending()
            hits = rv.memory.search("Biscuit grapes raisins", limit=5)
            found[share] = [h.entry.content.split()[0] for h in hits]
            assert all(h.score >= share * hits[0].score for h in hits)
    assert found[0.0] == ["Biscuit", "Biscuit", "Mia"]
    assert found[0.1] == ["Biscuit", "Biscuit"]


def test_a_query_that_describes_someone_is_asked_again_by_their_name(tmp_path: Path) -> None:
    """recall.introduction_share, with the real model: "son's drug allergy" shares "son" with the introduction
    and only "allergy" with Aiko's; the answer names Leo and says "allergic". Asked again as "Leo's drug
    allergy", the answer ranks first, labelled ``introduction``; a question for the introduction itself does not
    ask again."""
    facts = [
        "Leo is Dan's son; he started primary school in September 2025.",
        "Leo is allergic to penicillin; doctors prescribe him clarithromycin instead.",
        "Aiko has a shellfish allergy.",
        "Margaret is Dan's mother; she lives in Leeds and phones every Sunday.",
        "Margaret had a hip replacement in October and spent four days in hospital.",
        "Harbor deploys on Tuesdays after the stand-up.",
        "Harbor is made of three services and a queue.",
        "Harbor is Northwind's payments platform: it takes card payments for the shop.",
    ]
    top: dict[float, dict[str, reverie.SearchHit]] = {}
    for share in (0.0, 0.9):
        with _remembering(tmp_path / f"intro-{share}", share, facts) as rv:
            queries = ("son's drug allergy", "Dan's mum's operation", "who is Dan's son?", "what does Harbor do?")
            top[share] = {q: rv.memory.search(q, limit=3)[0] for q in queries}
    assert not top[0.0]["son's drug allergy"].entry.content.startswith("Leo is allergic")
    assert not top[0.0]["Dan's mum's operation"].entry.content.startswith("Margaret had")
    allergy, operation = top[0.9]["son's drug allergy"], top[0.9]["Dan's mum's operation"]
    assert allergy.entry.content.startswith("Leo is allergic") and allergy.matched_by == "introduction"
    assert operation.entry.content.startswith("Margaret had") and operation.matched_by == "introduction"
    for hit, asked in ((allergy, "Leo's drug allergy"), (operation, "Margaret's operation")):
        assert hit.evidence is not None and hit.evidence.asked_as == asked
        assert hit.evidence.own + hit.evidence.context + hit.evidence.time == pytest.approx(hit.score)
    # A question for what a name is ranks its introduction first (with the share at 0, another Harbor fact).
    assert not top[0.0]["what does Harbor do?"].entry.content.startswith("Harbor is Northwind's")
    harbor = top[0.9]["what does Harbor do?"]
    assert harbor.entry.content.startswith("Harbor is Northwind's") and harbor.evidence is not None
    assert harbor.evidence.own + harbor.evidence.context + harbor.evidence.time == pytest.approx(harbor.score)
    for share in (0.0, 0.9):
        who = top[share]["who is Dan's son?"]
        assert who.entry.content.startswith("Leo is Dan's son") and who.matched_by == "bm25+vector"


def test_a_description_too_weak_to_answer_is_still_read_but_a_shared_word_is_not_enough(tmp_path: Path) -> None:
    """At ``min_evidence`` 0.3 the first ranking of "my wife's allergy" (one word of the introduction, own
    evidence about 0.27) is below the floor; the introduction is read anyway and the answer found by name. An
    off-topic question sharing one word of a longer description ("app") still gets nothing."""
    facts = [
        "My wife Layla is a paediatric nurse at the children's hospital.",
        "Layla is allergic to cats, so we can never have one at home.",
        "Beacon is the customer mobile app for iOS and Android.",
        "Beacon ships a new version every second Wednesday.",
    ]
    found: dict[float, list[reverie.SearchHit]] = {}
    for share in (0.0, 0.9):
        # Words read as written: "allergy" read as the indexed form "allergic" (recall.typo_tolerance) would
        # make the first ranking strong enough to answer, and this is about one too weak to.
        recall = {"introduction_share": share, "min_evidence": 0.3, "typo_tolerance": False}
        with reverie.open(tmp_path / f"weak-{share}", embedding={"background": False}, recall=recall) as rv:
            rv.memory.save_many([{"content": f} for f in facts])
            rv.embed_pending()
            found[share] = list(rv.memory.search("my wife's allergy", limit=3))
            assert ids(rv.memory.search("how do I deploy a Django app to Heroku")) == []
    assert found[0.0] == []  # below the floor: nothing rather than noise
    assert found[0.9][0].entry.content.startswith("Layla is allergic") and found[0.9][0].matched_by == "introduction"
    assert {h.matched_by for h in found[0.9]} == {"introduction"}  # the weak first ranking lends nothing


def test_a_misspelt_description_is_read_as_meant(tmp_path: Path) -> None:
    """The typo reading corrects "husbnd" to the indexed "husband"; the introduction is read in the query as
    meant, so the answer is found by name all the same."""
    facts = ["My husband Raj is a pilot with British Airways.", "Raj is allergic to shellfish.", "Priya is allergic."]
    with reverie.open(tmp_path / "typo", embedding={"background": False}) as rv:
        rv.memory.save_many([{"content": f} for f in facts])
        rv.embed_pending()
        (top, *_) = rv.memory.search("what is my husbnd allergic to?", limit=3)
    assert top.entry.content.startswith("Raj is allergic") and top.matched_by == "introduction"
    assert top.evidence is not None and top.evidence.asked_as == "what is Raj allergic to?"


def test_an_introduction_below_the_first_five_is_read_when_the_query_names_its_owner(tmp_path: Path) -> None:
    """ "Dan's side project's first stable release": Dan's other facts share "Dan" and "first", so "Quill is Dan's
    side project" ranks below the first five, where a description alone is not read. The query names its owner
    (Dan's) as well as its words, so it is read further down (``introduced.DEEP``) and asked again as "Quill's
    first stable release"."""
    facts = [
        "Quill is Dan's side project: a command-line tool that turns Markdown notes into a static website.",
        "Quill 1.0 was released on 2025-11-30.",
        "Dan is Omar's onboarding buddy for his first three months.",
        "Dan ran his first half marathon in April.",
        "Dan's first job was at a bakery in Leeds.",
        "Dan keeps a stable of three old bikes in the garage.",
        "Dan's release notes always start with the breaking changes.",
        "Dan plays five-a-side football on Tuesday evenings.",
        "Dan is a senior engineer on the platform team.",
    ]
    query = "Dan's side project's first stable release"
    found: dict[float, list[str]] = {}
    for share in (0.0, 0.9):
        with _remembering(tmp_path / f"deep-{share}", share, facts) as rv:
            found[share] = [h.entry.content for h in rv.memory.search(query, limit=10)]
            top = rv.memory.search(query, limit=3)[0]
    first = [c.split(":")[0] for c in found[0.0]]
    assert "Quill is Dan's side project" in first and first.index("Quill is Dan's side project") >= introduced.LOOK
    assert found[0.9][0] == facts[1]
    assert top.matched_by == "introduction" and top.evidence is not None
    assert top.evidence.asked_as == "Quill's first stable release"


def test_sequence_neighbours_share_relevance_when_enabled(tmp_path: Path) -> None:
    turns = [
        "Did you ever find a good bakery near the office?",
        "Yes, the one on Rua Augusta has the best pastel de nata.",
        "Unrelated: the train was late again today.",
    ]
    items = [{"content": t, "metadata": {"thread": "chat-1", "position": i}} for i, t in enumerate(turns)]
    for share, expect_answer in ((0.0, False), (0.5, True)):
        recall = {"neighbour_share": share, "thread_share": 0.0}
        with reverie.open(tmp_path / f"share-{share}", embedding=HASH, recall=recall) as rv:
            saved = rv.memory.save_many(items)
            rv.embed_pending()
            found = ids(rv.memory.search("good bakery near the office", mode="hybrid", limit=2))
            assert found[0] == saved[0].id
            assert (saved[1].id in found) is expect_answer


def test_a_thread_lends_its_evidence_to_its_turns(tmp_path: Path) -> None:
    """thread_share: the turns of the thread that holds the query's evidence rank above an equal match
    elsewhere, and a hit with no evidence of its own is labelled by what lent it its place."""
    chat = [
        "We booked the cabin by the lake for the first week of August.",
        "The kids want to try kayaking there.",
        "Remember to pack the life jackets and the paddles for the kayaking.",
    ]
    other = ["Kayaking lessons at the city pool start in spring."]
    items = [{"content": t, "metadata": {"thread": "holiday", "position": i}} for i, t in enumerate(chat)]
    items += [{"content": t, "metadata": {"thread": "news", "position": 0}} for t in other]
    for share in (0.0, 0.7):
        recall = {"neighbour_share": 0.0, "thread_share": share}
        with reverie.open(tmp_path / f"thread-{share}", embedding=HASH, recall=recall) as rv:
            saved = rv.memory.save_many(items)
            rv.embed_pending()
            hits = rv.memory.search("kayaking at the lake cabin", mode="hybrid", limit=4)
            found = ids(hits)
            lake, kayak, paddles, pool = (s.id for s in saved)
            assert found[0] == lake
            if share:
                assert found.index(paddles) < found.index(pool)  # the holiday thread holds the lake too
                assert all(h.evidence is not None and h.evidence.context > 0 for h in hits if h.entry.id != pool)
            else:
                assert all(h.evidence is not None and h.evidence.context == 0 for h in hits)
            assert {h.matched_by for h in hits} <= {"bm25", "vector", "bm25+vector", "thread"}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_parallel_fetch_ranks_exactly_as_one_thread(
    backend: str, tmp_path: Path, clock: FakeClock, request: pytest.FixtureRequest
) -> None:
    """recall.parallel only moves the vector signal to a worker thread: same hits, scores and notes."""
    where = tmp_path / "home" if backend == "sqlite" else request.getfixturevalue("pg_url")
    settings: dict[str, Any] = {"embedding": {"provider": "hash", "background": False}, "graph": {"extraction": "off"}}
    with reverie.open(where, clock=clock, **settings) as rv:
        user = Scope(user_id="ana")
        rv.memory.save_many([{"content": f"Ana packed the {w} tent for the trip to {p}."} for w, p in PAIRS])
        rv.memory.save("Ana's private note: the red tent has a torn seam.", scope=user)
        rv.memory.archive(rv.memory.save("The blue tent went to Oslo.").id)
        rv.embed_pending()
        queries = ["tent trip", "red tent seam", "Oslo", "what went to Lisbon", "nothing matches zebra"]

        def run(engine: reverie.Reverie) -> list[list[tuple[str, float, str]]]:
            out = []
            for scope in (Scope(), user):
                for query in queries:
                    found = engine.memory.search(query, scope=scope, mode="hybrid", limit=5)
                    out.append([(h.entry.id, round(h.score, 9), h.matched_by) for h in found])
            return out

        parallel = run(rv)
        assert any(t.name.startswith("reverie-recall") for t in threading.enumerate())  # the worker path ran
        assert any(hits for hits in parallel)
        # A second engine on the same store, configured to fetch both signals on the calling thread.
        with reverie.open(where, clock=clock, recall={"parallel": False}, **settings) as serial:
            assert run(serial) == parallel


PAIRS = [("red", "Lisbon"), ("green", "Oslo"), ("small", "Porto"), ("old", "Kyoto"), ("blue", "Denver")]
