"""The merge coverage vocabulary (seed 001): which capitalised words are ordinary language, per deployment.

Three lists shape the coverage check (``core.coverage``), and they are scoped differently on purpose:

- ``BASELINE_COMMON_WORDS`` is generic English that no operator chose. It applies only to a *sentence-initial*
  capitalised word, where capitalisation is grammatical; mid-sentence a capitalised word is evidence of a name
  ("OneDrive Personal", "Blazor Online Class", a character called May), so the baseline stays out of the way.
- ``extra_common_words`` is an operator's explicit, corpus-specific judgement, so it applies in every position.
- ``always_specific_words`` wins over both, and over corpus evidence: the escape hatch for names that collide
  with ordinary English.

Numeric exemption is a third, separate axis: ``numeric_exempt_categories`` names the categories whose numbers
are telemetry that moves every cycle. ``anti-patterns/routing`` is built in and cannot be removed.

Invariants: word lists are held lower-cased (the comparison is case-insensitive); the built-in exempt category
is always present; ``load_vocabulary`` never raises and never disables checking — a missing file gives the
baseline, a malformed one gives the baseline and a warning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reverie.core.stance_vocabulary import (
    DEFAULT_STANCE_VOCABULARY,
    StanceVocabulary,
    read_vocabulary_file,
    string_list,
)

log = logging.getLogger("reverie.coverage")

ROUTING_EXEMPT_CATEGORY = "anti-patterns/routing"
VOCABULARY_FILE_NAME = "merge-coverage-vocabulary.json"

# Generic English a sentence may open with. Safe to extend because it only ever applies sentence-initially
# (seed 001); still, no word here should commonly be a person's or product's name — "may" and "will" are the
# seed's named exceptions, and alwaysSpecificWords exists to reclaim them.
_BASELINE_TEXT = """
    a an the this that these those each every either neither no some any all both few many much more most
    other another such same own several certain various
    i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
    one ones someone something somebody anyone anything anybody everyone everything everybody nobody nothing
    none who whom whose which what whatever whoever whichever
    and or but nor so yet for because since although though while whereas unless until if when whenever
    where wherever whether once then than as otherwise therefore thus hence however instead meanwhile
    about above across after against along among around at before behind below beneath beside besides
    between beyond by despite down during except from in inside into like near of off on onto out outside
    over past per regarding through throughout to toward towards under underneath unlike up upon via with
    within without
    be is are was were been being am have has had having do does did done doing get gets got
    can could may might must shall should will would need needs ought
    also always never often sometimes usually rarely seldom now today tomorrow yesterday here there
    still already again just only even ever yes not perhaps maybe probably possibly likely unlikely
    certainly clearly generally typically currently recently previously later earlier soon finally
    first second third last next new old previous prior former latter initially additionally furthermore
    moreover overall similarly likewise alternatively alternative accordingly consequently specifically
    especially particularly notably importantly ideally apparently actually basically essentially
    valid invalid direct indirect default current recent important main key general common basic simple
    full partial different other available possible necessary optional required
    use uses used using prefer prefers preferred avoid avoids check checks checked checking ensure
    make makes making keep keeps keeping add adds added adding set sets setting run runs running
    try tries tried trying call calls called calling ask asks asked tell tells told note noted
    see read write send sends sent include includes included including consider remember confirm
    confirmed verify verified require requires allow allows allowed flagged validated candidate
    user users agent agents assistant task tasks item items entry entries example examples result
    results step steps memory memories
    please thanks okay ok
    two three four five six seven eight nine ten
"""
BASELINE_COMMON_WORDS: frozenset[str] = frozenset(_BASELINE_TEXT.split())


def _lowered(words: Iterable[str]) -> frozenset[str]:
    return frozenset(w.strip().lower() for w in words if w.strip())


def _normalised_categories(categories: Iterable[str]) -> tuple[str, ...]:
    # The built-in exemption comes first and cannot be removed: routing averages are recomputed from
    # telemetry every cycle, so demanding them verbatim would reject the same cluster forever (seed 001).
    ordered: dict[str, None] = {ROUTING_EXEMPT_CATEGORY: None}
    for category in categories:
        cleaned = category.strip().strip("/")
        if cleaned:
            ordered.setdefault(cleaned, None)
    return tuple(ordered)


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """A deployment's coverage vocabulary. Words are compared case-insensitively (held lower-cased)."""

    extra_common_words: frozenset[str] = frozenset()
    always_specific_words: frozenset[str] = frozenset()
    numeric_exempt_categories: tuple[str, ...] = (ROUTING_EXEMPT_CATEGORY,)
    # The stance words (core.stance), read from their own file (stance-vocabulary.json) and carried here so
    # every check that asks "do these texts say the same thing" has them with the coverage lists.
    stance: StanceVocabulary = DEFAULT_STANCE_VOCABULARY

    def __post_init__(self) -> None:
        # Normalised here rather than trusted from callers, so every construction path keeps the invariants.
        object.__setattr__(self, "extra_common_words", _lowered(self.extra_common_words))
        object.__setattr__(self, "always_specific_words", _lowered(self.always_specific_words))
        object.__setattr__(self, "numeric_exempt_categories", _normalised_categories(self.numeric_exempt_categories))

    def is_numeric_exempt(self, category: str | None) -> bool:
        """Whether numbers in an entry of ``category`` need not survive a merge."""
        if category is None:
            return False
        return any(category_matches(category, pattern) for pattern in self.numeric_exempt_categories)


DEFAULT_VOCABULARY = Vocabulary()


def category_matches(category: str, pattern: str) -> bool:
    """Segment-aware prefix match: ``anti-patterns/routing`` covers itself and ``anti-patterns/routing/high-tier``
    but not ``anti-patterns/routing-notes`` nor the parent ``anti-patterns``."""
    pattern = pattern.strip("/")
    if not pattern:
        return False
    return category == pattern or category.startswith(pattern + "/")


_FIELDS = {
    "extraCommonWords": "extra_common_words",
    "alwaysSpecificWords": "always_specific_words",
    "numericExemptCategories": "numeric_exempt_categories",
}


class _MalformedVocabulary(ValueError):
    pass


def parse_vocabulary(text: str) -> Vocabulary:
    """The vocabulary a JSON document describes; raises ``ValueError`` when it is malformed.

    Every field is optional. An unknown key is ignored with a warning rather than failing the file: a typo
    must not also throw away the valid lists beside it (an ``alwaysSpecificWords`` list is a protection).
    """
    document = json.loads(text)
    if not isinstance(document, dict):
        raise _MalformedVocabulary("the document must be a JSON object")
    unknown = sorted(set(document) - set(_FIELDS))
    if unknown:
        log.warning("merge coverage vocabulary: ignoring unknown key(s) %s", ", ".join(unknown))
    return Vocabulary(
        extra_common_words=frozenset(string_list(document, "extraCommonWords")),
        always_specific_words=frozenset(string_list(document, "alwaysSpecificWords")),
        numeric_exempt_categories=tuple(string_list(document, "numericExemptCategories")),
    )


def load_vocabulary(path: Path | None) -> Vocabulary:
    """The vocabulary in ``path`` (``merge-coverage-vocabulary.json``); never raises.

    Missing file or no path: the baseline. Unreadable or malformed file: the baseline and a warning —
    coverage checking is never disabled by bad configuration (seed 001). Meant to be called at the top of
    every consolidation cycle, so edits take effect without a restart.
    """
    text = read_vocabulary_file(path, "merge coverage vocabulary", log)
    if text is None:
        return DEFAULT_VOCABULARY
    try:
        return parse_vocabulary(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError; absurd nesting recurses
        log.warning("merge coverage vocabulary %s is malformed (%s); using the built-in baseline", path, exc)
        return DEFAULT_VOCABULARY
