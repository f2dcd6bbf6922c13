"""The long-run benchmark's scripted consolidator (bench.longrun_oracle), fed prompts in the host's format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from reverie.bench.longrun_data import Fact, Stream, generate, has_specific, is_chatter
from reverie.bench.longrun_oracle import Consolidator, ShownEntry, parse_entries
from reverie.core.coverage import CoverageSource, check_coverage
from reverie.core.jsonanswer import JSONAnswerError, extract_json_object
from reverie.testing.openai_server import ChatReply

PROTECTED_IMPORTANCE = 0.80


@pytest.fixture(scope="module")
def stream() -> Stream:
    return generate(60, 2)


def block(position: int, entry: ShownEntry, *, tags: str = "") -> str:
    header = f"[{position}] id={entry.id} category={entry.category}"
    if tags:
        header += f" tags={tags}"
    header += f" importance={entry.importance:.2f} first=2026-01-03 last=2026-02-01 reinforced={entry.reinforced}×"
    header += " source=user"
    return header + "\n" + "\n".join("    " + line for line in entry.content.splitlines())


def consolidation_prompt(entries: Sequence[ShownEntry]) -> str:
    blocks = "\n".join(block(i, e, tags="a,b" if i % 2 else "") for i, e in enumerate(entries, start=1))
    return (
        "TASK: memory consolidation\nNow: 2026-03-01\n"
        f"## Entries ({len(entries)})\n{blocks}\n## Recent feedback\n(none)\n\n"
        'Answer with {"toDelete": [...], "toSave": [...]}.'
    )


def body(text: str) -> dict[str, Any]:
    return {
        "model": "scripted",
        "messages": [{"role": "system", "content": "rules"}, {"role": "user", "content": text}],
    }


def text_of(answer: str | ChatReply) -> str:
    assert isinstance(answer, str)
    return answer


def entry(i: int, content: str, category: str, *, importance: float = 0.5, reinforced: int = 1) -> ShownEntry:
    return ShownEntry(f"{i:012x}", category, importance, reinforced, content)


def shown_set(stream: Stream, offset: int) -> tuple[list[ShownEntry], dict[str, Fact]]:
    """Three facts shown twice each (statement and paraphrase), one protected lone fact, three chatter."""
    facts = list(stream.facts.values())[offset : offset + 4]
    entries: list[ShownEntry] = []
    for n, fact in enumerate(facts[:3]):
        entries.append(entry(offset * 100 + 2 * n, fact.statement, fact.category))
        entries.append(entry(offset * 100 + 2 * n + 1, fact.paraphrases[0], fact.category))
    lone = facts[3]
    entries.append(entry(offset * 100 + 50, lone.statement, lone.category, importance=0.9))  # protected
    entries.append(entry(offset * 100 + 51, "ok thanks", "chatter", importance=0.2, reinforced=7))  # protected
    for k, text in enumerate(("checking the logs now", "running the build again", "one sec")):
        entries.append(entry(offset * 100 + 60 + k, text, "chatter", importance=0.2))
    return entries, {f.key: f for f in facts}


def test_parse_entries_reads_the_block_format() -> None:
    text = (
        "## Entries (2)\n"
        "[1] id=ab12cd34ef56 category=projects/atlas tags=deadline,launch importance=0.50 first=2026-01-03 "
        "last=2026-05-02 reinforced=3× subject=2026-01 source=user\n"
        "    The Atlas launch moved to March 14, 2026.\n"
        "    \n"
        "    A second paragraph.\n"
        "[2] id=0123456789ab category=chatter importance=0.85 first=2026-01-03 last=2026-01-03 reinforced=12×\n"
        "    ok thanks\n"
        "## Recent feedback\n"
    )
    first, second = parse_entries(text)
    assert first == ShownEntry(
        "ab12cd34ef56", "projects/atlas", 0.5, 3, "The Atlas launch moved to March 14, 2026.\n\nA second paragraph."
    )
    assert (second.id, second.importance, second.reinforced, second.content) == ("0123456789ab", 0.85, 12, "ok thanks")
    assert second.protected(0.8, 5) and not first.protected(0.8, 5)


def test_a_clean_answer_merges_each_fact_and_prunes_chatter(stream: Stream) -> None:
    entries, facts = shown_set(stream, 0)
    oracle = Consolidator(stream, bad_merge=0, malformed=0, think=0, protected_prune=0, invented=0, blank=0)
    answer = extract_json_object(text_of(oracle(body(consolidation_prompt(entries)))))

    by_id = {e.id: e for e in entries}
    assert len(answer["toSave"]) == 3
    for save in answer["toSave"]:
        sources = [by_id[i] for i in save["sourceIds"]]
        key = stream.fact_of(sources[0].content)
        assert key is not None and len(sources) == 2
        assert all(stream.fact_of(s.content) == key for s in sources)
        assert check_coverage([CoverageSource(s.content, s.category) for s in sources], save["content"]).ok
        assert all(has_specific(save["content"], s) for s in facts[key].specifics)
        assert save["category"] == facts[key].category
    chatter_ids = {e.id for e in entries if is_chatter(e.content) and e.reinforced < 5}
    assert set(answer["toDelete"]) == chatter_ids
    assert oracle.counts.good_merges == 3 and oracle.counts.chatter_prunes == 3
    assert oracle.counts.entries_shown == len(entries)


def test_a_merge_keeps_the_extra_specific_of_an_extension(stream: Stream) -> None:
    fact = next(iter(stream.facts.values()))
    entries = [entry(1, fact.statement, fact.category), entry(2, fact.extension, fact.category)]
    oracle = Consolidator(stream, bad_merge=0, malformed=0, think=0, invented=0, blank=0)
    (save,) = extract_json_object(text_of(oracle(body(consolidation_prompt(entries)))))["toSave"]
    assert has_specific(save["content"], fact.extra)


def _many_answers(stream: Stream, oracle: Consolidator, rounds: int) -> list[tuple[list[ShownEntry], str]]:
    out = []
    for r in range(rounds):
        entries, _ = shown_set(stream, r % 10)
        out.append((entries, text_of(oracle(body(consolidation_prompt(entries))))))
    return out


def test_proposals_come_at_their_rates(stream: Stream) -> None:
    oracle = Consolidator(stream, seed=3)
    answers = _many_answers(stream, oracle, 400)
    c = oracle.counts
    assert c.consolidation_calls == 400
    assert 0.05 <= c.malformed / 400 <= 0.15
    usable = 400 - c.malformed
    assert 0.14 <= c.think_noise / usable <= 0.26
    assert 0.14 <= c.bad_merges / (c.good_merges + c.bad_merges) <= 0.26
    assert 0.05 <= c.blank_saves / usable <= 0.15
    assert 0.2 <= c.protected_prunes / (2 * usable) <= 0.4  # two protected entries per prompt
    assert c.invented_ids > 0 and c.chatter_prunes == 3 * usable
    assert c.merge_fallbacks == 0
    assert len(answers) == 400


def test_answers_hold_each_kind_of_bad_proposal(stream: Stream) -> None:
    oracle = Consolidator(stream, seed=5)
    kinds: set[str] = set()
    for entries, raw in _many_answers(stream, oracle, 200):
        by_id = {e.id: e for e in entries}
        try:
            answer = extract_json_object(raw)
        except JSONAnswerError:
            kinds.add("malformed")
            continue
        if raw.lstrip().startswith("<think>"):
            kinds.add("think")
        for target in answer["toDelete"]:
            if target not in by_id:
                kinds.add("invented delete")
                continue
            shown = by_id[target]
            # Wrongful prunes only ever target protected entries; unprotected ones pruned are chatter.
            assert shown.protected(PROTECTED_IMPORTANCE, 5) or is_chatter(shown.content)
            if shown.protected(PROTECTED_IMPORTANCE, 5):
                kinds.add("protected prune")
        for save in answer["toSave"]:
            if not save["content"].strip():
                kinds.add("blank")
                assert all(i in by_id for i in save["sourceIds"])
                continue
            if any(i not in by_id for i in save["sourceIds"]):
                kinds.add("invented source")
            sources = [CoverageSource(by_id[i].content, by_id[i].category) for i in save["sourceIds"] if i in by_id]
            kinds.add("good merge" if check_coverage(sources, save["content"]).ok else "bad merge")
    assert kinds == {
        "malformed", "think", "invented delete", "invented source", "protected prune", "blank", "good merge",
        "bad merge",
    }  # fmt: skip


def test_malformed_answers_do_not_parse_and_think_noise_does(stream: Stream) -> None:
    entries, _ = shown_set(stream, 1)
    broken = Consolidator(stream, malformed=1.0)
    for _ in range(40):
        with pytest.raises(JSONAnswerError):
            extract_json_object(text_of(broken(body(consolidation_prompt(entries)))))
    assert broken.counts.malformed == 40
    noisy = Consolidator(stream, malformed=0, think=1.0)
    raw = text_of(noisy(body(consolidation_prompt(entries))))
    assert raw.startswith("<think>") and "</think>" in raw
    assert set(extract_json_object(raw)) == {"toDelete", "toSave"}
    assert noisy.counts.think_noise == 1


def test_an_unprotected_durable_entry_is_never_pruned(stream: Stream) -> None:
    facts = list(stream.facts.values())[:12]
    entries = [entry(i, f.statement, f.category, importance=0.5, reinforced=2) for i, f in enumerate(facts)]
    oracle = Consolidator(stream, protected_prune=1.0, malformed=0, invented=0, blank=0)
    for _ in range(20):
        answer = extract_json_object(text_of(oracle(body(consolidation_prompt(entries)))))
        assert answer["toDelete"] == [] and answer["toSave"] == []


def repair_prompt(merged: str, sources: Sequence[ShownEntry], missing: Sequence[str]) -> str:
    blocks = "\n".join(block(i, s) for i, s in enumerate(sources, start=1))
    return (
        "TASK: merge repair\n## Merged text\n" + "\n".join("    " + line for line in merged.splitlines())
        + f"\n## Sources\n{blocks}\n## Missing specifics\n" + "".join(f"- {m}\n" for m in missing)
        + '\nAnswer {"content": "..."}.'
    )  # fmt: skip


def test_repairs_restore_the_missing_strings_or_return_the_text_unchanged(stream: Stream) -> None:
    fact = next(iter(stream.facts.values()))
    sources = [entry(1, fact.statement, fact.category), entry(2, fact.paraphrases[0], fact.category)]
    dropped = fact.specifics[0]
    merged = fact.statement.replace(dropped, "").replace("  ", " ").strip()
    prompt = repair_prompt(merged, sources, [dropped])
    fixer = Consolidator(stream, repair_fail=0, think=0)
    repaired = extract_json_object(text_of(fixer(body(prompt))))["content"]
    assert check_coverage([CoverageSource(s.content, s.category) for s in sources], repaired).ok
    assert repaired.startswith(merged.rstrip())
    stubborn = Consolidator(stream, repair_fail=1.0, think=0)
    assert extract_json_object(text_of(stubborn(body(prompt))))["content"] == merged
    assert (fixer.counts.repairs_restored, stubborn.counts.repairs_unchanged) == (1, 1)


def test_cluster_rewrites_keep_every_specific(stream: Stream) -> None:
    fact = list(stream.facts.values())[2]
    other = list(stream.facts.values())[3]
    oracle = Consolidator(stream, think=0)
    for members in (
        [entry(1, fact.statement, fact.category), entry(2, fact.extension, fact.category)],
        [entry(1, fact.statement, fact.category), entry(2, other.statement, other.category)],
        [entry(1, "ok thanks", "chatter"), entry(2, "checking the logs now", "chatter")],
    ):
        blocks = "\n".join(block(i, m) for i, m in enumerate(members, start=1))
        prompt = f"TASK: cluster rewrite\n\n## Entries ({len(members)})\n{blocks}\n\nAnswer with one JSON object."
        content = extract_json_object(text_of(oracle(body(prompt))))["content"]
        assert check_coverage([CoverageSource(m.content, m.category) for m in members], content).ok
    assert is_chatter(content)
    assert oracle.counts.rewrite_calls == 3


def test_unknown_tasks_get_an_empty_plan(stream: Stream) -> None:
    oracle = Consolidator(stream)
    assert json.loads(text_of(oracle(body("Tell me a joke")))) == {"toDelete": [], "toSave": []}
    assert oracle.counts.unknown_calls == 1


def test_the_same_seed_gives_the_same_answers(stream: Stream) -> None:
    first = [raw for _, raw in _many_answers(stream, Consolidator(stream, seed=11), 30)]
    second = [raw for _, raw in _many_answers(stream, Consolidator(stream, seed=11), 30)]
    assert first == second
