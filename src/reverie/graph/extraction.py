"""Extraction (issue 9, part 3): each saved entry's entities and relations, learned by the knowledge graph
in the background, with the entry as their provenance.

The flow: ``LongTermMemory.save`` (never ``save_many``: bulk ingestion is not extracted) queues an entry it
creates or extends, in the save's own transaction, when ``extractable`` says so. ``GraphExtractionQueue``
lists the queue, reads each entry and extracts from it — with the LLM (mode ``llm``: one call, the prompt
``graph-extract.md``, answer ``{"entities": [{"type", "name"}], "relations": [{"from", "relation", "to"}]}``)
or by rules (mode ``rules``: ``core.extract``'s names, dates and numbers, linked ``mentioned_with``) — then
writes what it learned through ``KnowledgeGraph`` with the entry's id in ``sources`` and takes the entry out
of the queue, in one transaction. Entries sharing an entity are then linked: ``include_related`` and
``memory_explore`` walk from an entry to the others that name the same entity (``memory.explore``).

Why a small table (``graph_extraction``) and not a flag column beside ``expand_pending``: the queue is the
graph's bookkeeping, not part of an entry. A column would add a field no caller reads to every
``MemoryEntry`` (a public type, in every API answer and both row codecs), and clearing it would rewrite the
entry's row, moving its change log (which the search index and the dream's change gate follow) with no
change of text. A queue row is inserted and deleted on its own, the purge removes it with its entry, and the
portable catalog copies it, so a copied store keeps its pending work.

Invariants:
- Durable: the queue lives in the store; a crash or a restart loses no pending extraction, and no state is
  kept in memory between runs.
- Never blocks the caller: a save only inserts a queue row; the work runs on the queue's own thread
  (``start``) or wherever ``extract_pending`` is called.
- Bounded: at most one LLM call per queued entry and run. A malformed answer (no JSON object, cut off, the
  wrong shape) takes the entry out of the queue with nothing learned (logged), never an exception to anyone.
  A failing LLM (HTTP, timeout, connection) leaves every entry queued: the background thread retries with
  back-off and ``extract_pending`` raises the ``LLMError``. Before each call the queue checks ``llm.busy``
  and, while a user turn holds the LLM, stops and looks again every ``busy_poll_seconds``. Rules never wait.
- All or nothing per entry: its graph writes and its leaving the queue are one transaction, which first
  claims the entry (``graph_extraction_done``), so two workers sharing a store never both write one entry's
  extraction. An entry whose text changed while it was read stays queued and is read again.
- The host checks what it learns: an item the graph refuses (a name over 200 characters, a bare name that
  names two entities) is skipped and logged, never the entry; every entity and relation is capped per entry.
- An entry deleted meanwhile (archived, not superseded) or contradicted by a later one (superseded, not
  archived) teaches nothing; one folded into another (archived, superseded) teaches what it said, with the
  entry it was folded into as the source, the one still readable.
- Scope: the graph is the agent's, readable by every user of the agent, so it learns only from agent-wide
  entries (no user, no session): names in a user's private entries never reach it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from reverie.core import extract as rules
from reverie.core.extract import Extraction
from reverie.errors import LLMError, NotFound, ValidationError
from reverie.graph.service import KnowledgeGraph
from reverie.llm.base import LLM, MALFORMED_ANSWER, Message
from reverie.llm.usage import agent_context
from reverie.memory.dedup import EXPANDED_FROM, bypasses
from reverie.runtime.background import BackgroundService
from reverie.storage.base import Store
from reverie.types import MemoryEntry

log = logging.getLogger("reverie.graph.extraction")

PURPOSE = "graph_extraction"  # the label of its calls in the LLM usage ledger
MODES = ("auto", "llm", "rules", "off")


class GraphAnswer(BaseModel):
    """The answer the prompt asks for. Both lists are required (an empty list is an answer); their items
    are checked one by one by the host (``core.extract.from_answer``), so one bad item costs only itself."""

    model_config = ConfigDict(extra="ignore")

    entities: list[Any]
    relations: list[Any]


@dataclass(frozen=True, slots=True)
class ExtractionConfig:
    """Bounds and timing of the queue; the engine fills them from ``[graph]``."""

    max_entities: int = 24
    max_relations: int = 40
    window: int = 4  # rules: mentions apart within which two are mentioned_with each other
    max_input_chars: int = 8000  # of an entry's text read (the LLM is sent at most this)
    max_tokens: int = 2048  # room for a reasoning model's <think> block before the JSON
    batch_size: int = 16
    poll_seconds: float = 60.0  # the background thread looks for work this often even unwoken
    busy_poll_seconds: float = 5.0  # while a user turn holds the LLM
    retry_seconds: float = 5.0  # first wait after a failure; doubles up to max_retry_seconds
    max_retry_seconds: float = 300.0


@dataclass(frozen=True, slots=True)
class _Run:
    extracted: int
    deferred: bool  # stopped because a user turn holds the LLM


def extractable(entry: MemoryEntry) -> bool:
    """Whether a saved entry is queued for extraction: agent-wide (see the module: the graph is read by
    every user of the agent), not one deduplication leaves alone (feedback/*, claim/capability/*, sequence
    members), and not a fact an expansion read out of another entry (its original is extracted already,
    which also keeps one LLM call per save)."""
    scope = entry.scope
    return (
        scope.user_id is None
        and scope.session_id is None
        and not bypasses(entry)
        and EXPANDED_FROM not in entry.metadata
    )


def resolve_mode(mode: str, *, has_llm: bool) -> str | None:
    """The mode a ``[graph] extraction`` setting means: ``llm`` or ``rules``, None for ``off``. ``auto`` is
    ``llm`` with an LLM, else ``rules``. Raises ``ValueError`` for ``llm`` without an LLM, or an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"graph.extraction must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "off":
        return None
    if mode == "llm" and not has_llm:
        raise ValueError('graph.extraction = "llm" needs an LLM: configure [llm], or use "rules" or "auto"')
    if mode == "auto":
        return "llm" if has_llm else "rules"
    return mode


class GraphExtractionQueue(BackgroundService):
    """Extracts queued entries into the knowledge graph, in the background (``start``) or on demand
    (``extract_pending``). With ``llm`` the LLM reads each entry; without, the rules do."""

    thread_name = "reverie-graph-extraction"

    def __init__(
        self,
        store: Store,
        graph: KnowledgeGraph,
        *,
        llm: LLM | None = None,
        prompt: Callable[[], str] | None = None,
        config: ExtractionConfig | None = None,
    ) -> None:
        """``prompt`` returns the LLM's instructions (called once per run, so an edit takes effect then);
        required with ``llm``."""
        if llm is not None and prompt is None:
            raise ValueError("an LLM extraction needs its prompt")
        self._store = store
        self._graph = graph
        self._llm = llm
        self._prompt = prompt
        self.config = config or ExtractionConfig()
        super().__init__()
        self._run_lock = threading.Lock()
        self.last_error: str | None = None

    @property
    def mode(self) -> str:
        """``llm`` or ``rules``."""
        return "rules" if self._llm is None else "llm"

    # -- on demand ---------------------------------------------------------------------------------------
    def extract_pending(self, limit: int | None = None) -> int:
        """Extract queued entries now, in this thread, until none are left (or ``limit``). Returns how many
        entries left the queue with their extraction written (a malformed answer counts too: it was
        handled). Stops early, leaving the rest queued, while ``llm.busy``. Raises ``LLMError`` when the
        LLM fails; every entry not yet extracted then stays queued."""
        return self._run(limit).extracted

    def _run(self, limit: int | None) -> _Run:
        with self._run_lock:
            prompt = self._prompt() if self._llm is not None and self._prompt is not None else ""
            done = 0
            for entry_id in self._pending():
                if (limit is not None and done >= limit) or self._stop.is_set():
                    break
                if self._llm is not None and self._llm.busy:
                    return _Run(done, deferred=True)
                done += self._extract_one(entry_id, prompt)
            return _Run(done, deferred=False)

    def _pending(self) -> Iterator[str]:
        """Queued ids in queue order, once each per run (the cursor passes those left queued)."""
        cursor = 0
        while batch := self._store.facts.graph_extraction_pending(self.config.batch_size, after=cursor):
            for position, entry_id in batch:
                cursor = position
                yield entry_id

    def _extract_one(self, entry_id: str, prompt: str) -> int:
        """Extract one entry: 1 when it left the queue (learned from, or dropped: gone, deleted, a malformed
        answer), 0 when it stays queued (its text changed meanwhile) or another worker took it."""
        scope = self._store.facts.owner(entry_id)
        entry = None if scope is None else self._store.facts.get(entry_id, scope)
        # Superseded without being archived: a later entry contradicts it, and relations read out of a belief
        # that no longer holds would invalidate the current ones.
        ended = entry is not None and not entry.archived and entry.superseded_by is not None
        if entry is None or (entry.archived and entry.superseded_by is None) or ended or not extractable(entry):
            return int(self._finish(entry_id, None, None))  # purged, deleted, contradicted or not agent-wide
        learned = self._ask(entry, prompt) if self._llm is not None else self._by_rules(entry)
        return int(self._finish(entry_id, entry, learned))

    # -- the two extractors --------------------------------------------------------------------------------
    def _text(self, entry: MemoryEntry) -> tuple[str, bool]:
        text = entry.content
        return (text[: self.config.max_input_chars], True) if len(text) > self.config.max_input_chars else (text, False)

    def _by_rules(self, entry: MemoryEntry) -> Extraction:
        agent = entry.scope.agent_id
        text, _ = self._text(entry)
        return rules.extract(
            text,
            known=lambda key: bool(self._store.graph.entities_by_key(agent, key)),
            max_entities=self.config.max_entities,
            window=self.config.window,
            max_relations=self.config.max_relations,
        )

    def _ask(self, entry: MemoryEntry, prompt: str) -> Extraction | None:
        """The LLM's extraction of ``entry``, or None for a malformed answer (logged). Raises ``LLMError``
        when the LLM fails."""
        llm = self._llm
        assert llm is not None  # only called in llm mode
        try:
            with agent_context(entry.scope.agent_id):  # the call is booked to the entry's agent
                answer, _ = llm.complete_json(
                    self._messages(prompt, entry), GraphAnswer, max_tokens=self.config.max_tokens, purpose=PURPOSE
                )
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise  # the endpoint failed: everything stays queued, the caller backs off
            log.warning("graph extraction of %s: malformed answer, nothing learned: %s", entry.id, exc)
            return None
        found = rules.from_answer(
            answer.entities,
            answer.relations,
            max_entities=self.config.max_entities,
            max_relations=self.config.max_relations,
        )
        if found.dropped:
            log.warning("graph extraction of %s: %d item(s) of the answer refused", entry.id, found.dropped)
        return found

    def _messages(self, prompt: str, entry: MemoryEntry) -> list[Message]:
        text, cut = self._text(entry)
        lines = [f"Saved on: {(entry.updated_at or entry.created_at).date().isoformat()}"]
        lines.append(f"Category: {entry.category}")
        lines += ["", "The note" + (" (cut short; use only what is shown)" if cut else "") + ":", "<<<", text, ">>>"]
        return [Message.system(prompt), Message.user("\n".join(lines))]

    # -- applying ------------------------------------------------------------------------------------------
    def _finish(self, entry_id: str, entry: MemoryEntry | None, learned: Extraction | None) -> bool:
        """Write ``learned`` (None: nothing) with ``entry`` as provenance and take the entry out of the
        queue, in one transaction. False (nothing written) when another worker took it first, or when its
        text changed since it was read (it stays queued); an entry purged meanwhile leaves with nothing
        written."""
        with self._store.transaction():
            current = None if entry is None else self._store.facts.get(entry.id, entry.scope)
            if entry is not None and current is not None and current.content != entry.content:
                return False  # extended or edited while we read it: read it again
            if not self._store.facts.graph_extraction_done(entry_id):
                return False  # another worker took it
            if entry is None or current is None or learned is None:
                return True  # gone meanwhile, or a malformed answer: nothing to learn
            self._write(entry, learned)
        if learned.entities or learned.relations:
            log.info(
                "graph extraction of %s (%s): %d entities, %d relations",
                entry.id,
                self.mode,
                len(learned.entities),
                len(learned.relations),
            )
        return True

    def _write(self, entry: MemoryEntry, learned: Extraction) -> None:
        """Inside the transaction: every entity and relation, each refused one skipped (its savepoint rolls
        back only itself)."""
        agent = entry.scope.agent_id
        source = entry.superseded_by if entry.archived and entry.superseded_by else entry.id
        when = entry.updated_at or entry.created_at
        for entity in learned.entities:
            try:
                self._graph.add_entity(agent, entity.type, entity.name, sources=[source])
            except (ValidationError, NotFound) as exc:
                log.info("graph extraction of %s: entity %r skipped: %s", entry.id, entity.ref, exc)
        for rel in learned.relations:
            try:
                self._graph.add_relation(
                    agent, rel.source.ref, rel.relation, rel.target.ref, sources=[source], valid_from=when
                )
            except (ValidationError, NotFound) as exc:
                log.info(
                    "graph extraction of %s: relation %s -%s-> %s skipped: %s",
                    entry.id,
                    rel.source.ref,
                    rel.relation,
                    rel.target.ref,
                    exc,
                )

    # -- background --------------------------------------------------------------------------------------
    def _loop(self) -> None:
        self._serve_queue(lambda: self._run(None).deferred, self.config, "graph extraction")
