"""The long-run benchmark's traffic: a deterministic year of saves, durable facts among chatter.

``generate(days, cycles_per_day, seed)`` plans, for every dream-cycle slot, the saves an agent makes before
that cycle runs, and keeps a registry of the durable facts they state. A durable fact has a key, a canonical
statement carrying specifics (names capitalised mid-sentence, acronyms, multi-digit numbers, dates such as
"March 14, 2026"), the list of those specifics, one *extra* specific an extension adds, a search query that
finds it, and restatements: exact repeats (save-time deduplication folds them), paraphrases with the same
specifics (the consolidator should merge them) and extensions (the statement plus the extra specific).

Shape of a day: about one day in seven is idle (no saves at all, so both of its cycles are idle); an active
day has 3-6 durable events (a new fact or a restatement of a known one) and 5-15 chatter entries
("ok thanks", "checking the logs now": lower case, no digits, category ``chatter``, tier ``episodic``).
Durable statements are tier ``semantic`` in a handful of categories. A day's saves keep their order (a
restatement never precedes its fact) and are split over the day's cycles at random cut points.

Invariants (tested): the same arguments give the same stream; everything comes from one seeded
``random.Random``, nothing reads a clock; every statement's specifics, as ``reverie.core.coverage``'s
``specifics`` finds them with the default vocabulary, are exactly its fact's listed specifics (plus the extra
for an extension); chatter yields none; no fact's anchor words (its specifics' words, lower-cased) are a
subset of another's, so ``Stream.fact_of`` names one fact for any text holding one fact's statements.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["CHATTER_CATEGORY", "Fact", "Save", "Stream", "chatter_words", "generate", "is_chatter", "words_of"]

CHATTER_CATEGORY = "chatter"
SaveKind = Literal["new", "repeat", "paraphrase", "extension", "chatter"]
_WORD = re.compile(r"[^\W_]+")

CODENAMES = (
    "Atlas", "Borealis", "Cobalt", "Dynamo", "Fjord", "Granite", "Helix", "Indigo", "Juniper", "Kestrel",
    "Lumen", "Meridian", "Nimbus", "Onyx", "Pylon", "Quasar", "Rainier", "Sable", "Tundra", "Umbra",
    "Vesper", "Xenon", "Yarrow", "Zephyr", "Aurora", "Basalt", "Cinder", "Ember", "Glacier", "Ibex",
    "Jasper", "Krypton", "Lotus", "Mosaic", "Nebula", "Orchid", "Polaris", "Quill", "Sequoia", "Talon",
)  # fmt: skip
PEOPLE = (
    "Maya", "Tomas", "Priya", "Jonas", "Amara", "Lucas", "Sofia", "Daniel", "Leila", "Mateo", "Nora", "Hiro",
    "Elena", "Kwame", "Ingrid", "Omar", "Clara", "Ravi", "Freya", "Diego", "Anika", "Felix", "Zara", "Marco",
    "Yusuf", "Greta", "Soren", "Imani", "Pavel", "Keiko",
)  # fmt: skip
COMPANIES = (
    "Northwind", "Contoso", "Globex", "Initech", "Hooli", "Vandelay", "Cyberdyne", "Tyrell", "Wonka", "Acme",
    "Monarch", "Pinnacle", "Zenith", "Vertex", "Halcyon", "Oakridge", "Bluefin", "Redwood", "Silverline",
    "Ironclad",
)  # fmt: skip
CITIES = (
    "Lisbon", "Oslo", "Nairobi", "Kyoto", "Toronto", "Porto", "Denver", "Cairo", "Dublin", "Lima", "Seoul",
    "Prague", "Austin", "Hanoi", "Bergen", "Madrid", "Quito", "Perth", "Zurich", "Accra",
)  # fmt: skip
CLOUDS = ("AWS", "GCP", "OCI", "OVH")
TOOLS = ("GitLab", "GitHub", "Gerrit", "Bitbucket", "Phabricator")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
# May is left out: it is also an ordinary word (see the coverage vocabulary).
MONTHS = (
    "January", "February", "March", "April", "June", "July", "August", "September", "October", "November",
    "December",
)  # fmt: skip

_CHATTER_OPENERS = (
    "ok", "okay", "sure", "got it", "right", "alright", "cool", "thanks", "ok thanks", "sounds good", "hmm",
    "one sec", "noted", "nice", "fair enough", "makes sense",
)  # fmt: skip
_CHATTER_ACTIONS = (
    "checking the logs now", "running the build again", "looking into it", "pulling the latest changes",
    "restarting the dev server", "rerunning the tests", "clearing the cache", "waiting on the pipeline",
    "reading through the diff", "trying that again", "opening the dashboard", "fixing the typo",
    "grabbing a coffee", "back in a minute", "pushing the branch", "updating the notes", "rebasing on main",
    "watching the deploy", "tailing the output", "bumping the timeout", "poking at the config",
    "skimming the docs", "retrying the request", "killing the stuck job",
)  # fmt: skip
_CHATTER_TAILS = ("now", "again", "one more time", "brb", "for a bit", "will report back", "almost there")


def words_of(text: str) -> frozenset[str]:
    """The lower-cased letter/digit runs of ``text`` (how ``fact_of`` and ``is_chatter`` read a text)."""
    return frozenset(match.group(0).lower() for match in _WORD.finditer(text))


def chatter_words() -> frozenset[str]:
    """Every word chatter is made of."""
    return words_of(" ".join(_CHATTER_OPENERS + _CHATTER_ACTIONS + _CHATTER_TAILS))


_CHATTER_WORDS = chatter_words()


def is_chatter(content: str) -> bool:
    """Whether ``content`` is chatter: only chatter words, no capitals, no digits (joined chatter, as a
    merge or a cold-cluster rewrite of chatter writes it, is chatter too)."""
    found = words_of(content)
    return bool(found) and found <= _CHATTER_WORDS and content == content.lower()


def _chatter(rng: random.Random) -> str:
    form = rng.randrange(4)
    if form == 0:
        return rng.choice(_CHATTER_OPENERS)
    action = rng.choice(_CHATTER_ACTIONS)
    if form == 1:
        return action
    if form == 2:
        return f"{rng.choice(_CHATTER_OPENERS)}, {action}"
    return f"{action}, {rng.choice(_CHATTER_TAILS)}"


# --- durable facts -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kind:
    """One family of durable facts: templates over named slots (``{D}`` is a date, ``{X}`` the extra)."""

    name: str
    category: str
    tags: tuple[str, ...]
    key: tuple[str, ...]  # the slots that identify a fact of this kind
    specifics: tuple[str, ...]  # templates of the specifics, in the canonical statement's order
    canonical: str
    paraphrases: tuple[str, ...]
    extension: str
    query: str
    extra: str  # which pool the extra specific comes from: "person" or "city"


_KINDS = (
    _Kind(
        "launch", "projects/{p}", ("deadline", "launch"), ("P",), ("{P}", "{Mon}", "{dd}", "{yyyy}"),
        "The {P} launch moved to {D}.",
        ("Our {P} release is now scheduled to ship on {D} after the latest slip.",
         "We expect {P} to go live on {D}; plan the announcement around it.",
         "Per the planning review, the target date for shipping {P} is {D}."),
        "The {P} launch moved to {D}, confirmed by {X} in the standup.",
        "When does the {P} launch happen?", "person",
    ),
    _Kind(
        "budget", "finance/budgets", ("budget",), ("P",), ("{P}", "{yyyy}", "{N}"),
        "The {P} budget for {yyyy} is {N} euros.",
        ("We can spend at most {N} euros on {P} during {yyyy}.",
         "Our {yyyy} allocation for {P} came in at {N} euros, no more."),
        "The {P} budget for {yyyy} is {N} euros, signed off by {X}.",
        "What is the {P} budget for {yyyy}?", "person",
    ),
    _Kind(
        "hosting", "infra/services", ("hosting",), ("P",), ("{P}", "{C}", "{City}", "{nn}"),
        "The {P} service runs on {C} in {City} with {nn} nodes.",
        ("We host {P} in {City} on {C}, a cluster of {nn} nodes.",
         "Our {P} deployment lives on {C} near {City} and scales out to {nn} nodes at peak."),
        "The {P} service runs on {C} in {City} with {nn} nodes; {X} is the on-call owner.",
        "Where is the {P} service hosted?", "person",
    ),
    _Kind(
        "contact", "people/contacts", ("contact",), ("Person", "Company"), ("{Person}", "{Company}", "{ext}"),
        "{Person} from {Company} can be reached on extension {ext}.",
        ("To reach {Person} at {Company}, dial extension {ext}.",
         "The desk line for {Person} over at {Company} is extension {ext}."),
        "{Person} from {Company} can be reached on extension {ext}, or in the {X} office.",
        "How do I reach {Person} at {Company}?", "city",
    ),
    _Kind(
        "travel", "travel", ("trip",), ("Person", "City"),
        ("{Person}", "{City}", "{Mon}", "{dd}", "{yyyy}", "{Company}"),
        "{Person} flies to {City} on {D} for the {Company} offsite.",
        ("On {D}, {Person} is travelling to {City}, where {Company} hosts its yearly planning retreat "
         "with workshops.",
         "{Person} has a seat booked to {City} departing {D}, in time for the {Company} leadership retreat "
         "and dinner."),
        "{Person} flies to {City} on {D} for the {Company} offsite, together with {X}.",
        "When does {Person} fly to {City}?", "person",
    ),
    _Kind(
        "meeting", "meetings", ("recurring",), ("P", "Company"), ("{P}", "{Company}", "{Weekday}", "{time}"),
        "The {P} sync with {Company} happens every {Weekday} at {time}.",
        ("Every {Weekday} at {time} we dial in with {Company} to go over {P} progress, blockers and next steps.",
         "Our standing call with {Company} about {P} is booked for {Weekday} at {time}, recurring weekly on "
         "the team calendar."),
        "The {P} sync with {Company} happens every {Weekday} at {time}, hosted by {X}.",
        "When is the {P} sync with {Company}?", "person",
    ),
    _Kind(
        "review", "preferences", ("preference",), ("Person",), ("{Person}", "{Tool}", "{nn}"),
        "{Person} prefers {Tool} for code review and wants feedback within {nn} hours.",
        ("For code review, {Person} uses {Tool} and expects comments inside {nn} hours.",
         "When reviewing code, {Person} sticks to {Tool}; replies are due within {nn} hours."),
        "{Person} prefers {Tool} for code review and wants feedback within {nn} hours, ideally before lunch "
        "in {X}.",
        "Which review tool does {Person} prefer?", "city",
    ),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Fact:
    """A durable fact: what the memory must keep findable. ``specifics`` are the canonical statement's;
    ``extra`` is the one an extension adds; ``anchor`` the lower-cased words of ``specifics``."""

    key: str
    kind: str
    category: str
    tags: tuple[str, ...]
    statement: str
    specifics: tuple[str, ...]
    extra: str
    query: str
    paraphrases: tuple[str, ...]
    extension: str
    importance: float
    anchor: frozenset[str]
    first_day: int

    @property
    def all_specifics(self) -> tuple[str, ...]:
        return (*self.specifics, self.extra)


@dataclass(frozen=True, slots=True)
class Save:
    """One planned ``memory.save``. ``fact`` is the durable fact it states (None for chatter)."""

    content: str
    category: str
    tags: tuple[str, ...]
    source: str
    importance: float
    tier: str
    kind: SaveKind
    fact: str | None = None


@dataclass(frozen=True, slots=True)
class Stream:
    """The plan: ``slots[i]`` are the saves made before dream cycle ``i`` (day ``i // cycles_per_day``)."""

    days: int
    cycles_per_day: int
    seed: int
    slots: tuple[tuple[Save, ...], ...]
    facts: Mapping[str, Fact]
    _index: Mapping[str, tuple[str, ...]] = field(repr=False, compare=False)

    def fact_of(self, content: str) -> str | None:
        """The key of the durable fact ``content`` states: the fact whose anchor words all occur in it (the
        largest anchor when several do), so a merged text holding several statements of one fact, with or
        without the extra, still names it. None for chatter and for texts that lost an anchor word."""
        found = words_of(content)
        hits: Counter[str] = Counter()
        for word in found:
            hits.update(self._index.get(word, ()))
        best: tuple[int, str] | None = None
        for key, count in hits.items():
            size = len(self.facts[key].anchor)
            if count == size and (best is None or size > best[0]):
                best = (size, key)
        return None if best is None else best[1]

    def specifics_in(self, key: str, content: str) -> tuple[str, ...]:
        """The fact's specifics (the extra included) that ``content`` holds as whole words, ignoring case."""
        return tuple(s for s in self.facts[key].all_specifics if has_specific(content, s))

    def is_idle(self, slot: int) -> bool:
        """No saves before this cycle (so nothing new since the previous one)."""
        return not self.slots[slot]

    def summary(self) -> dict[str, float]:
        """Figures of the stream: facts, saves by kind, specifics per fact, entries per active day."""
        kinds = Counter(save.kind for slot in self.slots for save in slot)
        per_day = [
            sum(len(self.slots[d * self.cycles_per_day + c]) for c in range(self.cycles_per_day))
            for d in range(self.days)
        ]
        active = [n for n in per_day if n]
        specifics = [len(f.specifics) for f in self.facts.values()]
        return {
            "days": self.days,
            "active_days": len(active),
            "idle_days": self.days - len(active),
            "idle_cycles": sum(1 for slot in self.slots if not slot),
            "facts": len(self.facts),
            "saves": sum(kinds.values()),
            **{f"saves_{kind}": float(kinds[kind]) for kind in ("new", "repeat", "paraphrase", "extension")},
            "saves_chatter": kinds["chatter"],
            "saves_per_active_day": sum(active) / len(active) if active else 0.0,
            "durable_per_active_day": (sum(kinds.values()) - kinds["chatter"]) / len(active) if active else 0.0,
            "chatter_per_active_day": kinds["chatter"] / len(active) if active else 0.0,
            "specifics_per_fact": sum(specifics) / len(specifics) if specifics else 0.0,
        }


def has_specific(content: str, specific: str) -> bool:
    """Whether ``content`` holds ``specific`` as a whole word (or whole number), ignoring case."""
    pattern = rf"(?<![^\W_]){re.escape(specific)}(?![^\W_])"
    return re.search(pattern, content, re.IGNORECASE) is not None


# --- generation ----------------------------------------------------------------------------------------


def _slots(rng: random.Random) -> dict[str, str]:
    month, day, year = rng.choice(MONTHS), rng.randint(10, 28), rng.randint(2026, 2028)
    values = {
        "P": rng.choice(CODENAMES),
        "Person": rng.choice(PEOPLE),
        "Company": rng.choice(COMPANIES),
        "City": rng.choice(CITIES),
        "C": rng.choice(CLOUDS),
        "Tool": rng.choice(TOOLS),
        "Weekday": rng.choice(WEEKDAYS),
        "Mon": month,
        "dd": str(day),
        "yyyy": str(year),
        "D": f"{month} {day}, {year}",
        "N": f"{rng.randint(12, 480)},{rng.choice(('000', '500'))}",
        "nn": str(rng.randint(12, 96)),
        "ext": str(rng.randint(2000, 8999)),
        "time": f"{rng.randint(9, 17):02d}:{rng.choice(('00', '15', '30', '45'))}",
    }
    values["p"] = values["P"].lower()
    return values


def _extra(kind: _Kind, values: Mapping[str, str], rng: random.Random) -> str:
    if kind.extra == "city":
        return rng.choice([c for c in CITIES if c != values.get("City")])
    return rng.choice([p for p in PEOPLE if p != values.get("Person")])


def _anchor(specifics: tuple[str, ...]) -> frozenset[str]:
    return words_of(" ".join(specifics))


class _FactMaker:
    """Draws new facts with unique keys and anchors no other fact's anchor contains or is contained in."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.facts: dict[str, Fact] = {}
        self.index: dict[str, list[str]] = {}

    def make(self, day: int) -> Fact | None:
        for _ in range(50):
            kind = self._rng.choice(_KINDS)
            values = _slots(self._rng)
            key = ":".join((kind.name, *(values[k].lower() for k in kind.key)))
            specifics = tuple(s.format(**values) for s in kind.specifics)
            anchor = _anchor(specifics)
            if key in self.facts or self._clashes(anchor):
                continue
            values["X"] = _extra(kind, values, self._rng)
            fact = Fact(
                key=key,
                kind=kind.name,
                category=kind.category.format(**values),
                tags=kind.tags,
                statement=kind.canonical.format(**values),
                specifics=specifics,
                extra=values["X"],
                query=kind.query.format(**values),
                paraphrases=tuple(p.format(**values) for p in kind.paraphrases),
                extension=kind.extension.format(**values),
                importance=round(self._rng.uniform(0.40, 0.95), 2),
                anchor=anchor,
                first_day=day,
            )
            self.facts[key] = fact
            for word in anchor:
                self.index.setdefault(word, []).append(key)
            return fact
        return None  # the pools are exhausted: the caller restates instead

    def _clashes(self, anchor: frozenset[str]) -> bool:
        candidates = {key for word in anchor for key in self.index.get(word, ())}
        return any(anchor <= self.facts[k].anchor or self.facts[k].anchor <= anchor for k in candidates)


def _durable(maker: _FactMaker, day: int, rng: random.Random) -> Save:
    """One durable event: a new fact (35%), else a restatement of a known one (repeat, paraphrase, extension)."""
    roll = rng.random()
    fact = maker.make(day) if roll < 0.35 or not maker.facts else None
    kind: SaveKind = "new"
    if fact is not None:
        content = fact.statement
    else:
        fact = maker.facts[rng.choice(list(maker.facts))]
        if roll < 0.60:
            kind, content = "repeat", fact.statement
        elif roll < 0.85:
            kind, content = "paraphrase", rng.choice(fact.paraphrases)
        else:
            kind, content = "extension", fact.extension
    importance = round(min(0.95, max(0.30, fact.importance + rng.uniform(-0.05, 0.05))), 2)
    source = rng.choices(("user", "inferred", "tool:calendar"), weights=(7, 2, 1))[0]
    return Save(content, fact.category, fact.tags, source, importance, "semantic", kind, fact.key)


def _chatter_save(rng: random.Random) -> Save:
    source = rng.choice(("user", "user", "tool:shell"))
    importance = round(rng.uniform(0.10, 0.30), 2)
    return Save(_chatter(rng), CHATTER_CATEGORY, (), source, importance, "episodic", "chatter")


def _day(maker: _FactMaker, day: int, cycles: int, rng: random.Random) -> list[tuple[Save, ...]]:
    """One active day's saves, in order, split over its cycles at random cut points."""
    items: list[Save] = [_durable(maker, day, rng) for _ in range(rng.randint(3, 6))]
    for _ in range(rng.randint(5, 15)):
        items.insert(rng.randint(0, len(items)), _chatter_save(rng))
    cuts = sorted(rng.randint(0, len(items)) for _ in range(cycles - 1))
    bounds = [0, *cuts, len(items)]
    return [tuple(items[bounds[i] : bounds[i + 1]]) for i in range(cycles)]


def generate(days: int, cycles_per_day: int, seed: int = 7) -> Stream:
    """The stream of ``days`` days of ``cycles_per_day`` cycles. Day 0 is always active; every later day is
    idle with probability 1/7."""
    if days < 1 or cycles_per_day < 1:
        raise ValueError("days and cycles_per_day must be at least 1")
    rng = random.Random(seed)
    maker = _FactMaker(rng)
    slots: list[tuple[Save, ...]] = []
    for day in range(days):
        if day > 0 and rng.random() < 1 / 7:
            slots.extend(() for _ in range(cycles_per_day))
        else:
            slots.extend(_day(maker, day, cycles_per_day, rng))
    index = {word: tuple(keys) for word, keys in maker.index.items()}
    return Stream(days, cycles_per_day, seed, tuple(slots), dict(maker.facts), index)
