"""Speed at scale, behind ``reverie bench latency``: ingestion throughput, search latency, memory, disk.

For each size n, a fresh store (SQLite in a temporary directory, or a new PostgreSQL database) receives n
synthetic facts of 15 words drawn from a fixed, seeded English vocabulary (so runs are comparable), saved
with ``save_many`` in batches and then embedded once. Then, after ``warmup`` untimed searches (a serving
process's caches: PostgreSQL's shared buffers, the page cache), searches with varied queries: ``hybrid``
(the query is embedded: every query is new, so the query cache hides nothing) beside its baselines measured
in the same run, ``hybrid-serial`` (the same pipeline on one thread: ``recall.parallel = false``) and
``bm25`` (no embedding).

Beside the facts, ``long_texts`` chat turns of about 250 characters (synthetic facts run together into
sentences and cut at a word boundary: ~48 tokens against a fact's ~18; real chat runs ~60) are saved and
embedded the same way on a store of their own: the embedder's cost per text grows with its tokens, which
the facts alone hide.

Embedding a million texts on two cores takes about an hour, so ``vectors="composed"`` writes each fact's
vector as the normalised sum of the real model's embeddings of its words (each word embedded once): vectors
with the model's geometry, which real query embeddings land near, without a model call per fact. The
report says which was used.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import reverie
from reverie.bench import postgres
from reverie.bench.recall import engine_settings, percentile, rate, workspace
from reverie.errors import ValidationError
from reverie.recall import ann
from reverie.recall.index import VectorIndex
from reverie.storage.base import NearestVectors

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
BACKENDS = ("sqlite", "postgres")
SERIAL = "hybrid-serial"  # the hybrid pipeline on one thread: the baseline of the parallel one
DEFAULT_WARMUP = 100
LONG_CHARS = 250  # a chat turn's length: the long-text row's texts
DEFAULT_LONG_TEXTS = 1000  # the CLI's --long-texts
VECTOR_SOURCES = ("embed", "composed")
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


def synthetic_turn(rng: random.Random, chars: int = LONG_CHARS) -> str:
    """About ``chars`` characters of chat: synthetic facts as sentences, cut at a word boundary."""
    text = ""
    while len(text) < chars:
        text += synthetic_fact(rng) + ". "
    cut = text[:chars]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def synthetic_turns(n: int, seed: int = DEFAULT_SEED) -> list[str]:
    rng = random.Random(seed)
    return [synthetic_turn(rng) for _ in range(n)]


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
    backend: str = "sqlite"
    vectors: str = "embed"  # embed: each fact through the model; composed: sums of word embeddings
    warmup: int = 0  # untimed searches before the timed ones


@dataclass(frozen=True, slots=True)
class TextsRate:
    """Ingestion of one kind of text on a fresh store of its own (the long-text row)."""

    texts: str  # what was ingested, e.g. "250-character turns"
    n: int
    mean_chars: float
    save_rate: float | None  # entries/s, text only (save_many in batches)
    embed_rate: float | None  # texts/s through embed_pending (vector writes included)
    total_rate: float | None  # entries/s, saving and embedding
    model_rate: float | None  # texts/s, the embedder alone on a sample
    model_sample: int
    backend: str = "sqlite"


@dataclass(frozen=True, slots=True)
class LatencyReport:
    results: tuple[LatencyResult, ...]
    notes: tuple[str, ...]
    long_texts: TextsRate | None = None  # None with long_texts=0


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


def measure_texts(
    texts: Sequence[str],
    sample: Sequence[str],
    *,
    label: str,
    batch_size: int = 500,
    overrides: dict[str, dict[str, Any]] | None = None,
    store_url: str | None = None,
) -> TextsRate:
    """``texts`` saved (``save_many`` in batches, no deduplication, as ``measure``) and embedded on a fresh
    store, and the embedder alone on ``sample``: the throughput of one kind of text."""
    settings = engine_settings(overrides)
    if store_url is not None:
        settings["store"] = {**settings.get("store", {}), "url": store_url}
    with workspace(None, "reverie-bench-texts-") as home, reverie.open(home, **settings) as rv:
        if rv.embedder is not None:
            rv.embedder.embed(["warm up the model", "before timing"])  # loading the model is not throughput
        save_seconds = _save(rv, texts, batch_size)
        started = time.perf_counter()
        embedded = rv.embed_pending()
        embed_seconds = time.perf_counter() - started
        model_rate = _model_rate(rv, sample)
    return TextsRate(
        texts=label,
        n=len(texts),
        mean_chars=sum(map(len, texts)) / max(len(texts), 1),
        save_rate=rate(len(texts), save_seconds),
        embed_rate=rate(embedded, embed_seconds) if embedded else None,
        total_rate=rate(len(texts), save_seconds + embed_seconds) if embedded else None,
        model_rate=model_rate,
        model_sample=len(sample) if model_rate is not None else 0,
        backend="sqlite" if store_url is None else "postgres",
    )


def _model_rate(rv: reverie.Reverie, texts: Sequence[str]) -> float | None:
    if rv.embedder is None or not texts:
        return None
    started = time.perf_counter()
    rv.embedder.embed(list(texts))
    return rate(len(texts), time.perf_counter() - started)


def _words(text: str) -> list[str]:
    return text.lower().split()


def _compose_vectors(rv: reverie.Reverie, batch: int = 2000) -> int:
    """Write every pending entry's vector as the normalised sum of its words' embeddings (see the module
    docstring); returns how many were written."""
    embedder = rv.embedder
    if embedder is None:
        return 0
    vocabulary = sorted({w for group in (NAMES, VERBS, ADJECTIVES, NOUNS, PREPOSITIONS, PLACES, TIMES) for t in group
                         for w in _words(t)} | {"the", "in", "with"})  # fmt: skip
    table = dict(zip(vocabulary, embedder.embed(vocabulary), strict=True))
    written, after = 0, 0
    while rows := rv.store.vectors.pending(embedder.model_id, batch, after):
        out: list[tuple[str, str, bytes]] = []
        for _, fact_id, content in rows:
            vector = np.sum([table[w] for w in _words(content) if w in table], axis=0).astype(np.float32)
            vector /= max(float(np.linalg.norm(vector)), 1e-12)
            out.append((fact_id, content, vector.tobytes()))
        # Inside a transaction a store builds no search index per write (NearestVectors): a bulk load then
        # builds it once, below, as `reverie copy` does (inserting a million rows into an HNSW graph one by
        # one ran at ~130 rows/s on two cores; one build is minutes).
        with rv.store.transaction():
            written += rv.store.vectors.put_many(out, model=embedder.model_id, dim=embedder.dim, at=rv.clock.now())
        after = rows[-1][0]
    if isinstance(rv.store.vectors, NearestVectors):
        rv.store.vectors.index_all()
    return written


def _searches(rv: reverie.Reverie, queries: Sequence[str], mode: str) -> SearchLatency:
    """Timed searches; ``hybrid-serial`` is hybrid with the vector signal fetched on the caller's thread."""
    scope = reverie.Scope(agent_id=AGENT)
    latencies: list[float] = []
    ran_as: Counter[str] = Counter()
    parallel = rv.recall.config
    if mode == SERIAL:
        rv.recall.config = replace(parallel, parallel=False)
    try:
        for query in queries:
            started = time.perf_counter()
            results = rv.memory.search(query, limit=10, mode="hybrid" if mode == SERIAL else mode, scope=scope)
            latencies.append((time.perf_counter() - started) * 1000)
            ran_as[results.mode] += 1
    finally:
        rv.recall.config = parallel
    return SearchLatency(mode, len(queries), percentile(latencies, 50), percentile(latencies, 95), dict(ran_as))


def measure(
    n: int,
    *,
    searches: int = 200,
    batch_size: int = 500,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
    store_url: str | None = None,
    vectors: str = "embed",
    warmup: int = DEFAULT_WARMUP,
) -> LatencyResult:
    """One size: a fresh store (a temporary SQLite directory, or the database ``store_url``), n facts saved
    and embedded (or given composed vectors), ``warmup`` untimed searches, then the timed searches."""
    say = progress or (lambda _message: None)
    facts = synthetic_facts(n, seed)
    sample = synthetic_facts(min(n, 1000), seed + 1)
    hybrid_queries = synthetic_queries(searches + 1, seed + 2)
    serial_queries = synthetic_queries(searches, seed + 4, exclude=frozenset(hybrid_queries))
    bm25_queries = synthetic_queries(searches, seed + 3, exclude=frozenset(hybrid_queries) | set(serial_queries))
    warmup_queries = synthetic_queries(
        warmup, seed + 5, exclude=frozenset(hybrid_queries) | set(serial_queries) | set(bm25_queries)
    )
    settings = engine_settings(overrides)
    if store_url is not None:
        settings["store"] = {**settings.get("store", {}), "url": store_url}
    with workspace(None, "reverie-bench-latency-") as home, reverie.open(home, **settings) as rv:
        if rv.embedder is not None:
            rv.embedder.embed(["warm up the model before timing"])  # loading the model is not throughput
        say(f"n={n}: saving in batches of {batch_size}")
        save_seconds = _save(rv, facts, batch_size)
        say(f"n={n}: saved in {save_seconds:.1f} s; {'embedding' if vectors == 'embed' else 'composing vectors'}")
        started = time.perf_counter()
        embedded = rv.embed_pending() if vectors == "embed" else _compose_vectors(rv)
        embed_seconds = time.perf_counter() - started
        model_rate = _model_rate(rv, sample)
        say(f"n={n}: embedded {embedded} in {embed_seconds:.1f} s")
        if store_url is not None:
            # What an operator does after a bulk load: otherwise autovacuum works through the fresh tables
            # (a core's worth of reads) during the timed searches, and the planner has no statistics.
            started = time.perf_counter()
            rv.vacuum()
            say(f"n={n}: VACUUM (ANALYZE) after the bulk load in {time.perf_counter() - started:.1f} s; searching")
        started = time.perf_counter()
        rv.memory.search(hybrid_queries[0], limit=10, mode="hybrid", scope=reverie.Scope(agent_id=AGENT))
        first_ms = (time.perf_counter() - started) * 1000
        graph_seconds = _wait_for_graph(rv, say)
        if warmup_queries:
            say(f"n={n}: {len(warmup_queries)} warm-up searches")
            _searches(rv, warmup_queries, "hybrid")
        timed = (
            _searches(rv, hybrid_queries[1:], "hybrid"),
            _searches(rv, serial_queries, SERIAL),
            _searches(rv, bm25_queries, "bm25"),
        )
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
        backend="sqlite" if store_url is None else "postgres",
        vectors=vectors,
        warmup=len(warmup_queries),
    )


def _check(
    sizes: list[int], searches: int, batch_size: int, backend: str, server_url: str | None, vectors: str | None,
    warmup: int,
) -> None:  # fmt: skip
    if not sizes or any(n < 1 for n in sizes):
        raise ValidationError("every size (--n) must be at least 1", field="n")
    if warmup < 0:
        raise ValidationError("--warmup must be at least 0", field="warmup")
    if searches < 1 or batch_size < 1:
        raise ValidationError("searches and batch size must be at least 1", field="searches")
    if backend not in BACKENDS:
        raise ValidationError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}", field="backend")
    if vectors is not None and vectors not in VECTOR_SOURCES:
        raise ValidationError(f"--vectors must be embed or composed, got {vectors!r}", field="vectors")
    if server_url is not None and backend != "postgres":
        raise ValidationError("--store-url needs --backend postgres", field="store_url")


def run_latency(
    sizes: list[int],
    *,
    searches: int = 200,
    batch_size: int = 500,
    seed: int = DEFAULT_SEED,
    overrides: dict[str, dict[str, Any]] | None = None,
    progress: Progress | None = None,
    backend: str = "sqlite",
    server_url: str | None = None,
    vectors: str | None = None,
    warmup: int = DEFAULT_WARMUP,
    long_texts: int = 0,
) -> LatencyReport:
    """Measure every size in ``sizes`` (each on its own fresh store). ``overrides``: settings sections for
    ``reverie.open`` (e.g. ``{"embedding": {"provider": "hash"}}``). ``backend`` postgres: each size in a new
    database on ``server_url``'s server (None: a temporary embedded server). ``vectors``: embed or composed
    (None: embed up to 200,000 facts, composed above). ``long_texts``: how many 250-character turns the
    long-text row saves and embeds on a store of its own (0: no such row)."""
    _check(sizes, searches, batch_size, backend, server_url, vectors, warmup)
    if long_texts < 0:
        raise ValidationError("--long-texts must be at least 0", field="long_texts")

    def one(n: int, url: str | None) -> LatencyResult:
        source = vectors or ("embed" if n <= 200_000 else "composed")
        return measure(
            n, searches=searches, batch_size=batch_size, seed=seed, overrides=overrides, progress=progress,
            store_url=url, vectors=source, warmup=warmup,
        )  # fmt: skip

    def long(url: str | None) -> TextsRate | None:
        if not long_texts:
            return None
        if progress is not None:
            progress(f"{long_texts} texts of ~{LONG_CHARS} characters: saving and embedding")
        turns, sample = synthetic_turns(long_texts, seed + 6), synthetic_turns(min(long_texts, 250), seed + 7)
        label = f"{LONG_CHARS}-character turns"
        return measure_texts(turns, sample, label=label, batch_size=batch_size, overrides=overrides, store_url=url)

    if backend == "sqlite":
        results = tuple(one(n, None) for n in sizes)
        long_row = long(None)
    else:
        found: list[LatencyResult] = []
        with postgres.server(server_url) as admin:
            for n in sizes:
                with postgres.fresh_database(admin, str(n)) as url:
                    found.append(one(n, url))
            long_row = None
            if long_texts:
                with postgres.fresh_database(admin, "long") as url:
                    long_row = long(url)
        results = tuple(found)
    return LatencyReport(results, _notes(backend, warmup, long_texts), long_row)


def _notes(backend: str, warmup: int, long_texts: int) -> tuple[str, ...]:
    return (
        "hybrid embeds every query (all queries are distinct, so the query cache never hits); bm25 embeds none",
        "hybrid fetches its vector signal on a worker thread beside the BM25 one (recall.parallel); hybrid-serial"
        " is the same pipeline on one thread, measured in the same run",
        f"the timed searches follow {warmup} untimed warm-up searches (a serving process's caches: PostgreSQL's"
        " shared buffers, the page cache); the first search is reported on its own",
        "peak RSS is the whole process's high-water mark so far (ru_maxrss): a later size includes earlier ones",
        "ingestion saves with dedup=False (distinct synthetic records); `reverie bench dedup` measures that",
        "the timed searches start once the approximate index serves (graph_seconds after the first search)",
        "first search: the first hybrid search of a store, which loads the agent's vectors (and, with"
        " recall.lexical = memory, its BM25 index) into memory",
        *(
            ("on PostgreSQL, VACUUM (ANALYZE) runs after the load and before the first search, as after any bulk load",)
            if backend == "postgres"
            else ()
        ),
        "vectors composed: each fact's vector is the normalised sum of the model's embeddings of its words (a"
        " million texts through the model take about an hour on two cores); embed: every fact through the model",
        *(
            (f"the {LONG_CHARS}-character row: {long_texts:,} synthetic chat turns (facts run together, ~48 tokens"
             " each against a fact's ~18) saved and embedded on a store of their own, the model alone on 250",)
            if long_texts
            else ()
        ),
    )  # fmt: skip
