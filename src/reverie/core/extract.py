"""Entity extraction's pure rules (issue 9, "Extraction"): the rule-based extractor used when no LLM is
configured, and the host's reading of an LLM's answer. Text in, entities and relations out; no I/O.

What the rules find, each as the first mention of one identity, in text order:

- Names (type ``thing``: rules cannot tell a person from a place): runs of capitalised words ("Ana",
  "New York", "Acme Corp", "NOAA CO-OPS API"), joined by a lower-case particle inside a name ("Bank of
  America", "Vasco da Gama") or by ``&`` ("AT&T"). A possessive ends a name ("Maya's" is "Maya"); an
  honorific opens none ("Dr. Ana Costa" is "Ana Costa").
- At a sentence start a capital is grammar, not evidence. Leading function words go ("The Acme board" is
  "Acme", "Yesterday Ana called" is "Ana"); a run of two or more words left there is a name ("New York is
  big"); a single word is one only when the text also writes it capitalised mid-sentence, or ``known``
  says the graph has an entity of that name ("Ana works at Acme" learns Ana once Ana is known). A month
  or weekday alone, "I", and single letters are never names.
- Dates (type ``date``), one canonical name per day so that spellings meet: "2026-03-14", "March 14,
  2026", "14 March 2026" and "14th of March, 2026" are all "2026-03-14"; without a year "14 March" is
  "March 14"; a month and a year is "2026-03"; a year after "in", "since", "by"… is "2019". An
  impossible date (February 30) is not a date.
- Numbers with a unit (type ``number``), as written with spacing normalised: currency ("$40",
  "€1,200.50", "$3.5 million"), percentages ("40%"), clock times ("9:30", "9:30 pm", "9am" is "9 am"), and
  a number followed by a unit word ("3 kids", "5 km", "12h"). A bare number says too little to link by.

Relations by rules (``related_pairs``): a name is ``mentioned_with`` each entity mentioned within
``window`` entities of it (a date or a number is linked to the names near it, never to another date or
number). The name says what rules know — the two appear together — and leaves ``related_to`` and typed
relations to an LLM that read the sentence. Each pair is stored one way (ordered by identity), so the
same pair seen in another entry reinforces one relation instead of adding its mirror image.

Invariants (unit-tested): every mention's name has a non-empty ``entity_key``; no two mentions share an
identity; at most ``max_entities`` mentions and ``limit`` pairs; the answer depends only on the text and
``known``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from reverie.core.coverage import BASELINE_COMMON_WORDS
from reverie.core.graph import THING, display_name, entity_key, relation_key, type_key
from reverie.core.text import STOPWORDS

DATE: Final = "date"
NUMBER: Final = "number"
MENTIONED_WITH: Final = "mentioned_with"

_MONTHS: Final[dict[str, int]] = {
    "January": 1, "Jan": 1, "February": 2, "Feb": 2, "March": 3, "Mar": 3, "April": 4, "Apr": 4,
    "May": 5, "June": 6, "Jun": 6, "July": 7, "Jul": 7, "August": 8, "Aug": 8,
    "September": 9, "Sept": 9, "Sep": 9, "October": 10, "Oct": 10, "November": 11, "Nov": 11,
    "December": 12, "Dec": 12,
}  # fmt: skip
_MONTH_NAMES: Final = tuple(calendar.month_name)
_WEEKDAY_TEXT = """monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat
    sun mondays tuesdays wednesdays thursdays fridays saturdays sundays weekend weekends"""
# Words that open a sentence without naming anything: dropped from the front of a sentence-initial run.
_LEADING_TEXT = """yesterday today tomorrow tonight also every each some any all both last next after before since
    during then now here please maybe perhaps hi hello dear thanks yes no not only just still meanwhile however
    although because while once another other such most many few several according per via unlike like about
    above across against along among around behind below beside between beyond despite inside near outside over
    through toward towards under until upon within without"""
# Lower-case particles that join the capitalised words of one name.
_PARTICLE_TEXT = "of de da do dos das del della di du van von der den la le al bin ibn y"
_HONORIFIC_TEXT = "mr mrs ms mx dr prof sir madam dame"
_ABBREVIATION_TEXT = "st mt ft jr sr"  # with the honorifics: a period after these ends no sentence
_NOT_UNIT_TEXT = """more less most least or nor per each other others out up down over under about again also only
    just still yet already ago and times plus minus through till until to from between among am pm"""
_WEEKDAYS: Final = frozenset(_WEEKDAY_TEXT.split())
_MONTH_KEYS: Final = frozenset(m.casefold() for m in _MONTHS)
_LEADING: Final = STOPWORDS | _WEEKDAYS | _MONTH_KEYS | frozenset(_LEADING_TEXT.split())
_PARTICLES: Final = frozenset(_PARTICLE_TEXT.split())
_HONORIFICS: Final = frozenset(_HONORIFIC_TEXT.split())
_ABBREVIATIONS: Final = _HONORIFICS | frozenset(_ABBREVIATION_TEXT.split())
_NOT_UNITS: Final = STOPWORDS | frozenset(_NOT_UNIT_TEXT.split())
_OPENERS: Final = frozenset(" \t\r\u00a0\"'“”‘’«»([{*_`#>•·–—-+|~")
_SENTENCE_ENDS: Final = frozenset(".!?…:\n")
_GAP: Final = r"[ \t\u00a0]+"
_MONTH_RE: Final = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"
_DAY_RE: Final = r"\d{1,2}(?:st|nd|rd|th)?"

# A word: letters and digits, with apostrophes and hyphens inside ("O'Brien", "Jean-Luc", "CO-OPS").
_WORD: Final = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
_POSSESSIVE: Final = re.compile(r"['’]s$|(?<=s)['’]$")
_SPACE_GAP: Final = re.compile(r"[ \t\u00a0]+|[ \t\u00a0]*&[ \t\u00a0]*")
_PERIOD_GAP: Final = re.compile(r"\.[ \t\u00a0]+")
_DATE_PATTERNS: Final = (
    re.compile(r"(?<![\w\-/.])(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})(?!\d)(?![\-/.]\d)(?![^\W\dT_])"),
    re.compile(r"(?<![\w\-/.])(?P<y>\d{4})-(?P<m>\d{2})(?![\w\-/]|\.\d)"),
    re.compile(
        rf"(?<!\w)(?P<mn>{_MONTH_RE})\.?{_GAP}(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?![\w:])"
        rf"(?:,?{_GAP}(?P<y>\d{{4}})(?!\w))?"
    ),
    re.compile(
        rf"(?<![\w.])(?P<d>\d{{1,2}})(?:st|nd|rd|th)?{_GAP}(?:of{_GAP})?(?P<mn>{_MONTH_RE})(?!\w)\.?"
        rf"(?:,?{_GAP}(?P<y>\d{{4}})(?!\w))?"
    ),
    re.compile(rf"(?<!\w)(?P<mn>{_MONTH_RE})\.?,?{_GAP}(?P<y>\d{{4}})(?!\w)"),
    re.compile(
        rf"(?<!\w)(?i:in|since|from|until|till|by|during|before|after|of){_GAP}"
        r"(?P<yonly>1[0-9]{3}|20[0-9]{2})(?![\w%\-/]|[.,:]\d)"
    ),
)
_AMOUNT: Final = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUMBER_PATTERNS: Final = (
    re.compile(
        rf"(?<![\w$€£¥])(?P<cur>[$€£¥])(?:{_GAP})?(?P<n>{_AMOUNT})"
        rf"(?:(?P<sp>{_GAP})?(?P<mult>k|K|m|M|bn|million|billion|thousand|trillion)(?!\w))?"
    ),
    re.compile(rf"(?<![\w.,])(?P<n>{_AMOUNT})(?:{_GAP})?%"),
    re.compile(
        r"(?<![\w:.])(?P<clock>(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?)"
        rf"(?:(?:{_GAP})?(?P<ap>[ap]\.m\.|[AP]\.M\.|[ap]m|[AP]M)(?!\w)|(?![\w:]|\.\d))"
    ),
    re.compile(rf"(?<![\w:.])(?P<hour>1[0-2]|0?[1-9])(?:{_GAP})?(?P<ap>[ap]\.m\.|[AP]\.M\.|[ap]m|[AP]M)(?!\w)"),
    re.compile(
        r"(?<![\w.,$€£¥])(?P<n>\d+(?:\.\d+)?)"
        r"(?P<glued>(?i:km|kg|cm|mm|mg|ml|gb|mb|tb|kb|ghz|mhz|kwh|kw|mph|kph|hrs|hr|h|mins|min|ms|s|x))(?!\w)"
    ),
    re.compile(rf"(?<![\w.,:/$€£¥\-])(?P<n>{_AMOUNT}){_GAP}(?P<unit>[^\W\d_]+(?:-[^\W\d_]+)*)(?!\w)"),
)


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity a text names: its type (``thing``, ``date`` or ``number``), its name as shown, and where
    its first mention is (``start``/``end`` offsets into the text)."""

    type: str
    name: str
    start: int
    end: int

    @property
    def key(self) -> str:
        return entity_key(self.name)

    @property
    def identity(self) -> tuple[str, str]:
        return self.type, self.key


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """An entity to learn: ``type`` (normalised) and ``name``."""

    type: str
    name: str

    @property
    def ref(self) -> str:
        """The reference the graph service reads: ``type:name`` (always typed, so a name with a colon in it
        — "9:30" — is never read as a type)."""
        return f"{self.type}:{self.name}"


@dataclass(frozen=True, slots=True)
class ExtractedRelation:
    """A relation to learn: ``source -relation-> target`` (``relation`` in lower snake case)."""

    source: ExtractedEntity
    relation: str
    target: ExtractedEntity


@dataclass(frozen=True, slots=True)
class Extraction:
    """What one entry teaches the graph. ``dropped``: items of an LLM answer the host refused (wrong
    shape, empty name, a relation of an entity to itself, past a cap)."""

    entities: tuple[ExtractedEntity, ...] = ()
    relations: tuple[ExtractedRelation, ...] = ()
    dropped: int = 0


# -- the rules -----------------------------------------------------------------------------------------------
def extract(
    text: str,
    *,
    known: Callable[[str], bool] | None = None,
    max_entities: int = 24,
    window: int = 4,
    max_relations: int = 40,
) -> Extraction:
    """The rule-based extraction of ``text``: its mentions (``mentions``) as entities and the
    ``mentioned_with`` pairs among them (``related_pairs``)."""
    found = mentions(text, known=known, max_entities=max_entities)
    entities = {m.identity: ExtractedEntity(m.type, m.name) for m in found}
    relations = tuple(
        ExtractedRelation(entities[a.identity], MENTIONED_WITH, entities[b.identity])
        for a, b in related_pairs(found, window=window, limit=max_relations)
    )
    return Extraction(tuple(entities.values()), relations)


def mentions(text: str, *, known: Callable[[str], bool] | None = None, max_entities: int = 24) -> list[Mention]:
    """The names, dates and numbers ``text`` mentions (see the module), the first mention of each identity,
    in text order, at most ``max_entities``. ``known(key)`` says whether the graph already has an entity of
    that normalised name: it admits a single capitalised word at a sentence start."""
    if max_entities < 1:
        raise ValueError("max_entities must be at least 1")
    taken: list[tuple[int, int]] = []
    found = [*_dates(text, taken), *_numbers(text, taken), *_names(text, taken, known or _unknown)]
    found.sort(key=lambda m: (m.start, m.end))
    out: dict[tuple[str, str], Mention] = {}
    for mention in found:
        out.setdefault(mention.identity, mention)
        if len(out) >= max_entities:
            break
    return list(out.values())


def related_pairs(found: list[Mention], *, window: int = 4, limit: int = 40) -> list[tuple[Mention, Mention]]:
    """The ``mentioned_with`` pairs among ``found`` (in text order): each two within ``window`` positions
    of each other, at least one of them a name, nearest pairs first, each pair once and ordered by
    identity, at most ``limit``."""
    if window < 1 or limit < 0:
        raise ValueError("window must be at least 1 and limit not negative")
    pairs: dict[tuple[tuple[str, str], tuple[str, str]], tuple[Mention, Mention]] = {}
    for distance in range(1, window + 1):
        for i in range(len(found) - distance):
            a, b = found[i], found[i + distance]
            if THING not in (a.type, b.type) or a.identity == b.identity:
                continue
            first, second = sorted((a, b), key=lambda m: m.identity)
            if len(pairs) >= limit:
                return list(pairs.values())
            pairs.setdefault((first.identity, second.identity), (first, second))
    return list(pairs.values())


def _unknown(_key: str) -> bool:
    return False


def _overlaps(start: int, end: int, taken: Iterable[tuple[int, int]]) -> bool:
    return any(start < b and a < end for a, b in taken)


def _claim(candidates: list[tuple[int, int, str, str]], taken: list[tuple[int, int]]) -> list[Mention]:
    """Non-overlapping candidates, longest first where two overlap; their spans join ``taken``."""
    out: list[Mention] = []
    for start, end, kind, name in sorted(candidates, key=lambda c: (-(c[1] - c[0]), c[0])):
        if not _overlaps(start, end, taken):
            taken.append((start, end))
            out.append(Mention(kind, name, start, end))
    return out


# -- dates ---------------------------------------------------------------------------------------------------
def _dates(text: str, taken: list[tuple[int, int]]) -> list[Mention]:
    candidates: list[tuple[int, int, str, str]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            groups = match.groupdict()
            if groups.get("yonly"):
                start, end = match.span("yonly")
                candidates.append((start, end, DATE, groups["yonly"]))
                continue
            month = _MONTHS[groups["mn"]] if groups.get("mn") else int(groups["m"])
            day = int(groups["d"]) if groups.get("d") else None
            year = int(groups["y"]) if groups.get("y") else None
            name = _date_name(year, month, day)
            if name is not None:
                candidates.append((match.start(), match.end(), DATE, name))
    return _claim(candidates, taken)


def _date_name(year: int | None, month: int, day: int | None) -> str | None:
    """The canonical name of a date, or None for an impossible one."""
    if not 1 <= month <= 12:
        return None
    if day is not None and not 1 <= day <= calendar.monthrange(year if year is not None else 2000, month)[1]:
        return None  # 2000 is a leap year: "February 29" without a year is a date
    if year is None:
        return f"{_MONTH_NAMES[month]} {day}" if day is not None else None
    return f"{year:04d}-{month:02d}" + (f"-{day:02d}" if day is not None else "")


# -- numbers -------------------------------------------------------------------------------------------------
def _numbers(text: str, taken: list[tuple[int, int]]) -> list[Mention]:
    candidates: list[tuple[int, int, str, str]] = []
    for pattern in _NUMBER_PATTERNS:
        for match in pattern.finditer(text):
            name = _number_name(match.groupdict())
            if name is not None:
                candidates.append((match.start(), match.end(), NUMBER, name))
    return _claim(candidates, taken)


def _number_name(groups: Mapping[str, str | None]) -> str | None:
    if groups.get("cur"):
        mult = groups.get("mult") or ""
        return f"{groups['cur']}{groups['n']}{' ' if groups.get('sp') and len(mult) > 2 else ''}{mult}"
    if groups.get("clock"):
        return f"{groups['clock']}" + (f" {_meridiem(groups['ap'] or '')}" if groups.get("ap") else "")
    if groups.get("hour"):
        return f"{int(groups['hour'] or 0)} {_meridiem(groups['ap'] or '')}"
    if groups.get("glued"):
        return f"{groups['n']}{groups['glued']}"
    if groups.get("unit"):
        unit = groups["unit"] or ""
        if not unit.islower() or len(unit) < 2 or unit in _NOT_UNITS:
            return None
        return f"{groups['n']} {unit}"
    if groups.get("n"):
        return f"{groups['n']}%"
    return None


def _meridiem(value: str) -> str:
    return value.replace(".", "").lower()


# -- names ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Run:
    """Capitalised words that read as one name: the word matches, and whether the first opens a sentence."""

    words: tuple[re.Match[str], ...]
    initial: bool


def _names(text: str, taken: list[tuple[int, int]], known: Callable[[str], bool]) -> list[Mention]:
    runs = [run for run in _runs(text, taken) if run.words]
    mid_sentence = {_run_key(text, run) for run in runs if not run.initial}
    out: list[Mention] = []
    for run in runs:
        words = list(run.words)
        if run.initial:
            while words and _leading(words[0].group(0)):
                words.pop(0)
            stripped = len(words) < len(run.words)
            if not words:
                continue
            if not stripped and len(words) == 1:
                key = _name_key(words[0].group(0))
                if key in BASELINE_COMMON_WORDS or not (key in mid_sentence or known(key)):
                    continue
        mention = _mention(text, words)
        if mention is not None:
            out.append(mention)
    return out


def _leading(token: str) -> bool:
    """A function word opening a sentence ("The", "Yesterday"); never an acronym ("AT&T", "IT")."""
    return not (token.isupper() and len(token) > 1) and token.casefold() in _LEADING


def _runs(text: str, taken: list[tuple[int, int]]) -> list[_Run]:
    """Every run of capitalised words (with particles, ``&`` and title abbreviations inside), outside
    ``taken``; honorifics dropped from the front, a possessive ending the run."""
    runs: list[_Run] = []
    current: list[re.Match[str]] = []
    pending: list[re.Match[str]] = []  # particles waiting for a capitalised word to join
    previous: re.Match[str] | None = None

    def close() -> None:
        if current:
            runs.append(_Run(tuple(current), _sentence_initial(text, current[0].start())))
        current.clear()
        pending.clear()

    for word in _WORD.finditer(text):
        token = word.group(0)
        if _overlaps(word.start(), word.end(), taken):  # a word of a date or a number ends any name
            close()
            previous = word
            continue
        if current and previous is not None and not _joined(text, previous, word):
            close()
        if _capitalised(token):
            if token.casefold() in _HONORIFICS:
                close()
                previous = word
                continue  # "Dr. Ana Costa": the honorific is not part of the name
            current.extend(pending)
            pending.clear()
            current.append(word)
            if _POSSESSIVE.search(token):
                close()
        elif current and token in _PARTICLES and len(pending) < 2:
            pending.append(word)
        else:
            close()
        previous = word
    close()
    return runs


def _joined(text: str, previous: re.Match[str], word: re.Match[str]) -> bool:
    """Whether nothing but what may sit inside a name separates two words: spaces (never a line break),
    ``&``, or the period of a title abbreviation or an initial ("St. Paul", "J. R. Tolkien")."""
    gap = text[previous.end() : word.start()]
    if _SPACE_GAP.fullmatch(gap):
        return True
    before = previous.group(0)
    abbreviation = before.casefold() in _ABBREVIATIONS or (len(before) == 1 and before.isupper())
    return abbreviation and _PERIOD_GAP.fullmatch(gap) is not None


def _capitalised(token: str) -> bool:
    return token[0].isupper() or (any(c.isupper() for c in token) and not token[0].isdigit())


def _sentence_initial(text: str, start: int) -> bool:
    """Whether ``start`` opens the text, a line or a sentence (skipping quotes, brackets and bullets); a
    period after a title abbreviation or an initial ends no sentence."""
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    if i < 0:
        return True
    if text[i] not in _SENTENCE_ENDS:
        return False
    if text[i] != ".":
        return True
    j = i
    while j > 0 and text[j - 1].isalnum():
        j -= 1
    word = text[j:i]
    return not (word.casefold() in _ABBREVIATIONS or (len(word) == 1 and word.isupper()))


def _mention(text: str, words: list[re.Match[str]]) -> Mention | None:
    """The name ``words`` spell, as the text writes it (possessive cut, spacing collapsed), or None when it
    is no name: a month or a weekday alone, a single letter, "I"."""
    calendar_words = _MONTH_KEYS | _WEEKDAYS  # "in March Ana" is Ana: a month alone names no one
    while len(words) > 1 and words[0].group(0).casefold() in calendar_words:
        words = words[1:]
    while len(words) > 1 and words[-1].group(0).casefold() in calendar_words:
        words = words[:-1]
    start, end = words[0].start(), words[-1].end()
    raw = text[start:end]
    cut = _POSSESSIVE.search(raw)
    if cut is not None:
        raw, end = raw[: cut.start()], start + cut.start()
    name = display_name(raw)
    if len(words) == 1:
        key = name.casefold()
        if len(name) < 2 or key in _MONTH_KEYS or key in _WEEKDAYS:
            return None
    try:
        entity_key(name)
    except ValueError:
        return None
    return Mention(THING, name, start, end)


def _name_key(token: str) -> str:
    return entity_key(_POSSESSIVE.sub("", token) or token)


def _run_key(text: str, run: _Run) -> str:
    mention = _mention(text, list(run.words))
    return "" if mention is None else mention.key


# -- an LLM's answer -----------------------------------------------------------------------------------------
_TYPE_ALIASES: Final = {
    "organization": "organisation",
    "org": "organisation",
    "location": "place",
    "unknown": THING,
    "other": THING,
    "none": THING,
    "entity": THING,
}


def from_answer(
    entities: Iterable[Any], relations: Iterable[Any], *, max_entities: int = 24, max_relations: int = 40
) -> Extraction:
    """An LLM's ``{"entities": [...], "relations": [...]}`` as the host accepts it. An entity is
    ``{"type", "name"}`` (a missing or unusable type is ``thing``; a known spelling variant is mapped:
    "organization" is "organisation"); a relation is ``{"from", "relation", "to"}`` naming entities, each
    end typed as the entity of that name in ``entities`` (else ``thing``). An item of the wrong shape, with
    an empty name or relation, relating an entity to itself, or past a cap is dropped and counted — never
    the whole answer."""
    dropped = 0
    found: dict[tuple[str, str], ExtractedEntity] = {}
    for item in entities:
        entity = _entity(item)
        if entity is None or (len(found) >= max_entities and _identity(entity) not in found):
            dropped += 1
            continue
        found.setdefault(_identity(entity), entity)
    types: dict[str, str] = {}
    for entity in found.values():
        types.setdefault(entity_key(entity.name), entity.type)
    out: dict[tuple[tuple[str, str], str, tuple[str, str]], ExtractedRelation] = {}
    for item in relations:
        relation = _relation(item, types)
        if relation is None or len(out) >= max_relations:
            dropped += 1
            continue
        out.setdefault((_identity(relation.source), relation.relation, _identity(relation.target)), relation)
    return Extraction(tuple(found.values()), tuple(out.values()), dropped)


def _identity(entity: ExtractedEntity) -> tuple[str, str]:
    return entity.type, entity_key(entity.name)


def _clean_name(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = display_name(value)
    try:
        entity_key(name)
    except ValueError:
        return None
    return name


def _clean_type(value: object) -> str:
    if not isinstance(value, str):
        return THING
    try:
        kind = type_key(value)
    except ValueError:
        return THING
    return _TYPE_ALIASES.get(kind, kind)


def _entity(item: object) -> ExtractedEntity | None:
    if not isinstance(item, Mapping):
        return None
    name = _clean_name(item.get("name"))
    return None if name is None else ExtractedEntity(_clean_type(item.get("type")), name)


def _relation(item: object, types: Mapping[str, str]) -> ExtractedRelation | None:
    if not isinstance(item, Mapping):
        return None
    source, target = _clean_name(item.get("from")), _clean_name(item.get("to"))
    raw = item.get("relation")
    if source is None or target is None or not isinstance(raw, str):
        return None
    try:
        rel = relation_key(raw)
    except ValueError:
        return None
    ends = [ExtractedEntity(types.get(entity_key(n), THING), n) for n in (source, target)]
    if _identity(ends[0]) == _identity(ends[1]):
        return None
    return ExtractedRelation(ends[0], rel, ends[1])
