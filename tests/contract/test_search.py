"""FactRepository reads over many entries: search, search_substring, recent, taxonomy, and the FactFilter."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reverie.storage.base import Store
from reverie.types import CategoryCount, Change, MemoryEntry, Scope

from .support import AGENT, T0, at, eid, entry, hit_ids, ids, match, view

FILLER = [
    "The weather was mild all week",
    "Coffee tastes better in the morning",
    "Trains leave from platform nine",
    "The garden needs watering on Sundays",
    "A meeting about budgets ran long",
]


def add(store: Store, *entries: MemoryEntry) -> None:
    for e in entries:
        store.facts.add(e, at=T0)


def add_filler(store: Store, first: int = 100) -> None:
    """Unrelated entries, so a searched term is rare and BM25's idf stays meaningful."""
    add(store, *(entry(first + i, text, category="filler") for i, text in enumerate(FILLER)))


# -- search ----------------------------------------------------------------------------------------------
def test_search_finds_a_content_word_with_a_positive_score(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "The user lives in Lisbon"))
    hits = store.facts.search(match("lisbon"), view(), 10)
    assert hit_ids(hits) == [eid(1)]
    assert hits[0][1] > 0
    assert hits[0][0] == entry(1, "The user lives in Lisbon")


def test_search_returns_the_best_match_first(store: Store) -> None:
    add_filler(store)
    weak = entry(1, "Lisbon is one city among many the user once read about in a long travel magazine article")
    strong = entry(2, "Lisbon, Lisbon, Lisbon")
    add(store, weak, strong)
    hits = store.facts.search(match("lisbon"), view(), 10)
    assert hit_ids(hits) == [strong.id, weak.id]
    scores = [score for _, score in hits]
    assert all(score > 0 for score in scores)
    assert scores[0] > scores[1]


def test_search_ors_the_terms_and_ranks_entries_matching_more_of_them_higher(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "hiking boots for the alps"), entry(2, "boots"), entry(3, "nothing relevant"))
    hits = store.facts.search(match("hiking boots alps"), view(), 10)
    assert hit_ids(hits) == [eid(1), eid(2)]


def test_category_words_are_searchable(store: Store) -> None:
    add_filler(store)
    tz = entry(1, "Europe/Lisbon, UTC+0 in winter", category="user-preferences/timezone")
    add(store, tz)
    for word in ("preferences", "timezone", "user preferences"):
        assert hit_ids(store.facts.search(match(word), view(), 10)) == [tz.id], word


def test_tags_are_searchable(store: Store) -> None:
    add_filler(store)
    tagged = entry(1, "Saturn's rings are mostly ice", tags=("astronomy", "night sky"))
    add(store, tagged)
    for word in ("astronomy", "sky"):
        assert hit_ids(store.facts.search(match(word), view(), 10)) == [tagged.id], word


def test_search_respects_the_limit(store: Store) -> None:
    add(store, *(entry(n, f"zebra number {n}") for n in range(1, 8)))
    assert len(store.facts.search(match("zebra"), view(), 3)) == 3
    assert len(store.facts.search(match("zebra"), view(), 100)) == 7


def test_search_follows_writes_and_sees_the_new_text_only(store: Store) -> None:
    add_filler(store)
    e = entry(1, "The user drives a bicycle")
    add(store, e)
    store.facts.write(replace(e, content="The user drives a tram", tags=("commute",)), change=Change.EDITED, at=T0)
    assert store.facts.search(match("bicycle"), view(), 10) == []
    assert hit_ids(store.facts.search(match("tram"), view(), 10)) == [e.id]
    assert hit_ids(store.facts.search(match("commute"), view(), 10)) == [e.id]


def test_search_of_a_word_nobody_used_is_empty(store: Store) -> None:
    add_filler(store)
    assert store.facts.search(match("xylophone"), view(), 10) == []


# -- search_substring ------------------------------------------------------------------------------------
def test_search_substring_finds_part_of_a_word(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "The user lives in Lisbon"))
    assert store.facts.search(match("isbo"), view(), 10) == []  # the index cannot see inside a word
    assert ids(store.facts.search_substring("isbo", view(), 10, frozenset())) == [eid(1)]


def test_search_substring_is_case_insensitive_for_ascii(store: Store) -> None:
    add(store, entry(1, "The user lives in Lisbon"))
    assert ids(store.facts.search_substring("LISBON", view(), 10, frozenset())) == [eid(1)]
    assert ids(store.facts.search_substring("lIsB", view(), 10, frozenset())) == [eid(1)]


def test_search_substring_looks_in_tags_and_category(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "x", tags=("Photography",)), entry(2, "y", category="projects/renovation"))
    assert ids(store.facts.search_substring("tograph", view(), 10, frozenset())) == [eid(1)]
    assert ids(store.facts.search_substring("renova", view(), 10, frozenset())) == [eid(2)]


def test_search_substring_finds_emoji_and_cjk(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "Party 🎉 tonight"), entry(2, "東京タワーに行った"))
    assert ids(store.facts.search_substring("🎉", view(), 10, frozenset())) == [eid(1)]
    assert ids(store.facts.search_substring("東京", view(), 10, frozenset())) == [eid(2)]


def test_search_substring_is_most_recently_seen_first(store: Store) -> None:
    add(
        store,
        entry(1, "zebra one", seen=at(days=1)),
        entry(2, "zebra two", seen=at(days=3)),
        entry(3, "zebra three", seen=at(days=2)),
    )
    assert ids(store.facts.search_substring("zebra", view(), 10, frozenset())) == [eid(2), eid(3), eid(1)]


def test_search_substring_respects_exclude_and_limit(store: Store) -> None:
    add(store, *(entry(n, f"zebra {n}", seen=at(hours=n)) for n in range(1, 6)))
    everything = ids(store.facts.search_substring("zebra", view(), 10, frozenset()))
    assert everything == [eid(5), eid(4), eid(3), eid(2), eid(1)]
    # Excluding the best ones must still fill the limit from the rest.
    got = ids(store.facts.search_substring("zebra", view(), 2, frozenset({eid(5), eid(4)})))
    assert got == [eid(3), eid(2)]
    got = ids(store.facts.search_substring("zebra", view(), 10, frozenset({eid(3), eid(999)})))
    assert got == [eid(5), eid(4), eid(2), eid(1)]


@pytest.mark.parametrize("needle", ["%", "_", "*", "\\", "'"])
def test_search_substring_treats_wildcard_characters_literally(store: Store, needle: str) -> None:
    add(store, entry(1, "plain words only"), entry(2, f"a literal {needle} sign"))
    assert ids(store.facts.search_substring(needle, view(), 10, frozenset())) == [eid(2)]


def test_search_substring_finds_its_exact_text_with_non_ascii_capitals(store: Store) -> None:
    add(store, entry(1, "Über alles"), entry(2, "ÉCOLE normale"))
    assert ids(store.facts.search_substring("Über", view(), 10, frozenset())) == [eid(1)]
    assert ids(store.facts.search_substring("ÉCOLE", view(), 10, frozenset())) == [eid(2)]


@pytest.mark.parametrize("needle", ["[", "]", '"', ","])
def test_search_substring_does_not_match_the_tags_encoding(store: Store, needle: str) -> None:
    add(store, entry(1, "no tags here"), entry(2, "two tags here", tags=("alpha", "beta")))
    assert store.facts.search_substring(needle, view(), 10, frozenset()) == []


def test_search_substring_finds_a_tag_with_quotes_by_its_exact_text(store: Store) -> None:
    add(store, entry(1, "greeting", tags=('say "hi"', "back\\slash")))
    assert ids(store.facts.search_substring('say "hi"', view(), 10, frozenset())) == [eid(1)]
    assert ids(store.facts.search_substring("back\\slash", view(), 10, frozenset())) == [eid(1)]


# -- recent ----------------------------------------------------------------------------------------------
def test_recent_is_last_seen_at_descending_and_respects_the_limit(store: Store) -> None:
    add(
        store,
        entry(1, "oldest", created_at=at(days=-9), seen=at(days=-3)),
        entry(2, "newest", created_at=at(days=-30), seen=at(days=-1)),
        entry(3, "middle", created_at=at(days=-1), seen=at(days=-2)),
    )
    assert ids(store.facts.recent(view(), 10)) == [eid(2), eid(3), eid(1)]
    assert ids(store.facts.recent(view(), 2)) == [eid(2), eid(3)]


def test_recent_follows_a_reinforcement(store: Store) -> None:
    first, second = entry(1, "first", seen=at(days=-2)), entry(2, "second", seen=at(days=-1))
    add(store, first, second)
    bumped = replace(first, last_seen_at=T0, reinforcement_count=2)
    store.facts.write(bumped, change=Change.REINFORCED, at=T0)
    assert ids(store.facts.recent(view(), 10)) == [eid(1), eid(2)]


# -- taxonomy --------------------------------------------------------------------------------------------
def test_taxonomy_counts_live_entries_per_category(store: Store) -> None:
    add(
        store,
        entry(1, category="user/name"),
        entry(2, category="user/name"),
        entry(3, category="work"),
        entry(4, category="work", archived_at=at(hours=-1)),
        entry(5, category="gone", archived_at=at(hours=-1)),
        entry(6, category="expired", expires_at=at(hours=-1)),
    )
    counts = {c.category: c.count for c in store.facts.taxonomy(view())}
    assert counts == {"user/name": 2, "work": 1}
    assert all(isinstance(c, CategoryCount) for c in store.facts.taxonomy(view()))


def test_taxonomy_ignores_the_category_prefix(store: Store) -> None:
    add(store, entry(1, category="user/name"), entry(2, category="work"))
    counts = {c.category: c.count for c in store.facts.taxonomy(view(category_prefix="user"))}
    assert counts == {"user/name": 1, "work": 1}
    counts = {c.category: c.count for c in store.facts.taxonomy(view(category_prefix="nothing"))}
    assert counts == {"user/name": 1, "work": 1}


def test_taxonomy_counts_live_entries_even_when_the_filter_includes_archived(store: Store) -> None:
    add(
        store,
        entry(1, category="work"),
        entry(2, category="work", archived_at=T0),
        entry(3, category="old", archived_at=T0),
    )
    counts = {c.category: c.count for c in store.facts.taxonomy(view(include_archived=True))}
    assert counts == {"work": 1}


def test_taxonomy_of_an_empty_store_is_empty(store: Store) -> None:
    assert store.facts.taxonomy(view()) == []


# -- FactFilter: archived --------------------------------------------------------------------------------
def test_archived_entries_are_hidden_from_reads_but_returned_by_get(store: Store) -> None:
    add_filler(store)
    archived = entry(1, "zebra archived", category="zoo", archived_at=at(hours=-1))
    live = entry(2, "zebra live", category="zoo")
    add(store, archived, live)
    assert hit_ids(store.facts.search(match("zebra"), view(), 10)) == [live.id]
    assert ids(store.facts.search_substring("zebr", view(), 10, frozenset())) == [live.id]
    assert eid(1) not in ids(store.facts.recent(view(), 100))
    assert {c.category: c.count for c in store.facts.taxonomy(view())}["zoo"] == 1
    assert store.facts.get(archived.id, AGENT) == archived


def test_include_archived_shows_archived_entries(store: Store) -> None:
    add_filler(store)
    add(store, entry(1, "zebra archived", archived_at=at(hours=-1)), entry(2, "zebra live"))
    flt = view(include_archived=True)
    assert sorted(hit_ids(store.facts.search(match("zebra"), flt, 10))) == [eid(1), eid(2)]
    assert sorted(ids(store.facts.search_substring("zebr", flt, 10, frozenset()))) == [eid(1), eid(2)]
    assert {eid(1), eid(2)} <= set(ids(store.facts.recent(flt, 100)))


def test_archiving_through_write_hides_the_entry(store: Store) -> None:
    add_filler(store)
    e = entry(1, "zebra")
    add(store, e)
    store.facts.write(replace(e, archived_at=T0), change=Change.ARCHIVED, at=T0)
    assert store.facts.search(match("zebra"), view(), 10) == []
    store.facts.write(replace(e, archived_at=None), change=Change.RESTORED, at=T0)
    assert hit_ids(store.facts.search(match("zebra"), view(), 10)) == [e.id]


# -- FactFilter: expiry ----------------------------------------------------------------------------------
def test_expired_entries_are_hidden_from_reads_but_returned_by_get(store: Store) -> None:
    add_filler(store)
    expired = entry(1, "zebra expired", category="past", expires_at=at(hours=-1))
    due_now = entry(2, "zebra due now", category="due", expires_at=T0)
    future = entry(3, "zebra future", category="future", expires_at=at(seconds=1))
    add(store, expired, due_now, future)
    assert hit_ids(store.facts.search(match("zebra"), view(), 10)) == [future.id]
    assert ids(store.facts.search_substring("zebr", view(), 10, frozenset())) == [future.id]
    assert ids(store.facts.recent(view(), 100)).count(future.id) == 1
    assert not {expired.id, due_now.id} & set(ids(store.facts.recent(view(), 100)))
    assert "future" in {c.category for c in store.facts.taxonomy(view())}
    assert not {"past", "due"} & {c.category for c in store.facts.taxonomy(view())}
    assert store.facts.get(expired.id, AGENT) == expired
    assert store.facts.get(due_now.id, AGENT) == due_now


def test_expiry_is_judged_by_the_filter_now(store: Store) -> None:
    add(store, entry(1, "zebra", expires_at=at(days=1)))
    assert ids(store.facts.recent(view(now=at(hours=23)), 10)) == [eid(1)]
    assert store.facts.recent(view(now=at(days=1)), 10) == []
    assert store.facts.search(match("zebra"), view(now=at(days=2)), 10) == []


# -- FactFilter: category prefix -------------------------------------------------------------------------
PREFIX_CATEGORIES = {
    1: "user",
    2: "user/x",
    3: "user/x/deep",
    4: "username/x",
    5: "users",
    6: "work/user",
    7: "a_b/c",
    8: "axb/c",
    9: "my-cat/x",
    10: "my-catalog",
    11: "a_b",
}
PREFIX_CASES = [
    ("user", [1, 2, 3]),
    ("user/x", [2, 3]),
    ("username", [4]),
    ("a_b", [7, 11]),
    ("my-cat", [9]),
    ("work", [6]),
    ("nothing", []),
]


def add_prefixed(store: Store) -> None:
    add(store, *(entry(n, f"zebra in {cat}", category=cat) for n, cat in PREFIX_CATEGORIES.items()))


@pytest.mark.parametrize(("prefix", "expected"), PREFIX_CASES)
def test_category_prefix_matches_whole_path_segments_only(store: Store, prefix: str, expected: list[int]) -> None:
    add_prefixed(store)
    flt = view(category_prefix=prefix)
    want = sorted(eid(n) for n in expected)
    assert sorted(hit_ids(store.facts.search(match("zebra"), flt, 100))) == want
    assert sorted(ids(store.facts.search_substring("zebra", flt, 100, frozenset()))) == want
    assert sorted(ids(store.facts.recent(flt, 100))) == want


def test_no_category_prefix_matches_everything(store: Store) -> None:
    add_prefixed(store)
    assert len(store.facts.recent(view(category_prefix=None), 100)) == len(PREFIX_CATEGORIES)


def test_neighbours_finds_entries_by_thread_and_position_within_scope(store: Store) -> None:
    turns = [(1, AGENT), (2, AGENT), (3, AGENT), (2, Scope(agent_id="b"))]
    for n, (position, scope) in enumerate(turns, start=1):
        meta = {"thread": "s1", "position": position}
        store.facts.add(entry(n, f"turn {position}", scope=scope, metadata=meta), at=T0)
    store.facts.add(entry(9, "another thread", metadata={"thread": "s2", "position": 2}), at=T0)
    found = store.facts.neighbours([("s1", 1), ("s1", 3), ("s1", 4)], view())
    assert sorted(e.content for e in found) == ["turn 1", "turn 3"]
    assert [e.scope.agent_id for e in store.facts.neighbours([("s1", 2)], view(Scope(agent_id="b")))] == ["b"]
    assert store.facts.neighbours([], view()) == []


@pytest.mark.parametrize("agent", ["---", "locomo-3", "locomo 3", 'quote"agent', "日本"])
def test_search_works_for_any_agent_id_and_never_crosses_agents(store: Store, agent: str) -> None:
    store.facts.add(entry(1, "the harbor ferry timetable", scope=Scope(agent_id=agent)), at=T0)
    for n, other in enumerate(["locomo-3", "locomo 3", "locomo-33", "---", "x"], start=2):
        if other != agent:
            store.facts.add(entry(n, "the harbor ferry timetable", scope=Scope(agent_id=other)), at=T0)
    found = store.facts.search(match("ferry timetable"), view(Scope(agent_id=agent)), 10)
    assert [(e.id, e.scope.agent_id) for e, _ in found] == [(eid(1), agent)]


# -- in_period -------------------------------------------------------------------------------------------
def test_in_period_finds_entries_saved_or_dated_in_the_days(store: Store) -> None:
    add(
        store,
        entry(1, "saved inside", created_at=at(days=10)),
        entry(2, "saved before", created_at=at(days=-30)),
        entry(3, "dated by day", created_at=at(days=-30), metadata={"subjectTime": "2026-01-12"}),
        entry(4, "dated by month", created_at=at(days=-30), metadata={"subjectTime": "2026-01"}),
        entry(5, "dated by year", created_at=at(days=-30), metadata={"subjectTime": "2026"}),
        entry(6, "dated with a time", created_at=at(days=-30), metadata={"subjectTime": "2026-01-13T08:00:00Z"}),
        entry(7, "dated outside", created_at=at(days=-30), metadata={"subjectTime": "2026-02-01"}),
        entry(8, "saved after", created_at=at(days=20)),
    )
    found = store.facts.in_period(view(now=at(days=30)), "2026-01-10", "2026-01-15", 10)
    assert sorted(ids(found)) == [eid(1), eid(3), eid(4), eid(5), eid(6)]
    assert ids(found)[0] == eid(1)  # the most recently created first


def test_in_period_respects_the_filter_and_the_limit(store: Store) -> None:
    other = Scope(agent_id="other")
    add(
        store,
        entry(1, "mine", created_at=at(days=1)),
        entry(2, "theirs", created_at=at(days=1), scope=other),
        entry(3, "archived", created_at=at(days=1), archived_at=at(days=2)),
        entry(4, "older", created_at=at(days=0)),
    )
    now = at(days=5)
    assert ids(store.facts.in_period(view(now=now), "2026-01-01", "2026-01-03", 10)) == [eid(1), eid(4)]
    assert ids(store.facts.in_period(view(now=now), "2026-01-01", "2026-01-03", 1)) == [eid(1)]
    assert ids(store.facts.in_period(view(other, now=now), "2026-01-01", "2026-01-03", 10)) == [eid(2)]
