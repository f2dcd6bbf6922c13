"""A correction said in other words (core.correction, memory.dedup's correction lookup) and a correction
answering for what it replaced (memory.successor): real SQLite, the engine's own save and search."""

from __future__ import annotations

import json
from datetime import timedelta

import reverie
from reverie.clock import FakeClock
from reverie.memory.successor import SUCCESSOR
from reverie.types import Scope


def _pair(
    rv: reverie.Reverie, clock: FakeClock, old: str, new: str, **new_args: object
) -> tuple[str, reverie.SaveResult]:
    first = rv.memory.save(old, category="project-context/lantern").entry.id
    rv.embed_pending()
    clock.advance(timedelta(days=2))
    later = rv.memory.save(new, **new_args)  # type: ignore[arg-type]
    rv.embed_pending()
    return first, later


def test_a_correction_saved_in_another_category_supersedes(rv: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _pair(
        rv,
        clock,
        "Lantern stores schedules in PostgreSQL 16",
        "Actually, Lantern stores schedules in PostgreSQL 17, not 16.",
    )
    assert later.outcome == "superseded" and later.entry.category == "general"
    assert later.contradiction is not None and later.contradiction.entry_id == first
    old = rv.memory.get(first)
    assert old.superseded_by == later.entry.id and old.content == "Lantern stores schedules in PostgreSQL 16"  # kept
    ids = [h.entry.id for h in rv.memory.search("which database does Lantern use")]
    assert ids[0] == later.entry.id and first not in ids
    shown = rv.memory.search("which database does Lantern use", include_superseded=True)
    assert any(h.entry.id == first and h.matched_by == "superseded" for h in shown)


def test_a_named_replacement_with_few_words_in_common_supersedes(rv: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _pair(
        rv,
        clock,
        "The team uses Trello for planning",
        "The team replaced Trello with Linear",
        category="project-context",
    )
    assert later.outcome == "superseded" and rv.memory.get(first).superseded_by == later.entry.id


def test_someone_elses_change_supersedes_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    for index, (old, new) in enumerate(
        [
            ("Hana uses a Windows laptop", "Leo swapped his Windows laptop for a MacBook"),
            ("We store backups in S3", "Acme moved their backups from S3 to Backblaze"),
            ("Oliver is learning Spanish", "Emma dropped Spanish and is learning French instead"),
        ]
    ):
        scope = Scope(agent_id=f"twin{index}")
        first = rv.memory.save(old, scope=scope).entry.id
        clock.advance(timedelta(days=1))
        later = rv.memory.save(new, scope=scope)
        assert later.outcome == "created" and later.contradiction is None, new
        assert rv.memory.get(first, scope=scope).current, old


def test_a_dated_import_of_an_earlier_change_supersedes_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    """The correction lookup only reads an entry said no later than the new text."""
    first = rv.memory.save("The team uses Trello for planning").entry.id
    said = clock.now() - timedelta(days=300)
    later = rv.memory.save("The team replaced Trello with Linear", observed_at=said)
    assert later.outcome == "created" and rv.memory.get(first).current


def test_a_question_worded_like_the_replaced_entry_finds_its_successor(rv: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _pair(
        rv, clock, "Maya's team uses Trello for sprint planning", "Maya's team replaced Trello with Linear"
    )
    assert rv.memory.get(first).superseded_by == later.entry.id
    hits = list(rv.memory.search("what does Maya's team use for sprint planning", limit=5))
    assert hits and hits[0].entry.id == later.entry.id
    found = hits[0]
    assert found.matched_by in (SUCCESSOR, "bm25", "bm25+vector")  # its own words may find it too
    assert all(h.entry.id != first for h in hits)
    # Only current entries answer, and only through the caller's filter: another category hides it.
    assert not [
        h for h in rv.memory.search("sprint planning", category="user-preferences") if h.entry.id == later.entry.id
    ]
    # The plain signals are not forwarded.
    assert all(h.matched_by != SUCCESSOR for h in rv.memory.search("sprint planning", mode="bm25"))


def test_a_query_for_the_old_value_finds_the_new_one(rv: reverie.Reverie, clock: FakeClock) -> None:
    first, later = _pair(rv, clock, "The wifi password is sunflower42", "The wifi password changed to bluebird77")
    assert rv.memory.get(first).superseded_by == later.entry.id
    hits = list(rv.memory.search("sunflower42", limit=5))
    assert [h.entry.id for h in hits] == [later.entry.id] and hits[0].matched_by == SUCCESSOR
    assert hits[0].score > 0
    assert list(rv.memory.search("sunflower42", limit=5, mode="bm25")) == []


def test_a_successor_among_the_hits_takes_the_superseded_match(rv: reverie.Reverie, clock: FakeClock) -> None:
    """The superseded text matched the question best: its successor, found by its own weaker evidence, is lifted
    above an entry that matches the question's words but not what it asks (as newer-first ranking would)."""
    rv.memory.save("Priya lives in Camden", category="people/priya")
    first, later = _pair(rv, clock, "Priya works at Google as a data engineer", "Priya left Google and joined Stripe")
    assert rv.memory.get(first).superseded_by == later.entry.id
    hits = list(rv.memory.search("where does Priya work", limit=5))
    assert hits[0].entry.id == later.entry.id
    assert hits[0].evidence is None or hits[0].evidence.succeeds == first
    asked_else = list(rv.memory.search("where does Priya live", limit=5))
    assert asked_else[0].entry.content == "Priya lives in Camden"  # half the words: not above the answer


def test_a_relation_said_in_other_words_is_found_and_superseded(rv: reverie.Reverie, clock: FakeClock) -> None:
    """A correction may share no word with what it corrects ("I moved to Bristol", "I live in Leeds"): the
    lookup also asks for the relation's other words (``relations`` of the stance vocabulary), and the slot
    reading (core.slot) reads the replaced place. The agent's other facts, the same shapes about something
    else, stay current."""
    kept = [
        rv.memory.save(text).entry.id
        for text in ("My sister lives in Cardiff", "The book club meets on Tuesdays", "The team standup is at 10:00")
    ]
    home = rv.memory.save("I live in Leeds").entry.id
    rv.embed_pending()
    clock.advance(timedelta(days=2))
    moved = rv.memory.save("I moved to Bristol last month")
    standup = rv.memory.save("The standup moved to 9:30")
    rv.embed_pending()
    assert moved.outcome == "superseded" and moved.contradiction is not None
    assert moved.contradiction.entry_id == home and rv.memory.get(home).superseded_by == moved.entry.id
    assert standup.outcome == "superseded" and rv.memory.get(kept[2]).superseded_by == standup.entry.id
    assert all(rv.memory.get(i).current for i in kept[:2])
    assert rv.memory.search("where do I live")[0].entry.id == moved.entry.id
    assert rv.memory.search("what time is the standup")[0].entry.id == standup.entry.id
    later = rv.memory.save("My brother moved to Edinburgh in March")  # someone else: supersedes nothing
    assert later.outcome == "created" and rv.memory.get(kept[0]).current


def test_a_successor_answers_for_two_words_of_the_question_or_all(rv: reverie.Reverie, clock: FakeClock) -> None:
    """One word of two ("user" of "where does the user live") does not let a superseded entry answer through its
    successor; a word of the same relation counts as that relation ("car" and "drive")."""
    rv.memory.save("The user lives in Lyon", category="user-preferences")
    _, standup = _pair(rv, clock, "The user's standup is at 9:15 every weekday", "Standup moved to 9:45")
    _, car = _pair(rv, clock, "I drive a Honda Civic", "I traded in the Civic for a Tesla Model 3")
    assert standup.outcome == "superseded" and car.outcome == "superseded"
    hits = list(rv.memory.search("where does the user live", limit=5))
    assert hits[0].entry.content == "The user lives in Lyon"
    assert all(h.entry.id != standup.entry.id for h in hits)
    driven = list(rv.memory.search("what car do I drive", limit=5))
    assert driven and driven[0].entry.id == car.entry.id


def test_a_successor_reads_the_deployments_relations(rv: reverie.Reverie, clock: FakeClock) -> None:
    """The successor lookup reads the home's stance-vocabulary file, edited while the engine runs: a team that
    calls its standup the scrum asks by that word."""
    _, standup = _pair(rv, clock, "The user's standup is at 9:15 every weekday", "Standup moved to 9:45")
    assert standup.outcome == "superseded"
    assert all(h.matched_by != SUCCESSOR for h in rv.memory.search("when is the scrum"))
    (rv.settings.home / "stance-vocabulary.json").write_text(json.dumps({"relations": [["standup", "scrum"]]}))
    hits = list(rv.memory.search("when is the scrum"))
    assert hits and hits[0].entry.id == standup.entry.id and hits[0].matched_by == SUCCESSOR


def test_corrections_with_asides_addresses_and_reversals(rv: reverie.Reverie, clock: FakeClock) -> None:
    """A negation said with asides supersedes; a new e-mail address supersedes the old; a reversed preference
    the stance check cannot read is kept as its own entry (never reinforced away); a question with a word of
    asking ("use") finds the successor of the entry it names."""
    allergy, said = _pair(
        rv, clock, "I am allergic to penicillin", "Turns out I'm not allergic to penicillin after all"
    )
    assert said.outcome == "superseded" and rv.memory.get(allergy).superseded_by == said.entry.id
    mail, new_mail = _pair(rv, clock, "Ben's email is ben@oldmail.com", "Ben's new email address is ben.k@fastmail.com")
    assert new_mail.outcome == "superseded" and rv.memory.get(mail).superseded_by == new_mail.entry.id
    email, reversed_ = _pair(
        rv, clock, "Jamal prefers email over phone calls", "Jamal now prefers phone calls to email"
    )
    assert reversed_.outcome == "created" and reversed_.entry.content == "Jamal now prefers phone calls to email"
    assert rv.memory.get(email).content == "Jamal prefers email over phone calls"
    _, laptop = _pair(rv, clock, "My laptop is a ThinkPad X1", "I replaced my ThinkPad with a MacBook Air")
    assert laptop.outcome == "superseded"
    hits = list(rv.memory.search("what laptop do I use", limit=3))
    assert hits and hits[0].entry.id == laptop.entry.id and hits[0].matched_by == SUCCESSOR
