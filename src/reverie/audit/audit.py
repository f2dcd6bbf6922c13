"""The memory audit (seed 001, "Is any of this working?"): on its own schedule it walks the store's entries
directly (the repository, not the memory service), and appends one record per agent to a trend file kept
``trend_days`` (400) days, so a slow loss shows long after the logs that carried it are gone.

Each record: live, archived, merged (archived into another entry), merge targets (live entries with
``mergedFrom``), entries with a rejected-cluster stamp, entries purged since the last audit, entries that
vanished since the last audit **other than by the purge** (the store's purge log says which ids the purge
removed), the near-duplicate rate, and the source mix.

Invariants:
- The audit only reads the store; it writes its own files under ``<home>/memory-audit/``: the trend, the id
  snapshot it compares against next time, and — opt-in (``pause_on_loss``) — ``consolidation-paused.json``
  when entries were destroyed outside the purge, which stops consolidation (only consolidation) until an
  operator removes it (``reverie audit resume``).
- Its files are written atomically (temp file + rename); a missing or unreadable snapshot means "nothing to
  compare yet", never a reported loss.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from reverie.clock import Clock
from reverie.core.clusters import Item, duplicate_pairs
from reverie.core.consolidation import MERGED_FROM, REJECTED_CLUSTER
from reverie.core.dedup import content_tokens
from reverie.storage.base import Store

log = logging.getLogger("reverie.audit")

AUDIT_DIR = "memory-audit"
TREND_FILE = "trend.jsonl"
SNAPSHOT_FILE = "ids.json"
PAUSED_FILE = "consolidation-paused.json"
DUPLICATE_SCAN_MAX = 20_000  # live entries per agent scanned for near-duplicates (beyond: a sample)


@dataclass(frozen=True, slots=True)
class AuditConfig:
    interval_hours: float = 24.0
    trend_days: float = 400.0
    pause_on_loss: bool = False
    similarity: float = 0.88


@dataclass(frozen=True, slots=True)
class AuditRecord:
    at: str
    agent_id: str
    live: int
    archived: int
    merged: int
    merge_targets: int
    rejected_clusters: int
    purged_since_last: int
    destroyed_outside_purge: int
    duplicate_rate: float
    sources: dict[str, int] = field(default_factory=dict)
    destroyed_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class MemoryAudit:
    """Runs the audit and reads its trend. ``job(now)`` is the scheduler's hook: it runs when one is due."""

    def __init__(self, store: Store, clock: Clock, home: Path, config: AuditConfig | None = None) -> None:
        self._store = store
        self._clock = clock
        self.config = config or AuditConfig()
        self.directory = home / AUDIT_DIR

    @property
    def paused_marker(self) -> Path:
        return self.directory / PAUSED_FILE

    def job(self, now: datetime) -> None:
        last = self.last_run()
        if last is None or now - last >= timedelta(hours=self.config.interval_hours):
            self.run()

    def last_run(self) -> datetime | None:
        records = self.trend()
        return datetime.fromisoformat(records[-1].at) if records else None

    def run(self) -> list[AuditRecord]:
        """Audit every agent now; append the records to the trend (trimmed to ``trend_days``)."""
        now = self._clock.now()
        previous, previous_at = self._read_snapshot()
        purged = {r.fact_id for r in self._store.facts.purge_log(since=previous_at)}
        current: dict[str, list[str]] = {}
        records = []
        for agent in self._store.facts.agents():
            entries = list(self._store.facts.iter_all(agent))
            current[agent] = [e.id for e in entries]
            gone = sorted(set(previous.get(agent, [])) - set(current[agent]))
            destroyed = [i for i in gone if i not in purged]
            records.append(
                self._record(now, agent, entries, purged_since=len(gone) - len(destroyed), destroyed=destroyed)
            )
        for agent, ids in previous.items():  # an agent whose every entry vanished
            if agent not in current:
                destroyed = sorted(i for i in ids if i not in purged)
                records.append(
                    self._record(now, agent, [], purged_since=len(ids) - len(destroyed), destroyed=destroyed)
                )
        self._write_snapshot(current, now)
        self._append_trend(records, now)
        lost = [r for r in records if r.destroyed_outside_purge]
        if lost:
            total = sum(r.destroyed_outside_purge for r in lost)
            log.error("memory audit: %d entries destroyed outside the retention purge", total)
            if self.config.pause_on_loss:
                self._pause(now, lost)
        return records

    def _record(
        self, now: datetime, agent: str, entries: list[Any], *, purged_since: int, destroyed: list[str]
    ) -> AuditRecord:
        live = [e for e in entries if not e.archived]
        sources = Counter(_source_kind(e.source) for e in live)
        sample = live[:DUPLICATE_SCAN_MAX]
        items = [Item(e.id, e.scope, content_tokens(e.content)) for e in sample]
        duplicates = duplicate_pairs(items, threshold=self.config.similarity) if len(items) > 1 else 0
        return AuditRecord(
            at=now.isoformat(),
            agent_id=agent,
            live=len(live),
            archived=len(entries) - len(live),
            merged=sum(1 for e in entries if e.archived and e.superseded_by is not None),
            merge_targets=sum(1 for e in live if MERGED_FROM in e.metadata),
            rejected_clusters=sum(1 for e in live if REJECTED_CLUSTER in e.metadata),
            purged_since_last=purged_since,
            destroyed_outside_purge=len(destroyed),
            duplicate_rate=round(duplicates / len(sample), 4) if sample else 0.0,
            sources=dict(sorted(sources.items())),
            destroyed_ids=destroyed[:100],
        )

    # -- files -----------------------------------------------------------------------------------------
    def trend(self, agent_id: str | None = None) -> list[AuditRecord]:
        """The trend file's records, oldest first (unreadable lines skipped)."""
        path = self.directory / TREND_FILE
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                record = AuditRecord(**json.loads(line))
            except (ValueError, TypeError):
                continue
            if agent_id is None or record.agent_id == agent_id:
                out.append(record)
        return out

    def _append_trend(self, records: list[AuditRecord], now: datetime) -> None:
        horizon = now - timedelta(days=self.config.trend_days)
        kept = [r for r in self.trend() if datetime.fromisoformat(r.at) >= horizon] + records
        _write_atomic(self.directory / TREND_FILE, "".join(json.dumps(r.as_dict()) + "\n" for r in kept))

    def _read_snapshot(self) -> tuple[dict[str, list[str]], datetime | None]:
        try:
            raw = json.loads((self.directory / SNAPSHOT_FILE).read_text(encoding="utf-8"))
            return {str(k): [str(i) for i in v] for k, v in raw["agents"].items()}, datetime.fromisoformat(raw["at"])
        except FileNotFoundError:
            return {}, None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("memory audit: unreadable id snapshot (%s); comparing from now on", exc)
            return {}, None

    def _write_snapshot(self, agents: dict[str, list[str]], now: datetime) -> None:
        _write_atomic(self.directory / SNAPSHOT_FILE, json.dumps({"at": now.isoformat(), "agents": agents}))

    def _pause(self, now: datetime, lost: list[AuditRecord]) -> None:
        body = {
            "at": now.isoformat(),
            "reason": "entries were destroyed outside the retention purge",
            "agents": {r.agent_id: r.destroyed_ids for r in lost},
        }
        _write_atomic(self.paused_marker, json.dumps(body, indent=2))
        log.error("memory audit: consolidation paused (%s)", self.paused_marker)

    def resume(self) -> bool:
        """Remove the consolidation-paused marker; False when there was none."""
        try:
            self.paused_marker.unlink()
        except FileNotFoundError:
            return False
        return True


def _source_kind(source: str | None) -> str:
    if source is None:
        return "unknown"
    return "tool" if source.startswith("tool:") else source


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
