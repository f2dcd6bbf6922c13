"""The ai-memory dream (seed 003): clusters of cold, near-duplicate episodic entries, most novel first, each
rewritten by the LLM into its highest-scoring entry. Opt-in (``[dream] cold_rewrite_enabled``); needs an LLM
and an embedder.

Invariants:
- Only cold, unpinned episodic entries take part; at most ``max_clusters_per_run`` clusters a run, the most
  novel first (farthest from everything else the agent holds).
- A rewrite must keep every specific of every member (the coverage check) and every member's stance
  (``core.stance``: a cluster whose members contradict each other is never rewritten into one text, nor is
  a rewrite that flips one); a rejected rewrite changes nothing.
- The survivor takes the new text as a new version (restorable) with the host's merge arithmetic; the other
  members are superseded: archived, ``superseded_by`` the survivor. Evidence rows name every member.
- The change gate: the same cold clusters as last time cost no LLM call until ``max_skip`` passes.
- Activity cancels an idle-triggered run at the next cluster (``ctx.checkpoint``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
from pydantic import BaseModel, ConfigDict

from reverie.core.aging import is_cold
from reverie.core.clusters import Item, near_duplicate_clusters
from reverie.core.consolidation import (
    MERGED_AT,
    MERGED_FROM,
    corpus_fingerprint,
    merged_fields,
    render_entries,
    review_fingerprint,
)
from reverie.core.coverage import CoverageSource, check_coverage
from reverie.core.dedup import content_tokens
from reverie.core.stance_merge import merge_stance_conflict
from reverie.dream.passes.base import Capability, PassContext, PassReport, Vector
from reverie.errors import LLMError
from reverie.llm.base import MALFORMED_ANSWER, Message
from reverie.memory.aging import Aging
from reverie.prompts import read_prompt
from reverie.types import Change, Evidence, MemoryEntry, Tier

log = logging.getLogger("reverie.dream")
DIRECTIVE = "cold-dream.md"


class RewriteAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str


@dataclass(frozen=True, slots=True)
class ColdRewritePass:
    aging: Aging
    max_clusters_per_run: int = 8
    similarity: float = 0.88
    max_cluster_size: int = 5
    name: str = "cold_rewrite"
    needs: frozenset[Capability] = frozenset({Capability.LLM, Capability.EMBEDDER})

    def run(self, ctx: PassContext) -> PassReport:
        report, now = ctx.report, ctx.now()
        live = [e for e in ctx.store.facts.iter_all(ctx.agent_id) if e.current]
        vectors = ctx.vectors(live)
        cold = [
            e
            for e in live
            if e.tier is Tier.EPISODIC
            and not e.pinned
            and e.id in vectors
            and is_cold(self.aging.score(e, now), self.aging.config.retention)
        ]
        clusters = self._clusters(cold, vectors)
        report.counts = {"cold": len(cold), "clusters": len(clusters), "rewritten": 0, "rejected": 0, "superseded": 0}
        if not clusters:
            report.reason = "no cold clusters"
            return report
        fingerprint = corpus_fingerprint([f"{e.id}:{review_fingerprint(e)}" for c in clusters for e in c])
        gate = ctx.ledger.gate(ctx.agent_id, self.name, fingerprint, now)
        if not gate.run:
            report.status, report.reason = "skipped", f"change gate: {gate.reason}"
            return report
        ids = [e.id for e in live if e.id in vectors]
        matrix = np.stack([vectors[i] for i in ids])  # stacked once: every cluster's novelty reads it
        novelty = {c[0].id: _novelty(c, ids, matrix, vectors) for c in clusters}
        ranked = sorted(clusters, key=lambda c: -novelty[c[0].id])[: self.max_clusters_per_run]
        usable = True
        for members in ranked:
            ctx.checkpoint()
            usable &= self._rewrite(ctx, members, report)
        if usable:
            ctx.ledger.stamp(ctx.agent_id, self.name, now, fingerprint)
        c = report.counts
        report.summary = (
            f"cold rewrite — {c['clusters']} cold clusters, {c['rewritten']} rewritten, {c['rejected']} rejected"
        )
        return report

    def _clusters(self, cold: list[MemoryEntry], vectors: dict[str, Vector]) -> list[list[MemoryEntry]]:
        by_id = {e.id: e for e in cold}
        items = [Item(e.id, e.scope, content_tokens(e.content), vectors[e.id]) for e in cold]
        found = near_duplicate_clusters(
            items, [e.id for e in cold], threshold=self.similarity, max_size=self.max_cluster_size
        )
        placed: set[str] = set()
        out: list[list[MemoryEntry]] = []
        for cluster in found:
            members = [by_id[i] for i in cluster.ids if i not in placed]
            if len(members) >= 2:
                out.append(members)
                placed.update(e.id for e in members)
        return out

    def _rewrite(self, ctx: PassContext, members: list[MemoryEntry], report: PassReport) -> bool:
        """One cluster; False when the answer was unusable (the gate is then not stamped)."""
        now = ctx.now()
        prompt = (
            "TASK: cluster rewrite\n\n"
            + render_entries(members)
            + '\n\nAnswer with one JSON object: {"content": "..."}.'
        )
        messages = [Message.system(read_prompt(DIRECTIVE, ctx.home)), Message.user(prompt)]
        try:
            answer, _ = ctx.ask(messages, RewriteAnswer, purpose="dream.cold_rewrite", max_tokens=2048)
        except LLMError as exc:
            if exc.reason not in MALFORMED_ANSWER:
                raise
            log.warning("DreamService: cluster rewrite answer unusable (%s)", exc)
            return False
        content = answer.content.strip()
        sources = [CoverageSource(m.content, m.category) for m in members]
        flipped = merge_stance_conflict([m.content for m in members], content, ctx.vocabulary.stance)
        if not content or flipped is not None or not check_coverage(sources, content, vocabulary=ctx.vocabulary).ok:
            report.counts["rejected"] += 1
            log.info("DreamService: rejected cluster rewrite of %s", [m.id for m in members])
            return True
        survivor = max(members, key=lambda e: (self.aging.score(e, now), e.importance, e.last_seen_at))
        fields = merged_fields(members)
        metadata = {
            **{k: v for k, v in survivor.metadata.items() if not k.startswith("subjectTime")},
            **fields.subject_time,
            MERGED_FROM: [m.id for m in members if m.id != survivor.id],
            MERGED_AT: now.isoformat(),
        }
        rewritten = replace(
            survivor,
            content=content,
            created_at=fields.created_at,
            last_seen_at=fields.last_seen_at,
            reinforcement_count=fields.reinforcement_count,
            importance=fields.importance,
            updated_at=now,
            metadata=metadata,
        )
        with ctx.store.transaction():
            ctx.store.facts.write(rewritten, change=Change.EDITED, at=now)
            for member in members:
                if member.id != survivor.id:
                    retired = replace(member, archived_at=now, superseded_by=survivor.id)
                    ctx.store.facts.write(retired, change=Change.SUPERSEDED, at=now)
            ctx.store.dream.add_evidence([Evidence(ctx.run_id, survivor.id, m.id, now) for m in members])
        report.counts["rewritten"] += 1
        report.counts["superseded"] += len(members) - 1
        log.info("DreamService: rewrote cold cluster %s into [%s]", [m.id for m in members], survivor.id)
        return True


def _novelty(members: list[MemoryEntry], ids: list[str], matrix: Vector, vectors: dict[str, Vector]) -> float:
    """1 - the highest cosine between the cluster's centroid and any other live entry (``ids``, the rows of
    ``matrix``): clusters farthest from anything else the agent holds come first (Honcho's Dreamer ordering,
    seed 003)."""
    inside = {m.id for m in members}
    centroid = np.mean([vectors[m.id] for m in members], axis=0)
    norm = float(np.linalg.norm(centroid))
    others = np.array([i not in inside for i in ids])
    if not others.any() or norm == 0:
        return 1.0
    return 1.0 - float(np.max((matrix @ (centroid / norm))[others]))
