"""LongTermMemory through the engine, on a real SQLite file and a FakeClock.

Covers the service's behaviour (save, get, search, browse, archive, restore, importance, edit, history,
restore_version, purge), its temporal fields, search robustness against FTS5 syntax, and provenance.
Input validation and settings layering live in ``test_engine.py``.
"""

from __future__ import annotations

import pytest

import reverie
from reverie import Change, NotFound, Scope, SearchHit, Tier, ValidationError
from reverie.clock import FakeClock


# -- save and get ----------------------------------------------------------------------------------------
def test_save_creates_an_entry_with_defaults_and_clock_times(rv: reverie.Reverie, clock: FakeClock) -> None:
    result = rv.memory.save("The user prefers tea")
    e = result.entry
    assert result.outcome == "created" and result.id == e.id and result.notes == ()
    assert len(e.id) == 12 and all(ch in "0123456789abcdef" for ch in e.id)
    assert (e.category, e.tags, e.tier, e.importance, e.pinned) == ("general", (), Tier.SEMANTIC, 0.5, False)
    assert (e.reinforcement_count, e.archived_at, e.expires_at, e.superseded_by) == (1, None, None, None)
    assert e.created_at == e.last_seen_at == clock.now()
    assert e.updated_at is None
    assert rv.memory.get(e.id) == e


def test_save_keeps_what_it_was_given(rv: reverie.Reverie) -> None:
    text = "  Café ☕ in 東京, party 🎉👩‍👩‍👧 e\u0301  \n"
    e = rv.memory.save(
        text,
        category="user-preferences/food",
        tags=[" coffee ", "coffee", "", "travel"],
        importance=0.9,
        tier="episodic",
        pinned=True,
        metadata={"note": "ü"},
    ).entry
    got = rv.memory.get(e.id)
    assert got.content == text
    assert got.tags == ("coffee", "travel")  # stripped, de-duplicated, empties dropped
    assert (got.category, got.importance, got.tier, got.pinned) == ("user-preferences/food", 0.9, Tier.EPISODIC, True)
    assert got.metadata == {"note": "ü"}


def test_save_and_get_respect_scope(rv: reverie.Reverie) -> None:
    mine = rv.memory.save("User one's secret", scope=Scope(user_id="u1")).id
    assert rv.memory.get(mine, scope=Scope(user_id="u1")).content == "User one's secret"
    for other in (None, Scope(user_id="u2"), Scope(agent_id="other", user_id="u1")):
        with pytest.raises(NotFound):
            rv.memory.get(mine, scope=other)
    for other in (None, Scope(user_id="u2")):
        with pytest.raises(NotFound):
            rv.memory.archive(mine, scope=other)
        with pytest.raises(NotFound):
            rv.memory.edit(mine, content="overwritten", scope=other)
    assert rv.memory.get(mine, scope=Scope(user_id="u1")).archived_at is None
    assert len(rv.memory.history(mine, scope=Scope(user_id="u1"))) == 1
    assert rv.memory.search("secret") == []
    assert [h.entry.id for h in rv.memory.search("secret", scope=Scope(user_id="u1"))] == [mine]


# -- edit, importance, history, restore_version ----------------------------------------------------------
def test_edit_moves_updated_at_but_not_last_seen_at(rv: reverie.Reverie, clock: FakeClock) -> None:
    saved = rv.memory.save("The user drinks coffee", tags=["drinks"]).entry
    edited_at = clock.advance(days=3)
    edited = rv.memory.edit(saved.id, content="The user drinks green tea", category="habits", tags=["tea"])
    assert edited == rv.memory.get(saved.id)
    assert (edited.content, edited.category, edited.tags) == ("The user drinks green tea", "habits", ("tea",))
    assert edited.updated_at == edited_at
    assert edited.last_seen_at == edited.created_at == saved.created_at
    assert [h.entry.id for h in rv.memory.search("green tea")] == [saved.id]
    assert rv.memory.search("coffee") == []


def test_an_edit_that_changes_nothing_writes_nothing(rv: reverie.Reverie, clock: FakeClock) -> None:
    saved = rv.memory.save("Same", category="c", tags=["t"]).entry
    clock.advance(hours=1)
    assert rv.memory.edit(saved.id, content="Same", category="c", tags=["t"]) == saved
    assert rv.memory.get(saved.id).updated_at is None
    assert len(rv.memory.history(saved.id)) == 1


def test_set_importance_changes_importance_only(rv: reverie.Reverie, clock: FakeClock) -> None:
    saved = rv.memory.save("Important-ish").entry
    clock.advance(days=1)
    changed = rv.memory.set_importance(saved.id, 0.95)
    assert changed.importance == rv.memory.get(saved.id).importance == 0.95
    assert changed.updated_at is None
    assert changed.last_seen_at == saved.last_seen_at
    assert [v.change for v in rv.memory.history(saved.id)] == [Change.CREATED, Change.IMPORTANCE]


def test_history_records_every_change_oldest_first(rv: reverie.Reverie, clock: FakeClock) -> None:
    eid = rv.memory.save("v1 text").id
    clock.advance(hours=1)
    rv.memory.edit(eid, content="v2 text")
    rv.memory.set_importance(eid, 0.7)
    rv.memory.archive(eid)
    rv.memory.restore(eid)
    history = rv.memory.history(eid)
    assert [v.version for v in history] == [1, 2, 3, 4, 5]
    assert [v.change for v in history] == [
        Change.CREATED,
        Change.EDITED,
        Change.IMPORTANCE,
        Change.ARCHIVED,
        Change.RESTORED,
    ]
    assert [v.content for v in history] == ["v1 text"] + ["v2 text"] * 4
    assert [v.archived for v in history] == [False, False, False, True, False]


def test_restore_version_brings_back_old_text_as_a_new_version(rv: reverie.Reverie, clock: FakeClock) -> None:
    eid = rv.memory.save("The original wording", category="first", tags=["one"]).id
    clock.advance(hours=1)
    rv.memory.edit(eid, content="A rewrite", category="second", tags=["two"])
    rv.memory.set_importance(eid, 0.3)
    reverted_at = clock.advance(hours=1)
    restored = rv.memory.restore_version(eid, 1)
    assert (restored.content, restored.category, restored.tags) == ("The original wording", "first", ("one",))
    assert restored.importance == 0.3  # only the text comes back
    assert restored.updated_at == reverted_at
    assert restored == rv.memory.get(eid)
    history = rv.memory.history(eid)
    assert [v.change for v in history][-1] == Change.REVERTED
    assert [v.content for v in history] == ["The original wording", "A rewrite", "A rewrite", "The original wording"]
    assert [h.entry.id for h in rv.memory.search("original wording")] == [eid]


# -- archive, restore, search, browse ---------------------------------------------------------------------
def test_archive_hides_from_search_and_browse_but_not_from_get(rv: reverie.Reverie, clock: FakeClock) -> None:
    eid = rv.memory.save("The user owns a kayak", category="hobbies").id
    archived_at = clock.advance(minutes=5)
    archived = rv.memory.archive(eid)
    assert archived.archived_at == archived_at == rv.memory.get(eid).archived_at
    assert rv.memory.search("kayak") == []
    assert [h.entry.id for h in rv.memory.search("kayak", include_archived=True)] == [eid]
    browse = rv.memory.browse()
    assert browse.entries == () and browse.taxonomy == ()
    assert rv.memory.archive(eid) == archived  # archiving twice is a no-op
    assert len(rv.memory.history(eid)) == 2
    restored = rv.memory.restore(eid)
    assert restored.archived_at is None
    assert [h.entry.id for h in rv.memory.search("kayak")] == [eid]
    assert rv.memory.restore(eid) == restored
    assert len(rv.memory.history(eid)) == 3


def test_search_ranks_the_best_match_first_and_respects_category_and_limit(rv: reverie.Reverie) -> None:
    for text in ("Weather is mild", "Coffee in the morning", "Trains at nine", "Budget meeting"):
        rv.memory.save(text, category="filler")
    weak = rv.memory.save("Lisbon came up once in a long and winding story about many other cities", category="a").id
    strong = rv.memory.save("Lisbon Lisbon", category="b/lisbon").id
    hits = rv.memory.search("lisbon", mode="bm25")
    assert [h.entry.id for h in hits] == [strong, weak]
    # Scores are min-max normalised over the candidates: the best is 1, the weakest 0.
    assert all(isinstance(h, SearchHit) and h.matched_by == "bm25" and 0 <= h.score <= 1 for h in hits)
    assert hits[0].score == 1.0 and hits[0].score > hits[1].score
    assert [h.entry.id for h in rv.memory.search("lisbon", category="a")] == [weak]
    assert [h.entry.id for h in rv.memory.search("lisbon", category="b/")] == [strong]
    assert len(rv.memory.search("lisbon", limit=1)) == 1


def test_search_finds_category_words_and_tags(rv: reverie.Reverie) -> None:
    eid = rv.memory.save("UTC+1 in winter", category="user-preferences/timezone", tags=["clock"]).id
    for query in ("preferences", "timezone", "clock"):
        assert [h.entry.id for h in rv.memory.search(query)] == [eid], query


def test_search_uses_the_configured_default_limit(rv: reverie.Reverie) -> None:
    for n in range(rv.memory.config.search_limit + 3):
        rv.memory.save(f"zebra sighting number {n}")
    assert len(rv.memory.search("zebra")) == rv.memory.config.search_limit


def test_browse_orders_by_last_seen_and_appends_the_full_taxonomy(rv: reverie.Reverie, clock: FakeClock) -> None:
    a = rv.memory.save("first", category="user/name").id
    clock.advance(hours=1)
    b = rv.memory.save("second", category="user/name").id
    clock.advance(hours=1)
    c = rv.memory.save("third", category="work").id
    clock.advance(hours=1)
    rv.memory.edit(a, content="first, edited")  # an edit is not a sighting
    browse = rv.memory.browse()
    assert [e.id for e in browse.entries] == [c, b, a]
    assert [(t.category, t.count) for t in browse.taxonomy] == [("user/name", 2), ("work", 1)]
    assert browse.category is None
    assert [e.id for e in rv.memory.browse(limit=2).entries] == [c, b]
    narrowed = rv.memory.browse(category="user")
    assert [e.id for e in narrowed.entries] == [b, a]
    assert narrowed.category == "user"
    assert narrowed.taxonomy == browse.taxonomy


def test_browse_shows_the_taxonomy_even_when_the_filter_matches_nothing(rv: reverie.Reverie) -> None:
    rv.memory.save("x", category="user/name")
    rv.memory.save("y", category="work")
    browse = rv.memory.browse(category="nothing-here")
    assert browse.entries == ()
    assert [(t.category, t.count) for t in browse.taxonomy] == [("user/name", 1), ("work", 1)]
    assert browse.category == "nothing-here"


# -- purge -----------------------------------------------------------------------------------------------
def test_purge_after_retention_keeps_the_high_value_floor(rv: reverie.Reverie, clock: FakeClock) -> None:
    keep = rv.memory.save("valuable", importance=0.8).id
    drop = rv.memory.save("just below the floor", importance=0.79).id
    pinned = rv.memory.save("pinned but unimportant", importance=0.0, pinned=True).id
    live = rv.memory.save("never archived", importance=0.0).id
    for eid in (keep, drop, pinned):
        rv.memory.archive(eid)
    clock.advance(days=91)
    late = rv.memory.save("archived recently", importance=0.0).id
    rv.memory.archive(late)

    report = rv.purge()

    assert report.purged == (drop,)
    assert set(report.protected) == {keep, pinned}
    with pytest.raises(NotFound):
        rv.memory.get(drop)
    with pytest.raises(NotFound):
        rv.memory.history(drop)
    for eid in (keep, pinned, live, late):
        assert rv.memory.get(eid).id == eid
    assert rv.stats().archived == 3


def test_purge_counts_retention_from_the_archive_time(rv: reverie.Reverie, clock: FakeClock) -> None:
    eid = rv.memory.save("old news", importance=0.1).id
    clock.advance(days=365)  # an old entry, but archived only now
    rv.memory.archive(eid)
    clock.advance(days=89)
    assert rv.memory.purge().purged == ()
    clock.advance(days=1)  # exactly the retention: archived at the cutoff
    assert rv.memory.purge().purged == (eid,)


def test_purge_can_be_restricted_to_one_agent(rv: reverie.Reverie, clock: FakeClock) -> None:
    mine = rv.memory.save("agent a", scope=Scope("agent-a")).id
    theirs = rv.memory.save("agent b", scope=Scope("agent-b")).id
    rv.memory.archive(mine, scope=Scope("agent-a"))
    rv.memory.archive(theirs, scope=Scope("agent-b"))
    clock.advance(days=91)
    assert rv.purge(agent_id="agent-a").purged == (mine,)
    assert rv.memory.get(theirs, scope=Scope("agent-b")).archived
    assert rv.purge().purged == (theirs,)


# -- search robustness -----------------------------------------------------------------------------------
FTS_SYNTAX = [
    '"', '"unbalanced', "lisbon\"", "*", "lis*", "lisbon*", "NEAR(", "NEAR(lisbon user", "NEAR(a b, 2)", "-",
    "-lisbon", "lisbon - user", ":", "content:lisbon", "tags:travel", "{content tags}: lisbon", "(", ")",
    "((lisbon", "lisbon))", "AND", "OR", "NOT", "lisbon AND", "OR lisbon", "NOT lisbon", "^lisbon", "+", "'",
    "\\", "%", "_", "!!!", "...", "?!", "@#$&", "   ", "", "\x00", "a" * 5000, "lisbon " * 200,
]  # fmt: skip


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_queries_with_fts_syntax_return_a_list_and_never_raise(rv: reverie.Reverie, lisbon: str, query: str) -> None:
    hits = rv.memory.search(query)
    assert isinstance(hits, list)
    assert all(isinstance(h, SearchHit) for h in hits)
    if "lisbon" in query.lower():
        assert lisbon in [h.entry.id for h in hits]


@pytest.mark.parametrize("query", ["*", "%", "_", "(", ")", "!!!", "...", "?!", "@#$&", "+", "'", "\\", "\x00"])
def test_punctuation_that_no_entry_contains_finds_nothing(rv: reverie.Reverie, lisbon: str, query: str) -> None:
    assert rv.memory.search(query) == []


@pytest.mark.parametrize("query", ["[", "]", '"'])
def test_json_punctuation_finds_nothing_either(rv: reverie.Reverie, lisbon: str, query: str) -> None:
    assert rv.memory.search(query) == []


@pytest.mark.parametrize(
    ("content", "query"),
    [
        ("The user lives in Lisbon", "isbo"),
        ("Party 🎉 tonight", "🎉"),
        ("東京タワーに行った", "東京"),
        # Not "xample.or": "xample" is one edit from the indexed "example", so BM25 reads it as that (typo tolerance).
        ("mail user@example.org", "ample.or"),
    ],
)
def test_the_substring_fallback_finds_what_the_index_cannot(rv: reverie.Reverie, content: str, query: str) -> None:
    eid = rv.memory.save(content).id
    rv.memory.save("An unrelated entry")
    hits = rv.memory.search(query)
    assert [(h.entry.id, h.matched_by, h.score) for h in hits] == [(eid, "substring", 0.0)]


def test_substring_matches_only_add_to_index_matches(rv: reverie.Reverie) -> None:
    indexed = rv.memory.save("Lisbon has trams").id
    partial = rv.memory.save("Lisbonians love custard tarts").id
    hits = rv.memory.search("lisbon")
    assert [(h.entry.id, h.matched_by) for h in hits] == [(indexed, "bm25"), (partial, "substring")]


def test_the_substring_fallback_finds_part_of_a_word_with_a_non_ascii_capital(rv: reverie.Reverie) -> None:
    eid = rv.memory.save("Über alles").id
    assert [h.entry.id for h in rv.memory.search("Übe")] == [eid]


def test_a_query_that_is_not_valid_unicode_never_leaks_a_driver_error(rv: reverie.Reverie, lisbon: str) -> None:
    try:
        result = rv.memory.search("lisbon \ud800")
    except ValidationError:
        return
    assert isinstance(result, list)


# -- provenance ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("source", "stored"),
    [
        ("user", "user"),
        (" User ", "user"),
        ("tool:web", "tool:web"),
        ("inference", "inferred"),
        ("inferred", "inferred"),
    ],
)
def test_known_sources_are_kept_in_metadata(rv: reverie.Reverie, source: str, stored: str) -> None:
    result = rv.memory.save("A sourced fact", source=source, metadata={"other": 1})
    assert result.notes == ()
    got = rv.memory.get(result.id)
    assert got.metadata == {"other": 1, "source": stored}
    assert got.source == stored


@pytest.mark.parametrize("source", ["gossip", "tool:", "tool:bad name", "users", ""])
def test_an_unknown_source_is_dropped_with_a_note(rv: reverie.Reverie, source: str) -> None:
    result = rv.memory.save("A rumour", source=source)
    assert "source" not in rv.memory.get(result.id).metadata
    assert result.entry.source is None
    assert len(result.notes) == 1 and "dropped" in result.notes[0] and repr(source) in result.notes[0]


def test_a_source_smuggled_through_metadata_is_not_stored_unchecked(rv: reverie.Reverie) -> None:
    gossip = rv.memory.save("A rumour", metadata={"source": "gossip"})
    inferred = rv.memory.save("A guess", metadata={"source": "inference"})
    assert rv.memory.get(gossip.id).source is None
    assert rv.memory.get(inferred.id).source == "inferred"
