"""The rule-based extractor of proactive memory (seed 004's auto_memorize without an LLM), pure.

It reads only the user's message (what the assistant says is not a fact about the user), sentence by
sentence, and recognises first-person statements of seven kinds, each rewritten in the third person:

- ``communication_style``: "please be brief", "don't use emojis", "answer in Portuguese", "call me Ana";
- ``preference``: "I prefer / like / love / enjoy / hate / can't stand …", "my favourite … is …";
- ``expertise``: "I'm a backend engineer", "I know Rust", "I'm experienced with Kubernetes";
- ``work_style``: "I usually / always / tend to work|code|write|test|deploy …";
- ``project_context``: "we're building …", "I'm migrating …", "our project uses …", "the deadline is …";
- ``personal_detail``: "my name is …", "I live in …", "I'm from …", "my daughter …", "I have two kids";
- ``frustration``: "this is frustrating", "I'm fed up", "it still doesn't work", "that's not what I asked".

Scope (``DEFAULT_KIND``): what describes the user (style, preferences, expertise, personal details, habits)
is user-level memory, shared by every agent of the user; ``project_context`` is the agent's (the work this
agent does); ``frustration`` is the session's (a mood, not a trait: it expires with the session TTL).

Invariants: questions (a sentence ending in "?") state nothing and are skipped, except for frustration;
a statement's object stops at the next clause about someone ("…, and I live in …"), so one sentence can
give several memories; every memory is at most ``MAX_CHARS`` characters; the same text is returned once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

from reverie.core.proactive import AGENT, SESSION, USER, Proposed

MAX_CHARS = 300
MAX_SENTENCES = 200  # of one message: a pasted document is not a conversation turn
DEFAULT_KIND = {
    "communication_style": USER,
    "preference": USER,
    "expertise": USER,
    "work_style": USER,
    "personal_detail": USER,
    "project_context": AGENT,
    "frustration": SESSION,
}
CONFIDENCE = {
    "personal_detail": 0.8,
    "communication_style": 0.7,
    "preference": 0.7,
    "expertise": 0.7,
    "work_style": 0.6,
    "project_context": 0.6,
    "frustration": 0.5,
}

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_CLAUSE_END = re.compile(
    r"\s*(?:,\s*)?\b(?:and|but|so|because|although|though|while|since|whereas)\s+"
    r"(?:I|I'm|I've|I'd|my|we|we're|our|you|you're|it|it's)\b|\s*[;:]\s|\s+-\s|\s+—\s"
)
_PRONOUNS = ((r"\bmyself\b", "themselves"), (r"\bmine\b", "theirs"), (r"\bmy\b", "their"), (r"\bme\b", "them"))
_EMPTY_OBJECTS = frozenset({"", "that", "this", "it", "them", "those", "these", "you", "so", "too", "to"})
_FLAGS = re.IGNORECASE
_I = r"\bI"  # "I" must be a word of its own
_IM = r"\bI(?:'m|’m| am)"

_PREFER_VERBS = {
    "prefer": "prefers",
    "like": "likes",
    "love": "loves",
    "enjoy": "enjoys",
    "hate": "hates",
    "dislike": "dislikes",
    "adore": "adores",
    "detest": "detests",
    "can't stand": "can't stand",
    "cannot stand": "cannot stand",
    "don't like": "doesn't like",
    "do not like": "does not like",
    "would rather": "would rather",
    "'d rather": "would rather",
    "avoid": "avoids",
}
_WORK_VERBS = "work|code|write|start|test|deploy|commit|review|debug|plan|program|pair|ship|document|meet|use|run"
_ROLES = (
    "engineer|developer|programmer|scientist|researcher|designer|analyst|architect|administrator|admin|doctor|"
    "nurse|teacher|professor|lawyer|student|expert|consultant|writer|manager|accountant|physicist|"
    "mathematician|founder|freelancer|tester|editor|journalist|translator|artist|musician"
)
_FAMILY = (
    "wife|husband|partner|girlfriend|boyfriend|daughter|son|kids|children|child|dog|cat|mother|mom|mum|father|"
    "dad|sister|brother|birthday|family|parents|grandmother|grandfather|baby"
)
_PROJECT_NOUNS = (
    "project|app|application|product|service|codebase|stack|repo|repository|team|company|startup|client|"
    "backend|frontend|api|website|site|system|platform|database|pipeline"
)


@dataclass(frozen=True, slots=True)
class Rule:
    category: str
    pattern: re.Pattern[str]
    render: Callable[[re.Match[str]], str]
    questions: bool = False  # also in a sentence ending with "?"


def _object(text: str) -> str:
    """The object of a statement: up to the next clause about someone, pronouns in the third person; empty
    when nothing is left but a pronoun ("I like that")."""
    cut = _CLAUSE_END.search(text)
    if cut is not None:
        text = text[: cut.start()]
    text = text.strip().rstrip(".!?,;: ")
    if text.lower() in _EMPTY_OBJECTS:
        return ""
    for pattern, replacement in _PRONOUNS:
        text = re.sub(pattern, replacement, text, flags=_FLAGS)
    return text


def _say(prefix: str, raw_object: str) -> str:
    """``prefix`` and the statement's object, or "" when there is no object (the rule then finds nothing)."""
    obj = _object(raw_object)
    return f"{prefix} {obj}" if obj else ""


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _conjugate(adverb: str, verb: str) -> str:
    """``usually work`` -> ``usually works``; ``tend to work`` -> ``tends to work``."""
    lowered = adverb.lower()
    if lowered.endswith(" to"):
        head = lowered[:-3]
        return f"{head}s to {verb.lower()}"
    return f"{lowered} {verb.lower()}s"


def _rule(category: str, pattern: str, render: Callable[[re.Match[str]], str], *, questions: bool = False) -> Rule:
    return Rule(category, re.compile(pattern, _FLAGS), render, questions)


RULES: tuple[Rule, ...] = (
    # communication style
    _rule(
        "communication_style",
        r"\b(?:be|keep (?:it|things|answers|responses|replies|your answers|your replies))\s+(?:more\s+|very\s+)?"
        r"(brief|short|concise|terse|succinct|detailed|thorough|formal|casual)\b",
        lambda m: f"User wants {m.group(1).lower()} answers",
    ),
    _rule(
        "communication_style",
        r"\b(?:don't|do not|never|stop|please stop)\s+(?:use|using|add|adding|send|sending|include|including)\s+"
        r"(emojis?|emoticons|jargon|bullet points|markdown|tables|exclamation marks)\b",
        lambda m: f"User does not want {m.group(1).lower()} in answers",
    ),
    _rule(
        "communication_style",
        r"\bno (emojis?|emoticons|jargon)\b",
        lambda m: f"User does not want {m.group(1).lower()} in answers",
    ),
    _rule(
        "communication_style",
        r"\b(?:answer|reply|respond|write|talk|speak)(?: to me)? in (plain English|plain text|bullet points|[A-Z]\w+)",
        lambda m: f"User wants replies in {m.group(1)}",
    ),
    _rule("communication_style", r"\bcall me ([A-Z][\w'-]*)", lambda m: f"User wants to be called {m.group(1)}"),
    # personal details
    _rule(
        "personal_detail",
        r"\bmy name is ([A-Z][\w'-]*(?: [A-Z][\w'-]*)*)",
        lambda m: f"User's name is {m.group(1)}",
    ),
    _rule(
        "personal_detail",
        _I + r" (?:live|am living|'m living|’m living) in (.+)",
        lambda m: _say("User lives in", m.group(1)),
    ),
    _rule("personal_detail", _IM + r" from (.+)", lambda m: _say("User is from", m.group(1))),
    _rule(
        "personal_detail",
        _I + r" was born (in|on) (.+)",
        lambda m: _say(f"User was born {m.group(1).lower()}", m.group(2)),
    ),
    _rule(
        "personal_detail",
        r"\bmy (" + _FAMILY + r")\b\s*(.+)",
        lambda m: _say(f"User's {m.group(1).lower()}", m.group(2)),
    ),
    _rule(
        "personal_detail",
        _I + r" have ((?:a|an|one|two|three|four|five|six|\d+) (?:kids?|children|sons?|daughters?|dogs?|cats?|"
        r"brothers?|sisters?|grandchildren)\b.*)",
        lambda m: _say("User has", m.group(1)),
    ),
    # expertise
    _rule(
        "expertise",
        _IM + r" (?:a|an) ((?:[\w+#./-]+ ){0,3}?(?:" + _ROLES + r"))\b",
        lambda m: f"User is {_article(m.group(1))} {m.group(1)}",
    ),
    _rule(
        "expertise", _I + r" work as (?:a|an) (.+)", lambda m: _say(f"User works as {_article(m.group(1))}", m.group(1))
    ),
    _rule(
        "expertise",
        _IM + r" (?:an expert|experienced|proficient|fluent|skilled|certified) (in|with|at|on) (.+)",
        lambda m: _say(f"User is skilled {m.group(1).lower()}", m.group(2)),
    ),
    _rule(
        "expertise",
        _I + r" (?:know|speak) (?!(?:you|that|what|how|why|when|where|who|it|this|if|whether|the|a|an|I)\b)(.+)",
        lambda m: _say("User knows", m.group(1)),
    ),
    _rule(
        "expertise",
        _I + r"(?:'ve|’ve| have) been (coding|programming|working with|using|writing|doing) (.+)",
        lambda m: _say(f"User has been {m.group(1).lower()}", m.group(2)),
    ),
    # work style
    _rule(
        "work_style",
        _I + r" (usually|always|often|normally|typically|mostly|generally|never|tend to|like to|prefer to)\s+"
        r"(" + _WORK_VERBS + r")\b\s*(.*)",
        lambda m: f"User {_conjugate(m.group(1), m.group(2))} {_object(m.group(3))}".rstrip(),
    ),
    # project context
    _rule(
        "project_context",
        r"\b(we|I)(?:'re|’re| are|'m|’m| am) (building|developing|working on|writing|migrating|shipping|designing|"
        r"launching|refactoring|porting|maintaining|rewriting) (.+)",
        lambda m: _say(
            f"{'The team is' if m.group(1).lower() == 'we' else 'User is'} {m.group(2).lower()}", m.group(3)
        ),
    ),
    _rule(
        "project_context",
        r"\bour (" + _PROJECT_NOUNS + r")\b\s*(.+)",
        lambda m: _say(f"The user's {m.group(1).lower()}", m.group(2)),
    ),
    _rule(
        "project_context",
        r"\b(?:the|our) (deadline|release|launch|demo|milestone) (is|was|moved to|slipped to|is due) (.+)",
        lambda m: _say(f"The {m.group(1).lower()} {m.group(2).lower()}", m.group(3)),
    ),
    # preferences (after work style: "I prefer to work …" is a habit)
    _rule(
        "preference",
        _I + r"(?: really| also| much| very much| strongly| definitely| generally| kind of| do| absolutely)?"
        r"(?: (prefer|like|love|enjoy|hate|dislike|adore|detest|can't stand|cannot stand|don't like|do not like|"
        r"would rather|avoid)|('d rather))\s+(.+)",
        lambda m: _say(f"User {_PREFER_VERBS[(m.group(1) or m.group(2)).lower()]}", m.group(3)),
    ),
    _rule(
        "preference",
        r"\bmy favou?rite ([\w -]{1,40}?) (is|are) (.+)",
        lambda m: _say(f"User's favorite {m.group(1).lower()} {m.group(2)}", m.group(3)),
    ),
    # frustration (a sentence of it is kept whole, quoted)
    _rule(
        "frustration",
        r"\b(?:this is|that's|that is|it's|it is|so|really|very|getting)\s+(?:so\s+|really\s+)?"
        r"(?:frustrating|annoying|infuriating|ridiculous|useless)\b|"
        + _IM
        + r" (?:so |really |getting |very )?(?:frustrated|annoyed|fed up|tired of|sick of)\b|"
        r"\b(?:still )?(?:doesn't|does not|didn't|did not|isn't|is not|won't|still not) work(?:ing)?\b|"
        r"\b(?:ugh+|argh+|wtf)\b|\bthat'?s not what I (?:asked|wanted|meant)\b|\byou keep (?:getting|doing|saying)\b",
        lambda m: "User is frustrated: " + m.string.strip(),
        questions=True,
    ),
)


def extract(message: str, categories: Collection[str]) -> list[Proposed]:
    """The memories the rules find in a user's ``message``, in the order they are stated, of the
    ``categories`` given (others are not looked for)."""
    found: list[tuple[int, int, Proposed]] = []
    seen: set[str] = set()
    sentences = [s.strip() for s in _SENTENCES.split(message) if s and s.strip()]
    for number, sentence in enumerate(sentences[:MAX_SENTENCES]):
        question = sentence.endswith("?")
        starts: set[int] = set()  # one statement, one memory: "I prefer to work …" is a habit, not also a taste
        for rule in RULES:
            if rule.category not in categories or (question and not rule.questions):
                continue
            match = rule.pattern.search(sentence)
            if match is None or (rule.category != "frustration" and match.start() in starts):
                continue
            content = " ".join(rule.render(match).split())[:MAX_CHARS].rstrip()
            if not content or content.casefold() in seen:
                continue
            if rule.category != "frustration":
                starts.add(match.start())
            seen.add(content.casefold())
            category = rule.category
            found.append(
                (number, match.start(), Proposed(content, category, DEFAULT_KIND[category], CONFIDENCE[category]))
            )
    return [p for _, _, p in sorted(found, key=lambda item: (item[0], item[1]))]
