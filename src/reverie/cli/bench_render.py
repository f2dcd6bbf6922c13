"""How ``reverie bench ...`` prints its reports: Rich tables of recall, latency, dedup, truth and faults.

Imported by the bench commands when they print, never by ``reverie.cli.bench`` at import time: the bench
modules it names load numpy and the engine, which ``reverie --help`` must not pay for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from reverie.bench.dedup import DedupReport
from reverie.bench.everyday import ALL_ON_TOPIC, NEARMISS, OFFTOPIC, KindRow
from reverie.bench.everyday_recall import EverydayModeResult, EverydayReport
from reverie.bench.faults import FaultsReport
from reverie.bench.latency import SERIAL, LatencyReport
from reverie.bench.recall import Ingestion, ModeResult, RecallReport
from reverie.bench.startup import HEAVY, StartupReport, Timing
from reverie.bench.truth import TruthReport
from reverie.cli.common import console


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
    return [_num(row.precision_at_1), _num(row.recall_at_k), _num(row.on_target), _num(row.empty), str(row.n)]


def _everyday_mode_table(result: EverydayModeResult, k: int) -> Table:
    ran = ", ".join(f"{m}: {count}" for m, count in sorted(result.ran_as.items()))
    title = (
        f"mode {result.mode} (ran as {ran}; search p50 {result.latency_p50_ms:.1f} ms, "
        f"p95 {result.latency_p95_ms:.1f} ms)"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("kind", no_wrap=True)
    for name in ("p@1", f"r@{k}", "on target", "empty", "n"):
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
    names = ("p@1", f"r@{k}", "on target", "offtopic empty", "nearmiss empty (info)", "n on-topic", "n offtopic",
             "n nearmiss", "p50 ms", "p95 ms")  # fmt: skip
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for result in report.modes:
        rows = {row.label: row for row in result.rows}
        on, off, near = rows[ALL_ON_TOPIC], rows[OFFTOPIC], rows[NEARMISS]
        table.add_row(
            result.mode, _num(on.precision_at_1), _num(on.recall_at_k), _num(on.on_target), _num(off.empty),
            _num(near.empty), str(on.n), str(off.n), str(near.n), f"{result.latency_p50_ms:.1f}",
            f"{result.latency_p95_ms:.1f}",
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
    ingest.add_column("texts")
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
            r.vectors, escape(str(r.model)), "15-word facts",
        )  # fmt: skip
        by_mode = {s.mode: s for s in r.searches}
        hybrid, serial, bm25 = by_mode["hybrid"], by_mode[SERIAL], by_mode["bm25"]
        search.add_row(
            f"{r.n:,}", f"{hybrid.p50_ms:.1f}", f"{hybrid.p95_ms:.1f}", f"{serial.p50_ms:.1f}", f"{serial.p95_ms:.1f}",
            f"{bm25.p50_ms:.1f}", f"{bm25.p95_ms:.1f}", f"{r.first_search_ms:.0f}", _num(r.graph_seconds, 0),
            _num(r.peak_rss_mb, 0), f"{r.db_bytes / 2**20:.1f}",
        )  # fmt: skip
    if (t := report.long_texts) is not None:
        ingest.add_row(
            f"{t.n:,}", t.backend, _rate(t.save_rate), _rate(t.embed_rate), _rate(t.model_rate), _rate(t.total_rate),
            "embed", escape(str(report.results[0].model if report.results else None)), t.texts,
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
    if report.said:
        said = Table(title="corrections as people say them (hand-written)", title_justify="left", box=box.SIMPLE_HEAD)
        columns = ("stance check", "superseded", "correction ranked first", "twins superseded", "unmarked later first",
                   "kept whole")  # fmt: skip
        for name in columns:
            said.add_column(name, justify="right")
        for pairs in report.said:
            said.add_row(
                "on" if pairs.stance_check else "off", _share(pairs.superseded, pairs.corrections),
                _share(pairs.ranked_first, pairs.corrections), f"{pairs.twins_superseded}/{pairs.twins}",
                _share(pairs.unmarked_first, pairs.unmarked),
                _share(pairs.kept_whole, pairs.corrections + pairs.twins + pairs.unmarked),
            )  # fmt: skip
        _print_table(said)
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


def _startup_cells(timing: Timing) -> list[str]:
    cpu = "—" if timing.cpu_median_ms is None else f"{timing.cpu_median_ms:.0f}"
    return [f"{timing.median_ms:.0f}", f"{timing.max_ms:.0f}", cpu]


def render_startup(report: StartupReport) -> None:
    console.print(
        f"[bold]startup[/]: median and max of {report.runs} fresh processes per case (Python {report.python})"
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("case", no_wrap=True)
    codes = list(report.codes)
    for code in codes:
        table.add_column(f"{code} median ms", justify="right", no_wrap=True)
        table.add_column("max ms", justify="right", no_wrap=True)
        table.add_column("CPU ms", justify="right", no_wrap=True)
    by_case: dict[str, dict[str, Timing]] = {}
    for timing in report.timings:
        by_case.setdefault(timing.case, {})[timing.code] = timing
    for case, timings in by_case.items():
        if "-" in timings:  # a baseline: the same in every code's columns
            table.add_row(case, *(_startup_cells(timings["-"]) * len(codes)), style="dim")
            continue
        cells = []
        for code in codes:
            found = timings.get(code)
            cells += ["—", "—", "—"] if found is None else _startup_cells(found)
        table.add_row(escape(case), *cells)
    _print_table(table)
    for imports in report.imports:
        heavy = ", ".join(imports.heavy) or "none of " + ", ".join(HEAVY)
        console.print(
            f"\n[bold]import reverie.cli.app[/] on {escape(imports.code)}: {imports.modules} modules; heavy: {heavy}"
        )
        costs = Table("module", "cumulative ms", "self ms", box=box.SIMPLE_HEAD, pad_edge=False)
        for cost in imports.top:
            costs.add_row(escape(cost.module), f"{cost.cumulative_ms:.1f}", f"{cost.self_ms:.1f}")
        _print_table(costs)
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
