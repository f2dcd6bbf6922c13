"""The long-run dream benchmark: a year of memory traffic through the dream service, judged on what it kept.

``run_longrun(days, cycles_per_day)`` replays ``longrun_data.generate``'s stream against a fresh store on a
``FakeClock``: per cycle, the slot's saves (spread over the cycle), ``embed_pending``, then one manual dream
run. The LLM is ``longrun_oracle.Consolidator`` behind a ``ScriptedOpenAIServer``: it proposes good merges,
bad merges, chatter prunes, wrongful prunes of protected entries, invented ids, blank saves, malformed and
reasoning-wrapped answers, so every safeguard of the host is exercised and counted.

Metrics (goal):

- ``findable`` (100%): durable facts whose query (``memory.search``, limit 10) has a live hit holding every
  specific of the fact (whole words, ignoring case); the misses are listed.
- ``destroyed`` (0): ids ever seen (returned by a save, or in the store's change log: merge targets) that
  no longer exist, archived or not, and are not in the purge log: entries lost other than by the purge.
- ``entries_per_fact`` (<= 1.1): live entries that are not chatter, per durable fact.
- ``merge_specifics_lost`` (0): after each cycle, for every new entry with ``metadata.mergedFrom``, the
  specifics (the generator's lists) of the facts its archived sources state, missing from the merged text.
- LLM calls and tokens per cycle (mean, max); ``idle_tokens`` (0): tokens of cycles with no saves since the
  previous cycle, when that cycle left no work behind, split by pass. ``left_work`` names what a cycle can
  leave (a failure or an unusable answer is retried; a new merged entry is reviewed again, per seed 001):
  idle cycles after those are counted apart (``followup_cycles``, ``followup_tokens``).
- the oracle's counts of what it proposed, and the passes' counts summed (``safeguards``: merged, repaired,
  rejected, ephemeral, protected, from the consolidation pass).

Wall time is reported in total and split into saves, dream runs and the benchmark's own checks.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import reverie
from reverie.bench.longrun_data import Stream, generate, has_specific, is_chatter
from reverie.bench.longrun_oracle import Consolidator
from reverie.bench.recall import workspace
from reverie.clock import FakeClock
from reverie.core.consolidation import MERGED_FROM
from reverie.dream.service import DreamRunReport
from reverie.storage.base import FactFilter
from reverie.testing.openai_server import ScriptedOpenAIServer
from reverie.types import MemoryEntry, Scope

__all__ = ["LongrunReport", "format_report", "run_longrun"]

AGENT = "default"
START = datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
SAFEGUARDS = ("merged", "repaired", "rejected", "ephemeral", "protected")
SNAPSHOT_COUNTS = frozenset({"live"})  # a pass count that is a level, not an event: not summed over cycles
MAX_LISTED = 20
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Miss:
    """A durable fact its query did not find whole: the best live hit's text, if any."""

    key: str
    query: str
    specifics: tuple[str, ...]
    best: str | None


@dataclass(frozen=True, slots=True)
class LossyMerge:
    """An accepted merge whose text lacks specifics its sources held."""

    entry_id: str
    sources: tuple[str, ...]
    missing: tuple[str, ...]
    content: str


@dataclass(slots=True)
class _Usage:
    """Per-cycle LLM usage and pass outcomes, accumulated."""

    calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    idle_cycles: int = 0
    idle_tokens: int = 0
    idle_tokens_by_pass: Counter[str] = field(default_factory=Counter)
    # Idle cycles that follow a cycle which left work behind, by what it left (see ``left_work``).
    followups: Counter[str] = field(default_factory=Counter)
    followup_tokens: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    counts: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, report: DreamRunReport, *, idle: bool, leftover: str | None) -> None:
        """One dream run's report: its tokens and calls, phase, pass statuses and counts; ``idle``: no saves
        since the previous cycle, which left ``leftover`` work behind (None: nothing)."""
        self.calls.append(report.llm_calls)
        self.tokens.append(report.tokens)
        self.phases[report.phase] += 1
        for name, done in report.passes.items():
            self.statuses.setdefault(name, Counter())[done.status] += 1
            summed = self.counts.setdefault(name, Counter())
            summed.update({k: int(v) for k, v in done.counts.items() if k not in SNAPSHOT_COUNTS})
        if not idle:
            return
        self.idle_cycles += 1
        if leftover is not None:
            self.followups[leftover] += 1
            self.followup_tokens[leftover] += report.tokens
            return
        self.idle_tokens += report.tokens
        self.idle_tokens_by_pass.update({name: p.tokens for name, p in report.passes.items() if p.tokens})


def left_work(report: DreamRunReport) -> str | None:
    """What a dream run left for the next cycle to do, even with no new saves: ``failed`` (the run or a pass
    failed: retried), ``malformed`` (an unusable answer: those entries are shown again), ``merged`` (a new
    merged entry: seed 001 re-opens a merge's output for review); None when nothing."""
    passes = report.passes.values()
    if report.phase != "completed" or any(p.status == "failed" for p in passes):
        return "failed"
    if any(p.counts.get("malformed", 0) > 0 for p in passes):
        return "malformed"
    if any(p.counts.get("merged", 0) > 0 for p in passes):
        return "merged"
    return None


class _Audit:
    """What the benchmark watches while the year runs: every id seen, and every merge checked once."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.seen: set[str] = set()
        self.checked: set[str] = set()
        self.watermark = 0
        self.merges = 0
        self.specifics_checked = 0
        self.specifics_lost = 0
        self.unrecognised_sources = 0
        self.missing_sources = 0
        self.lossy: list[LossyMerge] = []

    def after_cycle(self, rv: reverie.Reverie, scope: Scope, now: datetime) -> None:
        """Read the store's change log since the last cycle; check every new merged entry."""
        changes = rv.store.facts.text_changes(AGENT, self.watermark)
        self.watermark = changes.watermark
        ids = [fact_id for fact_id, _ in changes.rows]
        self.seen.update(ids)
        fresh = [i for i in ids if i not in self.checked]
        if not fresh:
            return
        for entry in rv.store.facts.get_many(fresh, FactFilter(scope=scope, now=now, include_archived=True)):
            sources = entry.metadata.get(MERGED_FROM)
            if isinstance(sources, list) and sources:
                self.checked.add(entry.id)
                self._check(rv, entry, [str(s) for s in sources])

    def _check(self, rv: reverie.Reverie, merged: MemoryEntry, source_ids: list[str]) -> None:
        self.merges += 1
        missing: dict[str, None] = {}
        for source_id in source_ids:
            self.seen.add(source_id)
            source = rv.store.facts.get(source_id, merged.scope)
            if source is None:
                self.missing_sources += 1
                continue
            key = self.stream.fact_of(source.content)
            if key is None:
                self.unrecognised_sources += 0 if is_chatter(source.content) else 1
                continue
            for specific in self.stream.specifics_in(key, source.content):
                self.specifics_checked += 1
                if not has_specific(merged.content, specific):
                    missing.setdefault(specific, None)
        self.specifics_lost += len(missing)
        if missing:
            self.lossy.append(LossyMerge(merged.id, tuple(source_ids), tuple(missing), merged.content))


@dataclass(frozen=True, slots=True)
class LongrunReport:
    """The long run's figures; see the module docstring for each metric and its goal."""

    days: int
    cycles_per_day: int
    seed: int
    embedder: str
    stream: dict[str, float]
    facts: int
    findable: int
    misses: tuple[Miss, ...]
    ids_seen: int
    destroyed: tuple[str, ...]
    live: int
    live_durable: int
    live_chatter: int
    live_unrecognised: int  # live, not chatter, and stating no known fact whole (an accepted lossy text)
    facts_split: int  # facts held by more than one live entry
    merges_checked: int
    merge_specifics_checked: int
    merge_specifics_lost: int
    lossy_merges: tuple[LossyMerge, ...]
    cycles: int
    idle_cycles: int
    llm_calls_mean: float
    llm_calls_max: int
    tokens_mean: float
    tokens_max: int
    tokens_total: int
    idle_tokens: int
    idle_tokens_by_pass: dict[str, int]
    followup_cycles: dict[str, int]  # idle cycles after one that left work, by what it left (``left_work``)
    followup_tokens: dict[str, int]
    oracle: dict[str, int]
    safeguards: dict[str, int]
    pass_counts: dict[str, dict[str, int]]
    pass_status: dict[str, dict[str, int]]
    phases: dict[str, int]
    seconds: float
    save_seconds: float
    dream_seconds: float
    check_seconds: float
    notes: tuple[str, ...] = ()

    @property
    def findable_rate(self) -> float:
        return self.findable / self.facts if self.facts else 1.0

    @property
    def entries_per_fact(self) -> float:
        return self.live_durable / self.facts if self.facts else 0.0

    @property
    def merge_preservation(self) -> float:
        checked = self.merge_specifics_checked
        return (checked - self.merge_specifics_lost) / checked if checked else 1.0

    def as_dict(self) -> dict[str, Any]:
        """Every field (lists of misses and lossy merges capped at ``MAX_LISTED``), plus the derived rates."""
        out = asdict(self)
        out["misses"] = out["misses"][:MAX_LISTED]
        out["lossy_merges"] = out["lossy_merges"][:MAX_LISTED]
        out["destroyed"] = out["destroyed"][:MAX_LISTED]
        out["destroyed_count"] = len(self.destroyed)
        out["misses_count"] = len(self.misses)
        out["findable_rate"] = self.findable_rate
        out["entries_per_fact"] = self.entries_per_fact
        out["merge_preservation"] = self.merge_preservation
        return out


def _open(home: Path, clock: FakeClock, server: ScriptedOpenAIServer, embedder: str) -> reverie.Reverie:
    return reverie.open(
        home,
        clock=clock,
        embedding={"provider": embedder, "background": False},
        llm={"provider": "openai", "endpoint": server.url, "model": "scripted", "max_retries": 0},
        memory={"expansion_enabled": False},
        graph={"extraction": "off"},  # the scripted LLM answers the dream only; the year counts its tokens
        dream={"enabled": True},
    )


@dataclass(slots=True)
class _Timers:
    save: float = 0.0
    dream: float = 0.0
    check: float = 0.0


def _cycle(
    rv: reverie.Reverie, clock: FakeClock, stream: Stream, slot: int, step: int, timers: _Timers
) -> DreamRunReport:
    """The slot's saves, evenly spread over the cycle's ``step`` seconds, then one manual dream run."""
    saves = stream.slots[slot]
    gap = step // (len(saves) + 1)
    scope = Scope(agent_id=AGENT)
    started = time.perf_counter()
    for save in saves:
        clock.advance(seconds=gap)
        rv.memory.save(
            save.content, category=save.category, tags=list(save.tags), source=save.source,
            importance=save.importance, tier=save.tier, scope=scope,
        )  # fmt: skip
    clock.advance(seconds=step - gap * len(saves))
    rv.embed_pending()
    timers.save += time.perf_counter() - started
    started = time.perf_counter()
    report = rv.dream.run(agent_id=AGENT, trigger="manual")
    timers.dream += time.perf_counter() - started
    return report


def run_longrun(
    days: int = 365,
    cycles_per_day: int = 2,
    *,
    embedder: str = "none",
    seed: int = 7,
    progress: Progress | None = None,
) -> LongrunReport:
    """Replay ``days`` of generated traffic, one dream run per cycle, and measure what the memory kept."""
    started = time.perf_counter()
    stream = generate(days, cycles_per_day, seed)
    consolidator = Consolidator(stream, seed=seed)
    clock = FakeClock(START)
    step = 86_400 // cycles_per_day
    scope = Scope(agent_id=AGENT)
    audit, usage, timers = _Audit(stream), _Usage(), _Timers()
    with (
        workspace(None, "reverie-bench-longrun-") as home,
        ScriptedOpenAIServer() as server,
    ):
        server.answer_chat_with(consolidator)
        with _open(home, clock, server, embedder) as rv:
            leftover: str | None = None
            for slot in range(len(stream.slots)):
                report = _cycle(rv, clock, stream, slot, step, timers)
                usage.add(report, idle=stream.is_idle(slot), leftover=leftover)
                leftover = left_work(report)
                checking = time.perf_counter()
                audit.after_cycle(rv, scope, clock.now())
                timers.check += time.perf_counter() - checking
                if progress is not None:
                    progress(slot + 1, len(stream.slots))
            checking = time.perf_counter()
            final = _final(rv, stream, scope, audit)
            timers.check += time.perf_counter() - checking
    return _report(stream, embedder, consolidator, audit, usage, final, timers, time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class _Final:
    misses: tuple[Miss, ...]
    destroyed: tuple[str, ...]
    live: int
    live_durable: int
    live_chatter: int
    live_unrecognised: int
    facts_split: int


def _final(rv: reverie.Reverie, stream: Stream, scope: Scope, audit: _Audit) -> _Final:
    """End-of-year checks: findability of every fact, destroyed ids, and the live corpus by kind."""
    misses: list[Miss] = []
    for fact in stream.facts.values():
        hits = [hit.entry for hit in rv.memory.search(fact.query, limit=10, scope=scope) if not hit.entry.archived]
        if not any(all(has_specific(e.content, s) for s in fact.specifics) for e in hits):
            misses.append(Miss(fact.key, fact.query, fact.specifics, hits[0].content if hits else None))
    entries = list(rv.store.facts.iter_all(AGENT))
    purged = {record.fact_id for record in rv.store.facts.purge_log(agent_id=AGENT)}
    existing = {entry.id for entry in entries}
    destroyed = tuple(sorted(audit.seen - existing - purged))
    live = [entry for entry in entries if not entry.archived]
    chatter = [entry for entry in live if is_chatter(entry.content)]
    durable = [entry for entry in live if not is_chatter(entry.content)]
    holders = Counter(stream.fact_of(entry.content) for entry in durable)
    return _Final(
        misses=tuple(misses),
        destroyed=destroyed,
        live=len(live),
        live_durable=len(durable),
        live_chatter=len(chatter),
        live_unrecognised=holders.pop(None, 0),
        facts_split=sum(1 for count in holders.values() if count > 1),
    )


def _mean(values: Iterable[int]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def _report(
    stream: Stream,
    embedder: str,
    consolidator: Consolidator,
    audit: _Audit,
    usage: _Usage,
    final: _Final,
    timers: _Timers,
    seconds: float,
) -> LongrunReport:
    consolidation = usage.counts.get("consolidation", Counter())
    notes = []
    if audit.missing_sources:
        notes.append(f"{audit.missing_sources} merge source id(s) did not resolve when their merge was checked")
    if audit.unrecognised_sources:
        notes.append(f"{audit.unrecognised_sources} merge source(s) stated no known fact whole (not checked)")
    return LongrunReport(
        days=stream.days, cycles_per_day=stream.cycles_per_day, seed=stream.seed, embedder=embedder,
        stream=stream.summary(), facts=len(stream.facts), findable=len(stream.facts) - len(final.misses),
        misses=final.misses, ids_seen=len(audit.seen), destroyed=final.destroyed, live=final.live,
        live_durable=final.live_durable, live_chatter=final.live_chatter, live_unrecognised=final.live_unrecognised,
        facts_split=final.facts_split, merges_checked=audit.merges, merge_specifics_checked=audit.specifics_checked,
        merge_specifics_lost=audit.specifics_lost, lossy_merges=tuple(audit.lossy), cycles=len(stream.slots),
        idle_cycles=usage.idle_cycles, followup_cycles=dict(usage.followups),
        followup_tokens=dict(usage.followup_tokens),
        llm_calls_mean=_mean(usage.calls), llm_calls_max=max(usage.calls, default=0),
        tokens_mean=_mean(usage.tokens), tokens_max=max(usage.tokens, default=0), tokens_total=sum(usage.tokens),
        idle_tokens=usage.idle_tokens, idle_tokens_by_pass=dict(usage.idle_tokens_by_pass),
        oracle=consolidator.counts.as_dict(),
        safeguards={key: consolidation.get(key, 0) for key in SAFEGUARDS},
        pass_counts={name: dict(counts) for name, counts in usage.counts.items()},
        pass_status={name: dict(counts) for name, counts in usage.statuses.items()},
        phases=dict(usage.phases), seconds=seconds, save_seconds=timers.save, dream_seconds=timers.dream,
        check_seconds=timers.check, notes=tuple(notes),
    )  # fmt: skip


def _by_reason(cycles: dict[str, int], tokens: dict[str, int]) -> str:
    return ", ".join(f"{reason} {n} ({tokens.get(reason, 0)} tokens)" for reason, n in cycles.items()) or "none"


def format_report(report: LongrunReport) -> str:
    """The report as a table: metric, value, goal; then the oracle's and the safeguards' counts."""
    rows = [
        ("durable facts", f"{report.facts}", ""),
        ("findable by search", f"{report.findable} ({report.findable_rate:.1%})", "100%"),
        ("destroyed (not by purge)", f"{len(report.destroyed)} of {report.ids_seen} ids seen", "0"),
        ("live entries per fact", f"{report.entries_per_fact:.2f} ({report.live_durable} live)", "<= 1.1"),
        ("facts split over entries", f"{report.facts_split}", ""),
        ("live chatter / unrecognised", f"{report.live_chatter} / {report.live_unrecognised}", ""),
        ("merge specifics kept", f"{report.merge_preservation:.1%} ({report.merges_checked} merges)", "100%"),
        ("LLM calls per cycle", f"mean {report.llm_calls_mean:.2f}, max {report.llm_calls_max}", ""),
        ("tokens per cycle", f"mean {report.tokens_mean:.0f}, max {report.tokens_max}", ""),
        ("tokens on idle cycles", f"{report.idle_tokens} over {report.idle_cycles} idle cycles", "0"),
        ("idle cycles after leftover work", _by_reason(report.followup_cycles, report.followup_tokens), ""),
        ("wall time", f"{report.seconds:.1f} s (saves {report.save_seconds:.1f}, dream {report.dream_seconds:.1f})",
         ""),
    ]  # fmt: skip
    width = max(len(name) for name, _, _ in rows)
    lines = [f"long run: {report.days} days x {report.cycles_per_day} cycles, embedder {report.embedder}"]
    lines += [f"  {name:<{width}}  {value}" + (f"  [goal {goal}]" if goal else "") for name, value, goal in rows]
    lines.append("  oracle proposed: " + ", ".join(f"{k} {v}" for k, v in report.oracle.items() if v))
    lines.append("  safeguards: " + ", ".join(f"{k} {v}" for k, v in report.safeguards.items()))
    for miss in report.misses[:MAX_LISTED]:
        lines.append(f"  miss {miss.key}: {miss.query!r} -> {miss.best!r}")
    for lossy in report.lossy_merges[:MAX_LISTED]:
        lines.append(f"  lossy merge {lossy.entry_id}: lost {', '.join(lossy.missing)}")
    lines.extend(f"  note: {note}" for note in report.notes)
    return "\n".join(lines)
