"""What an export or an import did, counted, for the faces to print."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class ExportReport:
    """An export: where it went, in which format, and how many records of each kind it wrote."""

    path: str
    format: str
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class ImportReport:
    """An import: what it read and what became of each record.

    ``counts[kind][outcome]``: how many records of ``kind`` ended how (for example ``{"entry": {"saved": 3,
    "merged": 1, "updated": 2, "unchanged": 5}}``). ``skipped`` lists (line or file, reason) for what was
    not written; ``resumed_from`` is the first line read when an import picked up where one stopped.
    """

    source: str
    format: str
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    resumed_from: int | None = None

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        """Add ``n`` records of ``kind`` that ended as ``outcome``."""
        by_outcome = self.counts.setdefault(kind, {})
        by_outcome[outcome] = by_outcome.get(outcome, 0) + n
