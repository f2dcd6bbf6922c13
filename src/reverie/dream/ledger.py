"""The change gate (seed 001's DreamPassLedger): a corpus-wide pass hashes the corpus it is about to describe
and skips the LLM when the hash matches what it last ran on.

Invariants:
- The fingerprint covers the corpus, not statistics derived from it (the caller's job: see
  ``core.consolidation.corpus_fingerprint``).
- A stamp is recorded only after the model returned usable JSON (``stamp`` is called by the pass then), so
  a failed or unparseable call is retried next cycle.
- ``max_skip`` forces a run however long the hash has matched (time-dependent directives such as staleness).
- The ledger lives in the store, so it survives restarts; a missing or unreadable stamp means "run once",
  never "skip forever" (the repository leaves a corrupt row out).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from reverie.storage.base import DreamRepository, LedgerStamp


@dataclass(frozen=True, slots=True)
class GateDecision:
    run: bool
    reason: str


class DreamPassLedger:
    """The change gate and the completion stamps of one store's dream passes."""

    def __init__(self, repository: DreamRepository, *, enabled: bool = True, max_skip: timedelta | None = None) -> None:
        self._repo = repository
        self.enabled = enabled
        self.max_skip = max_skip if max_skip is not None else timedelta(days=7)

    def last(self, agent_id: str, pass_name: str) -> LedgerStamp | None:
        """The pass's last stamp for the agent, or None (never ran, or the row was unreadable)."""
        return self._repo.ledger(agent_id).get(pass_name)

    def gate(self, agent_id: str, pass_name: str, fingerprint: str, now: datetime) -> GateDecision:
        """Whether a corpus-wide pass must call the LLM for a corpus with this fingerprint."""
        if not self.enabled:
            return GateDecision(True, "change gate disabled")
        stamp = self.last(agent_id, pass_name)
        if stamp is None or stamp.fingerprint is None:
            return GateDecision(True, "no usable stamp: runs once")
        if stamp.fingerprint != fingerprint:
            return GateDecision(True, "the corpus changed")
        if now - stamp.stamped_at >= self.max_skip:
            return GateDecision(True, f"unchanged, but last ran {_age(now - stamp.stamped_at)} ago (forced)")
        return GateDecision(False, f"unchanged since {stamp.stamped_at.isoformat(timespec='minutes')}")

    def stamp(self, agent_id: str, pass_name: str, now: datetime, fingerprint: str | None = None) -> None:
        """Record that the pass completed with usable output (on this fingerprint, for gated passes)."""
        self._repo.stamp(LedgerStamp(agent_id=agent_id, pass_name=pass_name, stamped_at=now, fingerprint=fingerprint))


def _age(delta: timedelta) -> str:
    days = delta.total_seconds() / 86400
    return f"{days:.1f} days" if days >= 1 else f"{delta.total_seconds() / 3600:.1f} hours"
