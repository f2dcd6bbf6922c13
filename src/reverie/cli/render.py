"""Human-readable output. Rich markup is never interpreted inside user text (it is escaped)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from reverie.cli.common import console, escape
from reverie.core.temporal import seen_phrase
from reverie.core.text import preview

if TYPE_CHECKING:  # Rich and the lint service load when something is printed, not to parse the command line
    from rich.tree import Tree

    from reverie.memory.lint import Explanation, LintFinding, LintReport
    from reverie.types import Browse, CategoryCount, EntryVersion, HealthReport, MemoryEntry, SearchHit, StoreStats


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def entry_line(entry: MemoryEntry, now: datetime, *, score: float | None = None) -> str:
    """``[id] (category): content`` then the temporal context and provenance, as recall shows it."""
    extras = [seen_phrase(entry.created_at, entry.last_seen_at, entry.reinforcement_count, now)]
    if entry.source:
        extras.append(f"source={entry.source}")
    if entry.archived:
        extras.append("archived" if entry.superseded_by is None else f"archived, superseded by {entry.superseded_by}")
    elif entry.superseded_by is not None:
        extras.append(
            f"superseded by {entry.superseded_by}" + (f" since {entry.valid_to[:10]}" if entry.valid_to else "")
        )
    if score is not None:
        extras.append(f"score={score:.3g}")
    return (
        f"[cyan]\\[{entry.id}][/] [magenta]({escape(entry.category)})[/]: {escape(preview(entry.content, 200))}"
        f" [dim]— {escape(', '.join(extras))}[/]"
    )


def hits(results: list[SearchHit], now: datetime, query: str, *, explain: bool = False) -> None:
    if not results:
        console.print(
            f"No memory matched {escape(repr(query))}. That is not evidence it was never said: "
            "try other words, or `reverie memory list` to browse."
        )
        return
    for hit in results:
        line = entry_line(hit.entry, now, score=hit.score)
        if hit.matched_by == "pinned":
            line = f"[yellow]pinned[/] {line}"
        elif hit.matched_by == "superseded":
            line = f"[yellow]superseded[/] {line}"  # by whom: the line's own extras say
        console.print(line)
        if explain:
            console.print(f"    [dim]{escape(hit_parts(hit))}[/]")


def hit_parts(hit: SearchHit) -> str:
    """One line on why a hit ranked: what found it and the parts of its score (docs/concepts.md)."""
    e = hit.evidence
    if e is None:
        return f"matched_by {hit.matched_by}"
    parts = f"own {e.own:.3f} (lexical {e.lexical:.2f}, semantic {e.semantic:.2f}) + context {e.context:.3f}"
    raw = [f"bm25 {e.bm25:.3g}"] if e.bm25 is not None else []
    raw += [f"similarity {e.similarity:.3f}"] if e.similarity is not None else []
    raw += [f"asked as {e.asked_as!r}"] if e.asked_as is not None else []
    raw += [f"changes {e.succeeds} (said later)"] if e.succeeds is not None else []
    return f"matched_by {hit.matched_by}: {parts} + time {e.time:.3f}" + (f"; {', '.join(raw)}" if raw else "")


def finding_line(finding: LintFinding) -> str:
    """``newer`` (newer) vs ``older`` in a category: what each says that the other does not (a replaced
    detail, or the stance words); a superseded pair says which entry superseded which."""
    head = (
        f"[cyan]{finding.newer_id}[/] (newer) vs [cyan]{finding.older_id}[/] [magenta]({escape(finding.category)})[/]:"
    )
    newer, older = ", ".join(finding.newer_specifics) or "-", ", ".join(finding.older_specifics) or "-"
    said = f" {escape(newer)} vs {escape(older)}"
    if finding.kind == "superseded":
        return f"{head}{said} [dim]— {escape(finding.measure)}: {finding.older_id} kept as superseded[/]"
    label = " [yellow]stance[/]" if finding.kind == "stance" else ""
    return f"{head}{label}{said} [dim]— {finding.measure} {finding.similarity:.2f}[/]"


def lint_report(report: LintReport) -> None:
    for finding in report.findings:
        console.print(finding_line(finding))
    noun = "pair" if len(report.findings) == 1 else "pairs"
    console.print(
        f"{len(report.findings)} live {noun} about the same topic that disagree, among {report.examined} live"
        " entries (advisory: nothing was changed)."
    )
    if report.superseded:
        console.print("[bold]superseded[/] (a later entry contradicts the earlier one; both kept):")
        for finding in report.superseded:
            console.print(finding_line(finding))
    if report.truncated:
        console.print("[yellow]note:[/] more entries than examined; raise --limit or narrow --category.")


def explanation(result: Explanation) -> None:
    entry, conf = result.entry, result.confidence
    last = "-" if conf.last_support_at is None else conf.last_support_at.date().isoformat()
    rows = [
        ("id", entry.id),
        ("content", entry.content),
        ("category", entry.category),
        ("seen", result.seen),
        ("reinforced", f"{entry.reinforcement_count}×"),
        ("source", entry.source or "unknown"),
        ("tier", entry.tier.value),
        ("importance", f"{entry.importance:.2f}"),
        ("retention", f"{result.retention:.2f} (drives the forget sweep, never ranking)"),
        (
            "confidence",
            f"{conf.value:.2f} from {conf.supporting_sessions} observation(s), the last on {last},"
            f" and {conf.contradictions} contradiction(s)",
        ),
        ("superseded by", result.superseded_by or "-"),
        ("versions", str(result.versions)),
    ]
    if entry.pinned:
        rows.append(("pinned", "yes"))
    if entry.archived:
        rows.append(("archived", _when(entry.archived_at)))
    if entry.valid_to is not None:
        rows.append(("valid until", f"{entry.valid_to} (a later entry contradicts it)"))
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, escape(value))
    console.print(table)
    for finding in result.contradictions:
        console.print(f"[yellow]contradiction:[/] {finding_line(finding)}")


def taxonomy_tree(categories: tuple[CategoryCount, ...]) -> Tree:
    from rich.tree import Tree

    tree = Tree("[bold]categories[/]")
    nodes: dict[str, Tree] = {}
    totals: dict[str, int] = {}
    for item in categories:
        parts = item.category.split("/")
        for depth in range(1, len(parts) + 1):
            key = "/".join(parts[:depth])
            totals[key] = totals.get(key, 0) + item.count
    for key in sorted(totals):
        parent_key, _, leaf = key.rpartition("/")
        parent = nodes.get(parent_key, tree) if parent_key else tree
        nodes[key] = parent.add(f"{escape(leaf)} [dim]({totals[key]})[/]")
    return tree


def browse(result: Browse, now: datetime) -> None:
    if result.entries:
        console.print("[bold]Most recently reinforced[/]")
        for entry in result.entries:
            console.print(entry_line(entry, now))
    else:
        where = f" under {result.category!r}" if result.category else ""
        console.print(f"No live memories{escape(where)}.")
    if result.taxonomy:
        console.print(taxonomy_tree(result.taxonomy))
    else:
        console.print("[dim]The store has no categories yet.[/]")


def entry_detail(entry: MemoryEntry) -> None:
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("id", entry.id),
        ("content", entry.content),
        ("category", entry.category),
        ("tags", ", ".join(entry.tags) or "-"),
        ("tier", entry.tier.value),
        ("scope", _scope_text(entry)),
        ("importance", f"{entry.importance:.2f}"),
        ("reinforced", f"{entry.reinforcement_count}×"),
        ("created", _when(entry.created_at)),
        ("last seen", _when(entry.last_seen_at)),
        ("updated", _when(entry.updated_at)),
        ("source", entry.source or "unknown"),
        ("archived", _when(entry.archived_at)),
    ]
    if entry.pinned:
        rows.append(("pinned", "yes"))
    for key, value in rows:
        table.add_row(key, escape(value))
    console.print(table)


def _scope_text(entry: MemoryEntry) -> str:
    parts = [f"agent={entry.scope.agent_id}"]
    if entry.scope.user_id:
        parts.append(f"user={entry.scope.user_id}")
    if entry.scope.session_id:
        parts.append(f"session={entry.scope.session_id}")
    return " ".join(parts)


def history(versions: list[EntryVersion]) -> None:
    from rich.table import Table

    table = Table("v", "when", "change", "category", "content")
    for v in versions:
        table.add_row(
            str(v.version), _when(v.recorded_at), v.change.value, escape(v.category), escape(preview(v.content, 80))
        )
    console.print(table)


def stats(result: StoreStats) -> None:
    console.print(f"[bold]store[/]  {escape(result.location)}  ({result.size_bytes / 1024:,.0f} KiB)")
    console.print(f"[bold]entries[/]  {result.live} live, {result.archived} archived")
    if result.by_tier:
        console.print("[bold]tiers[/]  " + ", ".join(f"{k} {v}" for k, v in sorted(result.by_tier.items())))
    if result.by_category:
        from reverie.types import CategoryCount

        console.print(taxonomy_tree(tuple(CategoryCount(category=k, count=v) for k, v in result.by_category.items())))


def health(report: HealthReport, *, repaired: bool = False) -> None:
    """The checks and repairs; ``repaired``: the report is after ``--repair`` (so it is not suggested again)."""
    for name, outcome in report.checks.items():
        mark = "[green]ok[/]" if outcome == "ok" or name == "migrations" else "[red]problem[/]"
        console.print(f"{mark}  {name}: {escape(outcome)}")
    for line in report.repaired:
        console.print(f"[yellow]repaired[/]  {escape(line)}")
    advice = "restore a backup (`reverie restore-backup`)" if repaired else "try `reverie doctor --repair`"
    console.print("[bold green]healthy[/]" if report.ok else f"[bold red]not healthy[/] — {advice}")


def embedding(status: dict[str, object]) -> None:
    model = status.get("model") or "none (BM25 only)"
    vectors = status.get("vectors") or {}
    counts = ", ".join(f"{k} {v}" for k, v in vectors.items()) if isinstance(vectors, dict) else ""
    console.print(
        f"[bold]embedding[/]  {escape(str(model))}; vectors: {escape(counts or 'none')}; "
        f"pending: {status.get('pending')}"
    )
    if status.get("last_error"):
        console.print(f"[yellow]last embedding error:[/] {escape(str(status['last_error']))}")
