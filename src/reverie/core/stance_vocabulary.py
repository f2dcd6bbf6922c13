"""The stance vocabulary (``core.stance``): negations, antonyms, comparison and move markers, time references.

Built in: every ``stance-<language>.json`` beside this module (English today), merged. A deployment adds
words with ``<home>/stance-vocabulary.json`` (the same shape; its lists extend the built-in ones, and
``"builtIn": false`` drops the built-in files for a deployment that wants only its own), read beside
``merge-coverage-vocabulary.json`` and, like it, taking effect at the next use. Another language is another
file of the same shape: drop it beside this module (shipped) or put its words in the home file.

The file's fields (all optional): ``negations`` (words), ``negationPhrases`` (several words counted as one
negation), ``contractions`` (a word → how it is spelt out: "can't" → "can not"), ``contractionSuffix``
("n't": "isn't" → "is not"), ``antonyms`` (pairs of word lists: each form of one side against each of the
other), ``negativePrefixes`` and ``negativePrefixMinBase`` ("un" + a word of at least that length is its
opposite), ``orderMarkers`` (words or phrases with a before and an after: "over", "rather than"),
``moveMarkers`` (pairs: "from" … "to"), ``relations`` (word lists, each the words of one relation: "live",
"moved", "relocated"), ``fillers`` (words and phrases about no topic: a contraction's "m" and "ve", "turns
out"), ``times`` (class → words or phrases; ``presentTime`` names the class
that adding alone is no move), ``clauseBreaks`` (words that split a merged text into clauses), ``stemmer``
(a Snowball stemmer's name, for comparing what two texts are about: "worked" and "works" are one word).

Invariants: words are held lower-cased; ``load_stance_vocabulary`` never raises and never disables the
check — a missing home file gives the built-in vocabulary, a malformed one the built-in and a warning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

log = logging.getLogger("reverie.stance")

STANCE_FILE_NAME = "stance-vocabulary.json"
_BUILT_IN_PATTERN = "stance-"


def _lowered(words: Iterable[str]) -> frozenset[str]:
    return frozenset(" ".join(w.lower().split()) for w in words if w.strip())


@dataclass(frozen=True, slots=True)
class StanceVocabulary:
    """The words ``core.stance`` reads stance from. Multi-word entries are phrases, matched as one token."""

    negations: frozenset[str] = frozenset()
    antonyms: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    negative_prefixes: tuple[str, ...] = ()
    negative_prefix_min_base: int = 4
    order_markers: frozenset[str] = frozenset()
    moves: tuple[tuple[str, str], ...] = ()
    times: Mapping[str, str] = field(default_factory=dict, hash=False)  # word or phrase → its time class
    present: str = "present"
    contractions: Mapping[str, str] = field(default_factory=dict, hash=False)
    contraction_suffix: str = ""
    clause_breaks: frozenset[str] = frozenset()
    languages: tuple[str, ...] = ()
    stemmer: str = ""  # a Snowball stemmer's name (PyStemmer: "english", "portuguese"…); none: plurals only
    # A replaced value ("… is tea" → "… is coffee") is a changed belief when the new text says it replaces
    # ("now", "switched", "anymore") or the statement can hold one value only ("favourite", "main").
    change_markers: frozenset[str] = frozenset()
    single_valued: frozenset[str] = frozenset()
    addition_markers: frozenset[str] = frozenset()  # "also", "too": a second value, never a replaced one
    # "…, not Tuesday", "… instead of Jenkins": a word that takes back the value named after it.
    retractions: frozenset[str] = frozenset()
    # "replaced Jenkins with…", "left Google and joined…", "switched from CircleCI to…": a word after which the
    # old value is named, the new one said after it.
    replacements: frozenset[str] = frozenset()
    # "No, …" opening a text: an answer correcting what was said, not a negation of the statement.
    correction_interjections: frozenset[str] = frozenset()
    # Words that name one relation ("live", "moved", "relocated"; "manager", "reports"): a correction may say
    # the relation in other words than the fact it changes ("I moved to Bristol" after "I live in Leeds").
    relations: tuple[frozenset[str], ...] = ()
    # Words and phrases that say nothing of what a statement is about: the pieces a contraction leaves ("I'm"
    # → "i", "m"; "Anna's" → "anna", "s") and a speaker's asides ("turns out", "after all"). Topic comparisons
    # leave them out, so "Turns out I'm not allergic to penicillin after all" is about what "I am allergic
    # to penicillin" is about.
    fillers: frozenset[str] = frozenset()

    # Derived once (the check runs on every save): every multi-word entry by its number of words; the words
    # that carry stance and say nothing of the topic (negations, comparison and move markers, time references),
    # which topic comparisons leave out; and each antonym's axis ("likes" and "dislikes" are one topic word).
    phrases: Mapping[int, frozenset[str]] = field(init=False, repr=False, compare=False)
    stance_words: frozenset[str] = field(init=False, repr=False, compare=False)
    axes: Mapping[str, str] = field(init=False, repr=False, compare=False)
    relation_of: Mapping[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_length: dict[int, set[str]] = {}
        entries = [*self.negations, *self.order_markers, *self.times, *self.change_markers, *self.addition_markers]
        for entry in [*entries, *self.retractions, *self.replacements, *self.fillers]:
            if len(entry.split()) > 1:
                by_length.setdefault(len(entry.split()), set()).add(entry)
        object.__setattr__(self, "phrases", {n: frozenset(words) for n, words in by_length.items()})
        words = set(self.negations) | set(self.order_markers) | set(self.times)
        words.update(w for pair in self.moves for w in pair)
        object.__setattr__(self, "stance_words", frozenset(words))
        axes: dict[str, str] = {}
        for index, (first, second) in enumerate(self.antonyms):
            for word in sorted(first | second):
                axes.setdefault(word, f"~{index}")  # "~" never starts a token, so an axis is never a word
        object.__setattr__(self, "axes", axes)
        relation_of: dict[str, str] = {}
        for index, group in enumerate(self.relations):
            for word in sorted(group):
                relation_of.setdefault(word, f"={index}")  # "=" never starts a token either
        object.__setattr__(self, "relation_of", relation_of)

    def related(self, words: Iterable[str]) -> list[str]:
        """The words that name the same relation as one of ``words`` (``relations``), not among them, in a
        stable order: what a lookup adds to find a fact said with the relation's other words."""
        said = set(words)
        groups = [group for group in self.relations if group & said]
        return sorted({w for group in groups for w in group if " " not in w} - said)

    def extended(self, other: StanceVocabulary) -> StanceVocabulary:
        """This vocabulary with ``other``'s words added (``other``'s settings win where both set one)."""
        return StanceVocabulary(
            negations=self.negations | other.negations,
            antonyms=self.antonyms + tuple(p for p in other.antonyms if p not in self.antonyms),
            negative_prefixes=tuple(dict.fromkeys(self.negative_prefixes + other.negative_prefixes)),
            negative_prefix_min_base=other.negative_prefix_min_base,
            order_markers=self.order_markers | other.order_markers,
            moves=tuple(dict.fromkeys(self.moves + other.moves)),
            times={**self.times, **other.times},
            present=other.present,
            contractions={**self.contractions, **other.contractions},
            contraction_suffix=other.contraction_suffix or self.contraction_suffix,
            clause_breaks=self.clause_breaks | other.clause_breaks,
            languages=tuple(dict.fromkeys(self.languages + other.languages)),
            stemmer=other.stemmer or self.stemmer,
            change_markers=self.change_markers | other.change_markers,
            single_valued=self.single_valued | other.single_valued,
            addition_markers=self.addition_markers | other.addition_markers,
            retractions=self.retractions | other.retractions,
            replacements=self.replacements | other.replacements,
            correction_interjections=self.correction_interjections | other.correction_interjections,
            relations=self.relations + tuple(g for g in other.relations if g not in self.relations),
            fillers=self.fillers | other.fillers,
        )


class _Malformed(ValueError):
    pass


def string_list(document: Mapping[str, Any], key: str) -> list[str]:
    """``document[key]`` as a list of strings (missing: empty); ``ValueError`` when it is anything else."""
    value = document.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Malformed(f"{key} must be a list of strings")
    return list(value)


def _antonyms(document: Mapping[str, Any]) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    value = document.get("antonyms", [])
    pairs: list[tuple[frozenset[str], frozenset[str]]] = []
    if not isinstance(value, list):
        raise _Malformed("antonyms must be a list of pairs")
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise _Malformed("each antonym must be a pair of word lists")
        sides = [[side] if isinstance(side, str) else side for side in pair]
        if not all(isinstance(side, list) and side and all(isinstance(w, str) for w in side) for side in sides):
            raise _Malformed("each side of an antonym pair must be a word or a list of words")
        pairs.append((_lowered(sides[0]), _lowered(sides[1])))
    return tuple(pairs)


def _relations(document: Mapping[str, Any]) -> tuple[frozenset[str], ...]:
    value = document.get("relations", [])
    if not isinstance(value, list) or not all(
        isinstance(group, list) and group and all(isinstance(w, str) for w in group) for group in value
    ):
        raise _Malformed("relations must be a list of word lists")
    return tuple(_lowered(group) for group in value)


def _moves(document: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    value = document.get("moveMarkers", [])
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) for w in p) for p in value
    ):
        raise _Malformed("moveMarkers must be a list of [start, end] word pairs")
    return tuple((p[0].lower(), p[1].lower()) for p in value)


def _times(document: Mapping[str, Any]) -> dict[str, str]:
    value = document.get("times", {})
    if not isinstance(value, dict):
        raise _Malformed("times must map a time class to a list of words")
    out: dict[str, str] = {}
    for kind in value:
        for word in string_list(value, kind):
            out[" ".join(word.lower().split())] = str(kind)
    return out


def _string_map(document: Mapping[str, Any], key: str) -> dict[str, str]:
    value = document.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _Malformed(f"{key} must map words to their spelt-out form")
    return {k.lower(): v.lower() for k, v in value.items()}


def _integer(document: Mapping[str, Any], key: str, default: int) -> int:
    value = document.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _Malformed(f"{key} must be a whole number of at least 1")
    return value


def _text(document: Mapping[str, Any], key: str, default: str) -> str:
    value = document.get(key, default)
    if not isinstance(value, str):
        raise _Malformed(f"{key} must be a string")
    return value.lower()


_KEYS = frozenset(
    {"language", "builtIn", "negations", "negationPhrases", "contractions", "contractionSuffix", "antonyms",
     "negativePrefixes", "negativePrefixMinBase", "orderMarkers", "moveMarkers", "times", "presentTime",
     "clauseBreaks", "stemmer", "changeMarkers", "singleValued",
     "additionMarkers", "retractions", "replacements", "correctionInterjections", "relations", "fillers"}
)  # fmt: skip


def parse_stance_vocabulary(text: str) -> StanceVocabulary:
    """The vocabulary a JSON document describes; raises ``ValueError`` when it is malformed. Unknown keys are
    ignored with a warning, so a typo does not throw away the valid lists beside it."""
    return _vocabulary_of(_document(text))


def _document(text: str) -> dict[str, Any]:
    document = json.loads(text)
    if not isinstance(document, dict):
        raise _Malformed("the document must be a JSON object")
    return document


def _vocabulary_of(document: dict[str, Any]) -> StanceVocabulary:
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        log.warning("stance vocabulary: ignoring unknown key(s) %s", ", ".join(unknown))
    language = document.get("language", "")
    return StanceVocabulary(
        negations=_lowered(string_list(document, "negations") + string_list(document, "negationPhrases")),
        antonyms=_antonyms(document),
        negative_prefixes=tuple(p.lower() for p in string_list(document, "negativePrefixes")),
        negative_prefix_min_base=_integer(document, "negativePrefixMinBase", 4),
        order_markers=_lowered(string_list(document, "orderMarkers")),
        moves=_moves(document),
        times=_times(document),
        present=_text(document, "presentTime", "present"),
        contractions=_string_map(document, "contractions"),
        contraction_suffix=_text(document, "contractionSuffix", ""),
        clause_breaks=_lowered(string_list(document, "clauseBreaks")),
        languages=(language,) if isinstance(language, str) and language else (),
        stemmer=_text(document, "stemmer", ""),
        change_markers=_lowered(string_list(document, "changeMarkers")),
        single_valued=_lowered(string_list(document, "singleValued")),
        addition_markers=_lowered(string_list(document, "additionMarkers")),
        retractions=_lowered(string_list(document, "retractions")),
        replacements=_lowered(string_list(document, "replacements")),
        correction_interjections=_lowered(string_list(document, "correctionInterjections")),
        relations=_relations(document),
        fillers=_lowered(string_list(document, "fillers")),
    )


def built_in_stance_vocabulary() -> StanceVocabulary:
    """Every ``stance-<language>.json`` shipped beside this module, merged."""
    merged = StanceVocabulary()
    folder = resources.files("reverie.core")
    for item in sorted(folder.iterdir(), key=lambda i: i.name):
        if item.name.startswith(_BUILT_IN_PATTERN) and item.name.endswith(".json"):
            merged = merged.extended(parse_stance_vocabulary(item.read_text(encoding="utf-8")))
    return merged


DEFAULT_STANCE_VOCABULARY = built_in_stance_vocabulary()


def read_vocabulary_file(path: Path | None, what: str, logger: logging.Logger = log) -> str | None:
    """The text of an optional vocabulary file in the home, or None when there is none or it cannot be read
    (then with a warning naming ``what`` on ``logger``): bad configuration never disables a check."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("%s %s is unreadable (%s); using the built-in one", what, path, exc)
        return None


def load_stance_vocabulary(path: Path | None) -> StanceVocabulary:
    """The built-in vocabulary extended by ``path`` (``<home>/stance-vocabulary.json``); never raises."""
    text = read_vocabulary_file(path, "stance vocabulary")
    if text is None:
        return DEFAULT_STANCE_VOCABULARY
    try:
        document = _document(text)
        own = _vocabulary_of(document)
    except (ValueError, RecursionError) as exc:
        log.warning("stance vocabulary %s is malformed (%s); using the built-in one", path, exc)
        return DEFAULT_STANCE_VOCABULARY
    return own if document.get("builtIn", True) is False else DEFAULT_STANCE_VOCABULARY.extended(own)
