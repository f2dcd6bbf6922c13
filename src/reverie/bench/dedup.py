"""Convergence under restatement, behind ``reverie bench dedup``.

1,000 distinct synthetic facts (seeded, so runs compare), each saved 10 times: once as written and 9 times
restated (clauses reordered, words swapped for synonyms, case changed); then 200 near-miss twins, each
differing from one of those facts only in a name, a number or a date. Saved one by one through ``save``
(the save-time lexical lookup), then embedded (the after-embedding semantic fold).

Reported: ``live`` (live entries holding the 1,000 facts; goal <= 1,100), ``false_merges`` (twins folded into
another entry; goal 0), ``collisions`` (distinct facts that ended in one entry), the outcomes and the
reinforcement total. The baseline in the same run: the same saves with deduplication off.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import reverie
from reverie.bench.recall import engine_settings, rate, workspace
from reverie.types import Scope

AGENT = "bench-dedup"
DEFAULT_SEED = 20241107
Progress = Callable[[str], None]

NAMES = (
    "Maya", "Tomas", "Priya", "Jonas", "Amara", "Lucas", "Sofia", "Daniel", "Leila", "Mateo", "Nora", "Hiro",
    "Elena", "Kwame", "Ingrid", "Omar", "Clara", "Ravi", "Freya", "Diego", "Anika", "Felix", "Zara", "Marco",
)  # fmt: skip
CITIES = (
    "Lisbon", "Oslo", "Nairobi", "Kyoto", "Toronto", "Porto", "Denver", "Cairo", "Dublin", "Lima", "Seoul",
    "Prague", "Austin", "Hanoi", "Bergen", "Madrid", "Quito", "Perth", "Zurich", "Accra",
)  # fmt: skip
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)  # fmt: skip  (May is left out: it is also an ordinary word, see the coverage vocabulary)
ITEMS = ("bicycle", "laptop", "piano", "canoe", "camera", "violin", "tent", "sofa", "kettle", "telescope")
# (verb as written, its synonyms): a paraphrase swaps one in.
VERBS = {
    "bought": ("purchased", "got"),
    "booked": ("reserved", "arranged"),
    "moved": ("relocated", "went"),
    "started": ("began", "took up"),
}


@dataclass(frozen=True, slots=True)
class Fact:
    kind: str
    slots: dict[str, Any]

    def text(self) -> str:
        return _render(self.kind, self.slots, order=0, verb_index=-1)


def _date(s: dict[str, Any]) -> str:
    return f"{s['month']} {s['day']}, {s['year']}"


def _render(kind: str, s: dict[str, Any], *, order: int, verb_index: int) -> str:
    """A fact in one of two clause orders, with the verb or one of its synonyms (verb_index -1: as written)."""
    verb = kind if verb_index < 0 else VERBS[kind][verb_index % len(VERBS[kind])]
    when = f"on {_date(s)}"
    if kind == "bought":
        body = f"{s['name']} {verb} a {s['item']} for {s['price']} euros in {s['city']}"
    elif kind == "booked":
        body = f"{s['name']} {verb} a table for {s['guests']} people at {s['city']} Bistro"
    elif kind == "moved":
        body = f"{s['name']} {verb} to {s['city']} with {s['partner']}"
    else:
        body = f"{s['name']} {verb} learning the {s['item']} with a teacher from {s['city']}"
    return f"{body} {when}." if order == 0 else f"On {_date(s)}, {body}."


def synthetic_facts(count: int, seed: int = DEFAULT_SEED) -> list[Fact]:
    """``count`` facts, pairwise different in at least one name, number or date."""
    rng = random.Random(seed)
    seen: set[tuple[Any, ...]] = set()
    out: list[Fact] = []
    while len(out) < count:
        kind = rng.choice(tuple(VERBS))
        slots: dict[str, Any] = {
            "name": rng.choice(NAMES),
            "city": rng.choice(CITIES),
            "item": rng.choice(ITEMS),
            "month": rng.choice(MONTHS),
            "day": rng.randint(1, 28),
            "year": rng.randint(2019, 2028),
            "price": rng.randint(20, 4000),
            "guests": rng.randint(2, 12),
            "partner": rng.choice(NAMES),
        }
        key = (kind, slots["name"], slots["month"], slots["day"], slots["year"])
        if key not in seen:
            seen.add(key)
            out.append(Fact(kind, slots))
    return out


def restatements(fact: Fact, count: int, rng: random.Random) -> list[str]:
    """``count`` restatements: the original first, then reordered, paraphrased and re-cased variants."""
    out = [fact.text()]
    for i in range(1, count):
        text = _render(fact.kind, fact.slots, order=i % 2, verb_index=rng.choice((-1, 0, 1)))
        case = rng.choice(("keep", "lower", "upper", "title"))
        if case == "lower":
            text = text.lower()
        elif case == "upper":
            text = text.upper()
        elif case == "title":
            text = text.title()
        out.append(text)
    return out


def twin(fact: Fact, rng: random.Random) -> Fact:
    """The fact with exactly one name, number or date replaced."""
    slots = dict(fact.slots)
    what = rng.choice(("name", "number", "date"))
    if what == "name":
        slots["name"] = rng.choice([n for n in NAMES if n != slots["name"]])
    elif what == "number":
        key = {"bought": "price", "booked": "guests"}.get(fact.kind, "day")
        slots[key] = slots[key] + rng.randint(1, 9)
    else:
        slots["year"] = slots["year"] + rng.choice((-1, 1))
    return Fact(fact.kind, slots)


@dataclass(frozen=True, slots=True)
class DedupRun:
    dedup: bool
    saves: int
    seconds: float
    save_rate: float | None
    live: int  # live entries holding the distinct facts
    twins_live: int  # twins that stayed their own live entry
    false_merges: int  # twins folded into another entry
    collisions: int  # distinct facts sharing an entry with another distinct fact
    outcomes: dict[str, int]
    folded_after_embedding: int
    reinforcement_total: int  # sum of reinforcement counts over the live fact entries


@dataclass(frozen=True, slots=True)
class DedupReport:
    facts: int
    restatements: int
    twins: int
    model: str | None
    runs: tuple[DedupRun, ...]
    notes: tuple[str, ...]


def _run(
    plan: list[tuple[int, str, bool]], *, dedup: bool, overrides: dict[str, dict[str, Any]] | None, say: Progress
) -> tuple[DedupRun, str | None]:
    """Save every (fact index, text, is twin) of the plan into a fresh store and count what is live."""
    scope = Scope(agent_id=AGENT)
    with workspace(None, "reverie-bench-dedup-") as home, reverie.open(home, **engine_settings(overrides)) as rv:
        outcomes: Counter[str] = Counter()
        entry_of: list[tuple[int, bool, str]] = []
        started = time.perf_counter()
        for index, text, is_twin in plan:
            result = rv.memory.save(text, category="facts", scope=scope, dedup=dedup)
            outcomes[result.outcome] += 1
            entry_of.append((index, is_twin, result.id))
        say(f"dedup={dedup}: saved {len(plan)}; embedding")
        embedded_before = rv.stats().archived
        rv.embed_pending()
        seconds = time.perf_counter() - started
        folded = rv.stats().archived - embedded_before
        run = _count(rv, scope, entry_of, dedup=dedup, seconds=seconds, outcomes=outcomes, folded=folded)
        return run, rv.embedder.model_id if rv.embedder is not None else None


def _resolve(rv: reverie.Reverie, entry_id: str, scope: Scope) -> reverie.MemoryEntry:
    """Follow ``superseded_by`` to the entry a fact lives in now."""
    entry = rv.memory.get(entry_id, scope=scope)
    for _ in range(10):
        if entry.superseded_by is None:
            break
        entry = rv.memory.get(entry.superseded_by, scope=scope)
    return entry


def _count(
    rv: reverie.Reverie,
    scope: Scope,
    entry_of: list[tuple[int, bool, str]],
    *,
    dedup: bool,
    seconds: float,
    outcomes: Counter[str],
    folded: int,
) -> DedupRun:
    holders: dict[str, set[int]] = {}
    twin_holders: dict[str, int] = {}
    for index, is_twin, entry_id in entry_of:
        entry = _resolve(rv, entry_id, scope)
        if entry.archived:
            continue
        if is_twin:
            twin_holders[entry.id] = index
        else:
            holders.setdefault(entry.id, set()).add(index)
    false_merges = sum(1 for entry_id in twin_holders if entry_id in holders)
    false_merges += len([1 for _, t, _ in entry_of if t]) - len(twin_holders)  # twins in a shared twin entry
    reinforcement = sum(rv.memory.get(entry_id, scope=scope).reinforcement_count for entry_id in holders)
    return DedupRun(
        dedup=dedup,
        saves=len(entry_of),
        seconds=seconds,
        save_rate=rate(len(entry_of), seconds),
        live=len(holders),
        twins_live=len(twin_holders) - sum(1 for entry_id in twin_holders if entry_id in holders),
        false_merges=false_merges,
        collisions=sum(len(indexes) - 1 for indexes in holders.values()),
        outcomes=dict(outcomes),
        folded_after_embedding=folded,
        reinforcement_total=reinforcement,
    )


def run_dedup(
    *,
    facts: int = 1000,
    restated: int = 10,
    twins: int = 200,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
) -> DedupReport:
    """Both runs (deduplication on, then off as the baseline) over the same plan."""
    say = progress or (lambda _message: None)
    rng = random.Random(seed)
    base = synthetic_facts(facts, seed)
    plan: list[tuple[int, str, bool]] = []
    for index, fact in enumerate(base):
        plan.extend((index, text, False) for text in restatements(fact, restated, rng))
    rng.shuffle(plan)  # restatements arrive interleaved, as across sessions
    for index in rng.sample(range(len(base)), min(twins, len(base))):
        plan.append((index, twin(base[index], rng).text(), True))
    runs = []
    model = None
    for dedup in (True, False):
        say(f"dedup={dedup}: saving {len(plan)} facts one by one")
        run, model = _run(plan, dedup=dedup, overrides=overrides, say=say)
        runs.append(run)
    notes = (
        "live counts live entries that hold the distinct facts (goal <= 1.1 x facts); twins must stay their own",
        "folded_after_embedding: entries the semantic (cosine) check folded after the background embedding",
        "seconds include embedding every entry once",
    )
    return DedupReport(facts, restated, twins, model, tuple(runs), notes)
