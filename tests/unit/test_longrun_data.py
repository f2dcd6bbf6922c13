"""The long-run benchmark's traffic (bench.longrun_data): deterministic, shaped as specified, recognisable."""

from __future__ import annotations

import pytest

from reverie.bench.longrun_data import CHATTER_CATEGORY, Stream, generate, has_specific, is_chatter
from reverie.core.coverage import DEFAULT_VOCABULARY, specifics
from reverie.core.dedup import extend_text, jaccard


@pytest.fixture(scope="module")
def stream() -> Stream:
    return generate(120, 2)


def _found(text: str, category: str) -> set[str]:
    return set(specifics(text, category=category, vocabulary=DEFAULT_VOCABULARY).texts)


def test_the_same_arguments_give_the_same_stream(stream: Stream) -> None:
    again = generate(120, 2)
    assert again.slots == stream.slots
    assert again.facts == stream.facts
    assert generate(120, 2, seed=8).slots != stream.slots


def test_shape_of_the_days(stream: Stream) -> None:
    assert len(stream.slots) == 240
    per_day = [stream.slots[2 * d] + stream.slots[2 * d + 1] for d in range(120)]
    idle = [day for day in per_day if not day]
    assert 8 <= len(idle) <= 30  # about one day in seven
    assert per_day[0]
    for day in per_day:
        if not day:
            continue
        durable = [s for s in day if s.kind != "chatter"]
        chatter = [s for s in day if s.kind == "chatter"]
        assert 3 <= len(durable) <= 6
        assert 5 <= len(chatter) <= 15
    assert any(stream.is_idle(slot) for slot in range(len(stream.slots)))
    summary = stream.summary()
    assert summary["idle_days"] == len(idle)
    assert summary["facts"] == len(stream.facts)


def test_saves_carry_their_kind_tier_and_category(stream: Stream) -> None:
    saves = [save for slot in stream.slots for save in slot]
    kinds = {save.kind for save in saves}
    assert kinds == {"new", "repeat", "paraphrase", "extension", "chatter"}
    for save in saves:
        if save.kind == "chatter":
            assert (save.category, save.tier, save.fact) == (CHATTER_CATEGORY, "episodic", None)
            assert save.importance < 0.5
        else:
            assert save.tier == "semantic" and save.fact is not None
            assert save.category == stream.facts[save.fact].category
    assert len({stream.facts[s.fact].category.split("/")[0] for s in saves if s.fact}) >= 5


def test_a_restatement_never_precedes_its_fact(stream: Stream) -> None:
    stated: set[str] = set()
    for slot in stream.slots:
        for save in slot:
            if save.kind == "new":
                stated.add(str(save.fact))
            elif save.fact is not None:
                assert save.fact in stated


def test_chatter_has_no_specifics(stream: Stream) -> None:
    chatter = [save.content for slot in stream.slots for save in slot if save.kind == "chatter"]
    assert len(set(chatter)) > 200  # varied
    for text in chatter:
        assert is_chatter(text)
        assert not _found(text, CHATTER_CATEGORY)
        assert stream.fact_of(text) is None


def test_every_statement_carries_exactly_its_facts_specifics(stream: Stream) -> None:
    for fact in stream.facts.values():
        assert len(fact.specifics) >= 3
        for text in (fact.statement, *fact.paraphrases):
            assert _found(text, fact.category) == set(fact.specifics), text
        assert _found(fact.extension, fact.category) == set(fact.all_specifics), fact.extension
        assert not is_chatter(fact.statement)
        assert any(has_specific(fact.query, s) for s in fact.specifics)


def test_paraphrases_are_worded_apart_from_the_statement(stream: Stream) -> None:
    # Below save-time deduplication's lexical threshold (0.6): consolidation, not save, has to merge them.
    for fact in stream.facts.values():
        texts = (fact.statement, *fact.paraphrases)
        for i, left in enumerate(texts):
            for right in texts[i + 1 :]:
                assert jaccard(left, right) < 0.6, (left, right)


def test_fact_of_recognises_restatements_and_merged_texts(stream: Stream) -> None:
    for slot in stream.slots:
        for save in slot:
            assert stream.fact_of(save.content) == save.fact
    for fact in list(stream.facts.values())[:50]:
        combined = extend_text(fact.statement, fact.extension)
        assert stream.fact_of(combined) == fact.key
        assert stream.fact_of(" ".join((*fact.paraphrases, fact.statement))) == fact.key
        assert stream.fact_of(fact.statement.upper()) == fact.key
        assert stream.specifics_in(fact.key, combined) == fact.all_specifics
        assert stream.specifics_in(fact.key, fact.statement) == fact.specifics
        lossy = fact.statement.replace(fact.specifics[0], "someone")
        assert stream.fact_of(lossy) != fact.key


def test_has_specific_matches_whole_words_ignoring_case() -> None:
    assert has_specific("the atlas launch", "Atlas")
    assert has_specific("at 14:30 sharp", "14:30")
    assert not has_specific("Atlassian", "Atlas")
    assert not has_specific("2026-14", "14:30")
    assert not has_specific("1400 people", "14")


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        generate(0, 2)
    with pytest.raises(ValueError):
        generate(3, 0)
