"""A correction said in other words: whether a text the save is about to store changes an older entry it would
not otherwise compare with.

The save compares a new text with close entries of its own top-level category (``core.dedup.decide``): a
restatement shares half its topic words. A correction often shares far fewer ("The team replaced Trello with
Linear" after "The team uses Trello for planning") or is saved under another category ("Actually, Lantern
stores schedules in PostgreSQL 17, not 16", saved without one, after the ``project-context/lantern`` entry).
Such a text still corrects the older one when

- it reads as changing it (``core.succession.changes``: it says a change the older text does not — "now",
  "moved", "cut", "replaced", "left", an opening "No," — they share ``MIN_OVERLAP`` of their topic words or it
  names the older one's value as replaced, and the stance check reads the difference) — or, where the stance
  check reads none and the later text is one sentence too, it puts a value of the same kind in the older one's
  place about the same subject ("The standup moved to 9:30" after "The team standup is at 10:00", "I moved to
  Bristol" after "I live in Leeds": ``core.slot``);
- it is about the same holder: every name the older text says before the value that changed is said again,
  and every first person ("I", "we") unless the later text names a holder of its own ("Leo swapped his
  Windows laptop for a MacBook" says nothing of "Hana uses a Windows laptop"; "I traded in the Civic for a
  Tesla" is about "I drive a Honda Civic": "Honda" is part of the value). A difference with no value in the
  older text (a negation) keeps every name of it;
- both are short statements (at most ``MAX_WORDS`` words, no question), the older one a single sentence: a
  looser reading than the restatement lookup's is only safe on one fact ("Sure thing Nate! See you later!" and
  an extended entry of two facts are not one), and chat is full of "new" and "now";
- a change that is not a replaced value (a negation, an antonym, a moved time) is about the same thing as the
  save asks of a restatement (``core.stance.same_topic``): only the category is looser for it — unless a number
  of the older text is replaced by one of the newer ("The offsite budget was cut to £3,500" after "The budget
  for the offsite is £5,000": the tense read as a moved time, the amount a value).

Invariants: pure and deterministic; only ever a changed belief, never a restatement (nothing read here folds
or merges two texts); a text that says no change corrects nothing.
"""

from __future__ import annotations

import re
from collections import Counter

from reverie.core.coverage import SpecificKind, Vocabulary, lowercase_words, specifics
from reverie.core.slot import replaced_slot
from reverie.core.stance import StanceDifference, same_topic
from reverie.core.succession import changes
from reverie.core.text import STOPWORDS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words from which a text is a turn or a paragraph rather than one statement (the longest hand-written
# correction of the bench has 11; chat turns that read as corrections at this looseness ran to 58).
MAX_WORDS = 30
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")
# The first persons a statement may be held by: "my car" and "I sold the Focus" are one holder's.
_PERSONS = (frozenset({"i", "me", "my", "mine"}), frozenset({"we", "us", "our", "ours"}))


def corrects(older: str, newer: str, *, category: str | None, vocabulary: Vocabulary) -> StanceDifference | None:
    """How ``newer`` (said later, saved in ``category``) corrects the older entry text ``older`` (see the
    module), or None when it does not."""
    if not (_statement(older, single=True) and _statement(newer)):
        return None
    difference = changes(older, newer, vocabulary.stance)
    if difference is not None and difference.kind != "value":
        # A number replaced is the value changed, whatever else the stance check read first (a tense).
        quantity = _quantity(older, newer)
        difference = quantity or (difference if same_topic(older, newer, vocabulary.stance) else None)
    if difference is None and _statement(newer, single=True):  # looser still: one sentence each
        difference = replaced_slot(older, newer, vocabulary)
    if difference is None or not same_holder(older, newer, difference, category=category, vocabulary=vocabulary):
        return None
    return difference


def _quantity(older: str, newer: str) -> StanceDifference | None:
    """A number of ``older`` replaced by a number of ``newer`` ("… is £5,000" → "… was cut to £3,500"): a
    value, although the stance check read the pair first as a moved time (a tense) or a negation."""
    before, after = Counter(_NUMBER.findall(older)), Counter(_NUMBER.findall(newer))
    gone, new = before - after, after - before
    if not gone or not new:
        return None
    return StanceDifference("value", tuple(gone), tuple(new))


def _statement(text: str, *, single: bool = False) -> bool:
    """A short statement: at most ``MAX_WORDS`` words and no question in it; ``single``: one sentence (not two,
    nor two paragraphs of an extended entry)."""
    if "?" in text or len(_WORD.findall(text)) > MAX_WORDS:
        return False
    return not (single and (_SENTENCE_BREAK.search(text.strip()) or "\n\n" in text.strip()))


def same_holder(
    older: str, newer: str, difference: StanceDifference, *, category: str | None, vocabulary: Vocabulary
) -> bool:
    """Whether ``newer`` is about the holder of ``older``'s statement: each says the names the other says
    before its side of the value ``difference`` replaces (all of a side's names when it names no value: a
    negation), compared without case ("Kwame sold the noisy fence … with Omar" is Kwame's, not "Omar cooked
    … near the noisy bicycle"), and ``newer`` says every first person of ``older`` unless it names a holder
    of its own ("The office moved …" after "Our office is …" is ours; "Sam's studio moved …" is not). A name
    run that ends at the value ("Honda Civic", "Ford Focus") is the value's."""
    corpus = lowercase_words([older, newer])
    persons, names = _holders(older, set(difference.first), category, vocabulary, corpus)
    said = {w.lower() for w in _WORD.findall(newer)}
    own_persons, own_names = _holders(newer, set(difference.second), category, vocabulary, corpus)
    held = {w.lower() for w in _WORD.findall(older)}
    if any(not name <= said for name in names) or any(not name <= held for name in own_names):
        return False  # a name of either side's holder missing from the other: someone else's statement
    return all(group & said for group in persons) or not own_persons - persons


def _holders(
    text: str, value: set[str], category: str | None, vocabulary: Vocabulary, corpus: frozenset[str]
) -> tuple[set[frozenset[str]], list[frozenset[str]]]:
    """The first persons (as ``_PERSONS`` groups) and the names (each as its lower-cased words) ``text`` says
    before the first of the ``value`` words, or in all of it when it says none of them."""
    words = list(_WORD.finditer(text))
    lowered = [w.group(0).lower() for w in words]
    end = next((i for i, w in enumerate(lowered) if w in value), len(words))
    while 0 < end < len(words) and words[end - 1].group(0)[:1].isupper() and lowered[end - 1] not in STOPWORDS:
        end -= 1  # "a blue Ford Focus": "Ford" belongs to the value ("Our" opening the text does not)
    before = set(lowered[:end])
    persons = {group for group in _PERSONS if group & before}
    cut = words[end].start() if end < len(words) else len(text)
    stance = vocabulary.stance
    # "Turns" of "Turns out I'm not …" is capitalised as a text's first word, and an aside, not a holder.
    asides = {w for phrase in stance.fillers | stance.change_markers for w in phrase.split()}
    names = [
        frozenset(w.lower() for w in _WORD.findall(specific.text))
        for specific in specifics(text[:cut], category=category, vocabulary=vocabulary, corpus_lowercase=corpus).items
        if specific.kind is not SpecificKind.NUMBER and specific.date is None
    ]
    return persons, [name for name in names if not name <= asides]
