"""What a dream pass is, and the context a run hands it.

A pass is an object with a ``name``, the capabilities it ``needs`` and ``run(ctx) -> PassReport``. The service
skips a pass whose capability is missing (no LLM, no embedder, no conversation log, no feedback store), so
the passes that need none still run.

Invariants of the context:
- Every LLM call of a pass goes through ``ctx.ask``: it waits while a user turn holds the LLM (polling, never
  queueing behind it), checks for an abort first, and counts calls, tokens and cost into the run.
- ``ctx.checkpoint()`` is where a run may stop: between clusters, batches and passes, never inside a write.
  It renews the run's lock and raises ``DreamStopped`` when the dream was aborted, its lock lost, or (for an
  idle-triggered run) a client became active.
- ``ctx.once(key, read)`` is the run's shared reads: every pass of one run gets the value the first one read
  (the service hands each pass the same ``shared`` dict). The agent's conversation log is read so, once per
  run, whatever the number of passes that learn from it (``conversation_log``); a turn logged during the run
  waits for the next one (the readers move their windows only past what they were shown, and preference
  inference clears only the records it read).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from reverie.clock import Clock
from reverie.core.coverage import Vocabulary
from reverie.errors import LLMError, ReverieError
from reverie.llm.base import LLM, MALFORMED_ANSWER, Completion, Message, parse_json_answer
from reverie.logs import JsonlFile
from reverie.storage.base import Store
from reverie.types import MemoryEntry

log = logging.getLogger("reverie.dream")
Answer = TypeVar("Answer", bound=BaseModel)
T = TypeVar("T")
CONVERSATION_LOG = "conversation_log"  # the ``once`` key of the agent's conversation-log records
LogRecords = Sequence[tuple[str, Mapping[str, Any]]]
Vector = npt.NDArray[np.float32]


class Capability(enum.StrEnum):
    LLM = "llm"
    EMBEDDER = "embedder"
    CONVERSATION_LOG = "conversation_log"
    FEEDBACK = "feedback"
    SKILLS = "skills"
    EXECUTION_LOG = "execution_log"
    TOOL_CALL_LOG = "tool_call_log"


class DreamStopped(Exception):
    """The run must stop at this checkpoint: ``reason`` is ``aborted``, ``cancelled`` (client activity during
    an idle-triggered run) or ``lost lock``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class PassReport:
    """What one pass did. ``status``: ``ran``, ``skipped`` (``reason`` says why) or ``failed``."""

    name: str
    status: str = "ran"
    reason: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    tokens: int = 0
    cost: float = 0.0
    summary: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "counts": dict(self.counts),
            "llm_calls": self.llm_calls,
            "tokens": self.tokens,
            "cost": self.cost,
            "summary": self.summary,
        }


@dataclass(slots=True)
class PassContext:
    """Everything a pass may use for one agent's run. ``llm`` is None without one (passes that need it are
    skipped before they see the context)."""

    agent_id: str
    store: Store
    clock: Clock
    home: Path
    llm: LLM | None
    vocabulary: Vocabulary
    ledger: Any  # DreamPassLedger (typed loosely to keep passes importable without the service)
    embedding_model: str | None
    checkpoint: Callable[[], None]
    wait_for_llm: Callable[[], None]
    report: PassReport = field(default_factory=lambda: PassReport(name=""))
    run_id: str = ""  # the run's id: evidence rows name it
    trigger: str = "scheduled"  # the run's trigger: scheduled, manual or idle
    # Publishes the pass's own progress (and its report so far) in the run record; a no-op outside the service.
    progress: Callable[[str], None] = field(default=lambda _text: None)
    shared: dict[str, Any] = field(default_factory=dict)  # the run's reads, shared by its passes (``once``)

    def now(self) -> datetime:
        return self.clock.now()

    def once(self, key: str, read: Callable[[], T]) -> T:
        """``read()``, called by the first pass of the run that asks for ``key``; the others get its value."""
        if key not in self.shared:
            self.shared[key] = read()
        return cast(T, self.shared[key])

    def vectors(self, entries: Sequence[MemoryEntry]) -> dict[str, Vector]:
        """The stored vectors (of the engine's embedding model) of those of ``entries`` that have one."""
        if self.embedding_model is None:
            return {}
        wanted = {e.id for e in entries}
        return {
            fact_id: np.frombuffer(blob, dtype=np.float32)
            for fact_id, blob in self.store.vectors.snapshot(self.agent_id, self.embedding_model).vectors
            if blob is not None and fact_id in wanted
        }

    def ask(
        self,
        messages: Sequence[Message],
        schema: type[Answer],
        *,
        purpose: str,
        max_tokens: int | None = 4096,
    ) -> tuple[Answer, Completion]:
        """One LLM call of the pass (see the module docstring). Raises ``LLMError`` (counted as a call when
        the server answered) or ``DreamStopped``."""
        if self.llm is None:
            raise RuntimeError("this pass needs an LLM")
        self.checkpoint()
        self.wait_for_llm()
        self.report.llm_calls += 1
        completion = self.llm.complete(messages, purpose=purpose, max_tokens=max_tokens, temperature=0.0)
        # Counted before the answer is parsed: a malformed answer cost its tokens too.
        self.report.tokens += completion.usage.total_tokens or 0
        self.report.cost += completion.cost
        return parse_json_answer(completion, schema), completion


class DreamPass(Protocol):
    """One step of a dream cycle."""

    @property
    def name(self) -> str: ...

    @property
    def needs(self) -> frozenset[Capability]: ...

    def run(self, ctx: PassContext) -> PassReport:
        """Do the pass for ``ctx.agent_id``; fill and return ``ctx.report``. May raise ``DreamStopped``."""
        ...


def ask_or_none(ctx: PassContext, messages: Sequence[Message], schema: type[Answer], purpose: str) -> Answer | None:
    """One ``ctx.ask`` whose malformed answer (``LLMError.reason`` in ``MALFORMED_ANSWER``) is counted in
    ``report.counts["malformed"]`` and gives None: the caller applies nothing and stamps nothing, so the next
    cycle retries. Any other ``LLMError`` (the endpoint failed) is re-raised: the pass fails."""
    try:
        answer, _ = ctx.ask(messages, schema, purpose=purpose)
    except LLMError as exc:
        if exc.reason not in MALFORMED_ANSWER:
            raise
        ctx.report.counts["malformed"] = ctx.report.counts.get("malformed", 0) + 1
        log.warning("DreamService: %s answer unusable (%s); nothing applied, retried next cycle", purpose, exc)
        return None
    return answer


def conversation_log(ctx: PassContext, read: Callable[[str], Iterable[tuple[str, Mapping[str, Any]]]]) -> LogRecords:
    """The agent's conversation-log records ``(session_id, record)`` as ``read(agent_id)`` gives them, read once
    per run (``PassContext.once``): the learning passes and skill-gap detection share one read."""
    return ctx.once(CONVERSATION_LOG, lambda: tuple(read(ctx.agent_id)))


def write_dream_log(dream_log: JsonlFile | None, record: Mapping[str, Any]) -> None:
    """Append one line to ``<home>/logs/dream.jsonl``, best effort: the store is the record, so a line that
    cannot be written (an I/O error, the writer lock held too long, a value JSON cannot hold) is logged and
    dropped, never allowed to fail the pass that did the work."""
    if dream_log is None:
        return
    try:
        dream_log.append(record)
    except (OSError, ReverieError) as exc:
        log.warning("DreamService: could not write the dream log: %s", exc)
