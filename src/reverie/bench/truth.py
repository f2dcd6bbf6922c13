"""Contradiction traffic, behind ``reverie bench truth``: is a correction ever swallowed?

N durable facts (``bench.truth_data``: everyday facts about people and projects), each saved and restated,
with twins (the same statement about someone else) interleaved; then, later, one statement contradicting
each fact (a negation, an antonym, a flipped comparison or move, a moved time; varied wording), and for
half of them a restatement of the new belief. Saved one by one through ``save``, embedded after each phase
(the semantic fold runs then). Reported, goals in brackets:

- ``false_reinforcements``: contradicting saves that came back ``reinforced`` or ``extended``, or whose entry
  the semantic fold later folded into an older one [0];
- ``findable_by_id`` / ``findable_by_search``: contradicting texts stored whole under their own id, and
  found by a search for their own words [100%];
- ``current_above``: a question about the fact ranks the current belief above the superseded one (which
  may be absent) in the default search [>= 95%];
- ``superseded_kept``: the entry each fact converged into still holds its text, unarchived, superseded by
  the contradiction [100%];
- ``restated_live``: live entries holding the facts after their restatements [<= 1.1 x facts];
  ``twins_apart``: twins that stayed their own current entry [100%]; ``new_belief_reinforced``: restatements
  of the new belief that reinforced it [100%].

The baseline in the same run: the same traffic with the stance check off (an empty stance vocabulary, the
behaviour before it existed). Then the hand-written corrections of ``bench.truth_said`` ("Actually, … on
Thursday, not Tuesday"), the check on and off.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import reverie
from reverie.bench.recall import engine_settings, rate, workspace
from reverie.bench.truth_data import TruthFact, restatement, truth_facts
from reverie.bench.truth_said import SaidRun, run_said
from reverie.core.stance_vocabulary import STANCE_FILE_NAME
from reverie.types import Scope

AGENT = "bench-truth"
DEFAULT_SEED = 20261201
Progress = Callable[[str], None]


@dataclass(slots=True)
class TruthRun:
    stance_check: bool
    saves: int
    seconds: float
    save_rate: float | None
    contradictions: int
    false_reinforcements: int
    findable_by_id: int
    findable_by_search: int
    current_above: int
    superseded_kept: int
    restated_live: int
    twins_apart: int
    new_belief_restated: int
    new_belief_reinforced: int
    outcomes: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> contradictions, false, above


@dataclass(frozen=True, slots=True)
class TruthReport:
    facts: int
    restated: int
    twins: int
    model: str | None
    runs: tuple[TruthRun, ...]
    notes: tuple[str, ...]
    said: tuple[SaidRun, ...] = ()  # the hand-written corrections (``bench.truth_said``), check on and off


@dataclass(slots=True)
class _Ids:
    fact: dict[int, set[str]] = field(default_factory=dict)  # entry ids the fact's saves landed in
    twin: dict[int, str] = field(default_factory=dict)
    contradiction: dict[int, tuple[str, str]] = field(default_factory=dict)  # entry id, outcome
    restated_new: dict[int, tuple[str, str]] = field(default_factory=dict)
    before: dict[str, str] = field(default_factory=dict)  # the facts' entries and their text before phase two


def _plan(facts: list[TruthFact], restated: int, twins: int, rng: random.Random) -> tuple[list[Any], list[Any]]:
    """Phase one (facts, restatements, twins, interleaved) and phase two (contradictions, then restatements
    of half of the new beliefs, interleaved)."""
    first: list[tuple[str, int, str]] = []
    for index, fact in enumerate(facts):
        first.append(("fact", index, fact.text))
        first.extend(("fact", index, restatement(fact.text, rng)) for _ in range(restated - 1))
    rng.shuffle(first)
    with_twin = [i for i, fact in enumerate(facts) if fact.twin]
    for index in rng.sample(with_twin, min(twins, len(with_twin))):
        first.append(("twin", index, facts[index].twin))
    second: list[tuple[str, int, str]] = [("contradiction", i, f.contradiction) for i, f in enumerate(facts)]
    rng.shuffle(second)
    again = rng.sample(range(len(facts)), len(facts) // 2)
    second.extend(("restated_new", i, restatement(facts[i].contradiction, rng)) for i in again)
    return first, second


def _save_all(rv: reverie.Reverie, plan: list[Any], ids: _Ids, outcomes: Counter[str], scope: Scope) -> None:
    for role, index, text in plan:
        result = rv.memory.save(text, category="people", scope=scope)
        outcomes[f"{role}:{result.outcome}"] += 1
        if role == "fact":
            ids.fact.setdefault(index, set()).add(result.id)
        elif role == "twin":
            ids.twin[index] = result.id
        elif role == "contradiction":
            ids.contradiction[index] = (result.id, result.outcome)
        else:
            ids.restated_new[index] = (result.id, result.outcome)


def _current(rv: reverie.Reverie, entry_id: str, scope: Scope) -> reverie.MemoryEntry:
    """The entry a text lives in now: through archived folds (``superseded_by`` on an archived entry) only."""
    entry = rv.memory.get(entry_id, scope=scope)
    for _ in range(10):
        if entry.superseded_by is None or not entry.archived:
            break
        entry = rv.memory.get(entry.superseded_by, scope=scope)
    return entry


def _run(facts: list[TruthFact], plans: tuple[list[Any], list[Any]], *, check: bool, say: Progress,
         overrides: dict[str, dict[str, Any]] | None) -> tuple[TruthRun, str | None]:  # fmt: skip
    scope = Scope(agent_id=AGENT)
    with workspace(None, "reverie-bench-truth-") as home:
        if not check:
            (home / STANCE_FILE_NAME).write_text(json.dumps({"builtIn": False}), encoding="utf-8")
        with reverie.open(home, **engine_settings(overrides)) as rv:
            ids, outcomes = _Ids(), Counter[str]()
            started = time.perf_counter()
            _save_all(rv, plans[0], ids, outcomes, scope)
            rv.embed_pending()
            holders = [_current(rv, i, scope) for group in ids.fact.values() for i in group]
            ids.before = {entry.id: entry.content for entry in holders}
            restated_live = len(ids.before)
            say(f"stance check {'on' if check else 'off'}: facts saved; saving the contradictions")
            _save_all(rv, plans[1], ids, outcomes, scope)
            rv.embed_pending()
            seconds = time.perf_counter() - started
            run = _measure(rv, facts, ids, scope, check=check, restated_live=restated_live)
            run.seconds, run.saves = seconds, len(plans[0]) + len(plans[1])
            run.save_rate, run.outcomes = rate(run.saves, seconds), dict(sorted(outcomes.items()))
            return run, rv.embedder.model_id if rv.embedder is not None else None


def _measure(rv: reverie.Reverie, facts: list[TruthFact], ids: _Ids, scope: Scope, *, check: bool,
             restated_live: int) -> TruthRun:  # fmt: skip
    run = TruthRun(check, 0, 0.0, None, len(facts), 0, 0, 0, 0, 0, restated_live, 0, len(ids.restated_new), 0)
    kinds: dict[str, Counter[str]] = {}
    for index, fact in enumerate(facts):
        tally = kinds.setdefault(fact.kind, Counter())
        tally["contradictions"] += 1
        said_id, outcome = ids.contradiction[index]
        holder = _current(rv, said_id, scope)
        swallowed = outcome in ("reinforced", "extended") or holder.id != said_id
        run.false_reinforcements += swallowed
        tally["false_reinforcements"] += swallowed
        run.findable_by_id += holder.id == said_id and holder.content == fact.contradiction
        found = [h.entry.id for h in rv.memory.search(fact.contradiction, limit=10, scope=scope)]
        run.findable_by_search += said_id in found
        olds = {_current(rv, i, scope).id for i in ids.fact[index]} - {said_id}
        ranked = [h.entry.id for h in rv.memory.search(fact.query, limit=10, scope=scope)]
        above = said_id in ranked and all(o not in ranked[: ranked.index(said_id)] for o in olds)
        run.current_above += above
        tally["current_above"] += above
        run.superseded_kept += any(_kept(rv, o, said_id, scope, ids.before.get(o)) for o in olds)
        twin = ids.twin.get(index)
        if twin is not None:
            entry = rv.memory.get(twin, scope=scope)
            run.twins_apart += entry.current and twin not in olds and twin != said_id
        again = ids.restated_new.get(index)
        if again is not None:
            run.new_belief_reinforced += again == (said_id, "reinforced")
    run.by_kind = {kind: dict(tally) for kind, tally in sorted(kinds.items())}
    return run


def _kept(rv: reverie.Reverie, entry_id: str, by: str, scope: Scope, text: str | None) -> bool:
    """The fact's entry is kept whole (its text as before the contradiction), unarchived, superseded by it."""
    entry = rv.memory.get(entry_id, scope=scope)
    return not entry.archived and entry.superseded_by == by and entry.content == text


def run_truth(
    *,
    facts: int = 200,
    restated: int = 3,
    twins: int = 40,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
) -> TruthReport:
    """Both runs (the stance check on, then off as the baseline) over the same traffic."""
    say = progress or (lambda _message: None)
    rng = random.Random(seed)
    generated = truth_facts(facts, seed)
    plans = _plan(generated, restated, twins, rng)
    runs: list[TruthRun] = []
    model = None
    for check in (True, False):
        say(f"stance check {'on' if check else 'off'}: saving {len(plans[0]) + len(plans[1])} statements")
        run, model = _run(generated, plans, check=check, say=say, overrides=overrides)
        runs.append(run)
    say("corrections as people say them: the hand-written pairs, stance check on and off")
    said = tuple(run_said(check=check, overrides=overrides) for check in (True, False))
    notes = (
        "false_reinforcements: contradicting saves reinforced/extended onto, or folded into, an older entry (goal 0)",
        "current_above: a question about the fact ranks the contradiction above the superseded entry (goal >= 95%)",
        "superseded_kept: the older entry kept whole, unarchived, superseded by the contradiction (goal 100%)",
        "the baseline run switches the stance check off: what saves did before it existed",
        "said: hand-written corrections and twins (bench/truth_said.py), each pair in its own agent; unmarked: "
        "a value replaced with no word of change, kept beside the older text, the question answered first with the "
        "later one; kept whole: both texts of the pair still stored (goal: every pair)",
    )
    return TruthReport(len(generated), restated, twins, model, tuple(runs), notes, said)
