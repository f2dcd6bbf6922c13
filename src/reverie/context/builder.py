"""The per-turn context builder (seed 000, "Memory injection flow (per turn)"): what an agent's next LLM call
sees of its three memories, as OpenAI-format chat messages.

The flow, step by step:
1. recall up to ``recall_limit`` (8) long-term entries for the incoming message (hybrid, or BM25 without an
   embedder); 2. on the session's first turn, when recall found nothing, the ``first_turn_fallback`` (5) most
   recently reinforced entries; 3. the delta filter: an entry is injected once per session; 4. one system
   message "Recalled from long-term memory"; 4b. with proactive memory, one system message of what it
   retrieves for the message (the user's user-level memory, shared by their agents, and the agent's
   proactive memories), without the entries step 4 injected or the session was given before; 5. the own
   namespace's working-memory inventory (keys, expiry, category, tags — never content); 6. for user
   sessions, patrol findings; 7. for user sessions, the subagents' ``-index`` keys; 8. out-of-window recall
   (and the compaction summary) right before the first replayed turn; 9. the last ``replay_turns`` (20)
   turns; then the incoming message.

Invariants:
- Reads only: proactive memory counts an access of what it retrieves in memory, written in batches, and its
  decay sweep is the dream's (a build never scans an agent's entries). The one state is the delta filter
  (which entries each session was given), kept in the store (``Store.injected``) so it holds across every
  process serving the session, updated only for entries that made it into the returned context, and cleared
  when the session starts afresh (``forget_session``). Two builds of one session at the same instant may both
  give an entry; a session's turns come one at a time.
- Every block of recalled text (recalled entries, proactive memories, the working-memory listings, the
  compaction summary, the out-of-window quotes) is framed as data by ``core.framing``: a notice that it is
  stored record, not instructions, between fences its text cannot forge; inside, recalled text is
  neutralised (role markers, template tokens, tags) and each entry says its source, tool text and
  inferences marked unverified. Only the rendering changes: the stored text is never rewritten.
- With a token budget, the least relevant parts go first: recalled entries (lowest score first), proactive
  memories (lowest rank first), the subagent and patrol listings, the out-of-window quotes (the marker
  stays), the oldest replayed turns, then the own working-memory inventory. The incoming message is never
  cut. Token counts are estimates (4 characters a token), per section.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reverie.clock import Clock
from reverie.conversation.service import ConversationMemory
from reverie.core import validate
from reverie.core.framing import frame, neutralise, source_label
from reverie.core.proactive import kind_of, writer_of
from reverie.core.temporal import seen_phrase
from reverie.core.text import preview
from reverie.core.window_recall import QuotableTurn, hidden_and_window, out_of_window_message
from reverie.errors import Conflict, ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.storage.base import InjectedRepository
from reverie.types import Scope, SearchHit, TurnRecord
from reverie.working.service import OWN_HEADING, PATROL_HEADING, WorkingMemory, render_inventory

log = logging.getLogger("reverie.context")
KINDS = ("user", "patrol", "subagent")
RECALL_HEADING = "Recalled from long-term memory (what you concluded in earlier sessions; use search_memory for more):"
PROACTIVE_HEADING = "What you know about this user and this work (proactive memory):"
SUBAGENT_HEADING = "Subagent research in working memory (read an index with get_from_working_memory to navigate):"
SUMMARY_HEADING = "Summary of the earlier part of this conversation (compacted):"
Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ContextConfig:
    recall_limit: int = 8
    first_turn_fallback: int = 5
    replay_turns: int = 20
    out_of_window_max_turns: int = 3
    out_of_window_max_chars: int = 800
    entry_chars: int = 600  # a recalled entry longer than this is shown by its start


@dataclass(frozen=True, slots=True)
class ContextSection:
    """One step of the flow in the output: its messages and their estimated tokens."""

    name: str  # recall | proactive | working | patrol | subagents | out_of_window | turns | message
    messages: tuple[Message, ...]
    tokens: int


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The messages to send (OpenAI chat format, in order), per section, with what a budget trimmed."""

    messages: list[Message]
    sections: list[ContextSection]
    tokens: int
    injected: tuple[str, ...] = ()  # long-term entry ids given to the model this turn
    trimmed: tuple[str, ...] = ()  # what the budget removed, least relevant first
    over_budget: bool = False  # still above the budget after trimming everything trimmable


def estimate_tokens(message: Message) -> int:
    """A chat message's token estimate: 4 characters a token, plus 4 for the message's framing."""
    text = str(message.get("content") or "")
    if message.get("tool_calls"):
        text += str(message["tool_calls"])
    return math.ceil(len(text) / 4) + 4


@dataclass(slots=True)
class _Parts:
    """The flow's material before rendering; the budget trims it."""

    hits: list[SearchHit]
    proactive: list[SearchHit]
    working: str
    patrol: str
    subagents: str
    hidden: list[QuotableTurn]
    total: int
    summary: str | None
    replayed: list[TurnRecord]
    quotes: int
    trimmed: list[str] = field(default_factory=list)


class ContextBuilder:
    """Builds the context of one turn from long-term, working and conversation memory."""

    def __init__(
        self,
        memory: LongTermMemory,
        working: WorkingMemory,
        conversation: ConversationMemory,
        clock: Clock,
        config: ContextConfig | None = None,
        *,
        injected: InjectedRepository,
        proactive: Callable[[str, Scope, bool], list[SearchHit]] | None = None,
        shared_candidates: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        """``injected``: where the delta filter is kept (``Store.injected``). ``proactive``: proactive memory's
        retrieval for a message and a scope (``ProactiveMemory.for_context``), or None (no proactive block).
        ``shared_candidates``: recall's ``HybridSearch.shared_candidates``, so the recall step and the proactive
        block fetch the message's candidates once (None: each searches on its own)."""
        self._memory = memory
        self._proactive = proactive
        self._shared = shared_candidates or nullcontext
        self._working = working
        self._conversation = conversation
        self._clock = clock
        self.config = config or ContextConfig()
        self._injected = injected

    def build(
        self,
        session_id: str,
        message: str,
        *,
        agent_id: str = "default",
        user_id: str | None = None,
        kind: str = "user",
        namespace: str | None = None,
        budget_tokens: int | None = None,
        preview: bool = False,
    ) -> BuiltContext:
        """The context for ``message`` arriving in ``session_id`` (which must exist: ``NotFound``).

        ``kind``: ``user`` (a user's session: working memory under ``session/{id}``, plus patrol findings and
        subagent indexes), ``patrol`` or ``subagent`` (``namespace`` is then required, e.g. ``patrol/heartbeat``,
        and the patrol and subagent listings are skipped). ``budget_tokens``: trim to about this many tokens.
        ``preview``: what the context would be, changing nothing — the injected entries are not recorded for
        the session (its next turn may inject them), no read or access is counted, and an expired session's
        filter is not dropped (it is read as dropped)."""
        agent = validate.identifier(agent_id, name="agent_id")
        looked = validate.flag(preview, name="preview")
        text = validate.query(message)
        if kind not in KINDS:
            raise ValidationError(f"kind must be one of {', '.join(KINDS)}", field="kind")
        if kind != "user" and not namespace:
            raise ValidationError(f"a {kind} context needs its working-memory namespace", field="namespace")
        if budget_tokens is not None and (isinstance(budget_tokens, bool) or budget_tokens < 1):
            raise ValidationError("budget_tokens must be a positive whole number", field="budget_tokens")
        session = self._conversation.get(session_id, agent_id=agent)
        expired = self._conversation.expired(session.session_id, agent_id=agent)
        if expired and not looked:
            self.forget_session(session.session_id, agent_id=agent)  # its next turn starts it afresh
        scope = Scope(agent_id=agent, user_id=user_id, session_id=session.session_id)
        own = namespace or f"session/{session.session_id}"
        with self._shared():
            parts = self._gather(session.session_id, text, scope, kind, own, peek=looked, fresh=expired)
        parts.summary = session.summary
        built = self._render(parts, text)
        if budget_tokens is not None:
            built = self._fit(parts, text, budget_tokens)
        if not looked:
            self._remember(agent, session.session_id, built.injected)
        return built

    def forget_session(self, session_id: str, *, agent_id: str = "default") -> None:
        """Drop the delta filter of a session (a fresh start): its entries may be injected again."""
        self._injected.forget_injected(agent_id, session_id)

    # -- gathering ---------------------------------------------------------------------------------------
    def _gather(
        self, session_id: str, message: str, scope: Scope, kind: str, namespace: str, *, peek: bool, fresh: bool
    ) -> _Parts:
        """``peek``: count no read or access; ``fresh``: the session's filter is (about to be) dropped."""
        cfg, now = self.config, self._clock.now()
        live = self._conversation.live(session_id, agent_id=scope.agent_id)
        hits = self._recall(message, scope, first_turn=not live, peek=peek)
        seen = frozenset() if fresh else self._injected.injected(scope.agent_id, session_id)
        hits = [h for h in hits if h.entry.id not in seen]
        taken = seen | {h.entry.id for h in hits}
        extra = self._proactive(message, scope, peek) if self._proactive is not None else []
        proactive = [h for h in extra if h.entry.id not in taken]
        quotable = [QuotableTurn(t.index, t.role, t.content, t.at) for t in live]
        hidden, _ = hidden_and_window(quotable, cfg.replay_turns)
        replayed = live[len(hidden) :]
        while replayed and replayed[0].role == "tool":  # a tool result without its call is not a valid message
            orphan = replayed.pop(0)
            hidden.append(QuotableTurn(orphan.index, orphan.role, orphan.content, orphan.at))
        working = self._working.inventory(namespace, agent_id=scope.agent_id)
        patrol = self._working.inventory("patrol", agent_id=scope.agent_id) if kind == "user" else []
        subagents = self._working.inventory("subagent", agent_id=scope.agent_id) if kind == "user" else []
        return _Parts(
            hits=hits,
            proactive=proactive,
            working=_listing(OWN_HEADING, render_inventory(working, now)),
            patrol=_listing(PATROL_HEADING, render_inventory(patrol, now)),
            subagents=_listing(
                SUBAGENT_HEADING, render_inventory([e for e in subagents if e.key.endswith("-index")], now)
            ),
            hidden=hidden,
            total=len(live),
            summary=None,
            replayed=replayed,
            quotes=cfg.out_of_window_max_turns,
        )

    def _recall(self, message: str, scope: Scope, *, first_turn: bool, peek: bool) -> list[SearchHit]:
        cfg = self.config
        hits: list[SearchHit] = []
        if message.strip():
            hits = list(self._memory.search(message, limit=cfg.recall_limit, scope=scope, peek=peek))
        if not hits and first_turn and cfg.first_turn_fallback > 0:
            hits = list(self._memory.search("", limit=cfg.first_turn_fallback, scope=scope, peek=peek))
        return hits

    def _remember(self, agent: str, session_id: str, ids: tuple[str, ...]) -> None:
        if not ids:
            return
        try:
            self._injected.add_injected(agent, session_id, ids, at=self._clock.now())
        except Conflict:  # the session was purged meanwhile: there is no filter left to keep
            log.info("context: session %s of %s is gone; its delta filter was not kept", session_id, agent)

    # -- rendering ---------------------------------------------------------------------------------------
    def _render(self, parts: _Parts, message: str) -> BuiltContext:
        now = self._clock.now()
        sections: list[ContextSection] = []

        def add(name: str, messages: list[Message]) -> None:
            if messages:
                sections.append(ContextSection(name, tuple(messages), sum(estimate_tokens(m) for m in messages)))

        if parts.hits:
            lines = [self._entry_line(h, now) for h in parts.hits]
            add("recall", [_system(frame(RECALL_HEADING, "\n".join(lines)))])
        if parts.proactive:
            lines = [self._proactive_line(h) for h in parts.proactive]
            add("proactive", [_system(frame(PROACTIVE_HEADING, "\n".join(lines)))])
        for name, listing in (("working", parts.working), ("patrol", parts.patrol), ("subagents", parts.subagents)):
            if listing:
                add(name, [_system(listing)])
        window = self._window_message(parts, message)
        if window:
            add("out_of_window", [_system(window)])
        add("turns", [_turn_message(t) for t in parts.replayed])
        add("message", [{"role": "user", "content": message}])
        messages = [m for s in sections for m in s.messages]
        return BuiltContext(
            messages=messages,
            sections=sections,
            tokens=sum(s.tokens for s in sections),
            injected=tuple(h.entry.id for h in [*parts.hits, *parts.proactive]),
            trimmed=tuple(parts.trimmed),
        )

    def _window_message(self, parts: _Parts, message: str) -> str | None:
        """Out-of-window recall for the hidden turns, after the compaction summary when there is one."""
        recall = out_of_window_message(
            parts.hidden,
            parts.total,
            message,
            max_turns=parts.quotes,
            max_chars_per_turn=self.config.out_of_window_max_chars,
        )
        if recall is None:
            return None
        if parts.summary:  # compacted from the turns, so as much recalled text as they are
            return f"{frame(SUMMARY_HEADING, neutralise(parts.summary))}\n\n{recall}"
        return recall

    def _entry_line(self, hit: SearchHit, now: datetime) -> str:
        """``- [id] (category) text — first seen today (from tool web_browse — unverified)``."""
        e = hit.entry
        return self._quoted(hit, seen_phrase(e.created_at, e.last_seen_at, e.reinforcement_count, now))

    def _quoted(self, hit: SearchHit, said: str) -> str:
        """An entry's id, category and (cut) text, neutralised, then ``said`` and its source (``core.framing``)."""
        e = hit.entry
        label = source_label(e.source)
        text = neutralise(preview(e.content, self.config.entry_chars))
        return f"- [{neutralise(e.id)}] ({neutralise(e.category)}) {text} — {said}" + (f" ({label})" if label else "")

    def _proactive_line(self, hit: SearchHit) -> str:
        e = hit.entry
        label = {"user": "about the user", "session": "this session"}.get(kind_of(e.metadata), "this agent")
        writer = writer_of(e.metadata)
        if writer is not None:  # user memory is shared by the user's agents: say which one noted it
            label += f", noted by {neutralise(writer)}"
        return self._quoted(hit, label)

    # -- the budget ----------------------------------------------------------------------------------------
    def _fit(self, parts: _Parts, message: str, budget: int) -> BuiltContext:
        """Trim the least relevant material until the estimate fits ``budget`` (see the module docstring)."""
        steps: list[Callable[[], str | None]] = [
            lambda: _pop_lowest(parts),
            lambda: _pop_last_proactive(parts),
            lambda: _clear(parts, "subagents"),
            lambda: _clear(parts, "patrol"),
            lambda: _no_quotes(parts),
            lambda: _pop_oldest_turn(parts),
            lambda: _clear(parts, "working"),
        ]
        built = self._render(parts, message)
        for step in steps:
            while built.tokens > budget:
                what = step()
                if what is None:
                    break
                parts.trimmed.append(what)
                built = self._render(parts, message)
        if built.tokens > budget:
            return BuiltContext(
                built.messages, built.sections, built.tokens, built.injected, built.trimmed, over_budget=True
            )
        return built


def _system(text: str) -> Message:
    return {"role": "system", "content": text}


def _listing(heading: str, lines: str) -> str:
    """A working-memory listing framed as data (its keys are written by agents, its tags are free text)."""
    return frame(heading, lines) if lines else ""


def _turn_message(turn: TurnRecord) -> Message:
    """A stored turn as an OpenAI chat message (tool calls and tool results keep their ids)."""
    message: Message = {"role": turn.role, "content": turn.content}
    if turn.name:
        message["name"] = turn.name
    if turn.role == "tool" and turn.tool_call_id:
        message["tool_call_id"] = turn.tool_call_id
    if turn.role == "assistant" and turn.tool_calls:
        message["tool_calls"] = turn.tool_calls
    return message


def _pop_lowest(parts: _Parts) -> str | None:
    if not parts.hits:
        return None
    lowest = min(range(len(parts.hits)), key=lambda i: (parts.hits[i].score, -i))
    return f"recall:{parts.hits.pop(lowest).entry.id}"


def _pop_last_proactive(parts: _Parts) -> str | None:
    if not parts.proactive:
        return None
    return f"proactive:{parts.proactive.pop().entry.id}"


def _clear(parts: _Parts, name: str) -> str | None:
    if not getattr(parts, name):
        return None
    setattr(parts, name, "")
    return name


def _no_quotes(parts: _Parts) -> str | None:
    if parts.quotes == 0 or not parts.hidden:
        return None
    parts.quotes = 0
    return "out_of_window_quotes"


def _pop_oldest_turn(parts: _Parts) -> str | None:
    """The oldest replayed turn leaves the window: it joins the hidden turns the marker counts."""
    if not parts.replayed:
        return None
    turns = [parts.replayed.pop(0)]
    while parts.replayed and parts.replayed[0].role == "tool":  # its results go with the call
        turns.append(parts.replayed.pop(0))
    parts.hidden.extend(QuotableTurn(t.index, t.role, t.content, t.at) for t in turns)
    return ",".join(f"turn:{t.index}" for t in turns)
