"""core.dedupe: a near-miss twin that replaces one of two occurrences of a name is a different fact.

Regression for ``reverie bench dedup --facts 100 --restated 3 --twins 20`` reporting ``false_merges 1``: the
generator made "Tomas moved to Porto with Tomas on June 18, 2025." (partner == name), its twin replaced the
subject ("Amara moved to Porto with Tomas ..."), and the save-time lexical fold *extended* the fact's entry
with it. The coverage check compares specifics as sets, so the twin looked like it added Amara and dropped
nothing; counted, it dropped one Tomas. In the other direction the twin looked like a plain restatement
(no new word at all) and was *reinforced*.
"""

from __future__ import annotations

import random

import pytest

from reverie.bench.dedup import Fact, restatements, synthetic_facts, twin
from reverie.core.coverage import DEFAULT_VOCABULARY
from reverie.core.dedup import Verdict, decide

FACT = "Tomas moved to Porto with Tomas on June 18, 2025."
TWIN = "Amara moved to Porto with Tomas on June 18, 2025."
# The entry as it stood when the twin was saved in the benchmark run: the fact, extended by a lower-cased
# reordered restatement.
ENTRY = FACT + "\n\non June 18, 2025, Tomas relocated to Porto with Tomas."


def verdict(existing: str, candidate: str) -> Verdict:
    return decide(existing, candidate, category="facts", vocabulary=DEFAULT_VOCABULARY).verdict


@pytest.mark.parametrize(
    ("existing", "candidate"),
    [
        (FACT, TWIN),  # was EXTEND: the twin appended to the fact's entry
        (ENTRY, TWIN),  # was EXTEND: exactly the benchmark's false merge
        (TWIN, FACT),  # was REINFORCE: no new word, so "nothing the existing text does not already say"
        ("Alex Smith hired Jordan Smith in Oslo.", "Alex Smith hired Jordan Brown in Oslo."),  # was EXTEND
        ("Alex Smith hired Jordan Brown in Oslo.", "Alex Smith hired Jordan Smith in Oslo."),  # was REINFORCE
    ],
)
def test_replacing_one_occurrence_of_a_repeated_name_is_distinct(existing: str, candidate: str) -> None:
    assert verdict(existing, candidate) is Verdict.DISTINCT


@pytest.mark.parametrize(
    ("existing", "candidate", "expected"),
    [
        (FACT, "On June 18, 2025, Tomas relocated to Porto with Tomas.", Verdict.REINFORCE),
        (FACT, FACT.upper(), Verdict.REINFORCE),
        (ENTRY, "On June 18, 2025, Tomas went to Porto with Tomas.", Verdict.REINFORCE),
        ("Tomas moved to Porto on June 18, 2025.", "Tomas moved to Porto with Amara on June 18, 2025.", Verdict.EXTEND),
    ],
)
def test_restatements_of_a_repeated_name_still_converge(existing: str, candidate: str, expected: Verdict) -> None:
    assert verdict(existing, candidate) is expected


def test_the_benchmark_twin_is_a_new_fact_not_a_copy_of_a_generated_one() -> None:
    """The count is right: the generator's twin differs from every generated fact (it is no restatement)."""
    facts = synthetic_facts(100)
    texts = {fact.text() for fact in facts}
    assert FACT in texts and TWIN not in texts


def test_every_generated_twin_stays_distinct_from_its_fact_and_its_restatements() -> None:
    facts = synthetic_facts(400)
    # Every fact whose partner is its own subject, with the subject (one of the two Tomas) replaced.
    doubled = [f for f in facts if f.kind == "moved" and f.slots["name"] == f.slots["partner"]]
    assert doubled, "the generator no longer makes a partner equal to the subject; pick another seed"
    pairs = [(f, Fact(f.kind, {**f.slots, "name": "Amara" if f.slots["name"] != "Amara" else "Maya"})) for f in doubled]
    rng = random.Random(3)
    pairs += [(f, twin(f, rng)) for f in facts]
    wrong = []
    for fact, near in pairs:
        for said in restatements(fact, 3, rng):
            for existing, candidate in ((said, near.text()), (near.text(), said)):
                if (found := verdict(existing, candidate)) is not Verdict.DISTINCT:
                    wrong.append((existing, candidate, found))
    assert not wrong, wrong[:5]
