"""The merge coverage check (seeds 000 and 001): a merge may rephrase, but it may not lose a specific.

Shared by dream consolidation (is this merge safe to apply?) and save-time deduplication (does the existing
entry already carry every specific of the candidate?). The check is deliberately biased toward rejection: a
false rejection leaves a duplicate alive for another cycle, a false acceptance destroys the only record of
how a fact was worded.

What is a specific of a source (``specifics``):

- Words are maximal runs of letters and digits; apostrophes, hyphens, underscores and all punctuation split
  them, so "Rocky's" yields "Rocky" and "O'Brien" yields "Brien" (the lone "O" is too short to count).
- Proper nouns: a word with a capital letter and a lower-case one. Title-case words ("Austin", "OAuth",
  "IDs") are subject to position: sentence-initial capitalisation is grammatical, so there a word from the
  built-in baseline (``BASELINE_COMMON_WORDS``) is ordinary. Sentence-initial means at the start of the text
  or a line, or after ``. ! ? : …`` — skipping quotes, brackets, bullets and markdown marks — except a period
  closing a title abbreviation ("Dr. May", "St. Paul") or a single initial. Mid-sentence the baseline never
  applies. Words capitalised inside ("iPhone", "macOS") are not grammatical capitals, so position is moot.
- Acronyms: a word of two or more characters with a capital and no lower-case letter ("MVP", "S3", "EC2",
  "4K"). All-caps is never grammatical, so position and baseline do not apply to them either.
- Multi-digit numbers: a numeric token with two or more digits in all. A token is a year-first date
  (``2026-08-19``, ``2026-08``) or digits joined by ``.``, ``:``, ``/`` or a thousands ``,`` ("8.33", "14:00",
  "1,200", "19/08/2026"); other hyphens split ("10-12" is "10" and "12"). Numbers are found inside words
  too ("10th", "12h", "A100"). Entries in a numeric-exempt category skip numbers entirely, dates included.
- Precedence for a capitalised word, highest first: ``alwaysSpecificWords`` (specific); ``extraCommonWords``
  (ordinary, any position); a month name in a date expression (specific: "May 5, 2026" is a date, not the
  modal verb); corpus evidence — the merge's own sources write the word in all-lower-case prose, so it is
  ordinary wherever capitalised; the sentence-initial baseline; otherwise specific. Corpus evidence comes from
  the sources only, never the merged text, and only from prose: a word glued into an identifier
  ("lhotka.net", "marimer-work", "a_b") is not evidence that "Lhotka" is an ordinary word.

When a specific survives (``check_coverage``):

- A word survives when the merged text contains it as a whole word, case-sensitively. Case matters because
  the names most at risk are the ones that collide with ordinary words: "Will" or "Rose" survive only as
  "Will" or "Rose", never as "will" or "rose". Whole-word because a substring would let "Ann" hide in
  "Annual".
- A number survives when the merged text has it as a whole numeric token or as a ``-``/``/`` component of
  one ("2026" survives in "2026-04-15"); "10" does not survive in "10.5" or "9:10", which are other values.
- Equivalent date spellings: a month name in a date is also covered by the same date written numerically in
  the merge, and a numeric date by the same date spelled with a month name. A month name is a date only when
  adjacent to a day or a year ("August 19", "Aug. 19th, 2026", "August 2026", "19 August", "19th of
  August"), on one line, capitalised as prose writes it; a person or release named August is never credited.
  Numeric dates are read year-first only ("2026-08-19", "2026/8/9", "2026-08"): "19/08/2026" and
  "08/19/2026" are ambiguous below the 13th, so they stay plain numbers. A requirement is covered when the
  months agree and every part it carries (year, day) is carried, equal, by the candidate: a source date with
  a year needs the same year, and a merge that drops the date in both spellings is rejected.
- Known conservative false positives, accepted: 12h→24h clock reformatting ("2:00 PM" → "14:00" loses
  "2:00" and "PM"), other number reformatting ("1,200" → "1200", "24/7" → "24x7", day-first dates such as
  "19/08/2026" → "2026-08-19"), and plural or case changes of a name ("MVP" → "MVPs", "Austin" → "AUSTIN").

Invariant (property-tested): merged text that contains every source verbatim, separated by whitespace, always
passes.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from reverie.core.coverage_vocabulary import (
    BASELINE_COMMON_WORDS,
    DEFAULT_VOCABULARY,
    ROUTING_EXEMPT_CATEGORY,
    Vocabulary,
    category_matches,
    load_vocabulary,
    parse_vocabulary,
)

__all__ = [
    "BASELINE_COMMON_WORDS",
    "DEFAULT_VOCABULARY",
    "ROUTING_EXEMPT_CATEGORY",
    "CoverageResult",
    "CoverageSource",
    "DateValue",
    "Specific",
    "SpecificKind",
    "Specifics",
    "Vocabulary",
    "category_matches",
    "check_coverage",
    "load_vocabulary",
    "lowercase_words",
    "parse_vocabulary",
    "specifics",
]

_ALNUM = r"[^\W_]"  # a letter or a digit
_WORD = re.compile(rf"{_ALNUM}+")
_NUMBER = re.compile(r"(?<!\d)(?:\d{4}-\d{1,2}(?:-\d{1,2})?(?!\d)|\d+(?:(?:[.:/]|,(?=\d{3}(?!\d)))\d+)*)")
_NUMBER_COMPONENT_SEPARATORS = re.compile(r"[-/]")
# Characters that glue a word into an identifier, a path, an address or a slug.
_JOINERS = frozenset(".@/\\:_-+#=~%&")
# Skipped when looking back for what precedes a word: whitespace (not newlines), quotes, brackets, bullets
# and markdown marks, so '- "Direct billing' at a line start and '**Valid** ids' are still sentence-initial.
_OPENERS = frozenset(" \t\r\u00a0\"'“”‘’«»([{*_`#>•·–—-+|~")
_SENTENCE_ENDS = frozenset(".!?:…\n")
# A period after one of these does not end a sentence: "Dr. May" must not hand May to the baseline.
_TITLE_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "mx", "dr", "st", "mt", "prof", "rev", "fr", "sr", "jr", "gen", "capt", "col", "lt",
     "sgt", "gov", "sen", "rep", "hon", "pres", "supt"}
)  # fmt: skip

# Month names as prose writes them, with their usual abbreviations.
_MONTH_NUMBERS: dict[str, int] = {
    "January": 1, "Jan": 1, "February": 2, "Feb": 2, "March": 3, "Mar": 3, "April": 4, "Apr": 4,
    "May": 5, "June": 6, "Jun": 6, "July": 7, "Jul": 7, "August": 8, "Aug": 8,
    "September": 9, "Sept": 9, "Sep": 9, "October": 10, "Oct": 10, "November": 11, "Nov": 11,
    "December": 12, "Dec": 12,
}  # fmt: skip
# Longest names first so "Sept" is not read as "Sep" followed by a stray "t".
_MONTH_WORD = re.compile(
    rf"(?<!{_ALNUM})(" + "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True)) + rf")(?!{_ALNUM})"
)
# Spaces only, never a newline: "Chapter 12" ending one line must not date the "August" opening the next.
_GAP = r"[ \t\u00a0]+"
# A day is one or two digits, optionally ordinal, and not the hour of a time ("August 10:30").
_DAY = rf"(\d{{1,2}})(?:st|nd|rd|th)?(?!{_ALNUM}|:\d)"
_YEAR = rf"(\d{{4}})(?!{_ALNUM})"
_AFTER_MONTH = re.compile(rf"\.?{_GAP}{_DAY}(?:,?{_GAP}{_YEAR})?|\.?,?{_GAP}{_YEAR}")
_BEFORE_MONTH = re.compile(rf"(?<!{_ALNUM})(\d{{1,2}})(?:st|nd|rd|th)?{_GAP}(?:of{_GAP})?$")
_YEAR_AFTER_MONTH = re.compile(rf"\.?,?{_GAP}{_YEAR}")
# Year-first only; the separator must repeat ("2026-08/19" is not a date).
_NUMERIC_DATE = re.compile(r"(?<!\d)(\d{4})([-/])(\d{1,2})(?:\2(\d{1,2}))?(?!\d)")
# How far back a leading day can start: "31st of  " plus slack.
_LOOKBACK = 24


# --- dates ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DateValue:
    """A calendar date as precise as its spelling: the month always, the year and day when written."""

    month: int
    year: int | None = None
    day: int | None = None

    def covered_by(self, candidate: DateValue) -> bool:
        """Whether ``candidate`` states this date: same month, and every part this one carries, equal."""
        return (
            candidate.month == self.month
            and (self.year is None or candidate.year == self.year)
            and (self.day is None or candidate.day == self.day)
        )


def _valid(month: int, day: int | None) -> bool:
    return 1 <= month <= 12 and (day is None or 1 <= day <= 31)


def _month_date(text: str, match: re.Match[str]) -> DateValue | None:
    month = _MONTH_NUMBERS[match.group(1)]
    after = _AFTER_MONTH.match(text, match.end())
    if after is not None:
        day_text, year_text = after.group(1), after.group(2) or after.group(3)
        day = int(day_text) if day_text else None
        year = int(year_text) if year_text else None
        return DateValue(month, year, day) if _valid(month, day) else None
    before = _BEFORE_MONTH.search(text, max(0, match.start() - _LOOKBACK), match.start())
    if before is None:
        return None
    day = int(before.group(1))
    following_year = _YEAR_AFTER_MONTH.match(text, match.end())
    year = int(following_year.group(1)) if following_year else None
    return DateValue(month, year, day) if _valid(month, day) else None


def month_name_dates(text: str) -> dict[int, DateValue]:
    """The month names of ``text`` that are part of a date, keyed by the month word's start offset."""
    found: dict[int, DateValue] = {}
    for match in _MONTH_WORD.finditer(text):
        value = _month_date(text, match)
        if value is not None:
            found[match.start()] = value
    return found


def numeric_date(token: str) -> DateValue | None:
    """The date a year-first numeric token spells (``2026-08-19``, ``2026/8/9``, ``2026-08``), else None."""
    match = _NUMERIC_DATE.fullmatch(token)
    return _numeric_value(match) if match else None


def _numeric_value(match: re.Match[str]) -> DateValue | None:
    month = int(match.group(3))
    day = int(match.group(4)) if match.group(4) else None
    return DateValue(month, int(match.group(1)), day) if _valid(month, day) else None


def dates_in(text: str) -> tuple[DateValue, ...]:
    """Every date ``text`` states, in either spelling: the candidates that can cover a required date."""
    values = list(month_name_dates(text).values())
    for match in _NUMERIC_DATE.finditer(text):
        value = _numeric_value(match)
        if value is not None:
            values.append(value)
    return tuple(values)


# --- types ---------------------------------------------------------------------------------------------


class SpecificKind(enum.Enum):
    NAME = "name"  # a capitalised word: proper noun, or a month in a date expression
    ACRONYM = "acronym"
    NUMBER = "number"


@dataclass(frozen=True, slots=True)
class Specific:
    """One detail a merge must keep: the exact source string, its kind, and the date it spells, if any."""

    text: str
    kind: SpecificKind
    date: DateValue | None = None


@dataclass(frozen=True, slots=True)
class Specifics:
    """The specifics of one text, in order of appearance, without duplicates."""

    items: tuple[Specific, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        """The distinct strings, in order of first appearance."""
        return tuple(dict.fromkeys(item.text for item in self.items))

    def __iter__(self) -> Iterator[Specific]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, text: object) -> bool:
        return any(item.text == text for item in self.items)


@dataclass(frozen=True, slots=True)
class CoverageSource:
    """A source entry of a merge (or a save-time candidate): its text and category."""

    text: str
    category: str | None = None


@dataclass(frozen=True, slots=True)
class CoverageResult:
    """``ok`` when every specific survived; ``missing`` holds the exact source strings that did not, in source
    order and deduplicated — what a repair prompt asks the model to put back."""

    ok: bool
    missing: tuple[str, ...] = ()


# --- extraction ----------------------------------------------------------------------------------------


def _is_abbreviation(text: str, dot: int) -> bool:
    start = dot
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    word = text[start:dot]
    # A single capital is an initial ("J. Smith"); both cases keep the following word mid-sentence.
    return word.lower() in _TITLE_ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _is_sentence_initial(text: str, start: int) -> bool:
    i = start - 1
    while i >= 0 and text[i] in _OPENERS:
        i -= 1
    if i < 0:
        return True
    if text[i] not in _SENTENCE_ENDS:
        return False
    return text[i] != "." or not _is_abbreviation(text, i)


def _word_kind(word: str) -> SpecificKind | None:
    """NAME or ACRONYM for a word whose capitals can mark a specific; None for an ordinary-looking word."""
    if not any(c.isupper() for c in word):
        return None
    if any(c.islower() for c in word):
        return SpecificKind.NAME
    # Single capitals ("I", "A", an initial) are too short to carry a name on their own.
    return SpecificKind.ACRONYM if len(word) >= 2 else None


def _is_ordinary(
    word: str, *, grammatical: bool, dated: bool, vocabulary: Vocabulary, corpus_lowercase: frozenset[str]
) -> bool:
    """Whether a capitalised ``word`` is ordinary language; the precedence order of the module docstring."""
    key = word.lower()
    if key in vocabulary.always_specific_words:
        return False
    if key in vocabulary.extra_common_words:
        return True
    if dated:
        return False
    if key in corpus_lowercase:
        return True
    return grammatical and key in BASELINE_COMMON_WORDS


def _word_specifics(
    text: str, vocabulary: Vocabulary, corpus_lowercase: frozenset[str]
) -> Iterator[tuple[int, Specific]]:
    dates = month_name_dates(text)
    for match in _WORD.finditer(text):
        word = match.group(0)
        kind = _word_kind(word)
        if kind is None:
            continue
        date = dates.get(match.start())
        # Only a title-case word can owe its capital to grammar; "MVP" or "iPhone" opening a sentence cannot.
        grammatical = word[0].isupper() and kind is SpecificKind.NAME and _is_sentence_initial(text, match.start())
        if not _is_ordinary(
            word, grammatical=grammatical, dated=date is not None, vocabulary=vocabulary,
            corpus_lowercase=corpus_lowercase,
        ):  # fmt: skip
            yield match.start(), Specific(word, kind, date)


def _number_specifics(text: str) -> Iterator[tuple[int, Specific]]:
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        if sum(c.isdigit() for c in token) >= 2:
            yield match.start(), Specific(token, SpecificKind.NUMBER, numeric_date(token))


def specifics(
    text: str,
    *,
    category: str | None,
    vocabulary: Vocabulary,
    corpus_lowercase: frozenset[str] = frozenset(),
) -> Specifics:
    """The proper nouns, acronyms and multi-digit numbers of ``text`` that a merge must keep.

    ``corpus_lowercase`` is the corpus evidence (``lowercase_words`` of every source of the merge): a word
    it holds is ordinary wherever capitalised. Numbers are skipped when ``category`` is numeric-exempt.
    """
    found = list(_word_specifics(text, vocabulary, corpus_lowercase))
    if not vocabulary.is_numeric_exempt(category):
        found.extend(_number_specifics(text))
    found.sort(key=lambda pair: pair[0])
    unique = dict.fromkeys(specific for _, specific in found)
    return Specifics(tuple(unique))


def _is_glued(text: str, start: int, end: int) -> bool:
    before = start >= 2 and text[start - 1] in _JOINERS and text[start - 2].isalnum()
    after = end + 1 < len(text) and text[end] in _JOINERS and text[end + 1].isalnum()
    return before or after


def lowercase_words(texts: Iterable[str]) -> frozenset[str]:
    """Corpus evidence: the words ``texts`` write entirely in lower case as prose.

    A word glued into an identifier, address, path or slug ("lhotka.net", "marimer-work", "user_id") is not
    prose, so it is no evidence that the capitalised form elsewhere is an ordinary word.
    """
    words: set[str] = set()
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group(0)
            if not any(c.isupper() for c in word) and not _is_glued(text, match.start(), match.end()):
                words.add(word)
    return frozenset(words)


# --- survival ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _MergedText:
    words: frozenset[str]
    numbers: frozenset[str]
    dates: tuple[DateValue, ...]

    @classmethod
    def of(cls, text: str) -> _MergedText:
        numbers: set[str] = set()
        for match in _NUMBER.finditer(text):
            token = match.group(0)
            numbers.add(token)
            # "2026" survives in "2026-04-15"; "10" does not in "10.5" (a different value).
            numbers.update(_NUMBER_COMPONENT_SEPARATORS.split(token))
        return cls(frozenset(_WORD.findall(text)), frozenset(numbers), dates_in(text))

    def covers(self, specific: Specific) -> bool:
        pool = self.numbers if specific.kind is SpecificKind.NUMBER else self.words
        if specific.text in pool:
            return True
        required = specific.date
        return required is not None and any(required.covered_by(candidate) for candidate in self.dates)


def check_coverage(
    sources: Sequence[CoverageSource], merged: str, *, vocabulary: Vocabulary = DEFAULT_VOCABULARY
) -> CoverageResult:
    """Whether ``merged`` keeps every specific of every source.

    For save-time deduplication pass the candidate as the only source and the existing entry as ``merged``:
    ``ok`` means the existing entry already carries every specific the candidate does.
    """
    corpus = lowercase_words(source.text for source in sources)
    target = _MergedText.of(merged)
    missing: dict[str, None] = {}
    for source in sources:
        found = specifics(source.text, category=source.category, vocabulary=vocabulary, corpus_lowercase=corpus)
        for specific in found:
            if not target.covers(specific):
                missing.setdefault(specific.text, None)
    return CoverageResult(ok=not missing, missing=tuple(missing))
