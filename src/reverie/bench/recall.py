"""The LoCoMo recall harness behind ``reverie bench recall``.

Ingests each conversation into its own agent scope (``locomo-<i>``), one memory per turn, with a FakeClock
at the session's date so ``created_at`` is the time the turn was said; embeds everything once; then runs
every question of every requested mode (``bm25``, ``vector``, ``hybrid``) against the SAME store, so each
figure has its baselines beside it, measured in the same run. k counts memory items, and one item is one
turn, so k items are k turns.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import reverie
from reverie.bench.locomo import (
    CATEGORIES,
    Cleaning,
    Conversation,
    LoCoMo,
    QuestionScore,
    Row,
    Session,
    merge_cleaning,
    score_question,
    summarise,
    turn_text,
)
from reverie.clock import FakeClock
from reverie.embed.base import embed_queries
from reverie.errors import ValidationError
from reverie.storage.base import FactFilter
from reverie.types import Scope

MODES = ("bm25", "vector", "hybrid")
DEFAULT_KS = (5, 10, 20)
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    conversations: int
    sessions: int
    turns: int
    questions: dict[str, int]  # per category label, after cleaning
    cleaning: Cleaning


@dataclass(frozen=True, slots=True)
class Ingestion:
    memories: int
    save_seconds: float
    embedded: int
    embed_seconds: float
    model: str | None
    embed_rate: float | None  # texts per second through ``embed_pending`` (vector writes included)


@dataclass(frozen=True, slots=True)
class ModeResult:
    mode: str
    rows: tuple[Row, ...]
    latency_p50_ms: float
    latency_p95_ms: float
    ran_as: dict[str, int]  # SearchResults.mode as actually run -> questions (a degraded search shows here)
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RecallReport:
    dataset: DatasetSummary
    ingestion: Ingestion
    ks: tuple[int, ...]
    recall_settings: dict[str, float | int | None]  # what the vector and hybrid figures depend on
    modes: tuple[ModeResult, ...]
    notes: tuple[str, ...]


def conversation_scope(index: int) -> Scope:
    return reverie.Scope(agent_id=f"locomo-{index}")


def session_items(session: Session) -> list[dict[str, Any]]:
    """The ``save_many`` items of one session: one memory per turn, mapped back by ``metadata.dia_id``."""
    when = session.date.isoformat()
    return [
        {
            "content": turn_text(turn),
            "category": f"conversation/session-{session.number}",
            "metadata": {
                "dia_id": turn.dia_id,
                "session": session.number,
                "subjectTime": when,
                # Sequence context: the turns of one session are neighbours (recall.neighbour_share).
                "thread": f"session-{session.number}",
                "position": position,
            },
        }
        for position, turn in enumerate(session.turns)
    ]


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def rate(count: int, seconds: float) -> float | None:
    """Items per second; None when nothing was done or no time was measured."""
    return count / seconds if count and seconds > 0 else None


def engine_settings(overrides: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """Settings sections for ``reverie.open``: no background embedding (the harness embeds once, timed),
    then the caller's overrides (e.g. ``{"embedding": {"provider": "hash"}}`` in tests)."""
    merged: dict[str, dict[str, Any]] = {"embedding": {"background": False}}
    for section, values in (overrides or {}).items():
        merged[section] = {**merged.get(section, {}), **values}
    return merged


@contextmanager
def workspace(store: Path | None, prefix: str) -> Iterator[Path]:
    """``store`` when given (created if needed), else a temporary directory removed afterwards."""
    if store is not None:
        path = store.expanduser().resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def _require_empty(rv: reverie.Reverie) -> None:
    stats = rv.stats()
    if stats.live or stats.archived:
        raise ValidationError(
            f"the store at {stats.location} already holds {stats.live + stats.archived} entries; "
            "the benchmark needs an empty store (give a new --store directory)",
            field="store",
        )


def ingest(rv: reverie.Reverie, clock: FakeClock, conversations: Sequence[Conversation]) -> Ingestion:
    """Save every turn (one ``save_many`` per session, the clock at the session's date), then embed once."""
    saved = 0
    save_seconds = 0.0
    for index, conversation in enumerate(conversations):
        scope = conversation_scope(index)
        for session in conversation.sessions:
            clock.set(session.date)
            items = session_items(session)
            started = time.perf_counter()
            saved += len(rv.memory.save_many(items, scope=scope))
            save_seconds += time.perf_counter() - started
    started = time.perf_counter()
    embedded = rv.embed_pending()
    embed_seconds = time.perf_counter() - started
    model = rv.embedder.model_id if rv.embedder is not None else None
    return Ingestion(saved, save_seconds, embedded, embed_seconds, model, rate(embedded, embed_seconds))


def evaluate(rv: reverie.Reverie, conversations: Sequence[Conversation], mode: str, ks: Sequence[int]) -> ModeResult:
    """Ask every question of every conversation in its own scope with ``mode``; score the top ``max(ks)``."""
    limit = max(ks)
    scores: list[QuestionScore] = []
    latencies: list[float] = []
    ran_as: Counter[str] = Counter()
    notes: set[str] = set()
    for index, conversation in enumerate(conversations):
        scope = conversation_scope(index)
        for question in conversation.questions:
            started = time.perf_counter()
            results = rv.memory.search(question.question, limit=limit, mode=mode, scope=scope)
            latencies.append((time.perf_counter() - started) * 1000)
            ran_as[results.mode] += 1
            notes.update(results.notes)
            ranked = [str(hit.entry.metadata.get("dia_id", "")) for hit in results]
            scores.append(score_question(question, ranked, ks))
    return ModeResult(
        mode=mode,
        rows=summarise(scores, ks),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        ran_as=dict(ran_as),
        notes=tuple(sorted(notes)),
    )


def plain_cosine(rv: reverie.Reverie, conversations: Sequence[Conversation], ks: Sequence[int]) -> ModeResult:
    """The sanity row beside ``vector``: the same turns' stored vectors ranked by plain cosine with numpy (no
    floor, no filter, no fusion), each question embedded by the same model. Vector mode should not fall below it."""
    assert rv.embedder is not None
    limit = max(ks)
    scores: list[QuestionScore] = []
    latencies: list[float] = []
    for index, conversation in enumerate(conversations):
        scope = conversation_scope(index)
        rows = [(i, v) for i, v in rv.store.vectors.snapshot(scope.agent_id, rv.embedder.model_id).vectors if v]
        matrix = np.vstack([np.frombuffer(v, dtype=np.float32) for _, v in rows])
        found = rv.store.facts.get_many([i for i, _ in rows], FactFilter(scope=scope, now=rv.clock.now()))
        dia = {e.id: str(e.metadata.get("dia_id", "")) for e in found}
        ids = [dia.get(i, "") for i, _ in rows]
        for question in conversation.questions:
            started = time.perf_counter()
            query = np.asarray(embed_queries(rv.embedder, [question.question])[0], dtype=np.float32)
            top = np.argsort(-(matrix @ query), kind="stable")[:limit]
            latencies.append((time.perf_counter() - started) * 1000)
            scores.append(score_question(question, [ids[i] for i in top], ks))
    return ModeResult(
        mode="cosine",
        rows=summarise(scores, ks),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        ran_as={"cosine": len(scores)},
        notes=(),
    )


def summarise_dataset(conversations: Sequence[Conversation]) -> DatasetSummary:
    counts = Counter(q.category for c in conversations for q in c.questions)
    return DatasetSummary(
        conversations=len(conversations),
        sessions=sum(len(c.sessions) for c in conversations),
        turns=sum(c.turn_count for c in conversations),
        questions={f"{c} {name}": counts.get(c, 0) for c, name in CATEGORIES.items()},
        cleaning=merge_cleaning(conversations),
    )


def _check(modes: Sequence[str], ks: Sequence[int], limit_conversations: int | None) -> None:
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ValidationError(f"modes must be among {', '.join(MODES)}, got {list(modes)}", field="mode")
    if not ks or any(k < 1 for k in ks) or max(ks) > 1000:
        raise ValidationError("every k must be a whole number from 1 to 1000", field="k")
    if limit_conversations is not None and limit_conversations < 1:
        raise ValidationError("--limit-conversations must be at least 1", field="limit_conversations")


def _cache_note(rv: reverie.Reverie, modes: Sequence[str], questions: int) -> tuple[str, ...]:
    embedding_modes = [m for m in modes if m in ("vector", "hybrid")]
    if len(embedding_modes) > 1 and questions <= rv.recall.config.query_cache_size:
        later = ", ".join(embedding_modes[1:])
        return (
            f"{questions} questions fit in the query-embedding cache ({rv.recall.config.query_cache_size}): "
            f"the {later} latency excludes query embedding (vectors cached by the {embedding_modes[0]} pass)",
        )
    return ()


def run_recall(
    dataset: LoCoMo,
    *,
    modes: Sequence[str] = MODES,
    ks: Sequence[int] = DEFAULT_KS,
    store: Path | None = None,
    limit_conversations: int | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> RecallReport:
    """Ingest ``dataset`` into a fresh store (``store`` or a temporary directory) and score every mode on it.

    ``overrides`` are settings sections for ``reverie.open`` (e.g. ``{"embedding": {"provider": "hash"}}``).
    Raises ``ValidationError`` for bad arguments or a non-empty ``store``.
    """
    _check(modes, ks, limit_conversations)
    say = progress or (lambda _message: None)
    conversations = dataset.conversations[:limit_conversations]
    first = next((s.date for c in conversations for s in c.sessions), None)
    clock = FakeClock(first)
    with (
        workspace(store, "reverie-bench-recall-") as home,
        reverie.open(home, clock=clock, **engine_settings(overrides)) as rv,
    ):
        _require_empty(rv)
        turns = sum(c.turn_count for c in conversations)
        say(f"ingesting {turns} turns of {len(conversations)} conversations into {home}")
        ingestion = ingest(rv, clock, conversations)
        say(
            f"saved in {ingestion.save_seconds:.1f} s; embedded {ingestion.embedded} in {ingestion.embed_seconds:.1f} s"
        )
        results = []
        questions = sum(len(c.questions) for c in conversations)
        for mode in modes:
            say(f"searching {questions} questions, mode {mode}")
            results.append(evaluate(rv, conversations, mode, ks))
        if "vector" in modes and rv.embedder is not None:
            say(f"searching {questions} questions by plain cosine over the same vectors (the sanity row)")
            results.append(plain_cosine(rv, conversations, ks))
        notes = ("k counts memory items; one item is one turn",) + _cache_note(rv, modes, questions)
        config = rv.recall.config
        knobs = {
            "semantic_weight": config.semantic_weight,
            "candidates": config.candidates,
            "min_similarity": rv.recall.floor(conversation_scope(0).agent_id, None),
            "neighbour_share": config.neighbour_share,
            "thread_share": config.thread_share,
            "time_weight": config.time_weight,
            "min_evidence": config.min_evidence,
            "relative_floor": config.relative_floor,
        }
    return RecallReport(
        dataset=summarise_dataset(conversations),
        ingestion=ingestion,
        ks=tuple(ks),
        recall_settings=knobs,
        modes=tuple(results),
        notes=notes,
    )
