"""The generated traffic of ``reverie bench truth``: durable everyday facts about people and projects, each
with later statements that contradict it (a negation, an antonym, a flipped comparison or move, a moved
time, a replaced value), plain restatements, and twins (the same statement about someone else).

Seeded, so runs compare. English, with varied wording: each contradiction kind has several templates and
each template several ways to say the opposite. Nothing here is tuned to the stance vocabulary's lists beyond
using ordinary English for each kind.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

NAMES = (
    "Priya", "Kenji", "Maya", "Tomas", "Amara", "Lucas", "Sofia", "Daniel", "Leila", "Mateo", "Nora", "Hiro",
    "Elena", "Kwame", "Ingrid", "Omar", "Clara", "Ravi", "Freya", "Diego", "Anika", "Felix", "Zara", "Marco",
)  # fmt: skip
PROJECTS = ("Harbor", "Lantern", "Atlas", "Beacon", "Compass", "Juniper", "Meridian", "Orbit", "Quarry", "Summit")
CITIES = ("Lisbon", "Oslo", "Nairobi", "Kyoto", "Toronto", "Porto", "Denver", "Cairo", "Dublin", "Seoul")
FOODS = ("peanuts", "shellfish", "gluten", "dairy", "sesame", "soy", "eggs", "strawberries")
DRINKS = ("coffee", "black tea", "green tea", "espresso", "matcha", "sparkling water")
CI_TOOLS = ("Jenkins", "GitHub Actions", "GitLab CI", "CircleCI", "Buildkite", "Drone")
DAYS = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays")
PAIRS = (
    ("tabs", "spaces"), ("Vim", "Emacs"), ("Python", "Go"), ("PostgreSQL", "MySQL"), ("Slack", "email"),
    ("trains", "planes"), ("mornings", "evenings"), ("Linux", "macOS"), ("React", "Vue"), ("tea", "coffee"),
)  # fmt: skip
LIKES = ("dark mode in the editor", "pair programming", "standing desks", "code reviews on Fridays",
         "open-plan offices", "long design documents", "jazz concerts", "early flights")  # fmt: skip
FEATURES = ("two-factor login", "the nightly backup job", "verbose logging", "the feature flag for search",
            "automatic retries", "the staging mirror")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Template:
    """A durable fact, the ways to contradict it, and a question about it. ``{n}`` is the subject (a name or a
    project), ``{x}`` and ``{y}`` the objects."""

    kind: str  # negation, antonym, order, time, value
    fact: str
    contradictions: tuple[str, ...]
    query: str
    subject: str  # "person" or "project"
    objects: tuple[tuple[Any, ...], ...]  # where {x} (and {y}) are drawn from: words, or pairs of words


TEMPLATES = (
    Template("negation", "{n} is allergic to {x}.",
             ("{n} is not allergic to {x}.", "{n} isn't allergic to {x} after all.",
              "{n} is no longer allergic to {x}."),
             "is {n} allergic to {x}", "person", (FOODS,)),
    Template("negation", "{n} drinks {x} every morning.",
             ("{n} no longer drinks {x} every morning.", "{n} doesn't drink {x} every morning.",
              "{n} stopped drinking {x} every morning."),
             "what does {n} drink in the morning", "person", (DRINKS,)),
    Template("negation", "{n} deploys on {x}.",
             ("{n} never deploys on {x}.", "{n} does not deploy on {x}."),
             "when does {n} deploy", "project", (DAYS,)),
    Template("negation", "{n} can work on weekends.",
             ("{n} cannot work on weekends.", "{n} can't work on weekends."),
             "can {n} work on weekends", "person", ()),
    Template("antonym", "{n} likes {x}.",
             ("{n} dislikes {x}.", "{n} hates {x}."),
             "how does {n} feel about {x}", "person", (LIKES,)),
    Template("antonym", "For {n}, {x} is enabled.",
             ("For {n}, {x} is disabled.",),
             "is {x} enabled for {n}", "project", (FEATURES,)),
    Template("antonym", "Dogs are allowed in the {x} office of {n}.",
             ("Dogs are forbidden in the {x} office of {n}.", "Dogs are not allowed in the {x} office of {n}."),
             "may I bring a dog to the {x} office of {n}", "project", (CITIES,)),
    Template("antonym", "{n} runs the database migrations before the release.",
             ("{n} runs the database migrations after the release.",),
             "when does {n} run the database migrations", "project", ()),
    Template("order", "{n} prefers {x} over {y}.",
             ("{n} prefers {y} over {x}.", "{n} prefers {y} rather than {x}."),
             "does {n} prefer {x} or {y}", "person", (PAIRS,)),
    Template("order", "{n} uses {x} instead of {y}.",
             ("{n} uses {y} instead of {x}.",),
             "which does {n} use, {x} or {y}", "person", (PAIRS,)),
    Template("order", "{n} moved from {x} to {y}.",
             ("{n} moved from {y} to {x}.",),
             "where did {n} move", "person", (CITIES, CITIES)),
    Template("time", "{n} is on call this week.",
             ("{n} was on call last week.",),
             "who is on call this week, is {n}", "person", ()),
    Template("time", "{n} works remotely now.",
             ("{n} previously worked remotely.", "{n} used to work remotely."),
             "does {n} work remotely", "person", ()),
    Template("time", "{n} will lead the {x} launch.",
             ("{n} was leading the {x} launch.",),
             "who leads the {x} launch", "person", (PROJECTS,)),
    Template("value", "{n}'s favourite drink is {x}.",
             ("{n}'s favourite drink is {y}.", "{n}'s favourite drink is {y} now."),
             "what is {n}'s favourite drink", "person", (DRINKS, DRINKS)),
    Template("value", "{n} lives in {x}.",
             ("{n} lives in {y} now.", "{n} lives in {y} these days."),
             "where does {n} live", "person", (CITIES, CITIES)),
    Template("value", "The {n} stand-up is at 10:00.",
             ("The {n} stand-up is at 9:30 now.", "The {n} stand-up is at 11:15 from now on."),
             "when is the {n} stand-up", "project", ()),
    Template("value", "{n}'s CI runs on {x}.",
             ("{n}'s CI runs on {y} now.", "{n}'s CI actually runs on {y}."),
             "what does {n}'s CI run on", "project", (CI_TOOLS, CI_TOOLS)),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TruthFact:
    """One generated fact with its contradicting statement, a question about it, and a twin (the same
    statement about another subject)."""

    text: str
    contradiction: str
    query: str
    twin: str
    kind: str


def _fill(template: Template, subject: str, objects: tuple[str, ...], text: str) -> str:
    x = objects[0] if objects else ""
    y = objects[1] if len(objects) > 1 else ""
    return text.format(n=subject, x=x, y=y)


def _objects(template: Template, rng: random.Random) -> tuple[str, ...]:
    if not template.objects:
        return ()
    if len(template.objects) == 2:  # two distinct draws from one list (from a city to another)
        first, second = rng.sample(template.objects[0], 2)
        return (first, second)
    drawn = rng.choice(template.objects[0])
    return drawn if isinstance(drawn, tuple) else (drawn,)


def truth_facts(count: int, seed: int) -> list[TruthFact]:
    """``count`` facts, pairwise different (subject, template and objects), round-robin over the templates
    so every kind is represented. A twin's subject has no fact of the same template: the twin is a different
    fact, never another generated fact restated (nor the same fact with one ordinary word swapped)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[TruthFact] = []
    drawn: list[tuple[Template, str, tuple[str, ...]]] = []
    attempts = 0
    while len(drawn) < count and attempts < count * 200:
        template = TEMPLATES[attempts % len(TEMPLATES)]  # round robin; a template without variety left is passed
        attempts += 1
        subject = rng.choice(NAMES if template.subject == "person" else PROJECTS)
        objects = _objects(template, rng)
        # One fact per subject and set of objects: "Ravi prefers tea over coffee" and "Ravi uses tea instead of
        # coffee" would be two wordings of one belief, and their contradictions would cross.
        key = f"{subject}|{'|'.join(sorted(objects))}" if objects else _fill(template, subject, objects, template.fact)
        if template.kind == "value":  # one value per subject: a second "Marco's favourite drink is …" replaces it
            key = f"{subject}|{template.fact}"
        if key not in seen:
            seen.add(key)
            drawn.append((template, subject, objects))
    twinned: dict[str, set[str]] = {}  # a value template's twins so far, by subject: one value per subject
    for template, subject, objects in drawn:
        # Free: no fact of this template, nor one about the same objects ("prefers tea over coffee" and "uses
        # tea instead of coffee" say one thing).
        taken = {s for t, s, o in drawn if t is template or (objects and sorted(o) == sorted(objects))}
        taken |= twinned.get(template.fact, set())
        free = [n for n in (NAMES if template.subject == "person" else PROJECTS) if n not in taken]
        other = rng.choice(free) if free else subject  # no free subject: the twin is the fact itself
        if template.kind == "value":
            twinned.setdefault(template.fact, set()).add(other)
        said = rng.choice(template.contradictions)
        out.append(
            TruthFact(
                text=_fill(template, subject, objects, template.fact),
                contradiction=_fill(template, subject, objects, said),
                query=_fill(template, subject, objects, template.query),
                twin=_fill(template, other, objects, template.fact) if other != subject else "",
                kind=template.kind,
            )
        )
    return out


def restatement(text: str, rng: random.Random) -> str:
    """The same statement again, as people and models repeat themselves: as said, lower-cased, or without
    its closing period. (Not SHOUTED: ``bench dedup`` covers that; here it would blur what is measured.)"""
    how = rng.choice(("same", "lower", "bare"))
    if how == "lower":
        return text.lower()
    if how == "bare":
        return text.rstrip(".")
    return text
