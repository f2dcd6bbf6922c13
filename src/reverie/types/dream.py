"""Dream values: a run of the dream, the process holding a dream's lock, and the evidence a merge or inference
records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class DreamRun:
    """One dream run: its live status while it runs, its report after (the audit trail)."""

    run_id: str
    agent_id: str
    trigger: str  # scheduled | manual | idle
    started_at: datetime
    phase: str  # running | completed | failed | aborted | cancelled | interrupted (its process died)
    finished_at: datetime | None = None
    current_pass: str | None = None
    progress: str = ""  # e.g. "3/9 passes"
    tokens: int = 0
    cost: float = 0.0
    report: dict[str, Any] = field(default_factory=dict)  # JSON-able
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DreamProcess:
    """The process holding a dream's lock, recorded in its lease so any process can tell a dead holder from a
    live one: its pid and host name, and how often it promised to beat its heartbeat."""

    pid: int
    host: str
    heartbeat_seconds: float


@dataclass(frozen=True, slots=True)
class Evidence:
    """One source a dream merge folded into a target entry."""

    run_id: str
    target_id: str  # the entry a merge wrote into
    source_id: str  # one entry that fed it
    at: datetime
