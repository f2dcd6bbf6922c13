"""A replaced slot: a correction that puts a new value of the same kind in place of an older text's value while
saying the statement in other words.

The stance check reads a replaced value where the two texts say the same frame word for word around it ("Maya
lives in Lisbon" → "Maya lives in Porto now"). People correct in other words: "The team standup is at 10:00"
→ "The standup moved to 9:30", "I live in Leeds" → "I moved to Bristol last month", "Our landlord is Mr Patel"
→ "We have a new landlord, Mrs Okafor", "Ravi's manager is Claire" → "Ravi reports to Tom now". What they
keep is the kind of the value (an e-mail or web address, a date, a time of day, a weekday, an amount — in
figures, or two to twelve in words — a name) and the thing the statement is about. ``replaced_slot`` reads a
pair as a replaced value when

- the later text says a change the older does not (``core.stance.change_words``: "moved", "now", "new",
  "renamed", "slipped");
- one value kind (``KINDS``) has a value of the older text the later one does not say (one value or one name
  run: "I live in Leeds with my partner Sam" holds two), and values of the later text the older one does not
  say; no other kind has both (two values replaced are another statement: "Felix relocated to Denver on 23
  October" → "Felix moved to Quito on 27 October"). The older value comes after the subject (below), or is an
  amount of it ("two" of "We have two cats"). Names are read only where both texts write them with
  capitals; where one does not (all lower case, all capitals), the later text must say every other topic word
  of the older;
- the later text says the older one's subject: one of the older text's first two topic words that are not
  values or names ("standup" of "team standup", "landlord", "cat"), or a word of the same relation
  (``StanceVocabulary.relations``: "moved" for "live", "reports" for "manager");
- before that word, the later text says nothing of its own: every topic word it says first is the older
  text's, a change word, a value or a name of the older text ("Tom moved to Glasgow") — unless it opens with who
  acts, a personal pronoun or a name of the older text not followed by a possessive ("We now send the
  newsletter on Fridays", "Priya got a new number": its verb may differ). "The podcast now goes out
  on Fridays" is not about "The newsletter goes out on Thursdays", nor "Maya's sister now leaves on May 5"
  about "Maya leaves on May 3";
- it says every noun of the older statement before its value (a word after a determiner or a possessive),
  or a word of its relation — the first may be left out when the next is said word for word ("team standup" →
  "standup"; not "My sister lives in Cardiff" → "I moved to Bristol", where "lives" is said as "moved"):
  "The budget for the party was cut to £300" is not about "The budget for the offsite is £5,000", while a
  verb said in other words is no other thing ("rehearses" → "practice");
- what the later text names as replaced ("from Kyoto", "instead of the 7:40", "not Tuesday"), if anything, is
  said by the older text: "Ravi moved from Kyoto to Dublin" does not correct "Ravi lives in Oslo".

Who holds the statement is checked by the caller (``core.correction.same_holder``), as for every correction.

Invariants: pure and deterministic; only a pair whose later text says a change is ever read; the difference's
``first`` words are the older text's replaced values, its ``second`` the later text's and its change words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reverie.core.coverage import SpecificKind, Vocabulary, lowercase_words, specifics
from reverie.core.stance import StanceDifference, change_words, relation_topics, topic_tokens, topic_words
from reverie.core.text import ADDRESS, STOPWORDS

# Month names in any case but "may" and "march" (a modal, a verb), which must be capitalised.
_MONTHS = "(?i:january|february|april|june|july|august|september|october|november|december)|May|MAY|March|MARCH"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+\d{4}\b)?"
# One pattern, so a value is read as one kind only: "30 June" is a date, not the amount 30.
_TYPED = re.compile(
    rf"(?P<address>{ADDRESS.pattern})|"
    rf"(?P<date>\b{_DAY}\s+(?:of\s+)?(?:{_MONTHS})\b{_YEAR}|\b(?:{_MONTHS})(?:\s+{_DAY}\b)?{_YEAR})"
    r"|(?P<clock>\b\d{1,2}[:.]\d{2}(?:\s*(?i:[ap]m)\b)?|\b\d{1,2}\s*(?i:[ap]m)\b)"
    r"|(?P<weekday>\b(?i:mon|tues|wednes|thurs|fri|satur|sun)day)s?\b"
    r"|(?P<amount>[£$€]?\d+(?:[.,]\d+)*|\b(?i:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b)"
)
KINDS = ("address", "date", "clock", "weekday", "amount", "name")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_POSSESSIVE = re.compile(r"(?<=[^\W_])['’]s(?![^\W_])")
# A word after one of these is a noun ("s": the possessive of "cat's name").
_DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "his", "her", "their", "its", "s"}
)
# Opening a text, these say who acts, so the verb after them may differ from the older text's ("you" is the
# one spoken to, not the holder).
_PRONOUNS = frozenset({"i", "we", "they", "he", "she"})


def replaced_slot(older: str, newer: str, vocabulary: Vocabulary) -> StanceDifference | None:
    """How ``newer`` puts a value of ``older``'s kind in place of its value, about the same subject (see the
    module), or None."""
    marked = change_words(newer, vocabulary.stance) - change_words(older, vocabulary.stance)
    if not marked:
        return None
    corpus = lowercase_words([older, newer])
    old, new = _values(older, vocabulary, corpus), _values(newer, vocabulary, corpus)
    older_said, newer_said = _normal(older), _normal(newer)
    opens = _subject_at(older, old, vocabulary)
    if opens is None or any(not _says(newer_said, v) for at, v in old.get("name", []) if at < opens):
        return None  # a name holding the older statement ("Ravi" of "Ravi's manager") the later text never says
    cased = _cased(older) and _cased(newer)
    subject = _WORD.match(older.lower(), opens)
    changed = []
    for kind in KINDS if cased else KINDS[:-1]:
        went = [
            (at, v)
            for at, v in old.get(kind, [])
            if (at > opens or _counts(older, kind, v, subject)) and not _says(newer_said, v)
        ]
        added = [v for _, v in new.get(kind, []) if not _says(older_said, v)]
        if went and added:
            changed.append((kind, went, added))
    if len(changed) != 1:
        return None  # no value replaced, or two: another statement ("… to Denver on 23 October" → "… to Quito on 27")
    kind, went, added = changed[0]
    gone = [v for _, v in went]
    if not _one(older, went) or (kind == "amount" and not _same_unit(older, newer, gone, added)):
        return None
    if _names_another(older_said, newer, vocabulary) or not _subject_said(older, newer, old, new, vocabulary):
        return None
    if not _nouns_kept(older, newer, old, set(_words(gone)), vocabulary):
        return None
    if not cased and not _frame_kept(older, newer, set(_words(gone)), vocabulary):
        return None
    return StanceDifference("value", tuple(_words(gone)), tuple(dict.fromkeys([*_words(added), *sorted(marked)])))


def _values(text: str, vocabulary: Vocabulary, corpus: frozenset[str]) -> dict[str, list[tuple[int, str]]]:
    """``text``'s values by kind, each with where it starts, lower-cased, in the order said; a name is one
    word of a proper noun that is not a month or a weekday."""
    found: dict[str, list[tuple[int, str]]] = {}
    typed: set[str] = set()
    for match in _TYPED.finditer(text):
        kind = match.lastgroup or "amount"
        value = " ".join(match.group(0).lower().split())
        found.setdefault(kind, []).append((match.start(), value))
        typed.update(_WORD.findall(value))
    names = {
        word
        for specific in specifics(text, category=None, vocabulary=vocabulary, corpus_lowercase=corpus).items
        if specific.kind is not SpecificKind.NUMBER and specific.date is None
        for word in _WORD.findall(specific.text)
    }
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word in names and word.lower() not in typed:
            found.setdefault("name", []).append((match.start(), word.lower()))
    return found


def _cased(text: str) -> bool:
    """Whether ``text`` writes names as names: it has upper- and lower-case letters (an all-lower-case or
    all-capitals text does not show which words are names)."""
    return any(c.isupper() for c in text) and any(c.islower() for c in text)


def _frame_kept(older: str, newer: str, gone: set[str], vocabulary: Vocabulary) -> bool:
    """Whether ``newer`` says every topic word of ``older`` but its replaced value (a word of the same relation
    will do): where names cannot be read, the place "nairobi" of "zara relocated to nairobi … on august 4"
    could be a second value replaced."""
    relation = vocabulary.stance.relation_of
    words = {relation.get(t, key) for t, key in topic_tokens(older, vocabulary.stance) if t not in gone}
    return words <= relation_topics(newer, vocabulary.stance)


def _one(older: str, went: list[tuple[int, str]]) -> bool:
    """Whether the values ``older`` loses are one value: a single one, or the words of one name run ("Mr
    Patel"). "I live in Leeds with my partner Sam" holds two; "I moved to Bristol" corrects one of them only,
    and superseding the entry would hide the other."""
    return all(not _WORD.search(older[a + len(v) : b]) for (a, v), (b, _) in zip(went, went[1:], strict=False))


def _same_unit(older: str, newer: str, gone: list[str], added: list[str]) -> bool:
    """Whether the amounts replaced count the same thing: the word after them agrees where both say one
    ("£35 a month" → "£42"; not "a 40-minute outage" → "21 days before expiry")."""
    units = [{u for u in (_unit(text, v) for v in values) if u} for text, values in ((older, gone), (newer, added))]
    return not units[0] or not units[1] or bool(units[0] & units[1])


def _counts(older: str, kind: str, value: str, subject: re.Match[str] | None) -> bool:
    """Whether ``value``, said before the subject, is an amount of it ("two cats" of "We have two cats")."""
    return kind == "amount" and subject is not None and _unit(older, value) == subject.group(0).removesuffix("s")


def _unit(text: str, value: str) -> str | None:
    """The first word after ``value`` in ``text`` that is no function word, in the singular, or None."""
    at = text.lower().find(value)
    after = (w for w in _WORD.findall(text.lower()[at + len(value) :]) if w not in STOPWORDS and w != "per")
    word = next(after, None) if at >= 0 else None
    return None if word is None else word.removesuffix("s")


def _subject_at(older: str, old: dict[str, list[tuple[int, str]]], vocabulary: Vocabulary) -> int | None:
    """Where ``older``'s first topic word that is no value or name starts (its subject), or None."""
    values = _value_words(old)
    for token, _ in topic_tokens(older, vocabulary.stance):
        if token not in values and _content(token):
            found = re.search(rf"(?<![^\W_]){re.escape(token)}(?![^\W_])", older.lower())
            return None if found is None else found.start()
    return None


def _subject_said(
    older: str,
    newer: str,
    old: dict[str, list[tuple[int, str]]],
    new: dict[str, list[tuple[int, str]]],
    vocabulary: Vocabulary,
) -> bool:
    """Whether ``newer`` says ``older``'s subject with nothing of its own before it (see the module)."""
    stance = vocabulary.stance
    relation = stance.relation_of
    old_values = _value_words(old)
    typed = _value_words({kind: vs for kind, vs in new.items() if kind != "name"})
    frame = [relation.get(t, key) for t, key in topic_tokens(older, stance) if t not in old_values and _content(t)]
    subject = set(frame[:2])
    known = relation_topics(older, stance) | old_values
    first = _WORD.search(newer)
    free = first is not None and _acts(newer, first, old)
    marked = change_words(newer, stance)
    if _possesses_another(newer, known, marked, vocabulary):
        return False
    for token, key in topic_tokens(newer, stance):
        topic = relation.get(token, key)
        if topic in subject:
            return True
        if not (free or not _content(token) or token in marked or token in typed or topic in known):
            return False  # a word of its own before the subject: another thing ("podcast", "sister")
    return False


def _nouns_kept(
    older: str, newer: str, old: dict[str, list[tuple[int, str]]], gone: set[str], vocabulary: Vocabulary
) -> bool:
    """Whether ``newer`` says every noun of ``older``'s statement before its replaced value — a word after a
    determiner or a possessive ("the offsite", "cat's name") — or a word of its relation; the first may be left
    out when the next is said word for word ("team standup" → "standup"). "The budget for the party was cut to
    £300" is not about "The budget for the offsite is £5,000"; a verb said in other words is no other thing
    ("rehearses" → "practice")."""
    stance = vocabulary.stance
    relation = stance.relation_of
    keys = dict(topic_tokens(older, stance))
    values = _value_words(old)
    said = relation_topics(newer, stance)
    words = _WORD.findall(older.lower())
    literal = topic_words(newer, stance)
    frame: list[tuple[str, str, bool]] = []  # each frame word's topic, its relation, and whether it is a noun
    for index, word in enumerate(words):
        if word in gone:
            break
        if word in keys and word not in values and _content(word):
            noun = index > 0 and words[index - 1] in _DETERMINERS
            frame.append((keys[word], relation.get(word, keys[word]), noun))
    for index, (_, topic, noun) in enumerate(frame):
        # The head of a compound said again word for word ("standup" of "team standup"): "lives" said as
        # "moved" does not stand for "sister" of "My sister lives in Cardiff".
        head = index == 0 and len(frame) > 1 and frame[1][0] in literal
        if noun and topic not in said and not head:
            return False
    return True


def _possesses_another(newer: str, known: frozenset[str], marked: frozenset[str], vocabulary: Vocabulary) -> bool:
    """Whether ``newer`` says something possessed the older text does not ("The user's brother moved to Paris"
    is the brother's, not about "The user lives in Lyon"; "Kenji's new manager" is the manager ``known``)."""
    stance = vocabulary.stance
    for possessive in _POSSESSIVE.finditer(newer):
        after = topic_tokens(newer[possessive.end() :], stance)
        owned = next((stance.relation_of.get(t, key) for t, key in after if t not in marked and _content(t)), None)
        if owned is not None and owned not in known:
            return True
    return False


def _acts(newer: str, first: re.Match[str], old: dict[str, list[tuple[int, str]]]) -> bool:
    """Whether ``newer`` opens with who acts: a personal pronoun, or a name the older text says not followed
    by a possessive ("Priya got a new number", not "Maya's sister")."""
    word = first.group(0).lower()
    if word in _PRONOUNS:
        return True
    names = {v for _, v in old.get("name", [])}
    return word in names and not newer[first.end() :].startswith(("'s", "’s"))


def _names_another(older_said: str, newer: str, vocabulary: Vocabulary) -> bool:
    """Whether ``newer`` names what it replaces ("from", "instead of", "not") and that is something ``older``
    does not say: "Ravi moved from Kyoto to Dublin" is no correction of "Ravi lives in Oslo"."""
    stance = vocabulary.stance
    markers = stance.replacements | stance.retractions
    words = _WORD.findall(newer.lower())
    for index, word in enumerate(words):
        if word in markers or (index and f"{words[index - 1]} {word}" in markers):
            named = next((w for w in words[index + 1 :] if w not in STOPWORDS), None)
            if named is not None and not _says(older_said, named):
                return True
    return False


def _content(token: str) -> bool:
    return len(token) > 1 and not token.isdigit()


def _normal(text: str) -> str:
    return f" {' '.join(_WORD.findall(text.lower()))} "


def _says(said: str, value: str) -> bool:
    """Whether the normalised text ``said`` says ``value``, in the singular or the plural ("Monday",
    "Mondays")."""
    words = " ".join(_WORD.findall(value)).removesuffix("s")
    return f" {words} " in said or f" {words}s " in said


def _value_words(values: dict[str, list[tuple[int, str]]]) -> set[str]:
    """Every word of the values ``_values`` read, of any kind."""
    return set(_words(v for said in values.values() for _, v in said))


def _words(values: Iterable[str]) -> list[str]:
    return [w for value in values for w in _WORD.findall(value)]
