"""``ToolServices``: exactly the services the agent tools' handlers use, and nothing else of the engine.

Invariant: a handler takes a ``ToolServices``, never the engine itself, so ``reverie.tools`` imports no
``reverie.engine`` module. The engine (``reverie.engine.root.Reverie``) satisfies this Protocol structurally
(its attributes of these names), and the engine builds the tools (``DreamToolRunner``) with no import cycle.
"""

from __future__ import annotations

from typing import Protocol

from reverie.clock import Clock
from reverie.graph.service import KnowledgeGraph
from reverie.kv.service import KvMemory
from reverie.llm.base import LLM
from reverie.memory.consolidate import SemanticConsolidation
from reverie.memory.explore import MemoryExplorer
from reverie.memory.lint import MemoryLint
from reverie.memory.longterm import LongTermMemory
from reverie.skills import FeedbackStore, SkillStore
from reverie.skills.activity_logs import ToolCallLog
from reverie.working.service import ToolResultStash, WorkingMemory


class ToolServices(Protocol):
    """What the tool handlers and the registry read (each read-only here)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def llm(self) -> LLM | None:
        """The chat client, or None without one (``memory_query`` with ``answer``)."""

    @property
    def memory(self) -> LongTermMemory: ...

    @property
    def lint(self) -> MemoryLint: ...

    @property
    def explorer(self) -> MemoryExplorer: ...

    @property
    def consolidation(self) -> SemanticConsolidation: ...

    @property
    def working(self) -> WorkingMemory: ...

    @property
    def stash(self) -> ToolResultStash: ...

    @property
    def kv(self) -> KvMemory: ...

    @property
    def graph(self) -> KnowledgeGraph: ...

    @property
    def skills(self) -> SkillStore: ...

    @property
    def feedback(self) -> FeedbackStore: ...

    @property
    def tool_calls(self) -> ToolCallLog:
        """The tool-call log every served call is recorded in."""
