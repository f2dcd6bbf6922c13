"""LLM usage values: one call, and a summary over calls."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One LLM call, as the usage log keeps it: who it was for, which model, its tokens and cost.

    Tokens the server did not report are stored as 0; ``ok`` False is a call that failed (its reported
    tokens were still spent).
    """

    at: datetime
    agent_id: str
    provider: str
    model: str
    purpose: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    ok: bool


@dataclass(frozen=True, slots=True)
class UsageSummary:
    """The calls of one agent to one provider and model over a period, summed."""

    agent_id: str
    provider: str
    model: str
    calls: int
    failed: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
