"""Background expansion of saves (seed 000): with an LLM configured, a note ``save`` stores is read by the
LLM into focused, self-contained facts, in the background. The note itself is saved at once and verbatim;
expansion never blocks the caller.

The flow: ``LongTermMemory.save`` (never ``save_many``: bulk ingestion is not expanded) flags a created or
extended entry ``expand_pending`` in the same transaction when ``expandable`` says so. ``ExpansionQueue``
lists flagged entries from the store, asks the LLM once per entry with the prompt ``memory-rules.md``
(re-read on every run: ``<home>/memory-rules.md`` overrides the shipped one), checks the proposed facts,
saves each through ``LongTermMemory.save(dedup=True)`` in the original's scope, and clears the flag.

Invariants:
- The queue lives in the store (``expand_pending``): a crash or a restart loses nothing. The only state in
  memory is the count of malformed answers per entry (below).
- Nothing is half-written: one expansion's saves and the cleared flag commit in one store transaction.
- Trust never rises through the LLM. An expanded fact's source is ``inferred`` whatever the original's:
  it is the agent's own reading of the text, and derived text is no more trusted than its weakest part
  (``core.provenance.least_trusted``), so a rewrite can never read as ``user``. A fact it restates keeps
  its own, higher source, since reinforcement keeps the most trusted one.
- An expanded fact carries ``metadata.expandedFrom`` (the original's id) and only the subject-time keys
  (``subjectTime``, ``subjectTimeStart``, ``subjectTimeEnd``) that are well formed. It never folds into
  its original (``memory.dedup``), and a fact equal to the original (ignoring case, spacing and a final
  period) is not saved. Expanded facts are never expanded again. An extended original is read again
  whole: facts an earlier reading saved are then reinforced, as the note was said again.
- A user turn never queues behind expansion: before each call the queue checks ``llm.busy`` and, when it
  is set, stops and looks again every ``busy_poll_seconds`` (only a call already in flight can overlap).
- A failing LLM (HTTP, timeout, connection, a body that is not a completion) leaves every entry pending;
  the background thread retries with back-off, and ``expand_pending`` raises the ``LLMError``. A
  malformed answer (no JSON object, cut off, the wrong shape) leaves its entry pending too, until
  ``max_attempts`` malformed answers in this process: then the entry leaves the queue unexpanded
  (logged). Giving up loses nothing, as the original is kept whole; a restart allows ``max_attempts`` more.
- An original deleted meanwhile (archived, not superseded) leaves the queue unexpanded, and so does one a
  later entry contradicts (superseded, not archived: it no longer holds); one folded into another entry
  (archived, superseded) is still expanded, as what it said stands. An original whose text
  changed while the LLM read it stays pending and is read again.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.clock import Clock
from reverie.core import validate
from reverie.core.coverage import category_matches
from reverie.core.provenance import least_trusted
from reverie.core.subject_time import SUBJECT_TIME, SUBJECT_TIME_END, SUBJECT_TIME_START, merge_subject_time
from reverie.errors import LLMError, ValidationError
from reverie.llm.base import LLM, MALFORMED_ANSWER, Message
from reverie.llm.usage import agent_context
from reverie.memory.dedup import BYPASS_CATEGORIES, EXPANDED_FROM, bypasses
from reverie.memory.longterm import LongTermMemory
from reverie.runtime.background import BackgroundService
from reverie.storage.base import Store
from reverie.types import Change, MemoryEntry

log = logging.getLogger("reverie.expansion")

PURPOSE = "expansion"  # the label of its calls in the LLM usage ledger
INFERRED = "inferred"


class ProposedFact(BaseModel):
    """One fact as the LLM proposes it. Only the shape is checked here; the values are checked (and a bad
    one dropped, not the fact) by the queue."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    content: str
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    importance: float | None = None
    subject_time: str | int | None = Field(None, alias=SUBJECT_TIME)
    subject_time_start: str | int | None = Field(None, alias=SUBJECT_TIME_START)
    subject_time_end: str | int | None = Field(None, alias=SUBJECT_TIME_END)


class ExpansionAnswer(BaseModel):
    """The answer the prompt asks for: ``{"entries": [...]}`` (an empty list is an answer)."""

    model_config = ConfigDict(extra="ignore")

    entries: list[ProposedFact]


@dataclass(frozen=True, slots=True)
class ExpansionConfig:
    """Bounds and timing of the queue. ``max_input_chars`` cuts a longer note before it is sent (the note
    itself is kept whole); ``max_facts`` keeps the first facts of a longer answer."""

    max_input_chars: int = 12_000
    max_facts: int = 20
    max_tokens: int = 4_096  # room for a reasoning model's <think> block before the JSON
    max_attempts: int = 3  # malformed answers per entry (per process) before it leaves the queue
    batch_size: int = 16
    poll_seconds: float = 60.0  # the background thread looks for work this often even unwoken
    busy_poll_seconds: float = 5.0  # while a user turn holds the LLM
    retry_seconds: float = 5.0  # first wait after an LLM failure; doubles up to max_retry_seconds
    max_retry_seconds: float = 300.0


@dataclass(frozen=True, slots=True)
class _Fact:
    """A proposed fact after the host's checks: ready for ``LongTermMemory.save``."""

    content: str
    category: str
    tags: tuple[str, ...]
    importance: float
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Run:
    expanded: int
    deferred: bool  # stopped because a user turn holds the LLM


def expandable(entry: MemoryEntry) -> bool:
    """Whether a saved entry is queued for expansion: not one deduplication leaves alone (feedback/*,
    claim/capability/*, sequence members, whose identity is their owner's or their position), and not a
    fact an expansion produced (expansions are never expanded again)."""
    return not bypasses(entry) and EXPANDED_FROM not in entry.metadata


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".")


def _deleted(entry: MemoryEntry) -> bool:
    """Archived without a successor (deleted), or superseded without being archived (a later entry
    contradicts it: what it said no longer holds, and facts read out of it would contradict the current
    belief back)."""
    return (entry.archived and entry.superseded_by is None) or (not entry.archived and entry.superseded_by is not None)


class ExpansionQueue(BackgroundService):
    """Expands pending entries, in the background (``start``) or on demand (``expand_pending``)."""

    thread_name = "reverie-expansion"

    def __init__(
        self,
        store: Store,
        llm: LLM,
        clock: Clock,
        memory: LongTermMemory,
        *,
        rules: Callable[[], str],
        config: ExpansionConfig | None = None,
    ) -> None:
        """``rules`` returns the expansion prompt; it is called once per run, so edits take effect then.
        ``memory`` is the long-term memory the facts are saved through (deduplication included)."""
        self._store = store
        self._llm = llm
        self._clock = clock
        self._memory = memory
        self._rules = rules
        self.config = config or ExpansionConfig()
        self._attempts: dict[str, int] = {}
        super().__init__()
        self._run_lock = threading.Lock()
        self.last_error: str | None = None

    # -- on demand ---------------------------------------------------------------------------------------
    def expand_pending(self, limit: int | None = None) -> int:
        """Expand pending entries now, in this thread, until none are left (or ``limit``). Returns how many
        were expanded. Stops early, leaving the rest pending, when ``llm.busy`` (a user turn is in flight).
        Raises ``LLMError`` when the LLM fails; every entry not yet expanded then stays pending."""
        return self._run(limit).expanded

    def _run(self, limit: int | None) -> _Run:
        with self._run_lock:
            rules = self._rules()
            done = 0
            for fact_id in self._pending():
                if (limit is not None and done >= limit) or self._stop.is_set():
                    break
                if self._llm.busy:
                    return _Run(done, deferred=True)
                done += self._expand_one(fact_id, rules)
            return _Run(done, deferred=False)

    def _pending(self) -> Iterator[str]:
        """Pending ids in insertion order, once each per run (a cursor passes those left pending)."""
        cursor = 0
        while batch := self._store.facts.expansion_pending(self.config.batch_size, after=cursor):
            for position, fact_id in batch:
                cursor = position
                yield fact_id

    def _expand_one(self, fact_id: str, rules: str) -> int:
        """Expand one entry: 1 when its facts were saved and its flag cleared, else 0."""
        scope = self._store.facts.owner(fact_id)
        original = None if scope is None else self._store.facts.get(fact_id, scope)
        if original is None or not original.expand_pending:
            return 0
        if _deleted(original):
            self._finish(original, [])
            return 0
        try:
            with agent_context(original.scope.agent_id):  # the call is booked to the entry's agent
                answer, _ = self._llm.complete_json(
                    self._messages(rules, original), ExpansionAnswer, max_tokens=self.config.max_tokens, purpose=PURPOSE
                )
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise  # the endpoint failed: everything stays pending, the caller backs off
            self._malformed(original, exc)
            return 0
        facts = self._checked(original, answer)
        if not self._finish(original, facts):
            return 0
        self._attempts.pop(original.id, None)
        log.info("expanded %s into %d fact(s)", original.id, len(facts))
        return 1

    def _messages(self, rules: str, original: MemoryEntry) -> list[Message]:
        text = original.content
        cut = len(text) > self.config.max_input_chars
        if cut:
            text = text[: self.config.max_input_chars]
        lines = [f"Saved on: {original.created_at.date().isoformat()}"]
        if original.updated_at is not None:
            lines.append(f"Last added to on: {original.updated_at.date().isoformat()}")
        lines.append(f"Category: {original.category}")
        if original.tags:
            lines.append(f"Tags: {', '.join(original.tags)}")
        lines += ["", "The note" + (" (cut short; use only what is shown)" if cut else "") + ":", "<<<", text, ">>>"]
        return [Message.system(rules), Message.user("\n".join(lines))]

    # -- checking and applying ---------------------------------------------------------------------------
    def _checked(self, original: MemoryEntry, answer: ExpansionAnswer) -> list[_Fact]:
        """The proposed facts worth saving: each checked, duplicates and restatements of the original out."""
        if len(answer.entries) > self.config.max_facts:
            log.warning(
                "expansion of %s proposed %d facts; keeping the first %d",
                original.id,
                len(answer.entries),
                self.config.max_facts,
            )
        seen = {_normalised(original.content)}
        out: list[_Fact] = []
        for proposed in answer.entries[: self.config.max_facts]:
            fact = self._fact(original, proposed)
            if fact is None or _normalised(fact.content) in seen:
                continue
            seen.add(_normalised(fact.content))
            out.append(fact)
        return out

    def _fact(self, original: MemoryEntry, proposed: ProposedFact) -> _Fact | None:
        """One proposed fact as it will be saved, or None when its text cannot be. A bad category, tag or
        importance falls back to the original's; a malformed subject time is dropped."""
        content = proposed.content.strip()
        if not content or len(content) > self._memory.config.max_content_chars:
            return None
        try:
            category = validate.category(proposed.category, default=original.category)
        except ValidationError:
            category = original.category
        if any(category_matches(category, prefix) for prefix in BYPASS_CATEGORIES):
            category = original.category  # feedback/*, claim/capability/*: their owners' ids, not the LLM's
        try:
            tags = validate.tags([*original.tags, *proposed.tags])
        except ValidationError:
            tags = original.tags
        importance = original.importance
        if proposed.importance is not None and math.isfinite(proposed.importance):
            importance = min(1.0, max(0.0, proposed.importance))
        when = {
            SUBJECT_TIME: proposed.subject_time,
            SUBJECT_TIME_START: proposed.subject_time_start,
            SUBJECT_TIME_END: proposed.subject_time_end,
        }
        metadata: dict[str, Any] = {EXPANDED_FROM: original.id}
        metadata.update(merge_subject_time([{k: str(v) for k, v in when.items() if v is not None}]))
        return _Fact(content=content, category=category, tags=tags, importance=importance, metadata=metadata)

    def _finish(self, original: MemoryEntry, facts: list[_Fact]) -> bool:
        """Save ``facts`` and clear the original's flag, in one transaction. False (nothing written) when
        the original is gone, no longer pending, or its text changed since it was read."""
        source = least_trusted(original.source, INFERRED)  # always "inferred": see the module docstring
        with self._store.transaction():
            current = self._store.facts.get(original.id, original.scope)
            if current is None or not current.expand_pending or current.content != original.content:
                return False
            for fact in [] if _deleted(current) else facts:  # deleted while the LLM read it: save nothing
                try:
                    self._memory.save(
                        fact.content,
                        category=fact.category,
                        tags=fact.tags,
                        source=source,
                        importance=fact.importance,
                        tier=original.tier,
                        metadata=fact.metadata,
                        scope=original.scope,
                        dedup=True,
                    )
                except ValidationError as exc:  # validated before any write: skipping it leaves nothing behind
                    log.warning("an expanded fact of %s was refused and skipped: %s", original.id, exc)
            now = self._clock.now()
            self._store.facts.write(replace(current, expand_pending=False), change=Change.HOUSEKEEPING, at=now)
        return True

    def _malformed(self, original: MemoryEntry, exc: LLMError) -> None:
        attempts = self._attempts.get(original.id, 0) + 1
        if attempts < self.config.max_attempts:
            self._attempts[original.id] = attempts
            log.warning("expansion of %s: malformed answer %d, will retry: %s", original.id, attempts, exc)
            return
        self._attempts.pop(original.id, None)
        log.warning(
            "expansion of %s: %d malformed answers, giving up (the entry is kept as saved): %s",
            original.id,
            attempts,
            exc,
        )
        self._finish(original, [])

    # -- background --------------------------------------------------------------------------------------
    def _loop(self) -> None:
        self._serve_queue(lambda: self._run(None).deferred, self.config, "expansion")
