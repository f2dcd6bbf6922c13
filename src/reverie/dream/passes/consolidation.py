"""Pass 1 — memory consolidation (seeds 000 and 001). The LLM proposes merges and removals; the host decides.

Every safeguard of seed 001, in code:
- Eligibility: only entries new or changed since their last review (``consolidationReviewedHash``) and the
  near-duplicate clusters they sit in are shown; a cluster forms around a changed entry, so a cluster whose
  members are all reviewed-and-unchanged is never re-offered. A failed cluster scan degrades to the
  unreviewed entries alone, never to the whole corpus. Ids the model names outside the shown set are ignored.
- A merge is applied only if the coverage check passes (one narrow repair call first, at most
  ``merge_repair_max_per_cycle`` a cycle); a rejected merge saves nothing, keeps its sources (even ones the model
  also listed in ``toDelete``) and stamps them ``consolidationRejectedCluster`` / ``consolidationRejectedAt``.
- Temporal arithmetic is the host's (``core.consolidation.merged_fields``); the merged entry records
  ``mergedFrom`` and ``mergedAt``, and evidence rows name every source.
- Replacement before retirement: the merged entry is saved, then its sources are archived, in one
  transaction; a blank ``toSave`` is skipped and its sources kept. Exhaustive removal: every source of a
  merge that persisted is archived, listed in ``toDelete`` or not.
- The high-value floor: an entry with importance >= 0.80 or reinforced >= 5 times (or pinned) may be
  merged, never archived as ephemeral.
- Removals archive, never delete; each is logged with its content (and written to the dream log).
- The pass waits ``min_interval_hours`` after the last completed one (recorded in the ledger), stamps
  reviews only after usable JSON, and does nothing while ``memory-audit/consolidation-paused.json`` exists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reverie.core import validate
from reverie.core.clusters import Item, near_duplicate_clusters
from reverie.core.consolidation import (
    MERGED_AT,
    MERGED_FROM,
    REJECTED_AT,
    REJECTED_CLUSTER,
    REVIEWED_HASH,
    indent,
    is_high_value,
    is_reviewed,
    merged_fields,
    render_entries,
    review_fingerprint,
)
from reverie.core.coverage import CoverageSource, check_coverage
from reverie.core.dedup import content_tokens
from reverie.core.provenance import least_trusted
from reverie.core.stance_merge import conflicting_sources, merge_flips_stance
from reverie.dream.passes.base import Capability, PassContext, PassReport, write_dream_log
from reverie.errors import LLMError, ValidationError
from reverie.llm.base import MALFORMED_ANSWER, Message
from reverie.logs import JsonlFile
from reverie.memory.contradiction import SUPERSEDE, supersede_older
from reverie.memory.entries import add_new, new_id
from reverie.prompts import read_prompt
from reverie.types import Change, Evidence, MemoryEntry, Scope, Tier

log = logging.getLogger("reverie.dream")

DIRECTIVE = "dream.md"
REPAIR_DIRECTIVE = "dream-repair.md"
PAUSED_MARKER = Path("memory-audit") / "consolidation-paused.json"
PASS_NAME = "consolidation"


@dataclass(frozen=True, slots=True)
class ConsolidationConfig:
    similarity_threshold: float = 0.88
    max_cluster_size: int = 3
    min_interval_hours: float = 6.0
    merge_repair_enabled: bool = True
    merge_repair_max_per_cycle: int = 10
    max_entries_per_call: int = 40
    max_entries_per_cycle: int = 200
    related_per_entry: int = 2
    pruning_protection_importance: float = 0.80
    pruning_protection_reinforcement_count: int = 5
    on_contradiction: str = SUPERSEDE  # memory.contradiction: a refused merge of two stances supersedes the older


class ProposedSave(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    content: str = ""
    category: str | None = None
    tags: list[str] | None = None
    source_ids: list[str] = Field(default_factory=list, alias="sourceIds")
    importance: float | None = None


class ConsolidationAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    to_delete: list[str] = Field(default_factory=list, alias="toDelete")
    to_save: list[ProposedSave] = Field(default_factory=list, alias="toSave")


class RepairAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str


@dataclass(slots=True)
class _Tally:
    reviewed: int = 0
    merged: int = 0
    repaired: int = 0
    repair_attempts: int = 0
    rejected: int = 0
    contradictions: int = 0  # merges refused because their sources (or the merge) differ in stance
    ephemeral: int = 0
    protected: int = 0
    blank: int = 0
    ignored_ids: int = 0
    unsourced: int = 0
    malformed: int = 0
    usable_calls: int = 0
    created: int = 0  # entries this pass wrote (merges and anti-patterns)
    archived: int = 0  # entries this pass archived (merge sources and ephemeral)
    related_kept: int = 0
    persisted: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)
    related: set[str] = field(default_factory=set)


class ConsolidationPass:
    """Pass 1. ``feedback(agent_id, since)`` gives recent feedback lines (None: no feedback store);
    ``corrections(agent_id, since)`` says whether correction signals came after ``since`` (None: ever):
    with some newer than the last completed consolidation and no entries to review, one call still shows the
    feedback, so a quiet corpus mines its anti-patterns. ``dream_log`` receives a record of every merge,
    rejection and archive."""

    name = PASS_NAME
    needs = frozenset({Capability.LLM})

    def __init__(
        self,
        config: ConsolidationConfig | None = None,
        *,
        feedback: Callable[[str, datetime], list[str]] | None = None,
        dream_log: JsonlFile | None = None,
        related: Callable[[MemoryEntry, int], list[str]] | None = None,
        corrections: Callable[[str, datetime | None], int] | None = None,
    ) -> None:
        """``related(entry, n)``: up to n ids of entries recall finds for the entry's text (the engine's
        hybrid search), shown beside it so a restatement worded too differently to cluster can still be
        merged; None shows clusters only."""
        self.config = config or ConsolidationConfig()
        self._related = related
        self._feedback = feedback
        self._corrections = corrections
        self._dream_log = dream_log

    def run(self, ctx: PassContext) -> PassReport:
        report, now = ctx.report, ctx.now()
        if (ctx.home / PAUSED_MARKER).exists():
            report.status, report.reason = "skipped", f"paused while {PAUSED_MARKER} exists"
            return report
        last = ctx.ledger.last(ctx.agent_id, PASS_NAME)
        interval = timedelta(hours=self.config.min_interval_hours)
        if last is not None and interval > timedelta(0) and now - last.stamped_at < interval:
            report.status = "skipped"
            report.reason = (
                f"memory consolidation skipped — last completed {last.stamped_at.isoformat(timespec='minutes')}"
            )
            return report
        live = [e for e in ctx.store.facts.iter_all(ctx.agent_id) if e.current]
        pool = [e for e in live if _reviewable(e, now)]
        tally = _Tally()
        if len(pool) < 2:
            report.reason = "fewer than two memories"
        else:
            groups = self._eligible(ctx, pool, report, tally)
            for batch in _batches(groups, self.config.max_entries_per_call):
                self._consolidate(ctx, batch, tally)
        if not tally.usable_calls and not tally.malformed and self._new_corrections(ctx, last):
            report.reason = "no entries to review; recent corrections shown for anti-patterns"
            self._consolidate(ctx, [], tally)  # nothing to review, but corrections to learn from
        if tally.usable_calls:
            ctx.ledger.stamp(ctx.agent_id, PASS_NAME, now)
        since = last.stamped_at if last is not None else None
        created = sum(1 for e in live if since is None or e.created_at > since)
        self._summarise(report, tally, live=len(live) + tally.created - tally.archived, created=created)
        return report

    def _new_corrections(self, ctx: PassContext, last: Any) -> bool:
        if self._feedback is None or self._corrections is None:
            return False
        since = ctx.now() - timedelta(days=7)  # the feedback the prompt shows
        if last is not None:
            since = max(since, last.stamped_at)
        return self._corrections(ctx.agent_id, since) > 0

    # -- eligibility ---------------------------------------------------------------------------------
    def _eligible(
        self, ctx: PassContext, pool: list[MemoryEntry], report: PassReport, tally: _Tally
    ) -> list[list[MemoryEntry]]:
        """Clusters around changed entries first, then the other changed entries (newest first), each with
        its related entries (``tally.related``: mergeable, never pruned), whole groups only, up to
        ``max_entries_per_cycle``."""
        unreviewed = [e for e in pool if not is_reviewed(e)]
        if not unreviewed:
            return []
        by_id = {e.id: e for e in pool}
        try:
            clusters = near_duplicate_clusters(
                self._items(ctx, pool),
                [e.id for e in unreviewed],
                threshold=self.config.similarity_threshold,
                max_size=self.config.max_cluster_size,
            )
        except Exception as exc:  # the scan failing must not widen what the model sees
            log.warning("DreamService: near-duplicate scan failed (%s); reviewing unreviewed entries only", exc)
            report.counts["scan_failed"] = 1
            clusters = []
        placed: set[str] = set()
        groups: list[list[MemoryEntry]] = []
        for cluster in clusters:
            members = [by_id[i] for i in cluster.ids if i not in placed and i in by_id]
            if len(members) >= 2:
                groups.append(members)
                placed.update(e.id for e in members)
        singles = sorted(
            (e for e in unreviewed if e.id not in placed), key=lambda e: (e.created_at, e.id), reverse=True
        )
        groups.extend([e] for e in singles)
        self._add_related(groups, by_id, placed | {e.id for e in singles}, tally)
        capped: list[list[MemoryEntry]] = []
        total = 0
        for group in groups:
            if total + len(group) > self.config.max_entries_per_cycle:
                break
            capped.append(group)
            total += len(group)
        return capped

    def _add_related(
        self, groups: list[list[MemoryEntry]], by_id: dict[str, MemoryEntry], placed: set[str], tally: _Tally
    ) -> None:
        """Beside each changed entry, up to ``related_per_entry`` reviewed entries of the same scope that
        recall finds for its text. They may be merged with it (the coverage check guards a merge), never
        pruned: being shown as context must not expose an entry to deletion."""
        if self._related is None or self.config.related_per_entry <= 0:
            return
        for group in groups:
            for entry in [e for e in group if not is_reviewed(e)]:
                added = 0
                for found in self._related(entry, self.config.related_per_entry + len(group)):
                    other = by_id.get(found)
                    if other is None or found in placed or other.scope != entry.scope or not is_reviewed(other):
                        continue
                    group.append(other)
                    placed.add(found)
                    tally.related.add(found)
                    added += 1
                    if added >= self.config.related_per_entry:
                        break

    @staticmethod
    def _items(ctx: PassContext, pool: list[MemoryEntry]) -> list[Item]:
        vectors = ctx.vectors(pool)
        return [Item(e.id, e.scope, content_tokens(e.content), vectors.get(e.id)) for e in pool]

    # -- one call --------------------------------------------------------------------------------------
    def _consolidate(self, ctx: PassContext, batch: list[MemoryEntry], tally: _Tally) -> None:
        shown = {e.id: e for e in batch}
        feedback = self._feedback(ctx.agent_id, ctx.now() - timedelta(days=7)) if self._feedback else []
        prompt = "\n".join(
            [
                "TASK: memory consolidation",
                f"Now: {ctx.now().date().isoformat()}",
                "",
                render_entries(batch, related=tally.related),
                "",
                "## Recent feedback",
                "\n".join(f"- {line}" for line in feedback[:50]) or "(none)",
                "",
                'Answer with one JSON object: {"toDelete": [...], "toSave": [...]}.',
            ]
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        try:
            answer, _ = ctx.ask(messages, ConsolidationAnswer, purpose="dream.consolidation")
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise  # the endpoint failed: the pass fails and nothing is stamped
            tally.malformed += 1
            log.warning("DreamService: consolidation answer unusable (%s); retried next cycle", exc)
            return
        tally.usable_calls += 1
        for item in answer.to_save:
            self._save(ctx, item, shown, tally)
        for raw in dict.fromkeys(answer.to_delete):
            if raw not in shown:
                tally.ignored_ids += 1
            elif raw in tally.related:
                tally.related_kept += 1  # shown as context: mergeable, never pruned
            elif raw not in tally.persisted and raw not in tally.kept:
                self._prune(ctx, shown[raw], tally)
        self._stamp_reviewed(ctx, batch)
        tally.reviewed += sum(1 for e in batch if e.id not in tally.related)

    # -- merges ----------------------------------------------------------------------------------------
    def _save(self, ctx: PassContext, item: ProposedSave, shown: dict[str, MemoryEntry], tally: _Tally) -> None:
        ids = list(dict.fromkeys(item.source_ids))
        known = [i for i in ids if i in shown]
        tally.ignored_ids += len(ids) - len(known)
        content = item.content.strip()
        if not content:
            tally.blank += 1
            tally.kept.update(known)  # kept even when the model also listed them in toDelete
            log.warning("DreamService: blank toSave skipped; its sources %s are kept", known)
            return
        if not known:
            self._save_unsourced(ctx, item, content, sourced=bool(ids), tally=tally)
            return
        sources = [shown[i] for i in known]
        if len({s.scope for s in sources}) > 1:  # a merge may not move a fact into another user's view
            self._reject(ctx, sources, "sources span scopes", tally)
            return
        category = _category(item.category, sources[0].category)
        tags = _tags(item.tags, sources)
        if len(sources) == 1 and (content, category, tags) == (
            sources[0].content,
            sources[0].category,
            sources[0].tags,
        ):
            tally.kept.add(sources[0].id)  # the source is what this save keeps: a toDelete of it must not win
            return  # restates its only source: nothing to do
        checked = self._covered(ctx, content, sources, tally)
        if checked is None:
            return
        importance = item.importance if item.importance is not None and 0 <= item.importance <= 1 else None
        self._persist(ctx, checked, category, tags, importance, sources, tally)

    def _covered(self, ctx: PassContext, content: str, sources: list[MemoryEntry], tally: _Tally) -> str | None:
        """The merged text if it keeps every specific (perhaps after one repair) and every source's stance,
        else None (rejected)."""
        if self._stance_refused(ctx, content, sources, tally):
            return None
        cover = [CoverageSource(s.content, s.category) for s in sources]
        result = check_coverage(cover, content, vocabulary=ctx.vocabulary)
        if result.ok:
            return content
        cfg = self.config
        if cfg.merge_repair_enabled and tally.repair_attempts < cfg.merge_repair_max_per_cycle:
            tally.repair_attempts += 1
            repaired = self._repair(ctx, content, sources, result.missing)
            if repaired is not None and check_coverage(cover, repaired, vocabulary=ctx.vocabulary).ok:
                tally.repaired += 1
                log.info(
                    "DreamService: repaired merge of %s — restored %d specific(s)",
                    [s.id for s in sources],
                    len(result.missing),
                )
                return repaired
        self._reject(ctx, sources, "dropped " + ", ".join(result.missing), tally)
        return None

    def _stance_refused(self, ctx: PassContext, content: str, sources: list[MemoryEntry], tally: _Tally) -> bool:
        """A merge of two sources that differ in stance, or one that flips a source's stance, is refused like
        one that drops a specific: the host never makes one text of "likes" and "dislikes". Two sources that
        contradict each other are a changed belief: the older is superseded by the newer (kept, unarchived;
        ``memory.contradiction``)."""
        stance, texts = ctx.vocabulary.stance, [s.content for s in sources]
        pair = conflicting_sources(texts, stance)
        if pair is not None:
            with ctx.store.transaction():
                first, second = sources[pair[0]], sources[pair[1]]
                supersede_older(ctx.store, first, second, pair[2], ctx.now(), mode=self.config.on_contradiction)
        flipped = pair[2] if pair is not None else merge_flips_stance(texts, content, stance)
        if flipped is None:
            return False
        tally.contradictions += 1
        self._reject(ctx, sources, "stance: " + flipped.describe(), tally)
        return True

    def _repair(self, ctx: PassContext, merged: str, sources: list[MemoryEntry], missing: Sequence[str]) -> str | None:
        prompt = "\n".join(
            [
                "TASK: merge repair",
                "## Merged text",
                indent(merged),
                "",
                "## Sources",
                render_entries(sources).split("\n", 1)[1],
                "",
                "## Missing specifics",
                *(f"- {text}" for text in missing),
                "",
                'Answer with one JSON object: {"content": "..."}.',
            ]
        )
        messages = [Message.system(read_prompt(REPAIR_DIRECTIVE, ctx.home)), Message.user(prompt)]
        try:
            answer, _ = ctx.ask(messages, RepairAnswer, purpose="dream.repair", max_tokens=2048)
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise
            return None
        return answer.content.strip() or None

    def _reject(self, ctx: PassContext, sources: list[MemoryEntry], why: str, tally: _Tally) -> None:
        tally.rejected += 1
        now = ctx.now()
        cluster = ",".join(sorted(s.id for s in sources))
        log.info("DreamService: rejected merge of [%s] — %s", cluster, why)
        with ctx.store.transaction():
            for source in sources:
                tally.kept.add(source.id)
                current = ctx.store.facts.get(source.id, source.scope)
                if current is None or current.archived:
                    continue
                metadata = {**current.metadata, REJECTED_CLUSTER: cluster, REJECTED_AT: now.isoformat()}
                ctx.store.facts.write(replace(current, metadata=metadata), change=Change.HOUSEKEEPING, at=now)
        self._record(ctx, "rejected", cluster, why)

    def _persist(
        self,
        ctx: PassContext,
        content: str,
        category: str,
        tags: tuple[str, ...],
        importance: float | None,
        sources: list[MemoryEntry],
        tally: _Tally,
    ) -> None:
        """Save the merged entry, then archive its sources (superseded by it), in one transaction."""
        now = ctx.now()
        fields = merged_fields(sources, importance=importance)
        metadata: dict[str, Any] = {
            **fields.subject_time,
            MERGED_FROM: [s.id for s in sources],
            MERGED_AT: now.isoformat(),
        }
        source = least_trusted(*(s.source for s in sources))
        if source is not None:
            metadata["source"] = source
        merged = MemoryEntry(
            id=new_id(),
            content=content,
            category=category,
            tags=tags,
            tier=fields.tier,
            scope=sources[0].scope,
            created_at=fields.created_at,
            last_seen_at=fields.last_seen_at,
            updated_at=now,
            reinforcement_count=fields.reinforcement_count,
            importance=fields.importance,
            expires_at=fields.expires_at,
            metadata=metadata,
        )
        archived: list[MemoryEntry] = []
        with ctx.store.transaction():
            merged = add_new(ctx.store, merged, now)
            for src in sources:
                current = ctx.store.facts.get(src.id, src.scope)
                if current is None or current.archived:
                    continue
                retired = replace(current, archived_at=now, superseded_by=merged.id)
                ctx.store.facts.write(retired, change=Change.SUPERSEDED, at=now)
                archived.append(current)
            tally.archived += len(archived)
            ctx.store.dream.add_evidence([Evidence(ctx.run_id, merged.id, s.id, now) for s in sources])
        tally.merged += 1
        tally.created += 1
        tally.persisted.update(s.id for s in sources)
        for entry in archived:
            log.info("DreamService: archived [%s] merged into [%s]: %s", entry.id, merged.id, entry.content)
        self._record(ctx, "merged", merged.id, content, sources=[s.id for s in sources])

    def _save_unsourced(
        self, ctx: PassContext, item: ProposedSave, content: str, *, sourced: bool, tally: _Tally
    ) -> None:
        """A save naming no shown source: only an anti-pattern (mined from feedback) is new knowledge the pass
        may write; anything else, or a save whose every source id was invented, is ignored."""
        category = _category(item.category, "")
        if sourced or not category.startswith("anti-patterns/"):
            tally.unsourced += 1
            return
        now = ctx.now()
        entry = MemoryEntry(
            id=new_id(),
            content=content,
            category=category,
            tags=tuple(dict.fromkeys([*_tags(item.tags, []), "anti-pattern"])),
            tier=Tier.SEMANTIC,
            scope=Scope(agent_id=ctx.agent_id),
            created_at=now,
            last_seen_at=now,
            metadata={"source": "inferred"},
        )
        with ctx.store.transaction():
            saved = add_new(ctx.store, entry, now)
        tally.created += 1
        self._record(ctx, "anti-pattern", saved.id, content)

    # -- removals and review stamps ---------------------------------------------------------------------
    def _prune(self, ctx: PassContext, entry: MemoryEntry, tally: _Tally) -> None:
        current = ctx.store.facts.get(entry.id, entry.scope)
        if current is None or current.archived:
            return
        cfg = self.config
        protect = cfg.pruning_protection_importance, cfg.pruning_protection_reinforcement_count
        if is_high_value(current, importance=protect[0], reinforcement=protect[1]):
            tally.protected += 1
            log.info("DreamService: kept [%s] above the high-value floor (proposed as ephemeral)", current.id)
            return
        now = ctx.now()
        ctx.store.facts.write(replace(current, archived_at=now), change=Change.ARCHIVED, at=now)
        tally.ephemeral += 1
        tally.archived += 1
        log.info("DreamService: archived ephemeral [%s]: %s", current.id, current.content)
        self._record(ctx, "archived", current.id, current.content)

    @staticmethod
    def _stamp_reviewed(ctx: PassContext, batch: list[MemoryEntry]) -> None:
        """Every shown entry still live is reviewed as it now stands (housekeeping: no version)."""
        now = ctx.now()
        with ctx.store.transaction():
            for shown in batch:
                current = ctx.store.facts.get(shown.id, shown.scope)
                if current is None or current.archived or is_reviewed(current):
                    continue
                metadata = {**current.metadata, REVIEWED_HASH: review_fingerprint(current)}
                ctx.store.facts.write(replace(current, metadata=metadata), change=Change.HOUSEKEEPING, at=now)

    def _record(self, ctx: PassContext, action: str, entry_id: str, text: str, **extra: Any) -> None:
        record = {"at": ctx.now().isoformat(), "agent": ctx.agent_id, "action": action, "id": entry_id, "text": text}
        write_dream_log(self._dream_log, {**record, **extra})

    def _summarise(self, report: PassReport, tally: _Tally, *, live: int, created: int) -> None:
        report.counts = {
            "live": live,
            "reviewed": tally.reviewed,
            "created_since_last_run": created,
            "merged": tally.merged,
            "repaired": tally.repaired,
            "rejected": tally.rejected,
            "contradictions": tally.contradictions,
            "ephemeral": tally.ephemeral,
            "protected": tally.protected,
            "blank": tally.blank,
            "ignored_ids": tally.ignored_ids,
            "unsourced": tally.unsourced,
            "malformed": tally.malformed,
            "related_shown": len(tally.related),
            "related_kept": tally.related_kept,
        }
        report.summary = (
            f"consolidation summary — live {live}, reviewed {tally.reviewed}, created since last run {created}, "
            f"merged {tally.merged}, repaired {tally.repaired}, rejected {tally.rejected}, "
            f"ephemeral {tally.ephemeral}, protected {tally.protected}"
        )
        log.info("DreamService: %s", report.summary)


# -- helpers ---------------------------------------------------------------------------------------------
def _reviewable(entry: MemoryEntry, now: datetime) -> bool:
    """What consolidation may see: live, unexpired, not pinned (the user said keep it as is), not working
    notes, and not a member of a sequence (the turns of a conversation are records, not facts to merge)."""
    if entry.pinned or entry.tier is Tier.WORKING or "thread" in entry.metadata:
        return False
    return entry.expires_at is None or entry.expires_at > now


def _batches(groups: list[list[MemoryEntry]], size: int) -> list[list[MemoryEntry]]:
    """Groups packed into calls of at most ``size`` entries (a larger group gets a call of its own). One call
    never mixes scopes: one user's memories are never shown in a prompt about another's."""
    order = {scope: i for i, scope in enumerate(dict.fromkeys(g[0].scope for g in groups))}
    groups = sorted(groups, key=lambda g: order[g[0].scope])  # stable: each scope keeps its order
    batches: list[list[MemoryEntry]] = []
    current: list[MemoryEntry] = []
    for group in groups:
        if current and (len(current) + len(group) > size or current[0].scope != group[0].scope):
            batches.append(current)
            current = []
        current.extend(group)
    if current:
        batches.append(current)
    return batches


def _category(raw: str | None, default: str) -> str:
    if raw is None:
        return default
    try:
        return validate.category(raw, default=default) or default
    except ValidationError:
        return default


def _tags(raw: list[str] | None, sources: list[MemoryEntry]) -> tuple[str, ...]:
    union = tuple(dict.fromkeys(tag for s in sources for tag in s.tags))
    if raw is None:
        return union
    try:
        return validate.tags(raw)
    except ValidationError:
        return union
