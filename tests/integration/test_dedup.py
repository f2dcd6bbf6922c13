"""Save-time deduplication (seed 000): restated facts reinforce, richer restatements extend, twins stay apart,
and the temporal and provenance rules hold. Real SQLite files; the hash embedder unless said otherwise."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reverie
from reverie.clock import FakeClock
from reverie.core.provenance import trust_rank
from reverie.types import Change, Scope

FACT = "Maya bought a bicycle for 300 euros in Lisbon on March 3, 2024."


def test_a_restatement_reinforces_and_leaves_the_text_and_updated_at_alone(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    first = rv.memory.save(FACT, tags=["shopping"], importance=0.4, source="inferred")
    clock.advance(timedelta(days=3))
    again = rv.memory.save(
        "On March 3, 2024, Maya purchased a bicycle for 300 euros in Lisbon.", tags=["bikes"], importance=0.7,
        source="user",
    )  # fmt: skip
    assert again.outcome == "reinforced" and again.id == first.id
    entry = rv.memory.get(first.id)
    assert entry.content == FACT  # the text does not move
    assert entry.updated_at is None  # a reinforcement is not a rewrite
    assert entry.last_seen_at == clock.now() and entry.created_at == first.entry.created_at
    assert entry.reinforcement_count == 2
    assert entry.importance == 0.7 and entry.tags == ("shopping", "bikes")
    assert entry.source == "user"  # the same fact seen again: trust may rise
    assert {v.content for v in rv.memory.history(first.id)} == {FACT}  # no text change
    assert rv.stats().live == 1


def test_case_and_order_changes_reinforce(rv: reverie.Reverie) -> None:
    first = rv.memory.save(FACT)
    for text in (FACT.lower(), FACT.upper(), "On March 3, 2024, " + FACT[: -len(" on March 3, 2024.")] + "."):
        assert rv.memory.save(text).id == first.id
    assert rv.stats().live == 1 and rv.memory.get(first.id).reinforcement_count == 4


def test_new_specifics_extend_and_bump_updated_at(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.memory.save("Maya bought a bicycle in Lisbon.", source="user")
    clock.advance(timedelta(hours=1))
    more = rv.memory.save("Maya bought a bicycle in Lisbon from Decathlon.", source="tool:web_browse")
    assert more.outcome == "extended" and more.id == first.id
    entry = rv.memory.get(first.id)
    assert "Decathlon" in entry.content and entry.content.startswith("Maya bought a bicycle in Lisbon.")
    assert entry.updated_at == clock.now() and entry.last_seen_at == clock.now()
    assert entry.source == "tool:web_browse"  # combined text is no more trusted than its weakest part
    assert [v.change for v in rv.memory.history(first.id)] == [Change.CREATED, Change.EXTENDED]
    assert rv.memory.restore_version(first.id, 1).content == "Maya bought a bicycle in Lisbon."


@pytest.mark.parametrize(
    "twin",
    [
        "Nora bought a bicycle for 300 euros in Lisbon on March 3, 2024.",  # a name
        "Maya bought a bicycle for 305 euros in Lisbon on March 3, 2024.",  # a number
        "Maya bought a bicycle for 300 euros in Lisbon on March 3, 2025.",  # a year
        "Maya bought a bicycle for 300 euros in Lisbon on April 3, 2024.",  # a month
        "Maya bought a bicycle for 300 euros in Porto on March 3, 2024.",  # a place
        "MAYA BOUGHT A BICYCLE FOR 300 EUROS IN PORTO ON MARCH 3, 2024.",  # shouted, a place
    ],
)
def test_near_miss_twins_stay_their_own_entry(rv: reverie.Reverie, twin: str) -> None:
    first = rv.memory.save(FACT)
    other = rv.memory.save(twin)
    assert other.outcome == "created" and other.id != first.id
    assert rv.memory.get(first.id).content == FACT


def test_single_digit_numbers_and_symbols_are_never_dropped(rv: reverie.Reverie) -> None:
    first = rv.memory.save("Bring 3 chairs to the garden party.")
    assert rv.memory.save("Bring 4 chairs to the garden party.").id != first.id
    code = rv.memory.save("The parser is written in C.")
    plus = rv.memory.save("The parser is written in C++.")
    assert plus.outcome != "reinforced"  # "C++" is not "C": a reinforcement would drop the "++"
    assert "C++" in rv.memory.get(plus.id).content and rv.memory.get(code.id).content.startswith("The parser")


def test_scope_and_top_level_category_bound_deduplication(rv: reverie.Reverie) -> None:
    first = rv.memory.save(FACT, category="people/maya")
    assert rv.memory.save(FACT, category="people/shopping").id == first.id  # same top-level category
    assert rv.memory.save(FACT, category="purchases").id != first.id
    assert rv.memory.save(FACT, category="people", scope=Scope(user_id="u1")).id != first.id
    assert rv.memory.save(FACT, category="people", scope=Scope(agent_id="other")).id != first.id


@pytest.mark.parametrize("category", ["feedback/corrections", "claim/capability/email"])
def test_scoped_categories_bypass_deduplication(rv: reverie.Reverie, category: str) -> None:
    first = rv.memory.save(FACT, category=category)
    assert rv.memory.save(FACT, category=category).id != first.id


def test_sequence_members_and_dedup_false_always_create(rv: reverie.Reverie) -> None:
    turns = [rv.memory.save("ok, thanks!", metadata={"thread": "t1", "position": i}) for i in range(3)]
    assert len({t.id for t in turns}) == 3
    first = rv.memory.save(FACT)
    assert rv.memory.save(FACT, dedup=False).id != first.id


def test_an_archived_entry_is_not_reinforced(rv: reverie.Reverie) -> None:
    first = rv.memory.save(FACT)
    rv.memory.archive(first.id)
    assert rv.memory.save(FACT).id != first.id


def test_an_extension_past_the_limit_creates(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path, clock=clock, embedding={"provider": "hash", "background": False},
        memory={"dedupe_max_extended_content_length": 60},
    ) as rv:  # fmt: skip
        first = rv.memory.save("Maya bought a bicycle in Lisbon.")
        more = rv.memory.save("Maya bought a bicycle in Lisbon from Decathlon with Nora.")
        assert more.outcome == "created" and more.id != first.id


def test_save_many_folds_within_the_batch(rv: reverie.Reverie) -> None:
    results = rv.memory.save_many([{"content": FACT}, {"content": FACT.lower()}, {"content": "Something else."}])
    assert [r.outcome for r in results] == ["created", "reinforced", "created"]
    assert results[0].id == results[1].id


def test_subject_time_merges_on_reinforcement(rv: reverie.Reverie) -> None:
    first = rv.memory.save(
        FACT, metadata={"subjectTime": "2024", "subjectTimeStart": "2024-03-01", "subjectTimeEnd": "2024-03-04"}
    )
    rv.memory.save(
        FACT, metadata={"subjectTime": "2024-03-03", "subjectTimeStart": "2024-03-02", "subjectTimeEnd": "2024-03-05",
                        "other": "x"},
    )  # fmt: skip
    meta = rv.memory.get(first.id).metadata
    assert meta["subjectTime"] == "2024-03-03"  # a point keeps the most specific value
    assert meta["subjectTimeStart"] == "2024-03-01" and meta["subjectTimeEnd"] == "2024-03-05"  # ranges widen
    assert "other" not in meta  # other keys of the newcomer are entry-scoped, not merged


def test_disabled_deduplication_always_creates(tmp_path: Path) -> None:
    with reverie.open(tmp_path, embedding={"provider": "none"}, memory={"dedupe_enabled": False}) as rv:
        assert rv.memory.save(FACT).id != rv.memory.save(FACT).id


def test_the_semantic_check_folds_a_paraphrase_after_embedding(rv_local: reverie.Reverie) -> None:
    """A paraphrase the lexical lookup misses (few shared words) is folded once it is embedded: the new
    entry is archived, points to the older one, and the older one is reinforced."""
    rv = rv_local
    first = rv.memory.save("Maya bought a new bicycle in Lisbon last March.")
    second = rv.memory.save("In March Maya purchased a new bike while in Lisbon.")  # token Jaccard 0.4
    assert second.outcome == "created" and rv.memory.get(second.id).fold_pending
    rv.embed_pending()
    folded = rv.memory.get(second.id)
    assert folded.archived and folded.superseded_by == first.id and not folded.fold_pending
    kept = rv.memory.get(first.id)
    assert kept.reinforcement_count == 2 and kept.content == "Maya bought a new bicycle in Lisbon last March."
    assert [v.change for v in rv.memory.history(second.id)][-1] is Change.SUPERSEDED
    restored = rv.memory.restore(second.id)  # restorable, never deleted: current again, its history kept
    assert restored.current and restored.superseded_by is None and restored.content == second.entry.content


def test_the_semantic_check_keeps_twins_apart(rv_local: reverie.Reverie) -> None:
    rv = rv_local
    rv.memory.save("Maya bought a new bicycle in Lisbon last March.")
    twin = rv.memory.save("In March Nora purchased a new bike while in Lisbon.")
    rv.embed_pending()
    assert not rv.memory.get(twin.id).archived


SOURCES = st.sampled_from([None, "inferred", "inference", "tool:web_browse", "tool:grep"])
TEXTS = st.sampled_from(
    [
        FACT,
        FACT.lower(),
        "Maya bought a bicycle for 300 euros in Lisbon on March 3, 2024 from Decathlon.",
        "On March 3, 2024, Maya purchased a bicycle for 300 euros in Lisbon.",
        "Nora bought a bicycle for 300 euros in Lisbon on March 3, 2024.",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(saves=st.lists(st.tuples(TEXTS, SOURCES), min_size=1, max_size=8))
def test_no_sequence_of_saves_raises_a_fact_to_user_without_the_user(
    tmp_path_factory: pytest.TempPathFactory, saves: list[tuple[str, str | None]]
) -> None:  # noqa: E501
    """Seed 000: trust only rises with new evidence. With no save from the user, no entry ever reads
    ``user``; and an entry that took an inferred part is never more trusted than inferred."""
    home = tmp_path_factory.mktemp("trust")
    with reverie.open(home, embedding={"provider": "hash", "background": False}) as rv:
        for text, source in saves:
            rv.memory.save(text, source=source)
        rv.embed_pending()
        for entry in rv.memory.browse(limit=100).entries:
            assert entry.source != "user"
            assert trust_rank(entry.source) <= trust_rank("tool:web_browse")


def test_the_coverage_vocabulary_file_takes_effect_at_the_next_use(rv: reverie.Reverie) -> None:
    first = rv.coverage_vocabulary()
    assert rv.coverage_vocabulary() is first  # unchanged file (here: none): not parsed again
    path = rv.settings.home / "merge-coverage-vocabulary.json"
    path.write_text('{"alwaysSpecificWords": ["Rose"]}', encoding="utf-8")
    assert "rose" in rv.coverage_vocabulary().always_specific_words
    path.write_text("{not json", encoding="utf-8")
    assert rv.coverage_vocabulary().always_specific_words == frozenset()  # malformed: the baseline
