"""Save-time deduplication decisions (seed 000), pure: is a new fact the same as an existing one?

Similarity finds the candidate pair (token Jaccard here; cosine over embeddings in the caller); the
specifics decide what to do with it:

- reinforce: the existing text already carries every specific the new one does (a restatement, reordered,
  re-cased or paraphrased): counters move, the text does not;
- extend: the new text adds specifics and drops none of the existing ones (a more detailed restatement):
  it is appended;
- distinct: each side has a specific the other lacks (a name, a number or a date was *replaced*: a
  near-miss twin, a different fact), or the statement's value was replaced by another word ("… is tea" →
  "… is coffee", ``core.stance.replaced_value``), or the extension would be too long: it becomes its own entry;
- contradict: it would reinforce or extend, but the two texts differ in stance (``core.stance``: one negates,
  reverses, flips or moves in time what the other says, or replaces its value saying so — "now", "switched" —
  or where only one value can hold — "favourite"): a changed belief, saved as its own entry.

Invariant: a verdict never loses a specific or a stance. Reinforce is only returned when the existing text
covers the candidate (the merge coverage check) and says it with the same stance; extend keeps both texts
whole. A candidate whose stance cannot be read (no word at all) never reinforces unless it is the same text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

from reverie.core.coverage import CoverageSource, SpecificKind, Vocabulary, check_coverage, lowercase_words, specifics
from reverie.core.stance import (
    StanceDifference,
    change_words,
    parse_failed,
    replaced_value,
    same_text,
    same_topic,
    stance_difference,
    topic_words,
)
from reverie.core.text import ADDRESS, STOPWORDS

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+")
_EDGE_PUNCTUATION = ".,;:!?\"'()[]{}“”‘’«»"


class Verdict(StrEnum):
    REINFORCE = "reinforce"
    EXTEND = "extend"
    DISTINCT = "distinct"
    CONTRADICT = "contradict"


def content_tokens(text: str) -> frozenset[str]:
    """Lower-cased letter/digit runs."""
    return frozenset(match.group(0).lower() for match in _TOKEN.finditer(text))


def _words(text: str) -> frozenset[str]:
    """Whitespace-separated words, lower-cased, without the sentence punctuation around them: symbols
    inside a word stay, so "C++" is not "C" and "-5" is not "5" (a reinforcement must not drop them)."""
    out = (w.strip(_EDGE_PUNCTUATION).lower() for w in text.split())
    return frozenset(w for w in out if w)


def jaccard(a: str, b: str) -> float:
    """Token Jaccard similarity of two texts, in [0, 1], over content words: function words ("the", "was")
    would make any two short sentences look alike. Two texts without content words score 0."""
    left, right = content_tokens(a) - STOPWORDS, content_tokens(b) - STOPWORDS
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def top_category(category: str) -> str:
    """The first segment of a category path: deduplication only compares entries within it."""
    return category.split("/", 1)[0]


def case_carries_signal(text: str) -> bool:
    """Whether capitals in ``text`` can tell names from words: not when it is all lower case, ALL CAPITALS,
    or Every Word Capitalised."""
    words = [w for w in _TOKEN.findall(text) if w[0].isalpha()]
    if not words:
        return False
    if text.lower() == text or text.upper() == text:
        return False
    return not (len(words) >= 3 and all(w[0].isupper() for w in words))


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict, and the candidate's text as it should be appended on ``EXTEND`` (respelt in the existing
    entry's casing when its own casing carried no signal, so the entry reads consistently); on
    ``CONTRADICT``, how the stances differ."""

    verdict: Verdict
    text: str
    stance: StanceDifference | None = None


_SENTENCE_START = re.compile(r"(?:^|[.!?:]\s+|\n\s*)$")


def _spellings(paragraphs: list[str]) -> dict[str, str]:
    """How the case-carrying paragraphs spell each word: lower case when it is ever written so; otherwise
    capitalised as written away from a sentence start, or failing that at one (weaker evidence, but a
    name that only ever opens a sentence must not be lower-cased into an ordinary word)."""
    lower: set[str] = set()
    inside: dict[str, str] = {}
    opening: dict[str, str] = {}
    for paragraph in paragraphs:
        for match in _TOKEN.finditer(paragraph):
            word, key = match.group(0), match.group(0).lower()
            if word == key:
                lower.add(key)
            elif _SENTENCE_START.search(paragraph[: match.start()]):
                opening.setdefault(key, word)
            else:
                inside.setdefault(key, word)
    spelling = {**opening, **inside}
    spelling.update({key: key for key in lower})
    return spelling


def normalise_case(texts: list[str]) -> list[str]:
    """``texts`` with every paragraph whose casing carries no signal respelt: words the case-carrying
    paragraphs (of all the texts) write take that spelling, others are lower-cased. So a SHOUTED or Title
    Cased restatement is compared by its words, never mistaken for a string of names or acronyms."""
    split = [text.split("\n\n") for text in texts]
    spelling = _spellings([p for paragraphs in split for p in paragraphs if case_carries_signal(p)])

    def respell(paragraph: str) -> str:
        if case_carries_signal(paragraph):
            return paragraph
        return _TOKEN.sub(lambda m: spelling.get(m.group(0).lower(), m.group(0).lower()), paragraph)

    return ["\n\n".join(respell(p) for p in paragraphs) for paragraphs in split]


def decide(existing: str, candidate: str, *, category: str | None, vocabulary: Vocabulary) -> Decision:
    """What a save of ``candidate`` does to the similar ``existing`` entry (see the module docstring).

    Both texts are compared with their case normalised (``normalise_case``). A candidate whose casing
    carries no signal (all lower case, SHOUTED, Title Cased) cannot show which of its new words are names,
    so it never reinforces on the coverage check alone: with new words it extends (its text is kept) or,
    when it lacks a specific of the existing entry, stays distinct. The stored text is never re-cased.
    """
    if same_text(existing, candidate):
        return Decision(Verdict.REINFORCE, candidate)  # an empty or whitespace-only difference
    if parse_failed(candidate):
        return Decision(Verdict.DISTINCT, candidate)  # no stance to compare: new, never a reinforcement
    signal = case_carries_signal(candidate)
    existing_signal = any(case_carries_signal(p) for p in existing.split("\n\n"))
    original = existing
    existing, normalised = normalise_case([existing, candidate])
    appended = normalised if existing_signal else candidate
    verdict = _verdict(existing, normalised, category, vocabulary, signals=(existing_signal, signal))
    closest = closest_paragraph(original, candidate, vocabulary)
    difference = stance_difference(closest, candidate, vocabulary.stance)
    if difference is None:
        if verdict is Verdict.REINFORCE and _says_a_change(original, candidate, vocabulary):
            # "Jamal now prefers phone calls to email" after "Jamal prefers email over phone calls": the same
            # words, and a change the stance check cannot read. Reinforcing would keep only the old text.
            return Decision(Verdict.DISTINCT, appended)
        if verdict is not Verdict.DISTINCT and replaced_value(closest, candidate, vocabulary.stance) is not None:
            # "… is tea" then "… is coffee": an ordinary word is a value too, and reinforcing would store the
            # new one nowhere. A different fact, as a replaced name or number is (a changed belief when the
            # stance check reads it as one: a "value" difference).
            return Decision(Verdict.DISTINCT, appended)
        return Decision(verdict, appended)
    if (
        verdict is Verdict.DISTINCT
        and difference.kind != "value"
        and _lost_specific(closest, candidate, category, vocabulary)
    ):
        return Decision(verdict, appended)  # a different fact (a specific replaced): both stay, unlinked
    if _holds_another_fact(original, candidate, category, vocabulary):
        # The entry holds a statement on this topic that the candidate does not contradict (two facts
        # extended into one): it must not leave search whole. The candidate is its own entry, never a
        # reinforcement of it.
        return Decision(Verdict.DISTINCT, appended)
    return Decision(Verdict.CONTRADICT, candidate, difference)


def _says_a_change(existing: str, candidate: str, vocabulary: Vocabulary) -> bool:
    """Whether ``candidate`` says a change ("now", "switched") ``existing`` does not: a restatement that only
    adds such a word is a claim that something changed. A word of a relation is what a statement says, not a
    claim ("moved to Lisbon" restates "relocated to Lisbon")."""
    stance = vocabulary.stance
    said = change_words(candidate, stance) - change_words(existing, stance)
    return any(word not in stance.relation_of for word in said)


def _holds_another_fact(existing: str, candidate: str, category: str | None, vocabulary: Vocabulary) -> bool:
    """Whether a paragraph of a multi-paragraph ``existing`` is about the candidate's topic yet is not
    contradicted by it: it says the same thing, or it is about someone or something else (it lacks a name
    the candidate states). A paragraph that only adds details ("… since 2019") is contradicted with the rest."""
    paragraphs = [p for p in existing.split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        return False
    return any(
        same_topic(p, candidate, vocabulary.stance)
        and (
            stance_difference(p, candidate, vocabulary.stance) is None
            or _names_missing(candidate, p, category, vocabulary)
        )
        for p in paragraphs
    )


def same_specifics(existing: str, candidate: str, category: str | None, vocabulary: Vocabulary) -> bool:
    """Whether neither text names a specific (a name, an acronym, a number, a date) the other lacks, compared
    without case: "daniel is allergic to shellfish." and "Daniel isn't allergic to shellfish" name the same
    person even though the first text's casing cannot show it (so ``_verdict`` keeps such a pair apart to be
    safe), while "Maya …" against "daniel …" names someone else."""
    if Counter(_NUMBER.findall(existing)) != Counter(_NUMBER.findall(candidate)):
        return False
    return not (
        _names_missing(existing, candidate, category, vocabulary)
        or _names_missing(candidate, existing, category, vocabulary)
    )


def _lost_specific(existing: str, candidate: str, category: str | None, vocabulary: Vocabulary) -> bool:
    """Whether the candidate lacks a specific of ``existing`` (a number, or a name, compared without case): a
    specific replaced — about someone or something else. One only *added* ("… never on Tuesdays anymore, they
    moved to Thursdays") leaves the statement the same one."""
    if Counter(_NUMBER.findall(existing)) - Counter(_NUMBER.findall(candidate)):
        return True
    return _names_missing(existing, candidate, category, vocabulary)


def _names_missing(text: str, other: str, category: str | None, vocabulary: Vocabulary) -> bool:
    """Whether ``text`` names a specific whose words ``other`` lacks, compared without case (both read with
    their case normalised: a SHOUTED text is not a row of acronyms)."""
    text, other = normalise_case([text, other])
    words = {w.lower() for w in _TOKEN.findall(other)}
    return any(
        not {w.lower() for w in _TOKEN.findall(specific.text)} <= words
        for specific in specifics(text, category=category, vocabulary=vocabulary)
    )


def closest_paragraph(existing: str, candidate: str, vocabulary: Vocabulary) -> str:
    """The paragraph of ``existing`` (an extended entry holds several) that shares most topic words with
    ``candidate``: the stance to compare with is that paragraph's, not the whole entry's."""
    paragraphs = [p for p in existing.split("\n\n") if p.strip()]
    if len(paragraphs) <= 1:
        return existing
    wanted = topic_words(candidate, vocabulary.stance)

    def shared(paragraph: str) -> float:
        words = topic_words(paragraph, vocabulary.stance)
        union = words | wanted
        return len(words & wanted) / len(union) if union else 0.0

    return max(paragraphs, key=shared)


def _verdict(
    existing: str, candidate: str, category: str | None, vocabulary: Vocabulary, *, signals: tuple[bool, bool]
) -> Verdict:
    new_numbers, lost_numbers = _number_change(existing, candidate)
    if new_numbers and lost_numbers or _address_replaced(existing, candidate):
        return Verdict.DISTINCT
    added_names, dropped_names = _name_change(existing, candidate, category, vocabulary)
    new_words = _words(candidate) - _words(existing)
    if not new_words and not new_numbers and not added_names:
        return Verdict.REINFORCE  # nothing the existing text does not already say, in any case
    existing_signal, candidate_signal = signals
    # A new word with a symbol in it ("C++", "-5", "v2.1") is a specific the coverage check cannot see.
    symbols = any(not word.isalnum() for word in new_words)
    # Both texts are sources of the check, so each one's lower-case words are corpus evidence (seed 001):
    # "Code" opening the candidate is an ordinary word when the existing text says "code".
    both = [CoverageSource(candidate, category), CoverageSource(existing, category)]
    covered = check_coverage(both, existing, vocabulary=vocabulary).ok and not new_numbers and not added_names
    if candidate_signal and not symbols and covered:
        return Verdict.REINFORCE
    if candidate_signal and not existing_signal:
        # A new name, and an existing text whose names cannot be told from its words: it may be a
        # replacement (a twin), so keep it apart.
        return Verdict.DISTINCT
    covers_existing = check_coverage(both, candidate, vocabulary=vocabulary).ok
    # The candidate has (or may have) specifics the existing text lacks. If it also lacks one of the
    # existing text's, a specific was replaced, not added: a different fact.
    return Verdict.EXTEND if covers_existing and not lost_numbers and not dropped_names else Verdict.DISTINCT


def _address_replaced(existing: str, candidate: str) -> bool:
    """Whether an e-mail or web address of ``existing`` is gone and another said: "ben@oldmail.com" restated as
    "ben.k@fastmail.com" is a replaced specific, not a detail added."""
    before, after = (set(ADDRESS.findall(text.lower())) for text in (existing, candidate))
    return bool(before - after) and bool(after - before)


def _number_change(existing: str, candidate: str) -> tuple[bool, bool]:
    """Whether the candidate adds numbers and whether it drops some, against the closest paragraph of the
    existing text. Every number counts ("3 apples" is not "4 apples"), as a multiset: "6 people on June 13"
    restated as "13 people on June 13" replaced the 6, although every number of it appears somewhere."""
    wanted = Counter(_NUMBER.findall(candidate))
    best = (True, True, True)
    for paragraph in existing.split("\n\n"):
        held = Counter(_NUMBER.findall(paragraph))
        adds, drops = bool(wanted - held), bool(held - wanted)
        best = min(best, (adds and drops, adds, drops))
    return best[1], best[2]


def _name_change(existing: str, candidate: str, category: str | None, vocabulary: Vocabulary) -> tuple[bool, bool]:
    """Names and acronyms counted (the coverage check compares sets; "Amara met Tomas" replaced a Tomas of
    "Tomas met Tomas"): does the candidate write one more often than every paragraph, or fewer than one?"""
    corpus = lowercase_words([candidate, existing])

    def counts(text: str) -> tuple[Counter[str], Counter[str]]:  # every word, and the names among them
        words = Counter(_TOKEN.findall(text))
        found = specifics(text, category=category, vocabulary=vocabulary, corpus_lowercase=corpus)
        names = {s.text for s in found if s.kind is not SpecificKind.NUMBER and s.date is None}
        return words, Counter({name: words[name] for name in names})

    words, names = counts(candidate)
    held_words: Counter[str] = Counter()
    held_names: Counter[str] = Counter()
    for paragraph in existing.split("\n\n"):
        paragraph_words, paragraph_names = counts(paragraph)
        held_words |= paragraph_words
        held_names |= paragraph_names
    return bool(names - held_words), bool(held_names - words)


def extend_text(existing: str, candidate: str) -> str:
    """The extended text: the existing text, then the new one as its own paragraph (both kept whole)."""
    return existing.rstrip() + "\n\n" + candidate.strip()
