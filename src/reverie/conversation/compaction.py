"""Session compaction (seed 004, "Session Compaction"): once a session's live conversation has more than
``threshold`` messages its summary does not cover, the ``keep_recent`` most recent stay verbatim and
everything older (since the previous summary, which is folded in) is summarised into ``session.summary``;
``session.compacted_through`` is the last summarised index. The turns themselves are never deleted here:
they stay in the archive for out-of-window recall.

Two summarisers, one shape:
- **extractive** (no LLM, deterministic): the first sentence of each user turn and the key facts of each
  assistant turn (its first sentence, plus up to two later sentences holding a number or a keep-token such
  as a path, URL, id or identifier), one line per turn, each cut to ``LINE_CHARS``;
- **llm**: the LLM's summary (prompt ``session-compaction.md``, overridable by ``<home>/session-compaction.md``;
  purpose ``session.compaction``).
Both end with a ``Tool calls:`` list the host writes (never the LLM): tool name, call id, arguments and the
start of the result, for every tool call of the summarised turns, so the tool-call history survives.

Invariants:
- A summary is bounded: each section fits ``SECTION_CHARS`` (its lines are shortened evenly, down to
  ``MIN_LINE_CHARS``; past that the middle lines give way to one ``… N lines omitted`` line, so the start of
  the conversation and its latest turns both stay) and the carried-over prose is cut to ``EARLIER_CHARS``.
  Folding a summary into the next keeps the sections flat (no summary of a summary of a summary), so
  repeated compaction stays bounded: older lines only get shorter.
- ``compact_inline`` never calls the LLM (a user's turn must not wait for one): it is what ``add_turn`` runs
  under ``auto_compact``. ``compact`` makes the LLM summary, and replaces an extractive summary with one: it
  goes back to the last LLM summary (``llm_through`` in the session metadata) and has the LLM read the turns
  since, so each turn reaches the LLM about once. What the LLM reads is bounded (``TRANSCRIPT_CHARS``).
- An LLM failure never loses a compaction: ``compact`` falls back to the extractive summary and says so.
- A summary is written only if the session did not change while it was made (optimistic check in the
  write transaction); otherwise nothing is written and the result says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reverie.core.compaction import keep_tokens
from reverie.core.jsonanswer import JSONAnswerError, strip_reasoning
from reverie.core.text import cut_words
from reverie.errors import LLMError
from reverie.llm.base import LLM, Message
from reverie.llm.usage import agent_context
from reverie.prompts import read_prompt
from reverie.storage.base import Store
from reverie.types import SessionRecord, TurnCounts, TurnRecord

PROMPT = "session-compaction.md"
PURPOSE = "session.compaction"
SUMMARY_METHOD = "summary_method"  # the session metadata key saying which summariser wrote the summary
LLM_THROUGH = "llm_through"  # the session metadata key: compacted_through as of the last LLM summary
EXTRACTIVE = "extractive"
LLM_METHOD = "llm"

LINE_CHARS = 160
TOOL_LINE_CHARS = 240
MIN_LINE_CHARS = 60  # a section over its budget shortens its lines down to this before it drops any
SECTION_CHARS = 3000  # the budget of each of the user, assistant and tool-call sections
EARLIER_CHARS = 4000  # the carried prose: never less than an LLM summary, so folding one keeps it whole
LLM_SUMMARY_CHARS = 4000
TRANSCRIPT_TURN_CHARS = 2000  # each turn the LLM reads, cut (start and end kept) ...
TRANSCRIPT_CHARS = 100_000  # ... to an even share of this when there are many, down to MIN_TRANSCRIPT_TURN_CHARS
MIN_TRANSCRIPT_TURN_CHARS = 300
LLM_MAX_TOKENS = 1024

EARLIER, USER, ASSISTANT, TOOLS = "Earlier summary:", "User said:", "Assistant said:", "Tool calls:"
_SECTIONS = (EARLIER, USER, ASSISTANT, TOOLS)
_HEADER = re.compile(r"^Summary of turns (\d+)–(\d+), (\S+ \S+) to (\S+ \S+)")
_LINE_TURN = re.compile(r"- \(turn (\d+)\) ")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_TIME_FORMAT = "%Y-%m-%d %H:%M"


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What ``compact`` did to one session. ``compacted`` False: nothing was written, ``reason`` says why.
    ``fallback``: the LLM failed (``reason`` holds its error) and the extractive summary was used."""

    session_id: str
    compacted: bool
    method: str | None = None  # "llm" | "extractive"
    compacted_through: int = 0
    turns_summarised: int = 0
    summary: str | None = None
    fallback: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionStatus:
    """One session as compaction sees it: ``live_messages`` (0 for an expired session), how many of them the
    summary does not cover (``uncovered``), and whether that is over the threshold."""

    session_id: str
    live_messages: int
    uncovered: int
    threshold: int
    keep_recent: int
    compacted_through: int
    needs_compaction: bool
    summary_method: str | None
    expired: bool


# -- the summary text (pure) ----------------------------------------------------------------------------
def _flat(text: str) -> str:
    return " ".join(text.split())


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (an ellipsis when cut)."""
    return cut_words(_flat(text), limit)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _key_facts(text: str) -> str:
    """The first sentence, plus up to two later ones holding a number or a keep-token."""
    sentences = _sentences(text)
    if not sentences:
        return ""
    facts = [s for s in sentences[1:] if any(ch.isdigit() for ch in s) or keep_tokens(s)][:2]
    return " ".join([sentences[0], *facts])


def _call_parts(call: dict[str, Any]) -> tuple[str, str, str]:
    """(name, call id, arguments) of one tool call, in OpenAI's shape or the flat ``{name, arguments}``."""
    function = call.get("function")
    source = function if isinstance(function, dict) else call
    name = source.get("name")
    arguments = source.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    call_id = call.get("id")
    return (str(name) if name else "?", str(call_id) if call_id else "?", arguments)


def tool_call_lines(turns: Sequence[TurnRecord]) -> list[str]:
    """One line per tool call of ``turns``: ``(turn N) name [call id] arguments → result``, the result being
    the start of the tool turn answering that call id among ``turns`` (when there is one)."""
    results = {t.tool_call_id: t.content for t in turns if t.role == "tool" and t.tool_call_id}
    lines = []
    for t in turns:
        for call in t.tool_calls or ():
            name, call_id, arguments = _call_parts(call)
            line = f"- (turn {t.index}) {name} [{call_id}] {_cut(arguments, 120)}"
            if call_id in results:
                line += f" → {_cut(results[call_id], 80)}"
            lines.append(_cut(line, TOOL_LINE_CHARS))
    return lines


def summary_sections(summary: str | None) -> dict[str, list[str]]:
    """A stored summary split into its sections (header dropped). Text outside a known section (an LLM's
    prose) belongs to ``Earlier summary:``."""
    sections: dict[str, list[str]] = {name: [] for name in _SECTIONS}
    current = EARLIER
    for index, line in enumerate((summary or "").splitlines()):
        if index == 0 and _HEADER.match(line):
            continue
        if line.strip() in _SECTIONS:
            current = line.strip()
        elif line.strip():
            sections[current].append(line.rstrip())
    return sections


def _span(turns: Sequence[TurnRecord], previous: str | None) -> tuple[int, int, str, str]:
    """(first index, last index, first time, last time) the new summary covers: from the previous summary's
    start (read from its header) to the last summarised turn."""
    first, last = turns[0], turns[-1]
    start_index, start_time = first.index, first.at.strftime(_TIME_FORMAT)
    found = _HEADER.match((previous or "").split("\n", 1)[0])
    if found:
        start_index, start_time = int(found.group(1)), found.group(3)
    return start_index, last.index, start_time, last.at.strftime(_TIME_FORMAT)


def _header(turns: Sequence[TurnRecord], previous: str | None, method: str) -> str:
    a, b, t0, t1 = _span(turns, previous)
    return f"Summary of turns {a}–{b}, {t0} to {t1} UTC ({method}):"


def _render(header: str, sections: dict[str, list[str]]) -> str:
    parts = [header]
    for name in _SECTIONS:
        if sections[name]:
            parts.append(name)
            parts.extend(sections[name])
    return "\n".join(parts)


def fit(lines: list[str], budget: int = SECTION_CHARS) -> list[str]:
    """``lines`` within ``budget`` characters (newlines included): as they are when they fit; else each cut
    to an even share (at least ``MIN_LINE_CHARS``); else the first and last of those around one line saying
    how many were omitted."""

    def size(candidate: list[str]) -> int:
        return sum(len(line) + 1 for line in candidate)

    if size(lines) <= budget:
        return lines
    share = max(budget // len(lines) - 1, MIN_LINE_CHARS)
    shortened = [_cut(line, share) for line in lines]
    if size(shortened) <= budget:
        return shortened
    room = max(budget // (MIN_LINE_CHARS + 1) - 1, 2)  # lines that fit at the floor, less the marker
    head, tail = (room + 1) // 2, room // 2
    omitted = len(shortened) - head - tail
    return [*shortened[:head], f"- … {omitted} lines omitted", *shortened[len(shortened) - tail :]]


def _earlier(lines: list[str]) -> list[str]:
    text = "\n".join(lines)
    return [text[:EARLIER_CHARS].rstrip() + "…"] if len(text) > EARLIER_CHARS else lines


def extractive_summary(turns: Sequence[TurnRecord], previous: str | None = None) -> str:
    """The deterministic summary of ``turns`` (oldest first, at least one), with ``previous`` folded in."""
    kept = summary_sections(previous)
    user = [
        f"- (turn {t.index}) {_cut(s[0], LINE_CHARS)}"
        for t in turns
        if t.role == "user" and (s := _sentences(t.content))
    ]
    assistant = [
        f"- (turn {t.index}) {_cut(facts, LINE_CHARS)}"
        for t in turns
        if t.role == "assistant" and (facts := _key_facts(t.content))
    ]
    sections = {
        EARLIER: _earlier(kept[EARLIER]),
        USER: fit(kept[USER] + user),
        ASSISTANT: fit(kept[ASSISTANT] + assistant),
        TOOLS: fit(kept[TOOLS] + tool_call_lines(turns)),
    }
    return _render(_header(turns, previous, EXTRACTIVE), sections)


def llm_summary(text: str, turns: Sequence[TurnRecord], previous: str | None = None) -> str:
    """The stored form of an LLM's summary ``text`` of ``turns``: our header, the text (cut to
    ``LLM_SUMMARY_CHARS``), and the tool-call list of ``previous`` and ``turns``."""
    body = text.strip()
    if len(body) > LLM_SUMMARY_CHARS:
        body = body[:LLM_SUMMARY_CHARS].rstrip() + "…"
    tools = fit(summary_sections(previous)[TOOLS] + tool_call_lines(turns))
    parts = [_header(turns, previous, LLM_METHOD), body]
    if tools:
        parts.extend([TOOLS, *tools])
    return "\n".join(parts)


def summary_as_of(summary: str | None, through: int) -> str:
    """What a stored summary held right after an LLM summary through turn ``through``: its header, the
    carried prose (the LLM's text) and the tool calls of turns up to ``through``. Extractive lines folded in
    since (each marked with its turn) are left out: the turns they came from are summarised again."""
    sections = summary_sections(summary)
    header = (summary or "").split("\n", 1)[0]
    tools = [line for line in sections[TOOLS] if (n := _turn_of(line)) is not None and n <= through]
    return _render(header, {EARLIER: sections[EARLIER], USER: [], ASSISTANT: [], TOOLS: tools})


def _turn_of(line: str) -> int | None:
    found = _LINE_TURN.match(line)
    return int(found.group(1)) if found else None


def _quote(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail]} […] {text[-tail:]}"


def transcript(turns: Sequence[TurnRecord], previous: str | None) -> str:
    """What the LLM reads: the previous summary (without its tool-call list) and the turns to summarise."""
    parts: list[str] = []
    prior = summary_sections(previous)
    carried = [line for name in (EARLIER, USER, ASSISTANT) for line in prior[name]]
    if carried:
        parts.append("Previous summary (fold it in):\n" + "\n".join(carried))
    lines = []
    share = max(min(TRANSCRIPT_TURN_CHARS, TRANSCRIPT_CHARS // max(len(turns), 1)), MIN_TRANSCRIPT_TURN_CHARS)
    for t in turns:
        who = t.role if t.role != "tool" else f"tool result [{t.tool_call_id or '?'}]"
        lines.append(f"[turn {t.index} · {who} · {t.at.strftime(_TIME_FORMAT)}]")
        if t.content.strip():
            lines.append(_quote(t.content, share))
        for call in t.tool_calls or ():
            name, call_id, arguments = _call_parts(call)
            lines.append(f"(called {name} [{call_id}] with {_cut(arguments, 300)})")
    parts.append("Turns to summarise:\n" + "\n".join(lines))
    return "\n\n".join(parts)


# -- the compactor ---------------------------------------------------------------------------------------
def uncovered(session: SessionRecord, counts: TurnCounts) -> int:
    """Live turns the session's summary does not cover (indexes are contiguous, see ``TurnRecord``)."""
    if counts.last_index == 0:
        return 0
    return counts.last_index - max(session.compacted_through, counts.first_index - 1)


class SessionCompactor:
    """Summarises the older part of sessions. ``threshold``/``keep_recent``: seed 004's 80 and 20."""

    def __init__(
        self, store: Store, *, threshold: int, keep_recent: int, llm: LLM | None = None, home: Path | None = None
    ) -> None:
        self._store = store
        self.threshold = threshold
        self.keep_recent = keep_recent
        self._llm = llm
        self._home = home

    def needs(self, session: SessionRecord, counts: TurnCounts) -> bool:
        return uncovered(session, counts) > self.threshold

    def status(self, session: SessionRecord, *, expired: bool) -> CompactionStatus:
        counts = self._store.sessions.turn_counts(session.agent_id, session.session_id)
        pending = 0 if expired else uncovered(session, counts)
        return CompactionStatus(
            session_id=session.session_id,
            live_messages=0 if expired else counts.retained + counts.archived,
            uncovered=pending,
            threshold=self.threshold,
            keep_recent=self.keep_recent,
            compacted_through=session.compacted_through,
            needs_compaction=pending > self.threshold,
            summary_method=session.metadata.get(SUMMARY_METHOD),
            expired=expired,
        )

    def compact_inline(self, session: SessionRecord) -> SessionRecord:
        """The session with an extractive summary when it needs one, else unchanged. No LLM; meant to run
        inside the caller's transaction (``add_turn``), which writes the returned session."""
        counts = self._store.sessions.turn_counts(session.agent_id, session.session_id)
        if not self.needs(session, counts):
            return session
        through = counts.last_index - self.keep_recent
        turns = self._turns(session, session.compacted_through, through)
        if not turns:
            return session
        summary = extractive_summary(turns, session.summary)
        return _with_summary(session, summary, through, EXTRACTIVE)

    def compact(self, session: SessionRecord, *, force: bool = False) -> CompactionResult:
        """Summarise the session when it needs it (or ``force``, or when an LLM can replace an extractive
        summary): with the LLM when there is one (falling back to the extractive summary if it fails)."""
        sid = session.session_id
        counts = self._store.sessions.turn_counts(session.agent_id, sid)
        upgrade = self._llm is not None and session.metadata.get(SUMMARY_METHOD) == EXTRACTIVE
        if not (force or upgrade or self.needs(session, counts)):
            return CompactionResult(sid, False, reason=self._below(session, counts))
        start, through, previous = self._plan(session, counts, upgrade=upgrade)
        turns = self._turns(session, start, through)
        if not turns:
            reason = f"nothing older than the {self.keep_recent} most recent turns is left to summarise"
            return CompactionResult(sid, False, compacted_through=session.compacted_through, reason=reason)
        summary, method, failure = self._summarise(turns, previous)
        return self._write(session, summary, through, method, len(turns), failure)

    def _plan(self, session: SessionRecord, counts: TurnCounts, *, upgrade: bool) -> tuple[int, int, str | None]:
        """(summarise the turns after this index, through this one, folding in this previous summary).

        Replacing an extractive summary with the LLM's goes back to the last LLM summary (``llm_through``; the
        first turn when there was none) and folds in what that summary said, so the LLM reads every turn the
        extractive summary covered, and each turn about once. When some of those turns left the archive
        meanwhile, it folds in the extractive summary like any previous summary instead.
        """
        through = counts.last_index - self.keep_recent
        llm_through = int(session.metadata.get(LLM_THROUGH, 0))
        if not upgrade or counts.first_index > llm_through + 1:
            return session.compacted_through, through, session.summary
        previous = summary_as_of(session.summary, llm_through) if llm_through else None
        return llm_through, max(through, session.compacted_through), previous

    def _below(self, session: SessionRecord, counts: TurnCounts) -> str:
        return (
            f"{uncovered(session, counts)} messages are not covered by the summary; compaction starts above "
            f"{self.threshold} (use force to compact anyway)"
        )

    def _turns(self, session: SessionRecord, after: int, through: int) -> list[TurnRecord]:
        if through <= after:
            return []
        turns = self._store.sessions.turns(session.agent_id, session.session_id, after=after)
        return [t for t in turns if t.index <= through]

    def _summarise(self, turns: list[TurnRecord], previous: str | None) -> tuple[str, str, str | None]:
        """(summary, method, the LLM's failure or None)."""
        if self._llm is None:
            return extractive_summary(turns, previous), EXTRACTIVE, None
        try:
            text = self._ask(turns, previous)
        except LLMError as exc:
            return extractive_summary(turns, previous), EXTRACTIVE, str(exc)
        return llm_summary(text, turns, previous), LLM_METHOD, None

    def _ask(self, turns: list[TurnRecord], previous: str | None) -> str:
        assert self._llm is not None
        messages = [Message.system(read_prompt(PROMPT, self._home)), Message.user(transcript(turns, previous))]
        agent = turns[0].agent_id if turns else "default"
        with agent_context(agent):  # the call is booked to the session's agent
            completion = self._llm.complete(messages, max_tokens=LLM_MAX_TOKENS, temperature=0.0, purpose=PURPOSE)
        try:
            text = strip_reasoning(completion.text).strip()
        except JSONAnswerError as exc:
            raise LLMError(f"the summary {exc}", reason=exc.reason) from None
        if not text:
            raise LLMError("the LLM answered an empty summary", reason="empty")
        return text

    def _write(
        self, session: SessionRecord, summary: str, through: int, method: str, count: int, failure: str | None
    ) -> CompactionResult:
        sid = session.session_id
        repo = self._store.sessions
        with self._store.transaction():
            current = repo.get(session.agent_id, sid)
            if current is None or _moved(session, current):
                reason = "the session changed while it was summarised; nothing was written (compact it again)"
                return CompactionResult(sid, False, reason=reason)
            repo.update(_with_summary(current, summary, through, method))
        return CompactionResult(
            sid,
            True,
            method=method,
            compacted_through=through,
            turns_summarised=count,
            summary=summary,
            fallback=failure is not None,
            reason=None if failure is None else f"the LLM failed, so the summary is extractive: {failure}",
        )


def _moved(before: SessionRecord, now: SessionRecord) -> bool:
    """Whether the session changed in a way that makes a summary made from ``before`` stale."""
    return (
        now.deleted_at is not None
        or now.started_at != before.started_at
        or now.compacted_through != before.compacted_through
        or now.summary != before.summary
    )


def _with_summary(session: SessionRecord, summary: str, through: int, method: str) -> SessionRecord:
    metadata = {**session.metadata, SUMMARY_METHOD: method}
    if method == LLM_METHOD:
        metadata[LLM_THROUGH] = through
    return replace(session, summary=summary, compacted_through=through, metadata=metadata)


def fresh_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Session metadata without the compaction state (a fresh start or a clear drops the summary)."""
    return {k: v for k, v in metadata.items() if k not in (SUMMARY_METHOD, LLM_THROUGH)}
