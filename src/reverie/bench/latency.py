"""Speed at scale, behind ``reverie bench latency``: ingestion throughput, search latency, memory, disk.

For each size n, a fresh store in a temporary directory receives n synthetic facts of 15 words drawn from
a fixed, seeded English vocabulary (so runs are comparable), saved with ``save_many`` in batches and then
embedded once. Then searches with varied queries: ``hybrid`` (the query is embedded: every query is new,
so the query cache hides nothing) beside ``bm25`` (no embedding), both measured in the same run.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import reverie
from reverie.bench.recall import engine_settings, percentile, rate, workspace
from reverie.errors import ValidationError
from reverie.recall import ann
from reverie.recall.index import VectorIndex

NAMES = (
    "Maya", "Tomas", "Priya", "Jonas", "Amara", "Lucas", "Sofia", "Daniel", "Leila", "Mateo", "Nora", "Hiro",
    "Elena", "Kwame", "Ingrid", "Omar", "Clara", "Ravi", "Freya", "Diego", "Anika", "Felix", "Zara", "Marco",
    "Yuki", "Oscar", "Lina", "Samuel", "Ada", "Bruno",
)  # fmt: skip
VERBS = (
    "repaired", "painted", "ordered", "borrowed", "reviewed", "photographed", "cooked", "planted", "booked",
    "sold", "cleaned", "measured", "sketched", "packed", "tested", "rebuilt", "described", "recommended",
    "returned", "delivered", "installed", "translated", "organised", "collected", "shipped", "tuned",
    "labelled", "framed", "watered", "inspected",
)  # fmt: skip
ADJECTIVES = (
    "old", "blue", "quiet", "wooden", "broken", "heavy", "bright", "narrow", "vintage", "small", "crowded",
    "spicy", "rusty", "shiny", "fragile", "green", "noisy", "cozy", "ancient", "modern", "tiny", "golden",
    "muddy", "fresh", "dusty", "silver", "warm", "folded", "striped", "hidden",
)  # fmt: skip
NOUNS = (
    "bicycle", "kitchen", "guitar", "garden", "laptop", "canoe", "bookshelf", "camera", "piano", "tent",
    "bakery", "lantern", "sofa", "printer", "violin", "boat", "greenhouse", "telescope", "jacket", "notebook",
    "teapot", "ladder", "painting", "motorcycle", "aquarium", "fence", "backpack", "quilt", "radio",
    "workbench", "map", "clock", "kettle", "drone", "saddle", "scarf", "rug", "mirror", "typewriter", "hammock",
)  # fmt: skip
PREPOSITIONS = ("near", "behind", "beside", "under", "above", "inside", "opposite")
PLACES = (
    "Lisbon", "Oslo", "Nairobi", "Kyoto", "Toronto", "Porto", "Denver", "Cairo", "Dublin", "Lima", "Seoul",
    "Prague", "Austin", "Hanoi", "Bergen", "Madrid", "Quito", "Perth", "Zurich", "Accra",
)  # fmt: skip
TIMES = (
    "last week", "on Monday", "on Tuesday", "on Wednesday", "on Thursday", "on Friday", "on Saturday",
    "on Sunday", "last month", "this morning", "in spring", "in autumn", "last summer", "last winter",
    "yesterday evening", "before lunch",
)  # fmt: skip
DEFAULT_SEED = 20240601
AGENT = "bench-latency"
Progress = Callable[[str], None]


def synthetic_fact(rng: random.Random) -> str:
    """A 15-word fact, e.g. "Maya repaired the old bicycle near the green garden in Oslo last week with Omar"."""
    c = rng.choice
    return (
        f"{c(NAMES)} {c(VERBS)} the {c(ADJECTIVES)} {c(NOUNS)} {c(PREPOSITIONS)} the {c(ADJECTIVES)} {c(NOUNS)} "
        f"in {c(PLACES)} {c(TIMES)} with {c(NAMES)}"
    )


def synthetic_facts(n: int, seed: int = DEFAULT_SEED) -> list[str]:
    rng = random.Random(seed)
    return [synthetic_fact(rng) for _ in range(n)]


def _query(rng: random.Random) -> str:
    c = rng.choice
    templates = (
        lambda: f"what did {c(NAMES)} {c(VERBS)} in {c(PLACES)}",
        lambda: f"the {c(ADJECTIVES)} {c(NOUNS)} {c(NAMES)} {c(VERBS)}",
        lambda: f"who {c(VERBS)} a {c(NOUNS)} {c(TIMES)}",
        lambda: f"where is the {c(ADJECTIVES)} {c(NOUNS)} {c(PREPOSITIONS)} the {c(NOUNS)}",
        lambda: f"{c(NAMES)} and {c(NAMES)} in {c(PLACES)} {c(TIMES)}",
    )
    return c(templates)()


def synthetic_queries(count: int, seed: int, exclude: frozenset[str] = frozenset()) -> list[str]:
    """``count`` distinct queries, none in ``exclude``."""
    rng = random.Random(seed)
    seen: set[str] = set(exclude)
    out: list[str] = []
    while len(out) < count:
        query = _query(rng)
        if query not in seen:
            seen.add(query)
            out.append(query)
    return out


def peak_rss_mb() -> float | None:
    """The process's peak resident set size so far (``ru_maxrss``), in MiB; None where unsupported."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


@dataclass(frozen=True, slots=True)
class SearchLatency:
    mode: str
    searches: int
    p50_ms: float
    p95_ms: float
    ran_as: dict[str, int]


@dataclass(frozen=True, slots=True)
class LatencyResult:
    n: int
    model: str | None
    save_seconds: float
    save_rate: float | None  # entries/s, text only (save_many in batches)
    embed_seconds: float
    embed_rate: float | None  # texts/s through embed_pending (vector writes included)
    total_rate: float | None  # entries/s, saving and embedding
    model_rate: float | None  # texts/s, the embedder alone on a sample (the baseline for embed_rate)
    model_sample: int
    first_search_ms: float  # the first hybrid search loads the agent's vectors and BM25 index
    # Seconds from the first search until the approximate (HNSW) index served searches; None when the store
    # is below recall.ann_threshold or usearch is not installed (searches are exact).
    graph_seconds: float | None
    searches: tuple[SearchLatency, ...]
    peak_rss_mb: float | None
    db_bytes: int


@dataclass(frozen=True, slots=True)
class LatencyReport:
    results: tuple[LatencyResult, ...]
    notes: tuple[str, ...]


def _save(rv: reverie.Reverie, facts: Sequence[str], batch_size: int) -> float:
    scope = reverie.Scope(agent_id=AGENT)
    started = time.perf_counter()
    for start in range(0, len(facts), batch_size):
        # Ingestion of known-distinct records: no save-time deduplication (`reverie bench dedup` measures it).
        rv.memory.save_many([{"content": f} for f in facts[start : start + batch_size]], scope=scope, dedup=False)
    return time.perf_counter() - started


def _wait_for_graph(rv: reverie.Reverie, say: Progress, timeout: float = 900.0) -> float | None:
    """Wait until the agent's HNSW graph (built in the background after the first search) serves searches,
    so the timed searches measure the steady state of a long-running process, not a build in progress."""
    index = rv.recall.index
    if not isinstance(index, VectorIndex) or not index.ann_threshold or index.size(AGENT) <= index.ann_threshold:
        return None
    if not ann.installed():
        return None
    say("waiting for the approximate index (built once per process, in the background)")
    started = time.perf_counter()
    while not index.searched_by_graph(AGENT) and time.perf_counter() - started < timeout:
        time.sleep(0.5)
        rv.memory.search("warm up", limit=1, mode="vector", scope=reverie.Scope(agent_id=AGENT))
    return time.perf_counter() - started


def _model_rate(rv: reverie.Reverie, texts: Sequence[str]) -> float | None:
    if rv.embedder is None or not texts:
        return None
    started = time.perf_counter()
    rv.embedder.embed(list(texts))
    return rate(len(texts), time.perf_counter() - started)


def _searches(rv: reverie.Reverie, queries: Sequence[str], mode: str) -> SearchLatency:
    scope = reverie.Scope(agent_id=AGENT)
    latencies: list[float] = []
    ran_as: Counter[str] = Counter()
    for query in queries:
        started = time.perf_counter()
        results = rv.memory.search(query, limit=10, mode=mode, scope=scope)
        latencies.append((time.perf_counter() - started) * 1000)
        ran_as[results.mode] += 1
    return SearchLatency(mode, len(queries), percentile(latencies, 50), percentile(latencies, 95), dict(ran_as))


def measure(
    n: int,
    *,
    searches: int = 200,
    batch_size: int = 500,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
) -> LatencyResult:
    """One size: a fresh temporary store, n facts saved and embedded, then the timed searches."""
    say = progress or (lambda _message: None)
    facts = synthetic_facts(n, seed)
    sample = synthetic_facts(min(n, 1000), seed + 1)
    hybrid_queries = synthetic_queries(searches + 1, seed + 2)
    bm25_queries = synthetic_queries(searches, seed + 3, exclude=frozenset(hybrid_queries))
    with workspace(None, "reverie-bench-latency-") as home, reverie.open(home, **engine_settings(overrides)) as rv:
        if rv.embedder is not None:
            rv.embedder.embed(["warm up the model before timing"])  # loading the model is not throughput
        say(f"n={n}: saving in batches of {batch_size}")
        save_seconds = _save(rv, facts, batch_size)
        say(f"n={n}: saved in {save_seconds:.1f} s; embedding")
        started = time.perf_counter()
        embedded = rv.embed_pending()
        embed_seconds = time.perf_counter() - started
        model_rate = _model_rate(rv, sample)
        say(f"n={n}: embedded {embedded} in {embed_seconds:.1f} s; searching")
        started = time.perf_counter()
        rv.memory.search(hybrid_queries[0], limit=10, mode="hybrid", scope=reverie.Scope(agent_id=AGENT))
        first_ms = (time.perf_counter() - started) * 1000
        graph_seconds = _wait_for_graph(rv, say)
        timed = (_searches(rv, hybrid_queries[1:], "hybrid"), _searches(rv, bm25_queries, "bm25"))
        db_bytes = rv.stats().size_bytes
        model = rv.embedder.model_id if rv.embedder is not None else None
    return LatencyResult(
        n=n,
        model=model,
        save_seconds=save_seconds,
        save_rate=rate(n, save_seconds),
        embed_seconds=embed_seconds,
        embed_rate=rate(embedded, embed_seconds),
        total_rate=rate(n, save_seconds + embed_seconds),
        model_rate=model_rate,
        model_sample=len(sample) if model_rate is not None else 0,
        first_search_ms=first_ms,
        graph_seconds=graph_seconds,
        searches=timed,
        peak_rss_mb=peak_rss_mb(),
        db_bytes=db_bytes,
    )


def run_latency(
    sizes: list[int],
    *,
    searches: int = 200,
    batch_size: int = 500,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
) -> LatencyReport:
    """Measure every size in ``sizes`` (each on its own fresh store). ``overrides``: settings sections for
    ``reverie.open`` (e.g. ``{"embedding": {"provider": "hash"}}``)."""
    if not sizes or any(n < 1 for n in sizes):
        raise ValidationError("every size (--n) must be at least 1", field="n")
    if searches < 1 or batch_size < 1:
        raise ValidationError("searches and batch size must be at least 1", field="searches")
    results = tuple(
        measure(n, searches=searches, batch_size=batch_size, seed=seed, overrides=overrides, progress=progress)
        for n in sizes
    )
    notes = (
        "hybrid embeds every query (all queries are distinct, so the query cache never hits); bm25 embeds none",
        "peak RSS is the whole process's high-water mark so far (ru_maxrss): a later size includes earlier ones",
        "ingestion saves with dedup=False (distinct synthetic records); `reverie bench dedup` measures that",
        "the timed searches start once the approximate index serves (graph_seconds after the first search)",
        "first search: the first hybrid search of a store, which loads the agent's vectors (and, with"
        " recall.lexical = memory, its BM25 index) into memory",
    )
    return LatencyReport(results, notes)
