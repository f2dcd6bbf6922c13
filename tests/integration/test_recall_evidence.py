"""Issue 18 through the library with the real bundled embedder: scores are evidence, weak evidence gives
nothing, a named time ranks what happened or was said then, and matched_by says what found each hit."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock

FACTS = [
    ("Priya is allergic to peanuts and carries an EpiPen.", "people/priya", None),
    ("Priya takes Wednesday afternoons off to look after her daughter.", "people/priya", None),
    ("Dan writes code in Neovim with the LazyVim setup.", "people/dan", None),
    ("Dan likes his tea black with no sugar.", "people/dan", None),
    ("Harbor deploys on Tuesdays after the 10:00 stand-up.", "projects/harbor", None),
    (
        "Harbor had a 40-minute outage on 2026-03-14 caused by an expired TLS certificate.",
        "projects/harbor",
        "2026-03-14",
    ),
    ("Lantern stores its events in ClickHouse and its users in PostgreSQL.", "projects/lantern", None),
    ("Beacon 3.0 launched with dark mode and Apple Pay.", "projects/beacon", "2026-03-03"),
    ("The team offsite is in Cardiff in June.", "team", "2026-06-18"),
    ("Biscuit the dog must never get grapes or raisins.", "pets", None),
]


@pytest.fixture
def facts(rv_local: reverie.Reverie, clock: FakeClock) -> dict[str, str]:
    clock.set(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    ids = {}
    for content, category, when in FACTS:
        metadata = {"subjectTime": when} if when else None
        ids[content.split()[0] + ("-" + when if when else "")] = rv_local.memory.save(
            content, category=category, metadata=metadata, dedup=False
        ).id
        clock.advance(days=7)
    rv_local.embed_pending()
    return ids


def test_an_off_topic_question_gets_nothing_and_a_related_one_its_fact(
    rv_local: reverie.Reverie, facts: dict[str, str]
) -> None:
    for question in ("what is the capital of Peru", "how do vaccines work", "convert 30 degrees Celsius to Fahrenheit"):
        assert list(rv_local.memory.search(question, mode="hybrid")) == [], question
    hits = rv_local.memory.search("which database does Lantern use?", mode="hybrid")
    assert hits[0].entry.content.startswith("Lantern stores")
    assert hits[0].matched_by == "bm25+vector"


def test_a_score_is_its_evidence_and_compares_across_queries(rv_local: reverie.Reverie, facts: dict[str, str]) -> None:
    strong = rv_local.memory.search("what is Priya allergic to?", mode="hybrid")
    weak = rv_local.memory.search("dried fruit the dog should avoid", mode="hybrid")
    for hit in (*strong, *weak):
        e = hit.evidence
        assert e is not None
        assert hit.score == pytest.approx(e.own + e.context + e.time)
        assert 0.0 <= e.lexical <= 1.0 and 0.0 <= e.semantic <= 1.0
        if "bm25" in hit.matched_by:
            assert e.bm25 is not None and e.lexical > 0
        if "vector" in hit.matched_by:
            assert e.similarity is not None and e.semantic > 0
    assert strong[0].entry.content.startswith("Priya is allergic")
    assert strong[0].score > 0.8  # the words and the meaning: full evidence
    assert strong[0].score > strong[-1].score  # and not every hit is stretched to 1 or 0
    assert all(h.score > 0 for h in strong)  # nothing scores 0.000
    assert weak and weak[0].score < strong[0].score  # a paraphrase is weaker evidence than the words


def test_a_named_time_ranks_what_happened_then(
    rv_local: reverie.Reverie, facts: dict[str, str], clock: FakeClock
) -> None:
    clock.set(datetime(2026, 12, 1, tzinfo=UTC))
    hits = rv_local.memory.search("what happened in March 2026?", mode="hybrid", limit=3)
    assert {h.entry.id for h in hits[:2]} == {facts["Harbor-2026-03-14"], facts["Beacon-2026-03-03"]}
    assert all(h.evidence is not None and h.evidence.time > 0 for h in hits[:2])
    assert hits[0].matched_by in ("time", "bm25", "vector", "bm25+vector")
    june = rv_local.memory.search("what is planned for June 2026?", mode="hybrid", limit=2)
    assert june[0].entry.id == facts["The-2026-06-18"]


def test_what_was_said_last_week_reads_the_save_time(
    rv_local: reverie.Reverie, facts: dict[str, str], clock: FakeClock
) -> None:
    # The facts were saved a week apart from 2026-01-05: the fifth (Harbor deploys) on 2026-02-02.
    clock.set(datetime(2026, 2, 11, 12, 0, tzinfo=UTC))  # a Wednesday: last week is 2 - 8 February
    hits = rv_local.memory.search("what did I tell you last week?", mode="hybrid", limit=3)
    assert hits and hits[0].entry.content.startswith("Harbor deploys")
    assert hits[0].matched_by == "time"


def test_bm25_and_vector_modes_stay_the_plain_signals(rv_local: reverie.Reverie, facts: dict[str, str]) -> None:
    for hit in rv_local.memory.search("Priya allergic peanuts", mode="bm25"):
        assert hit.matched_by == "bm25" and hit.evidence is not None and hit.evidence.context == 0
    floor = rv_local.recall.floor("default", None)
    assert floor is not None
    for hit in rv_local.memory.search("Priya allergic peanuts", mode="vector"):
        assert hit.matched_by == "vector"
        assert hit.evidence is not None and hit.evidence.similarity is not None and hit.evidence.similarity >= floor


def test_an_entry_only_saved_in_the_named_time_answers_and_nothing_near_it_pads(
    rv_local: reverie.Reverie, clock: FakeClock
) -> None:
    clock.set(datetime(2026, 12, 1, tzinfo=UTC))
    outage = rv_local.memory.save(
        "Harbor had a 40-minute outage caused by an expired TLS certificate.",
        observed_at=datetime(2026, 3, 14, 12, 0, tzinfo=UTC),
    ).id
    rv_local.memory.save("Dan writes code in Neovim.", observed_at=datetime(2026, 4, 20, tzinfo=UTC))
    rv_local.embed_pending()
    hits = rv_local.memory.search("what happened in March 2026?", mode="hybrid")
    assert [h.entry.id for h in hits] == [outage]  # April is near March, but nothing of its own: not returned
    assert hits[0].matched_by == "time"


def test_a_word_match_counts_as_far_as_the_embedder_agrees(tmp_path: Path, clock: FakeClock) -> None:
    facts = [
        "Miso the cat eats wet food from a sensitive-stomach range.",
        "Dan's favourite cuisine is Thai, green curry above all.",
        "Dan is pescatarian: he eats fish but no meat.",
        "Elena is vegetarian and doesn't eat fish either.",
        "Harbor deploys on Tuesdays after the stand-up.",
        "Priya is allergic to peanuts.",
        "Dan writes code in Neovim.",
        "Leo's birthday is in May.",
        "The office is at Temple Quay in Bristol.",
        "Dan goes running on Mondays.",
    ]
    query = "what food does Dan like?"
    tops = {}
    for share in (0.5, 1.0):  # 1.0: words are trusted whatever the embedder says (the graded credit is off)
        with reverie.open(
            tmp_path / str(share), clock=clock, embedding={"background": False}, recall={"uncorroborated_share": share}
        ) as rv:
            for content in facts:
                rv.memory.save(content, dedup=False)
            rv.embed_pending()
            hits = rv.memory.search(query, mode="hybrid")
            tops[share] = hits[0].entry.content
            if share == 0.5:
                cat = next(h for h in hits if h.entry.content.startswith("Miso"))
                assert cat.evidence is not None and cat.evidence.lexical > 0
                # "food" matched, but the embedder relates the cat's diet only weakly to the question: the cat
                # keeps less than its whole lexical evidence.
                weight = rv.recall.config.semantic_weight
                assert cat.evidence.own < (1 - weight) * cat.evidence.lexical + weight * cat.evidence.semantic - 1e-6
    assert tops[0.5].startswith("Dan's favourite cuisine")
    assert tops[1.0].startswith("Miso"), tops  # the word alone put the cat's food first


def test_one_word_of_a_two_word_query_is_not_full_evidence(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path / "short", clock=clock, embedding={"background": False}) as rv:
        for content in (
            "Harbor deploys on Tuesdays after the stand-up.",
            "Dan can't stand coriander.",
            "Priya is allergic to peanuts.",
            "Dan writes code in Neovim.",
            "Leo's birthday is in May.",
            "The office is at Temple Quay in Bristol.",
            "Dan goes running on Mondays.",
            "Miso the cat eats wet food.",
        ):
            rv.memory.save(content, dedup=False)
        rv.embed_pending()
        # "gdp" and "stand": only "stand" is in memory. Half the query's weight would have been full evidence.
        words = rv.memory.search("what does GDP stand for", mode="bm25")
        assert words and all(h.evidence is not None and h.evidence.lexical < 0.75 for h in words)
        assert list(rv.memory.search("what does GDP stand for", mode="hybrid")) == []
        both = rv.memory.search("Harbor deploys", mode="hybrid")
        assert both[0].entry.content.startswith("Harbor deploys")
        assert both[0].evidence is not None and both[0].evidence.lexical == pytest.approx(1.0)


def test_weekends_seasons_and_named_weekdays_rank_what_happened_then(
    rv_local: reverie.Reverie, clock: FakeClock
) -> None:
    # Each pair is one text said at two times (dedup off): only the time named in the query can tell them apart.
    clock.set(datetime(2026, 12, 2, 9, 0, tzinfo=UTC))  # a Wednesday

    def said(text: str, when: datetime | None = None, subject: str | None = None) -> str:
        metadata = {"subjectTime": subject} if subject else None
        return rv_local.memory.save(text, observed_at=when, metadata=metadata, dedup=False).id

    hike = said("We went hiking with the kids.", datetime(2026, 11, 28, 15, 0, tzinfo=UTC))  # last Saturday
    said("We went hiking with the kids.", datetime(2026, 10, 14, tzinfo=UTC))
    summer = said("The family went camping by the sea.", subject="2026-08-10")
    said("The family went camping by the sea.", subject="2026-04-02")
    friday = said("Leo had a check-up at the dentist.", datetime(2026, 11, 27, 10, 0, tzinfo=UTC))  # last Friday
    said("Leo had a check-up at the dentist.", datetime(2026, 11, 4, tzinfo=UTC))
    rv_local.embed_pending()

    for question, wanted in (
        ("where did we go hiking last weekend?", hike),
        ("where did the family go camping over the summer?", summer),
        ("who went to the dentist last Friday?", friday),
    ):
        hits = rv_local.memory.search(question, mode="hybrid", limit=2)
        assert hits[0].entry.id == wanted, question
        assert hits[0].evidence is not None and hits[1].evidence is not None
        assert hits[0].evidence.time > hits[1].evidence.time, question


_PLACES = ("Cervejaria Ramiro", "Time Out Market", "Belcanto", "A Cevicheria", "Taberna da Rua", "Zé da Mouraria")


def test_a_time_the_text_names_dates_an_entry_saved_later(tmp_path: Path, clock: FakeClock) -> None:
    """ "Went hiking in June 2025", saved in October, happened in June; "moved in March 2024", saved in
    September, did not happen in September: with no subject time given, the time an entry's text names is its
    time."""
    saved = [
        ("2025-09-01", "Kenji moved to Lisbon from Osaka in March 2024."),
        ("2025-09-30", "Kenji gave a talk on Go generics at the Lisbon Go meetup in September 2025."),
        ("2025-10-10", "Kenji and Inês went hiking in the Azores in June 2025."),
        *((f"2026-01-{n:02d}", f"We went to {place} for lunch in January 2026.") for n, place in enumerate(_PLACES, 2)),
    ]
    with reverie.open(tmp_path, clock=clock, embedding={"background": False}, recall={"candidates": 3}) as rv:
        ids = {}
        for day, content in saved:
            clock.set(datetime.fromisoformat(day).replace(hour=9, tzinfo=UTC))
            key = content.split()[2] if content.startswith("Kenji") else content
            ids[key] = rv.memory.save(content, dedup=False).id
        rv.embed_pending()
        clock.set(datetime(2026, 6, 15, tzinfo=UTC))
        june = rv.memory.search("where did we go in June 2025?", limit=3)
        assert june[0].entry.id == ids["Inês"]
        assert june[0].evidence is not None and june[0].evidence.time == pytest.approx(0.4)
        september = rv.memory.search("what did Kenji do in September 2025?", limit=10)
        assert september[0].entry.id == ids["a"]  # the talk, not the move saved on 1 September
        moved = next(h for h in september if h.entry.id == ids["to"])
        assert moved.evidence is not None and moved.evidence.time < 0.01
