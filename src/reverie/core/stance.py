"""Stance: do two similar texts say the same thing, or does one take back, reverse or move what the other says?

Similarity (token Jaccard, cosine) finds texts *about* the same thing; it cannot tell "Priya likes dark mode"
from "Priya dislikes dark mode". Every place that decides two texts say the same thing (save-time
deduplication, the semantic fold after embedding, the forget sweep's cold fold, ``memory_semantic_consolidate``
and the dream's merge coverage check) asks ``stance_difference`` as well. Two texts differ in stance when:

- **negation**: one negates what the other asserts — the parity of negation markers differs (``not``, ``no``,
  ``never``, ``no longer``, ``n't``, ``without``, ``stopped``, ``quit``, ``cannot``…). "doesn't" and "does not"
  are one marker each, so a re-worded negation is still a restatement;
- **antonym**: a word is replaced by its opposite (likes/dislikes, allowed/forbidden, on/off, before/after…), or
  by itself with a negative prefix (available/unavailable) — one text has one side and not the other, the
  other text the reverse;
- **order**: a comparison or a move flips ("tabs over spaces" / "spaces over tabs", "A rather than B",
  "from Lisbon to Porto" / "from Porto to Lisbon");
- **value**: the statement's value is replaced and the new text says it replaces ("now", "switched",
  "correction", "went up to"; an opening "No," reads as one) or only one value can hold ("favourite"); or
  the new text takes the old value back by name ("on Thursday, not Tuesday", "instead of Jenkins"), saying the
  statement's frame again (``_retracted``); or it names the old value as replaced and says what came instead
  ("switched from Jenkins to GitHub Actions", "left Google and joined Stripe": ``_named_replacement``);
- **time**: the time reference moves (this week / last week, now / previously, used to, will / was): the
  texts' time classes differ by a past or future one. Adding only a present marker ("is", "now") is not a
  move.

The words live in a vocabulary (``StanceVocabulary``), English built in as ``stance-en.json`` beside this
module; another language is another file of the same shape, and a deployment extends it with
``<home>/stance-vocabulary.json`` (``core.stance_vocabulary``). Stance words are kept here even though search
drops them as stopwords: "not" is the whole difference between two beliefs.

Invariants: pure and deterministic; symmetric (``stance_difference(a, b)`` and ``(b, a)`` agree on whether the
texts differ) for every kind but a value replaced with a change marker or named as replaced, which is read in
the second (later) text only ("Maya lives in Porto now" after "… in Lisbon"; deduplication, aging and
consolidation pass the older text first); texts equal after collapsing whitespace never differ; a text with no
word at all has no stance that can be parsed (``parse_failed``), and callers treat such a save as new, never as a
restatement. Merges are checked in ``core.stance_merge``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

import Stemmer  # type: ignore[import-not-found]  # PyStemmer is one C module without type information

from reverie.core.stance_vocabulary import DEFAULT_STANCE_VOCABULARY, StanceVocabulary
from reverie.core.text import STOPWORDS

__all__ = [
    "DEFAULT_STANCE_VOCABULARY",
    "StanceDifference",
    "StanceVocabulary",
    "change_words",
    "names_replaced",
    "parse_failed",
    "relation_topics",
    "same_text",
    "same_topic",
    "stance_difference",
    "stance_either_way",
    "topic_overlap",
    "topic_tokens",
    "topic_words",
    "word_overlap",
]

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*", re.UNICODE)
WINDOW = 4  # content words a comparison marker's sides reach
TOPIC_OVERLAP = 0.5  # topic-word Jaccard from which two texts are about the same thing
TYPO_MIN_LETTERS, TYPO_RATIO = 5, 0.7  # a slip, stemmed: "depli"/"deploy" (0.73); never "cat"/"car" (too short)


@dataclass(frozen=True, slots=True)
class StanceDifference:
    """Why two texts differ in stance: ``kind`` (negation, antonym, order, time) and the evidence words of
    each side (``first``: the first text's, ``second``: the second's; one side may have none, as the text
    without a negation)."""

    kind: str
    first: tuple[str, ...]
    second: tuple[str, ...]

    @property
    def evidence(self) -> tuple[str, ...]:
        """Both sides' words, the first text's first."""
        return self.first + self.second

    def swapped(self) -> StanceDifference:
        """The same difference read from the other text."""
        return StanceDifference(self.kind, self.second, self.first)

    def sides(self) -> str:
        """``first / second``, each side's words joined (``-`` for a side without any)."""
        return f"{', '.join(self.first) or '-'} / {', '.join(self.second) or '-'}"

    def describe(self) -> str:
        what = {
            "negation": "one negates the other",
            "antonym": "opposite words",
            "order": "the order flips",
            "value": "a value replaced",
        }
        return f"{what.get(self.kind, 'the time moves')} ({self.sides()})"


def same_text(a: str, b: str) -> bool:
    """Equal once whitespace is collapsed: a restatement whatever the vocabulary says."""
    return " ".join(a.split()) == " ".join(b.split())


def _tokens(text: str, vocabulary: StanceVocabulary) -> list[str]:
    """Lower-cased words with contractions spelt out ("can't" → "can not", "isn't" → "is not") and the
    vocabulary's phrases joined into one token ("no longer" → "no longer")."""
    words: list[str] = []
    suffix = vocabulary.contraction_suffix
    for match in _WORD.finditer(text.replace("’", "'").lower()):
        word = match.group(0)
        spelt = vocabulary.contractions.get(word)
        if spelt is not None:
            words.extend(spelt.split())
        elif suffix and word.endswith(suffix) and len(word) > len(suffix):
            words.extend([word[: -len(suffix)], "not"])
        else:
            words.extend(part for part in word.split("'") if part)
    return _join_phrases(words, vocabulary.phrases)


def _join_phrases(words: list[str], phrases: Mapping[int, frozenset[str]]) -> list[str]:
    out: list[str] = []
    i = 0
    lengths = sorted(phrases, reverse=True)
    while i < len(words):
        for n in lengths:
            candidate = " ".join(words[i : i + n])
            if i + n <= len(words) and candidate in phrases[n]:
                out.append(candidate)
                i += n
                break
        else:
            out.append(words[i])
            i += 1
    return out


def parse_failed(text: str) -> bool:
    """A text with no word (only symbols or emoji): its stance cannot be read."""
    return _WORD.search(text) is None


def _negations(tokens: Sequence[str], vocabulary: StanceVocabulary) -> list[str]:
    return [t for t in tokens if t in vocabulary.negations]


def _negation_difference(a: Sequence[str], b: Sequence[str], vocabulary: StanceVocabulary) -> StanceDifference | None:
    left, right = _negations(a, vocabulary), _negations(b, vocabulary)
    if len(left) % 2 == len(right) % 2:
        return None
    return StanceDifference("negation", tuple(dict.fromkeys(left)), tuple(dict.fromkeys(right)))


def _antonym_difference(a: Sequence[str], b: Sequence[str], vocabulary: StanceVocabulary) -> StanceDifference | None:
    left, right = set(a), set(b)
    for first, second in vocabulary.antonyms:
        a1, a2, b1, b2 = left & first, left & second, right & first, right & second
        if a1 and not a2 and b2 and not b1:
            return StanceDifference("antonym", (min(a1),), (min(b2),))
        if a2 and not a1 and b1 and not b2:
            return StanceDifference("antonym", (min(a2),), (min(b1),))
    found = _prefix_pair(left, right, vocabulary)
    if found is not None:
        return StanceDifference("antonym", (found[0],), (found[1],))
    found = _prefix_pair(right, left, vocabulary)
    return None if found is None else StanceDifference("antonym", (found[1],), (found[0],))


def _prefix_pair(left: set[str], right: set[str], vocabulary: StanceVocabulary) -> tuple[str, str] | None:
    """A word in ``left`` and its negatively prefixed form ("un" + word) in ``right`` (and not in ``left``),
    while ``right`` lacks the bare word."""
    for word in sorted(left - right):
        if len(word) < vocabulary.negative_prefix_min_base:
            continue
        for prefix in vocabulary.negative_prefixes:
            negated = prefix + word
            if negated in right and negated not in left:
                return word, negated
    return None


def _content(token: str, vocabulary: StanceVocabulary, stopwords: frozenset[str]) -> bool:
    return token not in stopwords and token not in vocabulary.negations and token not in vocabulary.order_markers


def _pairs(tokens: Sequence[str], vocabulary: StanceVocabulary, stopwords: frozenset[str]) -> set[tuple[str, str]]:
    """Directed (before, after) word pairs around each comparison marker ("tabs over spaces" → (tabs, spaces))
    and each move ("from Lisbon to Porto" → (lisbon, porto), in either order of the two parts)."""
    pairs: set[tuple[str, str]] = set()
    for i, token in enumerate(tokens):
        if token not in vocabulary.order_markers:
            continue
        before = [t for t in tokens[max(0, i - 2 * WINDOW) : i] if _content(t, vocabulary, stopwords)][-WINDOW:]
        after = [t for t in tokens[i + 1 : i + 1 + 2 * WINDOW] if _content(t, vocabulary, stopwords)][:WINDOW]
        pairs.update((x, y) for x in before for y in after if x != y)
    for start, end in vocabulary.moves:
        if start not in tokens or end not in tokens:
            continue
        origin = _following(tokens, tokens.index(start), {end}, vocabulary, stopwords)
        target = _following(tokens, tokens.index(end), {start}, vocabulary, stopwords)
        pairs.update((x, y) for x in origin for y in target if x != y)
    return pairs


def _following(
    tokens: Sequence[str], at: int, stop: set[str], vocabulary: StanceVocabulary, stopwords: frozenset[str]
) -> list[str]:
    out: list[str] = []
    for token in tokens[at + 1 : at + 1 + 2 * WINDOW]:
        if token in stop:
            break
        if _content(token, vocabulary, stopwords):
            out.append(token)
    return out[:WINDOW]


def _order_difference(
    a: Sequence[str], b: Sequence[str], vocabulary: StanceVocabulary, stopwords: frozenset[str]
) -> StanceDifference | None:
    left, right = _pairs(a, vocabulary, stopwords), _pairs(b, vocabulary, stopwords)
    for x, y in sorted(left):
        if (y, x) in right and (x, y) not in right:
            return StanceDifference("order", (f"{x} before {y}",), (f"{y} before {x}",))
    return None


def _times(tokens: Sequence[str], vocabulary: StanceVocabulary) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for token in tokens:
        kind = vocabulary.times.get(token)
        if kind is not None:
            found.setdefault(kind, []).append(token)
    return found


def _time_difference(a: Sequence[str], b: Sequence[str], vocabulary: StanceVocabulary) -> StanceDifference | None:
    left, right = _times(a, vocabulary), _times(b, vocabulary)
    moved = (set(left) ^ set(right)) - {vocabulary.present}
    if not moved:
        return None
    said = [w for kind in sorted(set(left) - set(right)) for w in left[kind]]
    against = [w for kind in sorted(set(right) - set(left)) for w in right[kind]]
    return StanceDifference("time", tuple(dict.fromkeys(said)), tuple(dict.fromkeys(against)))


def stance_difference(
    a: str, b: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> StanceDifference | None:
    """How ``b`` differs in stance from ``a`` (see the module docstring), or None when it does not."""
    if same_text(a, b):
        return None
    left, right = (
        _tokens(_interjection_read(a, vocabulary), vocabulary),
        _tokens(_interjection_read(b, vocabulary), vocabulary),
    )
    return (
        _retraction_difference(left, right, vocabulary)  # before negation: "Thursday, not Tuesday" corrects a value
        or _replacement_difference(left, right, vocabulary)
        or _negation_difference(left, right, vocabulary)
        or _antonym_difference(left, right, vocabulary)
        or _order_difference(left, right, vocabulary, STOPWORDS)
        or _value_difference(left, right, vocabulary)  # before time: "… at 11:15 from now on" replaced a value
        or _time_difference(left, right, vocabulary)
    )


def stance_either_way(
    a: str, b: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> StanceDifference | None:
    """``stance_difference`` read both ways round (reading ``b`` against ``a``): for the checks that must refuse
    any difference whichever text came later — a merge, a fold of duplicates — since a value replaced with a
    change marker is read in the later text only ("Maya lives in Porto now" against "… in Lisbon")."""
    found = stance_difference(a, b, vocabulary)
    if found is not None:
        return found
    back = stance_difference(b, a, vocabulary)
    return None if back is None else back.swapped()


_OPENING = re.compile(r"^\s*([^\W\d_]+)\s*[,;:!.\u2013\u2014-]+\s*(?=\w)", re.UNICODE)
CORRECTION_MARKER = "correction"  # what an opening interjection is read as: a change marker (stance-en.json)


def _interjection_read(text: str, vocabulary: StanceVocabulary) -> str:
    """``text`` with an opening correction interjection ("No, the freeze starts on the 18th") read as the
    correction it announces: it negates nothing of the statement that follows."""
    match = _OPENING.match(text)
    if match is None or match.group(1).lower() not in vocabulary.correction_interjections:
        return text
    return f"{CORRECTION_MARKER} {text[match.end() :]}"


def _retracted(left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary) -> str | None:
    """A content word ``left`` asserts and ``right`` takes back by name ("…, not Tuesday", "instead of
    Jenkins"), while ``right`` puts a word of its own in its place; None when there is none. ``left`` must
    negate nothing (else it is a negation to compare, not a value to correct)."""
    if _negations(left, vocabulary):
        return None
    held = set(left)
    words = _content_words(left, vocabulary)
    kept = set(right)
    for i, token in enumerate(right):
        if token not in vocabulary.retractions:
            continue
        following = [t for t in right[i + 1 : i + 4] if t not in STOPWORDS]
        if not following or following[0] not in words:
            continue
        # The new value comes before the cue ("on Thursday, not Tuesday"); "Priya isn't allergic" says nothing
        # new before it: it negates the statement itself.
        if not any(t not in held for t in right[:i] if t not in STOPWORDS):
            continue
        # The statement's frame — every word ``left`` says before the value — is said again, so the
        # correction is about the same thing ("Dan's eye test …, not 4 March" is not about the dentist).
        # Details after the value ("at 3pm") may be left out.
        frame = words[: words.index(following[0])]
        if frame and all(w in kept for w in frame):
            return following[0]
    return None


def _retraction_difference(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary
) -> StanceDifference | None:
    """A value corrected by naming the old one (``_retracted``), read either way round: a "value" difference,
    so the correction replaces the statement even when it leaves out one of its details ("at 3pm")."""
    taken = _retracted(left, right, vocabulary)
    if taken is not None:
        return StanceDifference("value", (taken,), tuple(w for w in _content_words(right, vocabulary) if w not in left))
    taken = _retracted(right, left, vocabulary)
    if taken is not None:
        return StanceDifference("value", tuple(w for w in _content_words(left, vocabulary) if w not in right), (taken,))
    return None


_PERSONS = (frozenset({"i", "me", "my", "mine"}), frozenset({"we", "us", "our", "ours"}))
_ARTICLES = frozenset({"a", "an", "the"})


def _named_replacement(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary
) -> tuple[str, list[str]] | None:
    """A value ``left`` states that ``right`` names after a replacement word and puts new words after ("We
    replaced Jenkins with GitHub Actions", "Priya left Google and joined Stripe", "We switched from CircleCI to
    Buildkite"): the old value and the new words; None when there is none. The value is not the first thing
    ``left`` says (what the statement is about) and ``right`` names it once (a word it says again is the
    frame: "the cardiology ward moved from ward 4 to ward 12"); ``right`` says a change (the replacement word
    itself, or a change marker ``left`` lacks: "from" alone is no change), and says again another word of
    ``left`` or the same first person ("I", "we") — the same statement, not the same value in someone else's."""
    words = _content_words(left, vocabulary)
    if not vocabulary.replacements or len(words) < 2 or _negations(left, vocabulary):
        return None
    marked = any(t in vocabulary.change_markers and t not in left for t in right)
    named_in_left = {_named_after(left, i) for i, t in enumerate(left) if t in vocabulary.replacements}
    for i, token in enumerate(right):
        if token not in vocabulary.replacements or not (marked or token not in vocabulary.stance_words):
            continue
        if i and right[i - 1] in _ARTICLES:
            continue  # a noun ("on the left of the station"), not the verb
        old = _named_after(right, i)
        if old not in words[1:] or old in named_in_left or right.count(old) > 1:
            continue  # said again elsewhere, the word is the statement's frame ("moved from ward 4 to ward 12")
        new = [t for t in _content_words(right[i + 1 :], vocabulary) if t not in left]
        shared = set(_content_words(right, vocabulary)) & set(words) - {old}
        person = any(p & set(left) and p & set(right) for p in _PERSONS)
        if new and (shared or person):
            return old, new
    return None


def _named_after(tokens: Sequence[str], index: int) -> str | None:
    """The first word after ``tokens[index]`` that is not a function word, within three."""
    return next((t for t in tokens[index + 1 : index + 4] if t not in STOPWORDS), None)


def names_replaced(a: str, b: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> bool:
    """Whether the later text ``b`` names a value of ``a`` as replaced ("I traded in the Civic for a Tesla"
    after "I drive a Honda Civic"; see ``stance_difference``'s value kind)."""
    left = _tokens(_interjection_read(a, vocabulary), vocabulary)
    right = _tokens(_interjection_read(b, vocabulary), vocabulary)
    return _named_replacement(left, right, vocabulary) is not None


def _replacement_difference(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary
) -> StanceDifference | None:
    """A value the later text names as replaced (``_named_replacement``): read in the later text only."""
    found = _named_replacement(left, right, vocabulary)
    return None if found is None else StanceDifference("value", (found[0],), tuple(found[1]))


def replaced_value(
    a: str, b: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY, *, anywhere: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The value ``b`` puts in place of ``a``'s — ``a``'s words and ``b``'s — when ``b`` says ``a``'s statement
    with its last content words replaced ("Dan's favourite drink is tea" → "… is coffee"; ``anywhere``: or any
    one run of up to three content words, "uses Vim as the editor" → "uses Emacs as the editor"), else None.

    At least one content word must come before the value (the subject) and two stay the same (the
    statement's frame: "Maya lives", "Dan's favourite drink"; or one, after at least three words in common:
    "the standup is at"), no replaced word may be a spelling
    variant or another form of a word on the other side ("favourite"/"favorite", "deploy"/"deploys"), and
    neither side's value may appear elsewhere in the other text (a reordering is no replacement)."""
    left, right = _tokens(a, vocabulary), _tokens(b, vocabulary)
    found = _replaced(left, right, vocabulary, anywhere=anywhere)
    return None if found is None else (tuple(found[0]), tuple(found[1]))


def statement_tokens(text: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> list[str]:
    """The words the stance check reads of ``text`` (lower-cased, contractions spelt out, phrases joined), for
    a caller comparing one text with many (``replaced_tokens``)."""
    return _tokens(text, vocabulary)


def replaced_tokens(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY
) -> bool:
    """Whether ``replaced_value`` (``anywhere``: one run of words replaced in the same frame) reads ``right`` as
    ``left``'s statement with its value replaced, on ``statement_tokens``."""
    return _replaced(left, right, vocabulary, anywhere=True) is not None


def _content_words(tokens: Sequence[str], vocabulary: StanceVocabulary) -> list[str]:
    skip = vocabulary.stance_words | vocabulary.change_markers
    return [t for t in tokens if t not in STOPWORDS and t not in skip and (len(t) > 1 or t.isdigit())]


def _common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _variant(x: str, y: str, vocabulary: StanceVocabulary) -> bool:
    if _stem(x, vocabulary.stemmer) == _stem(y, vocabulary.stemmer):
        return True
    return len(x) >= 5 and len(y) >= 5 and SequenceMatcher(None, x, y).ratio() >= 0.85


def _replaced(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary, *, anywhere: bool
) -> tuple[list[str], list[str]] | None:
    a, b = _content_words(left, vocabulary), _content_words(right, vocabulary)
    if anywhere and a and b and not _variant(a[0], b[0], vocabulary):
        # A qualifier the later text leaves out ("The kids' swimming lessons are on Saturdays" → "The swimming
        # lessons moved to Sundays"): it may open with the frame that follows the older text's first word or two.
        a = a[next((k for k in (1, 2) if k < len(a) and _variant(a[k], b[0], vocabulary)), 0) :]
    start = 0
    while start < min(len(a), len(b)) and _variant(a[start], b[start], vocabulary):
        start += 1
    end = _common_suffix(a, b, start, vocabulary) if anywhere else 0
    if anywhere and end == 0 and b:
        # Details the later text leaves out at the end ("… on Tuesday 9 December at 3pm" → "No, … on Thursday 11
        # December"): its last word may close the frame a word or two before the older text's end.
        k = next((k for k in (1, 2) if len(a) - k > start + 1 and _variant(a[-1 - k], b[-1], vocabulary)), 0)
        a = a[: len(a) - k]
        end = _common_suffix(a, b, start, vocabulary)
    dropped, added = a[start : len(a) - end], b[start : len(b) - end]
    framed = start + end >= 2 or _common_prefix(left, right) >= 3  # "Maya lives" / "the standup is at"
    if start == 0 or not framed or not dropped or not added or len(dropped) > 3 or len(added) > 3:
        return None
    if any(_variant(x, y, vocabulary) for x in dropped for y in added):
        return None
    if set(dropped) & set(b) or set(added) & set(a):
        return None
    return dropped, added


def _common_suffix(a: Sequence[str], b: Sequence[str], start: int, vocabulary: StanceVocabulary) -> int:
    """How many words ``a`` and ``b`` end with alike, not reaching into their first ``start``."""
    end = 0
    while end < min(len(a), len(b)) - start and _variant(a[-1 - end], b[-1 - end], vocabulary):
        end += 1
    return end


def _value_difference(
    left: Sequence[str], right: Sequence[str], vocabulary: StanceVocabulary
) -> StanceDifference | None:
    """A replaced value (``replaced_value``, anywhere) that is a changed belief: the second text says it
    replaces something ("now", "switched", "anymore" — a marker the first lacks), or the statement can hold
    one value only ("favourite", "main": a word both texts share) — unless it says it adds one ("also").
    At least two content words of the statement's frame are shared (``_replaced``)."""
    found = _replaced(left, right, vocabulary, anywhere=True)
    if found is None:
        return None
    if any(w in vocabulary.addition_markers for w in right):
        return None  # "also likes coffee": a second value, not a replaced one
    marked = [w for w in right if w in vocabulary.change_markers and w not in left]
    single = any(w in vocabulary.single_valued for w in left if w in right)
    if not marked and not single:
        return None
    dropped, added = found
    if _spans_a_verb(left, dropped) and _spans_a_verb(right, added):
        return None  # "favourite band is Radiohead" → "favourite film is Alien": the slot changed, not its value
    return StanceDifference("value", tuple(dropped), tuple(dict.fromkeys([*added, *marked])))


_COPULAS = frozenset({"is", "are", "was", "were", "am", "be", "been"})


def _spans_a_verb(tokens: Sequence[str], run: Sequence[str]) -> bool:
    """Whether the words of ``run`` lie on both sides of a copula in ``tokens``: the thing a statement is about
    and its value, not one value."""
    at = [i for i, t in enumerate(tokens) if t in run]
    return bool(at) and any(t in _COPULAS for t in tokens[min(at) : max(at)])


_STEMMER_LOCK = threading.Lock()  # a PyStemmer object is not thread-safe


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Any:
    """The Snowball stemmer of ``language`` (PyStemmer), or None when it has none."""
    return Stemmer.Stemmer(language) if language in Stemmer.algorithms() else None


@lru_cache(maxsize=1 << 16)
def _stem(word: str, language: str) -> str:
    """``word`` stemmed in ``language`` ("worked", "works" → "work"); without a stemmer, a plural "s" dropped."""
    stemmer = _stemmer(language) if language else None
    if stemmer is None:
        return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
    with _STEMMER_LOCK:
        return str(stemmer.stemWord(word))


def change_words(text: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> frozenset[str]:
    """The change markers ``text`` says ("now", "moved", "replaced", "went up"; an opening "No," is read as
    "correction") and its replacement words that say a change by themselves ("left", "sold"; not "from"), and
    none when it also says it adds a value ("also", "another"): a second value replaces nothing."""
    tokens = _tokens(_interjection_read(text, vocabulary), vocabulary)
    if any(t in vocabulary.addition_markers for t in tokens):
        return frozenset()
    replacing = vocabulary.replacements - vocabulary.stance_words
    return frozenset(t for t in tokens if t in vocabulary.change_markers or t in replacing)


def topic_words(text: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> frozenset[str]:
    """What a text is about: its words stemmed (the vocabulary's ``stemmer``), without function words and
    without the words that only carry stance (negations, time references, comparison markers); an antonym
    stands for its axis, so "likes dark mode" and "dislikes dark mode" are about one thing while "works
    remotely" and "works from the office" are not."""
    return frozenset(topic for _, topic in topic_tokens(text, vocabulary))


def relation_topics(text: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> frozenset[str]:
    """``topic_words`` with each word of a relation read as the relation (``StanceVocabulary.relations``):
    "what car do I drive" and "I drive a Honda Civic" share their one topic, the car one drives."""
    relation = vocabulary.relation_of
    return frozenset(relation.get(token, topic) for token, topic in topic_tokens(text, vocabulary))


def topic_tokens(text: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> list[tuple[str, str]]:
    """The words ``topic_words`` reads, in the order ``text`` says them: each lower-cased word with the topic
    word it stands for."""
    stance, axes, language = vocabulary.stance_words, vocabulary.axes, vocabulary.stemmer
    fillers = vocabulary.fillers
    words = (t for t in _tokens(text, vocabulary) if t not in STOPWORDS and t not in stance and t not in fillers)
    return [(t, axes.get(t) or _stem(t, language)) for t in words]


def topic_overlap(
    a: str,
    b: str,
    vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY,
    *,
    typos: bool = False,
    ignore: Iterable[str] = (),
) -> float:
    """The Jaccard similarity of two texts' topic words (``topic_words``), in [0, 1]. ``typos``: a word of one
    text within one slip of a word of the other ("deplys" / "deploys": both at least ``TYPO_MIN_LETTERS``
    long, ``difflib`` ratio at least ``TYPO_RATIO``) counts as shared. ``ignore``: words left out of both
    (a replaced value's: the statement's frame is what the two texts share)."""
    left, right = topic_words(a, vocabulary), topic_words(b, vocabulary)
    dropped = {_stem(w, vocabulary.stemmer) for w in ignore}
    left, right = left - dropped, right - dropped
    if not typos:
        return word_overlap(left, right)
    only_right = right - left
    slips = sum(1 for word in left - right if any(_slip(word, other) for other in only_right))
    union = len(left | right) - slips
    return (len(left & right) + slips) / union if union else 0.0


def _slip(a: str, b: str) -> bool:
    if min(len(a), len(b)) < TYPO_MIN_LETTERS or a.startswith("~") or b.startswith("~"):
        return False  # short words and antonym axes are never typos of each other
    return SequenceMatcher(None, a, b).ratio() >= TYPO_RATIO


def same_topic(a: str, b: str, vocabulary: StanceVocabulary = DEFAULT_STANCE_VOCABULARY) -> bool:
    """Whether two texts talk about the same thing closely enough for a stance difference to be a
    contradiction rather than two facts (``TOPIC_OVERLAP`` of their topic words)."""
    return topic_overlap(a, b, vocabulary) >= TOPIC_OVERLAP


def word_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """The Jaccard similarity of two collections of words, in [0, 1] (0 when both are empty)."""
    left, right = set(a), set(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0
