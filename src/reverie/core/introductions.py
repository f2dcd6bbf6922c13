"""Introductions: a memory that says who or what a name is, and queries that describe instead of naming. Pure.

People introduce the people and things in their lives once ("Leo is Dan's son", "Harbor is Northwind's payments
platform", "Ruth's ward manager is Deepa Shah", "My sister Anna lives in Leeds") and from then on ask by
description: "son's drug allergy", "when does the payments platform deploy?", "what does my sister do?". The
fact that answers names Leo, Harbor or Anna and shares few words and little meaning with the description, while
the introduction shares the description's words and so ranks first. Recall (``recall.hybrid``) reads the
introductions among a query's best hits and asks again with the name in place of the description.

Invariants:
- ``read_introduction`` is English and syntactic: a name (capitalised words) and a definite description (an
  owner — "my", "our", "the", "Dan's", "the family's" — and the words up to the first clause word or mark) in
  one of three shapes: "<Name> is <description>", "<description> is <Name>", "<description> <Name> …"
  (an opening appositive, with or without commas: "Ruth's mother Grace lives in Leicester", "Our youngest,
  Noor, is six"). A description with an indefinite article ("Ruth is a nurse") says what someone is, not who:
  no introduction. A title is not the name later memories use ("Dr Kapoor" is "Kapoor").
- ``described`` matches words lower-cased with a plural's "s" dropped, not stemmed ("platforms" meets
  "platform", "production" does not meet "product"); the owner's words never count ("Dan's son" is described
  by "son", not by "Dan"); the head noun must be among them ("Dan's favourite drink" does not describe "Dan's
  favourite cuisine"); a few family and work roles meet their everyday words ("mum" for "mother", "boss" for
  "manager"); a query about someone else's ("Marco's favourite band") describes nothing of Dan's.
- ``asks_what`` reads a question for what a name is ("what is Quill?", "what does Aiko do?"), which the
  name's introduction answers.
- ``rewritten`` replaces the query words that matched the description with the name's first word, once, and
  drops the owner's possessive and a determiner before them; the rest of the query is kept in order, so its
  other words still rank the answer.
- ``owned``: the query names the introduction's owner ("Dan's", or "my"/"our" for a description opening with
  them); recall reads such introductions further down a ranking. ``same_role`` gives a role word's other names
  (the lexical index reads a role word no entry holds as one of them); a wife is never a husband, a son never a
  daughter.
- Days and months are never introduced names ("Wednesday is Dan's no-meeting day").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reverie.core.text import FILLER, STOPWORDS, query_terms
from reverie.core.timeq import MONTHS, WEEKDAYS

_NAME = r"[A-Z][\w-]*(?: [A-Z][\w-]*){0,2}"
# The words that open a definite description ("my wife", "the customer mobile app", "our dentist").
_DETERMINING = ("the", "my", "our", "his", "her", "their")
_DETERMINER = "|".join(f"[{w[0].upper()}{w[0]}]{w[1:]}" for w in _DETERMINING)  # "[Tt]he|[Mm]y|…"
_OWNER = rf"(?:(?:{_DETERMINER}) (?:[\w-]+['’]s )?|[A-Z][\w-]*['’]s )"
_FORWARD = re.compile(rf"^(?P<name>{_NAME}) is (?:also )?(?P<desc>{_OWNER}[^.;:,()!?]+)")
_REVERSE = re.compile(
    rf"^(?P<desc>{_OWNER}[\w -]+?) is (?P<name>{_NAME})(?=[.,;:!?]|$| (?:and|who|at|in|on|from|of|with|since)\b)"
)
_APPOSITIVE = re.compile(rf"^(?P<desc>{_OWNER}(?:[a-z][\w-]* ){{0,2}}[a-z][\w-]*),? (?P<name>{_NAME})\b")
# Titles are not what later memories call someone: "Dr Kapoor" is asked after as "Kapoor".
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "prof", "professor", "sir", "dame", "auntie", "uncle"})
# A description ends at its first clause word: "the customer mobile app for iOS and Android" is "the customer
# mobile app".
_CLAUSE = re.compile(r" (?:and|but|who|which|that|where|when|since|for|from|with|in|on|at|to|of|as|by)\b")
_PIECES = re.compile(r"[^\W_]+|[\W_]+")
_ORPHAN_S = re.compile(r"(^|\s)['’]s\b")
_SPACES = re.compile(r"\s+")
# The words that introduce a description in a query: dropped with it when the name takes its place.
_INTRODUCING = frozenset({*_DETERMINING, "your"})
_WORD = re.compile(r"[^\W_]+")
_FIRST_PERSON = frozenset({"my", "our"})
_POSSESSOR = re.compile(r"\b([A-Z][\w-]*)['’]s\b")
# Days and months are when, not who: "Wednesday is Dan's no-meeting day" introduces nobody to ask after.
_NOT_NAMES = frozenset((*WEEKDAYS, *MONTHS))
# "What is Quill?", "who is Priya?", "what does Aiko do (for a living)?": a question for what a name is.
_ASKS_WHAT = re.compile(
    r"^\s*(?i:who|what)(?:\s+|['’])(?i:is|are|was|were|s|does|do|did)\s+(?P<name>[A-Z][\w-]*(?: [A-Z][\w-]*){0,2})"
    r"(?:\s+do(?:\s+for\s+(?:a\s+living|work))?)?\s*\??\s*$"
)
# A question asking who is answered by the introduction itself ("who looks after reliability for Lantern?").
_ASKS_WHO = re.compile(r"^\s*(?:who|whom)\b", re.IGNORECASE)


def _form(token: str) -> str:
    """A word as compared here: lower-cased, a plural's "s" dropped ("platforms" meets "platform"). Not
    stemmed: a stem meets too much ("production" would describe "the product manager")."""
    lowered = token.lower()
    return lowered[:-1] if len(lowered) > 3 and lowered.endswith("s") and not lowered.endswith("ss") else lowered


def _forms(text: str) -> list[str]:
    return [_form(t) for t in _WORD.findall(text)]


_DETERMINERS = frozenset(_form(w) for w in STOPWORDS | {"s"})
# Roles people name in more than one way; each group's words describe one another.
_ROLES = (
    ("mother", "mum", "mom", "mummy", "mommy", "ma"),
    ("father", "dad", "daddy", "pa"),
    ("grandmother", "grandma", "granny", "gran", "nan", "nana"),
    ("grandfather", "grandpa", "granddad", "grandad"),
    # A wife is not a husband: the two share only the neutral words (a query for "my husband" when the memory
    # says "wife" is about someone it does not know).
    ("wife", "spouse", "partner"),
    ("husband", "spouse", "partner"),
    ("son", "boy", "kid", "child"),
    ("daughter", "girl", "kid", "child"),
    ("brother", "sibling"),
    ("sister", "sibling"),
    ("manager", "boss"),
    ("doctor", "gp", "physician"),
    ("dog", "puppy", "pup"),
    ("cat", "kitten", "kitty"),
)
_SAME_ROLE: dict[str, frozenset[str]] = {
    role: frozenset(w for group in _ROLES if role in group for w in group) for group in _ROLES for role in group
}


def same_role(word: str) -> frozenset[str]:
    """The other everyday names of the family or work role ``word`` names ("dad": father, daddy, pa), empty for
    any other word; plurals as singulars ("kids" as "kid")."""
    form = _form(word)
    return _SAME_ROLE.get(form, frozenset()) - {form}


@dataclass(frozen=True, slots=True)
class Introduction:
    """``name`` as written ("Deepa Shah"); ``description`` the definite description ("Ruth's ward manager");
    ``owner`` the owner's words, lower-cased and singular ({"ruth"}: never evidence that a query describes the
    name)."""

    name: str
    description: str
    owner: frozenset[str]

    @property
    def first(self) -> str:
        """The word later memories call the name by: its first, after a title ("Kapoor" of "Dr Kapoor")."""
        words = self.name.split()
        return next((w for w in words if w.lower().rstrip(".") not in _TITLES), words[-1])

    @property
    def head(self) -> str:
        """The description's head noun, its last word ("app" of "the customer mobile app")."""
        return _forms(self.description)[-1]

    @property
    def words(self) -> frozenset[str]:
        """The description's own words as compared: neither owner nor determiner nor the name."""
        named = set(_forms(self.name))
        return frozenset(t for t in _forms(self.description) if t not in self.owner | _DETERMINERS | named)


def read_introduction(text: str) -> Introduction | None:
    """The introduction ``text`` opens with, or None (see the module docstring for the shapes read)."""
    head = text.strip()
    for pattern in (_FORWARD, _REVERSE, _APPOSITIVE):
        found = pattern.match(head)
        if found is None:
            continue
        description = _CLAUSE.split(found.group("desc"), maxsplit=1)[0].strip()
        if description.split()[-1].lower() in STOPWORDS:
            continue  # "Pepper's vet is Chorlton Vets" read as an appositive: a verb is no role
        owner = re.match(rf"(?:(?:{_DETERMINER}) )?([\w-]+)['’]s ", description)
        introduction = Introduction(
            name=found.group("name"),
            description=description,
            owner=frozenset(_forms(owner.group(1))) if owner else frozenset(),
        )
        if introduction.words and _form(introduction.first) not in _NOT_NAMES:
            return introduction
    return None


def names_in(query: str, introduction: Introduction) -> bool:
    """Whether ``query`` (or any text) names the introduced name; its first word after a title will do: "Deepa"
    for "Deepa Shah", "Kapoor" for "Dr Kapoor"."""
    return _form(introduction.first) in set(_forms(query))


def described(query: str, introduction: Introduction) -> frozenset[str]:
    """The words of ``query`` (as compared here) that describe ``introduction``: its description's words or
    their roles' other names, the head noun among them ("Dan's favourite drink" does not describe "Dan's
    favourite cuisine"). Empty when the query does not describe it, already names it, or is about someone
    else's ("Marco's favourite band" does not describe "Dan's favourite band")."""
    if names_in(query, introduction):
        return frozenset()
    owners = {_form(m) for m in _POSSESSOR.findall(query)}
    if owners - introduction.owner:
        return frozenset()
    own = introduction.words
    wanted = set(own).union(*(_SAME_ROLE.get(w, frozenset()) for w in own))
    found = frozenset(t for t in _forms(query) if t in wanted)
    head = introduction.head
    return found if head in found or found & _SAME_ROLE.get(head, frozenset()) else frozenset()


def possessors(query: str) -> frozenset[str]:
    """Whose things ``query`` asks about, as compared here: capitalised possessives ("Dan's") and "my"/"our"."""
    return frozenset(_form(m) for m in _POSSESSOR.findall(query)) | (set(_forms(query)) & _FIRST_PERSON)


def owned(query: str, introduction: Introduction) -> bool:
    """Whether ``query`` names the introduction's owner as a possessor: "Dan's partner" for "Elena is Dan's
    wife", "my wife" for "My wife Layla" (my and our alike: "our dentist" is "my dentist" too). A query that
    owns what it describes is read further down a ranking than one that only shares the description's words."""
    named = possessors(query)
    if introduction.owner:
        return introduction.owner <= named
    return _forms(introduction.description)[0] in _FIRST_PERSON and bool(named & _FIRST_PERSON)


def covers(words: frozenset[str], introduction: Introduction) -> bool:
    """Whether ``words`` (what ``described`` found) say the whole description, each word or one of its role's
    other names: "my wife" for "My wife", "expenses app" for "our expenses app", not "app" alone for "the
    customer mobile app"."""
    return all(w in words or words & _SAME_ROLE.get(w, frozenset()) for w in introduction.words)


def asks_more(query: str, words: frozenset[str], introduction: Introduction) -> bool:
    """Whether ``query`` asks something beyond who the introduced name is: a word of topic is left once the
    description's words (``words``), its owner's and the name's are taken away ("son's drug allergy" asks
    more; "who is Dan's son?" asks for the introduction itself)."""
    if _ASKS_WHO.match(query):
        return False
    spent = words | introduction.owner | set(_forms(introduction.name))
    return any(_form(t) not in spent for t in query_terms(query) if t not in STOPWORDS and t not in FILLER)


def asks_what(query: str) -> str | None:
    """The name a question asks what or who it is ("what is Quill?" -> "Quill"), or None."""
    found = _ASKS_WHAT.match(query)
    return found.group("name") if found else None


def rewritten(query: str, words: frozenset[str], introduction: Introduction) -> str:
    """``query`` asked by name: its words among ``words`` become the name's first word, once; the owner's
    possessive and a determiner before them go ("Dan's son's drug allergy" for Leo becomes "Leo's drug
    allergy", "what is my wife allergic to?" "what is Layla allergic to?", "the reliability engineer's
    holiday" "Marco's holiday"). The first word alone, because later memories say "Helen" more often than
    "Helen Carter"."""
    name = introduction.first
    pieces = _PIECES.findall(query)
    out: list[str] = []
    for i, piece in enumerate(pieces):
        possessive = i + 2 < len(pieces) and pieces[i + 1] in ("'", "’") and pieces[i + 2].lower() == "s"
        following = next((p for p in pieces[i + 3 :] if p[0].isalnum()), "")
        # "Dan's" goes before the words it owns ("Dan's son" -> "Leo"), not before others ("Dan's mum").
        owner = possessive and _form(piece) in introduction.owner and _form(following) in words
        if not (piece[0].isalnum() and (_form(piece) in words or owner)):
            out.append(piece)
        elif _form(piece) in words:
            _drop_before_name(out, name)
            if name not in out:
                out.append(name)
    # An owner's "'s" left without its owner ("Dan's son" -> "'s Leo") goes too.
    return _SPACES.sub(" ", _ORPHAN_S.sub(r"\1", "".join(out))).strip()


def _drop_before_name(out: list[str], name: str) -> None:
    """Before a described word: a determiner that introduced it goes ("my wife" is "Layla", not "my Layla"), and
    so does the space after the name when the word continues the description ("reliability engineer's" is
    "Marco's")."""
    space = out.pop() if out and out[-1].isspace() else ""
    if out and out[-1] == name:
        return
    if out and out[-1].lower() in _INTRODUCING:
        out.pop()  # what preceded the determiner keeps its own separator
    elif space:
        out.append(space)
