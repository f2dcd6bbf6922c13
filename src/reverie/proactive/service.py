"""Proactive memory (seed 004): memories an agent gathers about its user and its work without being asked
(``auto_memorize`` after a turn) and is given back before the next one (``auto_retrieve``).

Each memory is an ordinary long-term entry written through the save pipeline (validation, deduplication,
embedding, versions, provenance ``inferred``), with the category it was extracted as, the tag ``proactive``
and its bookkeeping in ``metadata["proactive"]`` (``core.proactive.State``). Scopes:

- ``user`` (user_memory): about the user, shared by every agent serving that user, never decays. Stored
  under the user's reserved agent ``@user/<user id>`` (``types.user_agent``) with the user's id, which only this service
  writes or reads (every public entry point refuses an agent id starting with ``@``). Without a user id such
  a memory is the agent's. Each records the agent that wrote it (``metadata.writtenBy``, kept when another
  agent's save restates it, which adds that agent to ``metadata.reinforcedBy``: ``core.proactive``).
- ``agent`` (agent_memory): ``Scope(agent, user)`` (the user's with this agent, or agent-wide without one).
- ``session`` (session_memory): ``Scope(agent, user, session)``, expiring ``session_ttl_hours`` after it is
  saved (restating it renews it). Without a session id it is the agent's.

Reachable three ways: by meaning (the entry: recall), by id (the agent's key-value memory ``memory:{id}``:
content and category), by the graph (queued for extraction when ``[graph] extraction`` is on). The key-value
copy and the graph are the agent's, read by every user and session of the agent, so only agent-wide memories
(no user, no session) are copied there: a user's or a session's memory never leaks to the agent's others.

Invariants:
- Everything but user_memory is strictly per agent: ``auto_retrieve`` for (agent A, user U, session S) sees
  A's entries visible to that scope and U's user memory, never another agent's, never another user's.
- Every public method validates its input first; one memory's save (entry, bookkeeping, key-value copy) is
  one transaction; nothing is deleted (the cap and consolidation archive, ``proactive.upkeep``).
- ``auto_retrieve`` (the per-turn context) reads only: the accesses it counts are written in batches
  (``proactive.access``), and the decay sweep runs in the dream's maintenance (or ``sweep``), never in it.
- ``auto_memorize`` makes at most one LLM call; a malformed answer saves nothing and says why (``error``);
  a failing LLM raises ``LLMError`` and saves nothing.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.proactive import (
    AGENT,
    CATEGORIES,
    META,
    SESSION,
    TAG,
    USER,
    WRITTEN_BY,
    Proposed,
    State,
    current_confidence,
    effective_kind,
    proposals,
    reciprocal_rank_fusion,
    state_of,
    with_reinforcer,
)
from reverie.core.proactive_rules import extract as extract_by_rules
from reverie.errors import LLMError, NotFound, ReverieError, ValidationError
from reverie.graph.extraction import extractable
from reverie.kv.service import KvMemory
from reverie.llm.base import LLM, MALFORMED_ANSWER, Message
from reverie.llm.usage import agent_context
from reverie.memory.longterm import LongTermMemory
from reverie.proactive.access import AccessBatch
from reverie.proactive.turns import PendingTurn, TurnMemorizer
from reverie.proactive.upkeep import (
    KV_PREFIX,
    KV_SOURCE,
    ConsolidationReport,
    ProactiveUpkeep,
    SweepReport,
    UpkeepConfig,
    copied_to_kv,
    is_proactive,
)
from reverie.recall.hybrid import HybridSearch
from reverie.storage.base import FactFilter, Store
from reverie.types import Change, MemoryEntry, SaveResult, Scope, SearchHit, SearchResults, TurnRecord, user_agent

log = logging.getLogger("reverie.proactive")

PURPOSE = "auto_memorize"  # the label of its calls in the LLM usage ledger
MAX_MESSAGE_CHARS = 100_000
MAX_LIST = 1000


class MemorizeAnswer(BaseModel):
    """The answer the prompt asks for; its items are checked one by one (``core.proactive.proposals``)."""

    model_config = ConfigDict(extra="ignore")

    memories: list[Any]


@dataclass(frozen=True, slots=True)
class ProactiveConfig:
    """The knobs of proactive memory; the engine fills them from ``[proactive]``."""

    enabled: bool = True
    categories: tuple[str, ...] = CATEGORIES
    session_ttl_hours: float = 24.0
    retrieve_limit: int = 8
    min_similarity: float | None = None
    agent_min_similarity: Mapping[str, float] = field(default_factory=dict, hash=False)
    consolidate_every: int = 10
    memorize_on_turn: bool = False
    max_input_chars: int = 8000  # of each message sent to the LLM
    max_tokens: int = 2048  # room for a reasoning model's <think> block before the JSON
    upkeep: UpkeepConfig = field(default_factory=UpkeepConfig)


@dataclass(frozen=True, slots=True)
class Remembered:
    """One memory a memorize saved: where it lives and how (``outcome``: created, reinforced, extended or
    superseded, as the save pipeline decided), its scope kind, and whether it was copied to the key-value memory
    and queued for the graph."""

    id: str
    content: str
    category: str
    kind: str
    outcome: str
    confidence: float
    kv: bool
    graph: bool
    entry: MemoryEntry


@dataclass(frozen=True, slots=True)
class MemorizeResult:
    """What a memorize did. ``method``: ``llm``, ``rules`` or ``given`` (``remember``). ``dropped``: proposed
    memories refused (unknown category, bad shape). ``error``: why nothing was saved (a malformed answer).
    ``evicted``: ids the cap archived. ``consolidation``: the auto-consolidation this call triggered."""

    saved: tuple[Remembered, ...]
    method: str
    dropped: int = 0
    error: str | None = None
    evicted: tuple[str, ...] = ()
    consolidation: ConsolidationReport | None = None


class ProactiveMemory:
    """Proactive memory over one store (``rv.proactive``)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        memory: LongTermMemory,
        recall: HybridSearch,
        kv: KvMemory,
        config: ProactiveConfig | None = None,
        *,
        llm: LLM | None = None,
        prompt: Callable[[], str] | None = None,
        graph: bool = False,
        on_read: Callable[[list[str]], None] | None = None,
    ) -> None:
        """``llm`` and ``prompt`` (required together): extraction by the LLM, else by rules. ``graph``: the
        engine extracts saved entries into the knowledge graph. ``on_read`` is told the ids retrieved."""
        if llm is not None and prompt is None:
            raise ValueError("an LLM extraction needs its prompt")
        self._store = store
        self._clock = clock
        self._memory = memory
        self._recall = recall
        self._kv = kv
        self.config = config or ProactiveConfig()
        self._llm = llm
        self._prompt = prompt
        self._graph = graph
        self._on_read = on_read or (lambda _ids: None)
        self._floors = dict(self.config.agent_min_similarity)
        self.upkeep = ProactiveUpkeep(store, clock, kv, self.config.upkeep, embedder=recall.embedder, recall=recall)
        self._accesses = AccessBatch(store, clock, self.config.upkeep.confidence_decay_rate)
        self.turns: TurnMemorizer | None = None
        if llm is not None:
            self.turns = TurnMemorizer(self._memorize_turn, busy=lambda: llm.busy)

    @property
    def method(self) -> str:
        """How ``auto_memorize`` extracts: ``llm`` or ``rules``."""
        return "rules" if self._llm is None else "llm"

    # -- memorize ----------------------------------------------------------------------------------------------
    def auto_memorize(
        self, user_message: str, assistant_message: str | None = None, *, scope: Scope | None = None
    ) -> MemorizeResult:
        """Extract what is worth remembering from a turn and save it (seed 004's auto_memorize): with an LLM,
        one call with the ``auto-memorize.md`` prompt; without, the rules (``core.proactive_rules``), which read
        the user's message only. ``scope`` is the turn's (agent, user, session). Raises ``ValidationError``, and
        ``LLMError`` when the LLM fails (nothing is saved then)."""
        clean = validate.scope(scope)
        said = _message(user_message, "user_message")
        answer = "" if assistant_message is None else _message(assistant_message, "assistant_message")
        if self._llm is None:
            found = extract_by_rules(said, self.config.categories) if said.strip() else []
            return self._memorize(found, clean, "rules")
        if not said.strip() and not answer.strip():
            return self._memorize([], clean, "llm")
        found, dropped, error = self._ask(said, answer, clean)
        return self._memorize(found, clean, "llm", dropped=dropped, error=error)

    def remember(self, memories: Sequence[Mapping[str, Any]], *, scope: Scope | None = None) -> MemorizeResult:
        """Save memories the caller extracted itself: each ``{"content", "category", "scope", "confidence"}``
        (``scope``: user, agent or session, default user; ``confidence`` default 0.7), through the same rules
        as ``auto_memorize`` (scope fallback, cap, auto-consolidation). One bad item saves nothing
        (``ValidationError`` naming it)."""
        clean = validate.scope(scope)
        if isinstance(memories, str | Mapping) or not isinstance(memories, Sequence):
            raise ValidationError("memories must be a list of objects", field="memories")
        found: list[Proposed] = []
        for position, item in enumerate(memories):
            kept, _ = proposals([item], self.config.categories)
            if not kept:
                raise ValidationError(
                    f"memories[{position}] needs a content of 1 to 1000 characters, a category among "
                    f"{', '.join(self.config.categories)}, a scope among user, agent, session and a confidence "
                    "between 0 and 1",
                    field="memories",
                )
            found.append(kept[0])
        return self._memorize(found, clean, "given")

    def _ask(self, said: str, answer: str, scope: Scope) -> tuple[list[Proposed], int, str | None]:
        """The LLM's proposals, how many it made that were refused, and the error of a malformed answer."""
        llm, prompt = self._llm, self._prompt
        assert llm is not None and prompt is not None  # only with an LLM
        messages = [Message.system(prompt()), Message.user(self._turn_text(said, answer, scope))]
        try:
            with agent_context(scope.agent_id):  # the call is booked to the agent
                parsed, _ = llm.complete_json(
                    messages, MemorizeAnswer, max_tokens=self.config.max_tokens, purpose=PURPOSE
                )
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise
            log.warning("auto_memorize for %s: malformed answer, nothing saved: %s", scope.agent_id, exc)
            return [], 0, f"malformed answer ({exc.reason}): {exc}"
        kept, dropped = proposals(parsed.memories, self.config.categories)
        if dropped:
            log.info("auto_memorize for %s: %d proposed memories refused", scope.agent_id, dropped)
        return kept, dropped, None

    def _turn_text(self, said: str, answer: str, scope: Scope) -> str:
        cut = self.config.max_input_chars
        known = ((USER, scope.user_id is not None), (AGENT, True), (SESSION, scope.session_id is not None))
        lines = [
            "Categories: " + ", ".join(self.config.categories),
            "Scopes available: " + ", ".join(kind for kind, ok in known if ok),
            "",
            "The user said:",
            "<<<",
            said[:cut],
            ">>>",
        ]
        if answer.strip():
            lines += ["", "The assistant answered:", "<<<", answer[:cut], ">>>"]
        return "\n".join(lines)

    def _memorize(
        self, found: Sequence[Proposed], scope: Scope, method: str, *, dropped: int = 0, error: str | None = None
    ) -> MemorizeResult:
        """Save ``found`` in ``scope`` (each in its own transaction: a refused one costs only itself), then the
        cap and, when something new was saved, the call count and, every ``consolidate_every`` such calls,
        the auto-consolidation of what they saved (``ProactiveUpkeep.consolidate_fresh``)."""
        saved: list[Remembered] = []
        for proposed in found:
            try:
                saved.append(self._save(proposed, scope))
            except ValidationError as exc:
                dropped += 1
                log.info("auto_memorize for %s: a memory was refused: %s", scope.agent_id, exc)
        created = sum(1 for r in saved if r.outcome == "created" and r.kind != USER)
        user = scope.user_id if any(r.kind == USER and r.outcome == "created" for r in saved) else None
        evicted = self.upkeep.enforce_cap(scope.agent_id, user, created=created)
        consolidation = None
        # A reinforcement changes no text: only a call that saved something new can have made a duplicate.
        fresh = [r.entry for r in saved if r.outcome != "reinforced"]
        due = self.upkeep.note_saving_call(scope.agent_id, fresh, self.config.consolidate_every) if fresh else None
        if due is not None:
            consolidation = self.upkeep.consolidate_fresh(scope.agent_id, due, user_id=scope.user_id)
        return MemorizeResult(tuple(saved), method, dropped, error, tuple(evicted), consolidation)

    def _save(self, proposed: Proposed, scope: Scope) -> Remembered:
        """One memory: the entry through the save pipeline, its bookkeeping, its key-value copy."""
        now = self._clock.now()
        kind = effective_kind(proposed.kind, user_id=scope.user_id, session_id=scope.session_id)
        if proposed.category not in self.config.categories:
            raise ValidationError(f"category {proposed.category!r} is not a proactive category", field="category")
        state = State(kind, proposed.confidence, 0, now)
        metadata: dict[str, Any] = {META: state.as_metadata()}
        if kind == USER:  # shared by the user's agents: record whose save wrote it (dedup keeps the first writer)
            metadata[WRITTEN_BY] = scope.agent_id
        with self._store.transaction():
            result = self._memory.save_internal(
                proposed.content,
                scope=_target(kind, scope),
                category=proposed.category,
                tags=[TAG],
                source="inferred",
                metadata=metadata,
            )
            entry = self._settle(result, kind, proposed.confidence, now, scope.agent_id)
            copied = False
            if copied_to_kv(entry.scope) and is_proactive(entry) and result.outcome != "reinforced":
                copied = self._copy(entry)
        graph = self._graph and result.outcome != "reinforced" and extractable(entry)
        actual = state_of(entry.metadata)
        return Remembered(
            entry.id,
            entry.content,
            entry.category,
            actual.kind if actual is not None else kind,
            result.outcome,
            entry.confidence,
            copied,
            graph,
            entry,
        )

    def _settle(self, result: SaveResult, kind: str, confidence: float, now: datetime, agent_id: str) -> MemoryEntry:
        """The saved entry's confidence and expiry. A new entry takes its base confidence (and, in a session,
        its TTL); a proactive entry restated takes the higher base and renews its TTL (a user memory restated
        by another agent than its writer also lists ``agent_id`` in ``reinforcedBy``); an entry the agent
        saved itself that the memory restated is left as it is."""
        entry = result.entry
        if result.outcome == "created":
            state = State(kind, confidence, 0, now)
        else:
            old = state_of(entry.metadata)
            if old is None or TAG not in entry.tags:
                return entry
            state = replace(old, base=max(old.base, confidence), accessed_at=now)
        expires = now + timedelta(hours=self.config.session_ttl_hours) if state.kind == SESSION else entry.expires_at
        metadata = {**entry.metadata, META: state.as_metadata()}
        if state.kind == USER and result.outcome != "created":
            metadata = with_reinforcer(metadata, agent_id)
        settled = replace(
            entry,
            confidence=current_confidence(state, now, self.config.upkeep.confidence_decay_rate),
            expires_at=expires,
            metadata=metadata,
        )
        if settled != entry:
            self._store.facts.write(settled, change=Change.HOUSEKEEPING, at=now)
        return settled

    def _copy(self, entry: MemoryEntry) -> bool:
        """The key-value copy ``memory:{id}`` in the agent's key-value memory; False when the agent's key
        limit refuses it (logged: the entry stands without its copy)."""
        value = {"content": entry.content, "category": entry.category, "source": KV_SOURCE}
        try:
            self._kv.set(entry.scope.agent_id, KV_PREFIX + entry.id, value)
        except ValidationError as exc:
            log.warning("proactive memory %s has no key-value copy: %s", entry.id, exc)
            return False
        return True

    # -- memorize on turn ---------------------------------------------------------------------------------------
    def on_turn(self, turn: TurnRecord, user_id: str | None) -> None:
        """The conversation recorded a turn (``ConversationMemory``'s hook). With ``memorize_on_turn``, an
        assistant turn's answer and the user message before it are memorized: queued for the background thread
        with an LLM, at once by rules without. Never raises: the turn is recorded already."""
        cfg = self.config
        if not (cfg.enabled and cfg.memorize_on_turn) or turn.role != "assistant" or not turn.content.strip():
            return
        said = self._user_message_before(turn)
        if said is None:
            return
        pending = PendingTurn(said, turn.content, Scope(turn.agent_id, user_id, turn.session_id))
        if self.turns is not None:
            self.turns.submit(pending)
            return
        try:
            self._memorize_turn(pending)
        except ReverieError as exc:
            log.warning("memorize on turn %d of %s failed: %s", turn.index, turn.session_id, exc)

    def _memorize_turn(self, pending: PendingTurn) -> MemorizeResult:
        return self.auto_memorize(pending.user_message, pending.assistant_message, scope=pending.scope)

    def _user_message_before(self, turn: TurnRecord) -> str | None:
        """The user message the assistant turn answers: the last user turn before it, unless an earlier
        assistant answer already answered it (then it was memorized with that one)."""
        recent = self._store.sessions.turns(turn.agent_id, turn.session_id, last=16)
        for earlier in reversed([t for t in recent if t.index < turn.index]):
            if earlier.role == "user":
                return earlier.content if earlier.content.strip() else None
            if earlier.role == "assistant" and earlier.content.strip():
                return None
        return None

    def memorize_pending(self, limit: int | None = None) -> int:
        """Memorize the turns waiting for the background thread now, in this thread (tests, one-shot
        commands); returns how many. 0 without an LLM (turns are memorized as they are recorded). Raises
        ``LLMError`` when the LLM fails (the turn stays queued)."""
        return 0 if self.turns is None else self.turns.memorize_pending(limit)

    # -- retrieve -----------------------------------------------------------------------------------------------
    def auto_retrieve(
        self,
        query: str,
        *,
        scope: Scope | None = None,
        limit: int | None = None,
        min_similarity: float | None = None,
        peek: bool = False,
    ) -> SearchResults:
        """The proactive memories for ``query`` before a turn (seed 004's auto_retrieve): the agent's proactive
        entries ``scope`` sees and the user's user-level memory, each searched by hybrid recall and fused by
        reciprocal rank (each search's scores are normalised over its own candidates, so scores of the two
        are not comparable; ranks are). An empty query gives the most recent ones. With an embedder and a
        floor (``min_similarity``, else the agent's, else the deployment's), a memory whose cosine similarity
        is below it is not returned at all; without an embedder the floor is inert. Counts an access of every
        memory returned (its ``access_count`` and ``accessed_at``, its confidence recomputed: the hits show it,
        the store has it after the next ``flush_accesses``). Reads only: the decay sweep is the dream's.
        ``peek``: count no access and no read (the console's context preview)."""
        clean = validate.scope(scope)
        looked = validate.flag(peek, name="peek")
        text = validate.query(query)
        count = validate.limit(self.config.retrieve_limit if limit is None else limit, maximum=100)
        floor = None if min_similarity is None else validate.unit_interval(min_similarity, name="min_similarity")
        floor = self._floor(clean.agent_id, floor)
        rankings = [self._search(text, clean, count, floor)]
        if clean.user_id is not None:
            shared = Scope(agent_id=user_agent(clean.user_id), user_id=clean.user_id)
            rankings.append(self._search(text, shared, count, floor))
        hits = {h.entry.id: h for ranking in rankings for h in ranking}
        fused = reciprocal_rank_fusion([[h.entry.id for h in r] for r in rankings])[:count]
        chosen = [hits[i].entry for i, _ in fused]
        touched = {} if self._store.read_only or looked else self._accesses.note(chosen)  # read-only: nothing counts
        if not looked:
            self._on_read([i for i, _ in fused])
        out = [SearchHit(touched.get(i, hits[i].entry), score, hits[i].matched_by) for i, score in fused]
        return SearchResults(out, mode="proactive")

    def for_context(self, message: str, scope: Scope, peek: bool = False) -> list[SearchHit]:
        """``auto_retrieve`` for the per-turn context builder: nothing when proactive memory is disabled."""
        if not self.config.enabled:
            return []
        return list(self.auto_retrieve(message, scope=scope, peek=peek))

    def _floor(self, agent_id: str, per_call: float | None) -> float | None:
        """min_similarity: per call, then per agent, then the deployment's; None without an embedder."""
        if self._recall.embedder is None:
            return None
        for value in (per_call, self._floors.get(agent_id), self.config.min_similarity):
            if value is not None:
                return value
        return None

    def _search(self, query: str, scope: Scope, limit: int, floor: float | None) -> list[SearchHit]:
        now = self._clock.now()
        flt = FactFilter(scope=scope, now=now)
        if not query.strip():
            recent = self._store.facts.recent(flt, max(limit * 10, 100))
            return [SearchHit(e, 0.0, "recent") for e in recent if is_proactive(e)][:limit]
        wanted = max(limit * 4, self._recall.config.candidates)
        found = self._recall.search(query, flt, wanted, min_similarity=floor)
        hits = [h for h in found if is_proactive(h.entry)]
        if floor is not None:  # only memories the embedder scored at or above the floor
            hits = [h for h in hits if "vector" in h.matched_by]
        return hits[:limit]

    def flush_accesses(self) -> int:
        """Write the accesses ``auto_retrieve`` counted since the last flush, in one transaction; returns how
        many memories were updated (``proactive.access``: also on its own when many wait, and at close)."""
        return self._accesses.flush()

    # -- browse, forget, upkeep --------------------------------------------------------------------------------
    def list(
        self,
        *,
        scope: Scope | None = None,
        category: str | None = None,
        limit: int = 100,
        include_user: bool = True,
    ) -> builtins.list[MemoryEntry]:
        """The live proactive memories ``scope`` sees, newest first (by creation): the agent's ones visible to
        ``scope`` (as every read: agent-wide ones, and the user's and the session's when ``scope`` names them)
        and, with ``include_user`` and a user in ``scope``, the user's user-level memory."""
        clean = validate.scope(scope)
        wanted = validate.category_prefix(category)
        count = validate.limit(limit, maximum=MAX_LIST)
        self._flush_waiting()
        now = self._clock.now()
        found = [e for e in self.upkeep.live_entries(clean.agent_id, now) if clean.sees(e.scope)]
        if include_user and clean.user_id is not None:
            found += self.upkeep.user_entries(clean.user_id, now)
        if wanted is not None:
            found = [e for e in found if e.category == wanted or e.category.startswith(wanted + "/")]
        return sorted(found, key=lambda e: (e.created_at, e.id), reverse=True)[:count]

    def user_memories(
        self, user_id: str, *, category: str | None = None, limit: int = 100
    ) -> builtins.list[MemoryEntry]:
        """The user's live user-level memory (shared by all their agents), newest first."""
        user = validate.identifier(user_id, name="user_id")
        wanted = validate.category_prefix(category)
        count = validate.limit(limit, maximum=MAX_LIST)
        self._flush_waiting()
        found = self.upkeep.user_entries(user, self._clock.now())
        if wanted is not None:
            found = [e for e in found if e.category == wanted or e.category.startswith(wanted + "/")]
        return sorted(found, key=lambda e: (e.created_at, e.id), reverse=True)[:count]

    def find(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """The proactive memory ``forget`` would archive: one ``scope`` sees (the agent's, or the user's
        user-level memory when ``scope`` names the user), archived or not. Raises ``NotFound`` for any other
        id. (The HTTP API reads it first: an agent key may archive only the user memories its agent wrote.)"""
        clean = validate.scope(scope)
        clean_id = validate.identifier(entry_id, name="id")
        self._flush_waiting()
        entry = self._store.facts.get(clean_id, clean)
        if entry is None and clean.user_id is not None:
            entry = self._store.facts.get(clean_id, Scope(agent_id=user_agent(clean.user_id), user_id=clean.user_id))
        if entry is None or not is_proactive(entry):
            raise NotFound(f"no proactive memory with id {entry_id!r} in this scope")
        return entry

    def forget(self, entry_id: str, *, scope: Scope | None = None) -> MemoryEntry:
        """Archive a proactive memory ``scope`` sees (the agent's, or the user's user-level memory when
        ``scope`` names the user) and mark its key-value copy deleted. Raises ``NotFound`` for any other id."""
        entry = self.find(entry_id, scope=scope)
        if entry.archived:
            return entry
        with self._store.transaction():
            return self.upkeep.retire(entry, self._clock.now())

    def sweep(self, agent_id: str, *, force: bool = True) -> SweepReport:
        """Run the agent's decay sweep now (``force=False``: only when due, as the dream's maintenance does),
        from the accesses counted so far."""
        agent, forced = validate.agent_id(agent_id), validate.flag(force, name="force")
        self._flush_waiting()
        return self.upkeep.sweep(agent, force=forced)

    def consolidate(self, agent_id: str, *, user_id: str | None = None, full: bool = True) -> ConsolidationReport:
        """Merge duplicate proactive memories of the agent (and of ``user_id``'s user-level memory) now: the
        whole history with ``full`` (the default here), else the most recent ``consolidate_window``."""
        agent = validate.agent_id(agent_id)
        user = None if user_id is None else validate.identifier(user_id, name="user_id")
        whole = validate.flag(full, name="full")
        self._flush_waiting()
        return self.upkeep.consolidate(agent, user_id=user, full=whole)

    def _flush_waiting(self) -> None:
        """Write the waiting accesses before the memories are listed, swept or merged."""
        if self._accesses.pending:
            self._accesses.flush()

    def start(self) -> None:
        """Start the background memorizing of turns (with an LLM)."""
        if self.turns is not None:
            self.turns.start()

    def stop(self, timeout: float = 30.0) -> None:
        if self.turns is not None:
            self.turns.stop(timeout)


def _target(kind: str, scope: Scope) -> Scope:
    """Where a memory of ``kind`` (already resolved by ``effective_kind``) is stored."""
    if kind == USER and scope.user_id is not None:  # effective_kind gives USER only with a user id
        return Scope(agent_id=user_agent(scope.user_id), user_id=scope.user_id)
    if kind == SESSION:
        return scope
    return Scope(agent_id=scope.agent_id, user_id=scope.user_id)


def _message(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string", field=name)
    if "\x00" in value:
        raise ValidationError(f"{name} contains a NUL character", field=name)
    if len(value) > MAX_MESSAGE_CHARS:
        raise ValidationError(f"{name} is longer than {MAX_MESSAGE_CHARS:,} characters", field=name)
    return value
