"""The signals the dream's skill passes (seed 001, Passes 2 to 4) compute before they ask the model, as pure
functions: the conversation log grouped by session, the cross-session term frequencies of the first user
messages, the sparse-skill thresholds, the skill corpus fingerprint and the optimisation bookkeeping.

Invariants:
- Pure and deterministic: no clock (``now`` is passed in), no I/O; the same input gives the same output.
- Terms are ``core.dedupe.content_tokens`` (lower-cased letter and digit runs) without ``core.text.STOPWORDS``,
  at least ``MIN_TERM_CHARS`` long and not all digits; a term counts once per session however often the
  session's first message repeats it, and words of one stem (``email``, ``emails``: ``core.tokens.word``) count
  as one term, shown in the spelling most sessions used.
- The corpus fingerprint covers what the model is asked to reshape (each skill's name, summary, content and
  see-also), never usage statistics: a skill being used does not re-open consolidation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from reverie.core.consolidation import corpus_fingerprint
from reverie.core.dedup import content_tokens
from reverie.core.text import STOPWORDS
from reverie.core.tokens import word

MIN_SESSIONS = 2  # seed 001: a request must recur in 2+ sessions
MIN_TERM_CHARS = 3
SPARSE_CHARS = 200  # seed 001: a skill with less content than this ...
SPARSE_DAYS = 7.0  # ... created longer ago than this is sparse
OPTIMISED_AT = "optimised_at"  # skill metadata: when the optimisation pass last reviewed the skill
OPTIMISED_VERSION = "optimised_version"  # skill metadata: the version that review wrote
RECURRING_HEADER = "Recurring topics across sessions (term frequency ≥ 2 sessions):"


@dataclass(slots=True)
class SessionTurns:
    """One session of the conversation log, as the gap pass reads it: its user turns in order."""

    session_id: str
    first_at: str = ""
    last_at: str = ""
    user_turns: list[str] = field(default_factory=list)

    @property
    def first_message(self) -> str:
        return self.user_turns[0] if self.user_turns else ""


def group_sessions(records: Iterable[tuple[str, Mapping[str, Any]]]) -> list[SessionTurns]:
    """The log's records grouped by session, newest session (latest record time) first; sessions without a
    user turn are left out. ``at`` is compared as the ISO text the log holds (one format, so it sorts)."""
    sessions: dict[str, SessionTurns] = {}
    for session_id, record in records:
        turns = sessions.setdefault(session_id, SessionTurns(session_id))
        at = str(record.get("at") or "")
        turns.first_at = min(turns.first_at, at) if turns.first_at else at
        turns.last_at = max(turns.last_at, at)
        content = record.get("content")
        if record.get("role") == "user" and isinstance(content, str) and content.strip():
            turns.user_turns.append(content)
    found = [s for s in sessions.values() if s.user_turns]
    return sorted(found, key=lambda s: (s.last_at, s.session_id), reverse=True)


def session_terms(text: str) -> set[str]:
    """The topic terms of one message (see the module invariants), unstemmed."""
    return {t for t in content_tokens(text) if t not in STOPWORDS and len(t) >= MIN_TERM_CHARS and not t.isdigit()}


def recurring_terms(messages: Iterable[str], *, min_sessions: int = MIN_SESSIONS) -> list[tuple[str, int]]:
    """``(term, sessions)`` for the terms of at least ``min_sessions`` of ``messages`` (one message per
    session), most sessions first, then alphabetically."""
    by_stem: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for message in messages:
        stems: dict[str, str] = {}
        for term in sorted(session_terms(message)):
            stems.setdefault(word(term), term)
        for stem, term in stems.items():
            by_stem[stem] += 1
            spellings.setdefault(stem, Counter())[term] += 1
    out = []
    for stem, count in by_stem.items():
        if count >= min_sessions:
            spelling = min(spellings[stem].items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]
            out.append((spelling, count))
    return sorted(out, key=lambda tc: (-tc[1], tc[0]))


def render_recurring(terms: Sequence[tuple[str, int]], *, limit: int = 30) -> str:
    """Seed 001's explicit signal block, or a line saying there is none."""
    if not terms:
        return "Recurring topics across sessions: none (no term appears in 2+ sessions' first messages)."
    lines = [RECURRING_HEADER, *(f'- "{term}": {count} session(s)' for term, count in terms[:limit])]
    return "\n".join(lines)


def cited_sessions(cited: Iterable[object], shown: Iterable[str]) -> list[str]:
    """The distinct session ids of ``cited`` that were shown, in citation order (anything else dropped)."""
    known = set(shown)
    return list(dict.fromkeys(c for c in cited if isinstance(c, str) and c in known))


def is_sparse(
    content: str, created_at: datetime, now: datetime, *, chars: int = SPARSE_CHARS, days: float = SPARSE_DAYS
) -> bool:
    """Seed 001's sparse skill: less than ``chars`` of content, created more than ``days`` ago."""
    return len(content) < chars and now - created_at > timedelta(days=days)


def skills_fingerprint(skills: Iterable[tuple[str, str, str, Sequence[str]]]) -> str:
    """The change-gate fingerprint of a skill corpus given as ``(name, summary, content, see_also)``:
    order-insensitive, and blind to usage, times and versions."""
    parts = [
        "\x1f".join((name, summary, content, "\x1e".join(see_also))) for name, summary, content, see_also in skills
    ]
    return corpus_fingerprint(parts)


def parse_moment(value: object) -> datetime | None:
    """An ISO timestamp stored in metadata, or None when missing or unreadable."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def fresh_signals(times: Sequence[datetime], optimised_at: datetime | None) -> list[int]:
    """The indexes of the failure signals (by creation time) newer than the skill's last optimisation: an
    optimised skill is not re-optimised for what it was already optimised for."""
    return [i for i, at in enumerate(times) if optimised_at is None or at > optimised_at]


def parse_version(value: object) -> int | None:
    """A skill version stored in metadata, or None when missing or not a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def needs_expansion(sparse: bool, optimised_version: int | None, version: int) -> bool:
    """A sparse skill is shown for expansion unless the pass reviewed it and nobody changed it since: its
    ``version`` is still the one the review's own save wrote. Versions, not times: the review's save stamps
    ``updated_at`` with a later clock reading than any time the pass could record in it."""
    return sparse and (optimised_version is None or version > optimised_version)
