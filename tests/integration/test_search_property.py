"""Property tests: search never raises on what a user types, and saved text comes back exactly.

Each test opens one store (in a temporary directory) and runs its hypothesis examples against it through an
inner ``@given`` function, so no function-scoped fixture is shared across examples.
"""

from __future__ import annotations

import re
import string
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import reverie

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEED_ENTRIES = [
    ("The user lives in Lisbon and drinks coffee every morning", "user-preferences/location", ["home"]),
    ("Meeting with the Tokyo team moved to Thursday", "work/meetings", ["calendar", "tokyo"]),
    ("Party planned for Saturday 🎉 with cake 🎂", "events", ["fun"]),
    ("東京の会議は木曜日に移動しました", "work/meetings", ["日本語"]),
    ("Пользователь любит чай с лимоном", "user-preferences/drinks", ["русский"]),
    ("L'utilisateur préfère le café crème à Zürich", "user-preferences/drinks", ["français"]),
    ('NEAR(coffee tea) AND "quoted" OR -minus *star ^caret col:on', "general", ["syntax"]),
    ("naïve façade résumé — ﬁnance ½", "general", []),
]
CATEGORIES = [
    "general",
    "work",
    "work/meetings",
    "user-preferences",
    "user-preferences/",
    "user-preferences/drinks",
    "events",
    "no-such-category",
]
FTS_FRAGMENTS = [
    '"',
    '""',
    "*",
    "NEAR(",
    "NEAR",
    "-",
    ":",
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "^",
    "+",
    "{",
    "}",
    ",",
    "content:",
    "tags:",
    "\x00",
    "🎉",
    "👍🏽",
    "🇵🇹",
    "\u200d",
    "\ufeff",
    "%",
    "_",
    "\\",
    "'",
    "coffee",
    "tokyo",
    "東京",
    "чай",
    "café",
    " ",
    "\n",
    "\t",
]

fragment_queries = st.lists(
    st.one_of(st.sampled_from(FTS_FRAGMENTS), st.text(max_size=6)),
    max_size=12,
).map("".join)
queries = st.one_of(st.text(), fragment_queries)
valid_categories = st.sampled_from(CATEGORIES)
limits = st.one_of(st.none(), st.integers(min_value=1, max_value=1000))

# Content may hold any character but NUL, which every backend refuses (PostgreSQL text cannot store it),
# and lone surrogates, which are not text.
storable = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
non_blank_text = st.text(alphabet=storable, min_size=1).filter(lambda s: bool(s.strip()))
ascii_text = st.text(alphabet=string.ascii_letters + string.digits + " .,;!?-'()\"", min_size=1, max_size=200).filter(
    lambda s: re.search(r"[A-Za-z0-9]", s) is not None
)


@contextmanager
def seeded_store() -> Iterator[reverie.Reverie]:
    with tempfile.TemporaryDirectory() as home, reverie.open(home) as rv:
        for content, category, tags in SEED_ENTRIES:
            rv.memory.save(content, category=category, tags=tags)
        # Entries no default-scope search may return: another agent's, and an archived one.
        for content, category, tags in SEED_ENTRIES[:4]:
            rv.memory.save(content, category=category, tags=tags, scope=reverie.Scope(agent_id="other-agent"))
        archived = rv.memory.save("Archived coffee note from Tokyo 🎉 东京", category="work/meetings")
        rv.memory.archive(archived.id)
        yield rv


def in_category(entry: reverie.MemoryEntry, category: str) -> bool:
    prefix = category.rstrip("/")
    return entry.category == prefix or entry.category.startswith(prefix + "/")


def check_hits(hits: object, limit: int) -> None:
    assert isinstance(hits, list)
    assert all(isinstance(h, reverie.SearchHit) for h in hits)
    assert len(hits) <= limit
    ids = [h.entry.id for h in hits]
    assert len(ids) == len(set(ids)), "an entry appears twice in one result list"
    assert all(not h.entry.archived for h in hits)
    assert all(h.entry.scope == reverie.Scope() for h in hits)


def test_seeded_searches_match() -> None:
    """The seed entries are findable, so the property tests below search a store where queries do match."""
    with seeded_store() as rv:
        for query, expected in [
            ("coffee", "Lisbon"),
            ("東京の会議は木曜日に移動しました", "東京"),
            ("лимоном", "лимоном"),
            ("🎉", "Party"),
            ("cafe", "Zürich"),
            ('NEAR(coffee tea) AND "quoted"', "NEAR("),
        ]:
            contents = [h.entry.content for h in rv.memory.search(query)]
            assert any(expected in c for c in contents), (query, contents)


def test_search_never_raises_on_any_query() -> None:
    with seeded_store() as rv:

        @SETTINGS
        @given(query=queries, limit=limits)
        def search_returns_a_list(query: str, limit: int | None) -> None:
            hits = rv.memory.search(query, limit=limit)
            check_hits(hits, limit or rv.memory.config.search_limit)

        search_returns_a_list()


def test_search_with_a_category_never_raises() -> None:
    with seeded_store() as rv:

        @SETTINGS
        @given(query=queries, category=valid_categories, limit=limits)
        def search_in_category(query: str, category: str, limit: int | None) -> None:
            hits = rv.memory.search(query, category=category, limit=limit)
            check_hits(hits, limit or rv.memory.config.search_limit)
            assert all(in_category(h.entry, category) for h in hits), (category, [h.entry.category for h in hits])

        search_in_category()


def test_saved_text_round_trips_exactly() -> None:
    with tempfile.TemporaryDirectory() as home, reverie.open(home) as rv:

        @SETTINGS
        @given(content=non_blank_text)
        def round_trip(content: str) -> None:
            saved = rv.memory.save(content, dedup=False)
            assert saved.entry.content == content
            got = rv.memory.get(saved.id)
            assert got.content == content
            assert got.id == saved.id

        round_trip()


def test_a_word_of_a_saved_ascii_text_finds_it() -> None:
    with tempfile.TemporaryDirectory() as home, reverie.open(home) as rv:
        for content, category, tags in SEED_ENTRIES:
            rv.memory.save(content, category=category, tags=tags)

        @SETTINGS
        @given(content=ascii_text, data=st.data())
        def word_finds_entry(content: str, data: st.DataObject) -> None:
            # Entries pile up across examples, so the word usually matches others too; the limit covers them.
            saved = rv.memory.save(content, dedup=False)
            words = re.findall(r"[A-Za-z0-9]+", content)
            word = data.draw(st.sampled_from(words), label="word")
            hits = rv.memory.search(word, limit=1000)
            assert saved.id in [h.entry.id for h in hits], (word, content)

        word_finds_entry()


def test_any_part_of_a_saved_text_finds_it() -> None:
    """The documented fallback: a query the index cannot serve (part of a word, punctuation, emoji) is matched
    as a case-insensitive substring, so any non-blank piece of a saved text finds it."""
    with tempfile.TemporaryDirectory() as home, reverie.open(home) as rv:

        @SETTINGS
        @given(content=non_blank_text, cut=st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)))
        @example(content="Österreich", cut=(0, 6))  # "Österr": part of a capitalised non-ASCII word
        @example(content="Lisbon", cut=(0, 4))
        def part_finds_entry(content: str, cut: tuple[int, int]) -> None:
            start, stop = sorted(c % (len(content) + 1) for c in cut)
            part = content[start:stop]
            assume(part.strip())
            saved = rv.memory.save(content, dedup=False)
            hits = rv.memory.search(part, limit=1000)
            assert saved.id in [h.entry.id for h in hits], (part, content)

        part_finds_entry()
