"""The dream's no-LLM passes: log retention (Pass 0), archive purge (Pass 0b), importance decay, the forget
sweep and proactive memory's decay sweep. They run on every cycle, with or without an LLM, before the
knowledge passes.

Invariants:
- Log retention runs first and unconditionally (before any "nothing to do" return of a later pass), and is
  best effort: one log failing is reported and the sweep goes on.
- The archive purge is the only pass that destroys memory: entries archived longer than the retention,
  never above the high-value floor (``LongTermMemory.purge``), and KV keys deleted (and skills archived)
  longer than the same retention (``KvRepository.purge_deleted``, ``SkillRepository.purge_archived``). It
  runs before consolidation, so the window is measured from the archive event, not from what this cycle is
  about to archive.
- Proactive memory's decay sweep (seed 004) runs here, not in the per-turn context: it reads every entry of
  the agent, so it belongs with the other scans. It keeps its own rate limit (``decay_sweep_minutes``) and
  first writes the accesses counted since the last flush, so decay starts from the true last access.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from reverie.dream.passes.base import Capability, PassContext, PassReport
from reverie.logs import PrunableLog, RetentionPolicy, retain_all
from reverie.memory.aging import Aging
from reverie.memory.longterm import LongTermMemory
from reverie.proactive.service import ProactiveMemory
from reverie.types import is_user_agent

log = logging.getLogger("reverie.dream")


@dataclass(frozen=True, slots=True)
class LogRetentionPass:
    """Pass 0: cap every registered append-only JSONL log (age, count and line caps)."""

    logs: Callable[[], Sequence[PrunableLog]]
    policy: RetentionPolicy
    name: str = "log_retention"
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        results = retain_all(self.logs(), self.policy, now=ctx.now())
        report.counts = {
            "logs": len(results),
            "files_deleted": sum(r.files_deleted for r in results),
            "lines_trimmed": sum(r.lines_trimmed for r in results),
            "errors": sum(len(r.errors) for r in results),
        }
        c = report.counts
        report.summary = (
            f"log retention — {c['logs']} logs, {c['files_deleted']} files deleted, "
            f"{c['lines_trimmed']} lines trimmed, {c['errors']} errors"
        )
        return report


@dataclass(frozen=True, slots=True)
class ArchivePurgePass:
    """Pass 0b: hard-delete entries archived longer than the retention, keeping those above the floor."""

    memory: LongTermMemory
    name: str = "archive_purge"
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        if self.memory.config.archive_retention_days <= 0:  # a non-positive retention keeps the archive forever
            report.status, report.reason = "skipped", "archive retention is off"
            return report
        purged = self.memory.purge(agent_id=ctx.agent_id)
        # Deleted KV keys go after the same retention. The repository purges every agent's at once, so the
        # number goes to the log, not into this agent's report (it would count other agents' keys).
        cutoff = ctx.now() - timedelta(days=self.memory.config.archive_retention_days)
        keys = ctx.store.kv.purge_deleted(cutoff)
        if keys:
            log.info("DreamService: purged %d deleted KV keys (every agent's) deleted before %s", keys, cutoff)
        skills = ctx.store.skills.purge_archived(cutoff)  # archived skills too, on the same terms
        if skills:
            log.info("DreamService: purged %d skills (every agent's) archived before %s", skills, cutoff)
        report.counts = {"purged": len(purged.purged), "kept": len(purged.protected)}
        report.summary = f"archive purge — purged {len(purged.purged)}, kept {len(purged.protected)} above the floor"
        log.info("DreamService: %s (agent %s)", report.summary, ctx.agent_id)
        return report


@dataclass(frozen=True, slots=True)
class DecayPass:
    """Importance decay (seed 001: runs before consolidation); calendar-time invariant."""

    aging: Aging
    name: str = "importance_decay"
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        if self.aging.config.importance.half_life_days <= 0:
            report.status, report.reason = "skipped", "importance decay is off (half-life <= 0)"
            return report
        with ctx.store.transaction():
            done = self.aging.decay(agent_id=ctx.agent_id)
        report.counts = {"examined": done.examined, "decayed": len(done.decayed), "at_floor": done.at_floor}
        report.summary = f"importance decay — {done.examined} examined, {len(done.decayed)} decayed"
        return report


@dataclass(frozen=True, slots=True)
class ForgetPass:
    """The forget sweep (seed 003): expired entries and cold episodic ones archived or compacted."""

    aging: Aging
    name: str = "forget"
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        with ctx.store.transaction():
            done = self.aging.forget(agent_id=ctx.agent_id)
        report.counts = {
            "examined": done.examined,
            "cold": done.cold,
            "archived": len(done.archived),
            "compacted": len(done.compacted),
            "expired": len(done.expired),
            "superseded": len(done.superseded),
        }
        report.summary = (
            f"forget sweep — {done.cold} cold, {len(done.archived)} archived, {len(done.compacted)} compacted, "
            f"{len(done.expired)} expired"
        )
        return report


@dataclass(frozen=True, slots=True)
class ProactiveSweepPass:
    """Proactive memory's decay sweep (seed 004): confidences recomputed from the last access, stale key-value
    copies removed; at most every ``decay_sweep_minutes`` per agent."""

    proactive: ProactiveMemory
    name: str = "proactive_sweep"
    needs: frozenset[Capability] = frozenset()

    def run(self, ctx: PassContext) -> PassReport:
        report = ctx.report
        if is_user_agent(ctx.agent_id):  # a user's reserved agent: user-level memory never decays
            report.status, report.reason = "skipped", "user-level memory never decays"
            return report
        done = self.proactive.sweep(ctx.agent_id, force=False)  # writes this process's waiting accesses first
        if not done.ran:
            minutes = self.proactive.config.upkeep.decay_sweep_minutes
            report.status, report.reason = "skipped", f"swept less than {minutes:g} minutes ago"
            return report
        report.counts = {"examined": done.examined, "decayed": len(done.decayed), "copies_removed": done.copies_removed}
        report.summary = (
            f"proactive decay sweep — {done.examined} examined, {len(done.decayed)} decayed, "
            f"{done.copies_removed} stale copies removed"
        )
        return report
