"""The everyday recall harness behind ``reverie bench recall --dataset everyday``.

Saves every fact of the set into one agent scope of a fresh store, one entry per fact (``dedup=False``), with
a FakeClock at the fact's ``saved_at`` so ``created_at`` is when the user said it, and its ``subjectTime`` in
the metadata; embeds everything once; then asks every query (limit 5, the clock at the query's ``now``) in
every requested mode (``bm25``, ``vector``, ``hybrid``) against the SAME store, so each figure has its
baselines beside it, measured in the same run. Hits map back to facts by ``metadata["fact_id"]``.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import reverie
from reverie.bench.everyday import DEFAULT_K, KINDS, Everyday, Fact, KindRow, QueryScore, score_query, summarise
from reverie.bench.recall import (
    MODES,
    Ingestion,
    Progress,
    _cache_note,
    _require_empty,
    engine_settings,
    percentile,
    rate,
    workspace,
)
from reverie.clock import FakeClock
from reverie.errors import ValidationError


@dataclass(frozen=True, slots=True)
class EverydaySummary:
    name: str
    source: str  # the file read, or "bundled"
    facts: int
    queries: dict[str, int]  # per kind


@dataclass(frozen=True, slots=True)
class EverydayModeResult:
    mode: str
    rows: tuple[KindRow, ...]
    latency_p50_ms: float
    latency_p95_ms: float
    ran_as: dict[str, int]  # SearchResults.mode as actually run -> queries (a degraded search shows here)
    notes: tuple[str, ...]
    scores: tuple[QueryScore, ...]  # every query's top k, for reading the misses (``--json``)


@dataclass(frozen=True, slots=True)
class EverydayReport:
    dataset: EverydaySummary
    ingestion: Ingestion
    k: int
    recall_settings: dict[str, float | int | None]
    modes: tuple[EverydayModeResult, ...]
    notes: tuple[str, ...]


def fact_item(fact: Fact) -> dict[str, Any]:
    """The ``save`` arguments of one fact: its id (to map hits back) and subject time in the metadata."""
    metadata: dict[str, Any] = {"fact_id": fact.id}
    if fact.subject_time is not None:
        metadata["subjectTime"] = fact.subject_time
    return {"content": fact.content, "category": fact.category, "metadata": metadata}


def default_now(dataset: Everyday) -> datetime | None:
    """When a query without its own ``now`` is asked: the file's ``now``, else a day after the last save."""
    if dataset.now is not None:
        return dataset.now
    saved = [f.saved_at for f in dataset.facts if f.saved_at is not None]
    return max(saved) + timedelta(days=1) if saved else None


def ingest(rv: reverie.Reverie, clock: FakeClock, dataset: Everyday) -> Ingestion:
    """Save every fact (in ``saved_at`` order, the clock there; facts without one at the clock's start),
    one entry each, then embed once."""
    scope = reverie.Scope(agent_id=dataset.scope)
    start = clock.now()
    ordered = sorted(dataset.facts, key=lambda f: f.saved_at or start)
    save_seconds = 0.0
    for fact in ordered:
        clock.set(fact.saved_at or start)
        started = time.perf_counter()
        rv.memory.save(**fact_item(fact), scope=scope, dedup=False)
        save_seconds += time.perf_counter() - started
    started = time.perf_counter()
    embedded = rv.embed_pending()
    embed_seconds = time.perf_counter() - started
    model = rv.embedder.model_id if rv.embedder is not None else None
    return Ingestion(len(ordered), save_seconds, embedded, embed_seconds, model, rate(embedded, embed_seconds))


def evaluate(rv: reverie.Reverie, clock: FakeClock, dataset: Everyday, mode: str, k: int) -> EverydayModeResult:
    """Ask every query with ``mode`` (the clock at its ``now``); score its top ``k``."""
    scope = reverie.Scope(agent_id=dataset.scope)
    fallback = default_now(dataset)
    scores: list[QueryScore] = []
    latencies: list[float] = []
    ran_as: Counter[str] = Counter()
    notes: set[str] = set()
    for query in dataset.queries:
        when = query.now or fallback
        if when is not None:
            clock.set(when)
        started = time.perf_counter()
        results = rv.memory.search(query.text, limit=k, mode=mode, scope=scope)
        latencies.append((time.perf_counter() - started) * 1000)
        ran_as[results.mode] += 1
        notes.update(results.notes)
        ranked = [str(hit.entry.metadata.get("fact_id", "")) for hit in results]
        scores.append(score_query(query, ranked, k))
    return EverydayModeResult(
        mode=mode,
        rows=summarise(scores),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        ran_as=dict(ran_as),
        notes=tuple(sorted(notes)),
        scores=tuple(scores),
    )


def summarise_dataset(dataset: Everyday, source: str) -> EverydaySummary:
    counts = Counter(q.kind for q in dataset.queries)
    return EverydaySummary(
        name=dataset.name,
        source=source,
        facts=len(dataset.facts),
        queries={kind: counts.get(kind, 0) for kind in KINDS},
    )


def run_everyday(
    dataset: Everyday,
    *,
    modes: Sequence[str] = MODES,
    k: int = DEFAULT_K,
    store: Path | None = None,
    source: str = "bundled",
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> EverydayReport:
    """Ingest ``dataset`` into a fresh store (``store`` or a temporary directory) and score every mode on it.

    ``overrides`` are settings sections for ``reverie.open`` (e.g. ``{"embedding": {"provider": "hash"}}``).
    Raises ``ValidationError`` for bad arguments or a non-empty ``store``.
    """
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValidationError(f"modes must be among {', '.join(MODES)}, got {list(modes)}", field="mode")
    if not 1 <= k <= 1000:
        raise ValidationError("k must be a whole number from 1 to 1000", field="k")
    say = progress or (lambda _message: None)
    first = min((f.saved_at for f in dataset.facts if f.saved_at is not None), default=None)
    clock = FakeClock(first)
    with (
        workspace(store, "reverie-bench-everyday-") as home,
        reverie.open(home, clock=clock, **engine_settings(overrides)) as rv,
    ):
        _require_empty(rv)
        say(f"ingesting {len(dataset.facts)} facts into {home}")
        ingestion = ingest(rv, clock, dataset)
        say(
            f"saved in {ingestion.save_seconds:.1f} s; embedded {ingestion.embedded} in {ingestion.embed_seconds:.1f} s"
        )
        results = []
        for mode in modes:
            say(f"searching {len(dataset.queries)} queries, mode {mode}")
            results.append(evaluate(rv, clock, dataset, mode, k))
        notes = (
            f"one entry per fact, one agent scope ({dataset.scope}); k = {k}; precision@1 and recall@{k} over "
            "on-topic queries (neither offtopic nor nearmiss); on target = the share of an on-topic query's hits "
            "that are expected (low when answers are padded with hits about something else); empty = the share "
            "of queries with no hit at all: "
            "the target for offtopic, information only for nearmiss (asking after someone or something the "
            "facts cover, where returning those facts is right)",
        ) + _cache_note(rv, modes, len(dataset.queries))
        config = rv.recall.config
        knobs = {
            "semantic_weight": config.semantic_weight,
            "candidates": config.candidates,
            "min_similarity": rv.recall.floor(dataset.scope, None),
            "relative_floor": config.relative_floor,
        }
    return EverydayReport(
        dataset=summarise_dataset(dataset, source),
        ingestion=ingestion,
        k=k,
        recall_settings=knobs,
        modes=tuple(results),
        notes=notes,
    )
