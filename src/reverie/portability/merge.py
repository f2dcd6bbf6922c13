"""Reading an export's records, and merging them into a store that already holds memory.

Merge rules, per record:
- a long-term entry (``facts``) whose id the store holds: "exists". A live one it does not hold goes through
  the memory service's ``save`` (save-time dedup): "saved" (a new entry), "merged" (it reinforced or extended
  an entry that says the same), "superseded" (it contradicted one and is now the current belief). It keeps
  its category, tags, tier, importance, pinned, provenance and metadata, is dated by its ``created_at``
  (when not in the future), and its metadata records the original ``imported_id`` and
  ``imported_created_at``. An archived or superseded entry the store does not hold is inserted as it is, and
  so is an entry of the engine's own (reserved) scopes, which no public save may write.
- an entry's versions and vector (and its graph-extraction queue row) go in only when the store holds the
  entry under that id (an entry saved anew has its own first version and is embedded afresh).
- API keys and dream leases are never merged ("not merged"): a key of another store must not open this one,
  and another store's lease would stop this store's dreams until it expired. (An import into an empty store
  restores them, as ``reverie copy`` does.)
- every other record: inserted when the store has no row with its primary key ("inserted"), else
  "exists"; tables without a key (logs, usage) compare the whole row.

Invariants:
- Lines are committed in batches of ``BATCH_LINES``; each batch's transaction also records the last line
  it covered under ``STATE_PREFIX + <export digest>`` in ``store_meta``, so an import stopped at any point
  (killed, or ``stop_on_error``) and run again continues after the last committed line: nothing twice,
  nothing missed.
- Each line is a savepoint: a line that fails (a malformed record, a row the store refuses) is reported with
  its number and nothing of it is written; the other lines of the batch stay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from reverie.clock import Clock
from reverie.errors import ReverieError, ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.portability import codec
from reverie.portability.report import ImportReport
from reverie.storage.base import Store
from reverie.storage.portable import Table, table
from reverie.types import RESERVED_AGENT_PREFIX, Scope

STATE_PREFIX = "import-state:"
_NEVER_MERGED = frozenset({"api_keys", "dream_locks"})
BATCH_LINES = 200
_PROGRESS_EVERY = 500
_SAVE_OUTCOMES = {"created": "saved", "reinforced": "merged", "extended": "merged", "superseded": "superseded"}
# Primary keys of the tables the catalog orders by a hidden seq (the others' order is their key); None: no
# key, a row is the same when every column is.
_KEYS: dict[str, tuple[str, ...] | None] = {
    "facts": ("id",),
    "fact_vectors": ("fact_id",),
    "dream_runs": ("run_id",),
    "dream_evidence": ("run_id", "target_id", "source_id"),
    "purge_log": None,
    "graph_extraction": ("fact_id",),
    "llm_usage": None,
    "kg_entities": ("agent_id", "entity_id"),
    "kg_relations": ("agent_id", "relation_id"),
    "skills": ("agent_id", "name"),
    "skill_usage": None,
    "feedback": ("feedback_id",),
    "conversation_log": None,
    "execution_log": None,
    "tool_call_log": None,
}
_OF_AN_ENTRY = ("fact_versions", "fact_vectors", "graph_extraction")


@dataclass(frozen=True, slots=True)
class Source:
    """An export file's records as an import reads them: ``agent`` (not None) replaces every row's agent id;
    ``drop_vectors`` leaves the vectors out (``fact_vectors`` rows read as None, skills lose theirs)."""

    path: Path
    agent: str | None
    drop_vectors: bool
    progress: Callable[[str, int, int], None] | None

    def parsed(self, after: int = 1) -> Iterator[tuple[int, Table | None, dict[str, Any] | None, str | None]]:
        """``(line number, table, row, error)`` of every record line after line ``after`` (1: the header).
        A malformed line has ``error`` set (and no table); a dropped vector has a table and no row."""
        with self.path.open(encoding="utf-8", newline="\n") as f:
            number = 0
            for number, line in enumerate(f, start=1):
                if number <= after or not line.strip():
                    continue
                if self.progress is not None and number % _PROGRESS_EVERY == 0:
                    self.progress("lines", number, 0)
                try:
                    t, row = codec.decode_record(line)
                except codec.BadLine as exc:
                    yield number, None, None, str(exc)
                    continue
                yield number, t, self._adapt(t, row), None
            if self.progress is not None:
                self.progress("lines", number, number)

    def records(self, report: ImportReport, stop_on_error: bool) -> Iterator[tuple[int, Table, dict[str, Any] | None]]:
        """The well-formed records; a malformed line is reported (or, with ``stop_on_error``, raised as a
        ``ValidationError`` naming its line)."""
        for number, t, row, error in self.parsed():
            if error is not None or t is None:
                if stop_on_error:
                    raise ValidationError(f"line {number}: {error}; nothing was written", field="path")
                report.skipped.append((f"line {number}", str(error)))
                continue
            yield number, t, row

    def _adapt(self, t: Table, row: dict[str, Any]) -> dict[str, Any] | None:
        if self.drop_vectors and t.name == "fact_vectors":
            return None
        if self.drop_vectors and t.name == "skills":
            row = {**row, "vector": None, "vector_model": None}
        if self.agent is not None and row.get("agent_id") is not None:
            row = {**row, "agent_id": self.agent}
        return row


class Merge:
    """One merge import into a non-empty store (the rules are in the module docstring)."""

    def __init__(self, store: Store, memory: LongTermMemory, clock: Clock, report: ImportReport, stop: bool) -> None:
        self._store = store
        self._memory = memory
        self._clock = clock
        self._report = report
        self._stop = stop
        self._keys: dict[str, set[Any]] = {}

    def run(self, source: Source, digest: str) -> None:
        """Merge every line after the last one a previous run committed (``ValidationError`` at the first
        malformed line with ``stop``, after committing the lines before it)."""
        state_key = STATE_PREFIX + digest
        done = int(self._store.meta.get(state_key) or 1)
        if done > 1:
            self._report.resumed_from = done + 1
        lines = source.parsed(after=done)
        stopped: tuple[int, str] | None = None
        while stopped is None:
            batch = list(_take(lines, BATCH_LINES))
            if not batch:
                break
            with self._store.transaction():
                last = done
                for number, t, row, error in batch:
                    if error is not None and self._stop:
                        stopped = (number, error)
                        break
                    self._line(number, t, row, error)
                    last = number
                self._store.meta.set(state_key, str(last))
            done = last
        if stopped is not None:
            number, error = stopped
            raise ValidationError(
                f"line {number}: {error}; the lines before it are imported: fix the line and run the same "
                f"import again to continue from line {number}",
                field="path",
            )

    def _line(self, number: int, t: Table | None, row: dict[str, Any] | None, error: str | None) -> None:
        if error is not None or t is None:
            self._report.skipped.append((f"line {number}", str(error)))
            return
        if row is None:
            self._report.count(t.name, "re-embedded")
            return
        try:
            with self._store.transaction():  # a savepoint: a refused line leaves nothing behind
                outcome = self._merge(t, row)
        except ReverieError as exc:
            self._report.skipped.append((f"line {number}", f"{t.name}: {exc}"))
            self._report.count(t.name, "skipped")
            return
        self._report.count(t.name, outcome)

    def _merge(self, t: Table, row: dict[str, Any]) -> str:
        if t.name in _NEVER_MERGED:
            return "not merged"
        key = self._key(t, row)
        present = self._present(t.name)
        if key in present:
            return "exists"
        if t.name in _OF_AN_ENTRY and (row["fact_id"],) not in self._present("facts"):
            return "entry saved anew"
        if t.name == "facts" and _current(row) and not row["agent_id"].startswith(RESERVED_AGENT_PREFIX):
            return self._save(row)
        self._store.import_rows(t.name, [row])
        present.add(key)
        return "inserted"

    def _save(self, row: dict[str, Any]) -> str:
        created: datetime = row["created_at"]
        metadata = {**(row["metadata"] or {})}
        metadata.setdefault("imported_id", row["id"])
        metadata.setdefault("imported_created_at", created.isoformat())
        result = self._memory.save(
            row["content"],
            category=row["category"],
            tags=row["tags"],
            importance=row["importance"],
            tier=row["tier"],
            metadata=metadata,
            pinned=row["pinned"],
            scope=Scope(agent_id=row["agent_id"], user_id=row["user_id"], session_id=row["session_id"]),
            observed_at=created if created <= self._clock.now() else None,
        )
        return _SAVE_OUTCOMES.get(result.outcome, result.outcome)

    def _key(self, t: Table, row: dict[str, Any]) -> Any:
        columns = _KEYS.get(t.name, t.order)
        if columns is None:
            return codec.encode_record(t, row)
        return tuple(row[c] for c in columns)

    def _present(self, name: str) -> set[Any]:
        """The keys of ``name``'s rows in the store, read once (then kept up to date by this merge)."""
        found = self._keys.get(name)
        if found is None:
            t = table(name)
            found = {self._key(t, row) for row in self._store.export_rows(name)}
            self._keys[name] = found
        return found


def _current(entry: dict[str, Any]) -> bool:
    return entry["archived_at"] is None and entry["superseded_by"] is None


def _take(lines: Iterator[Any], n: int) -> Iterator[Any]:
    for _ in range(n):
        item = next(lines, None)
        if item is None:
            return
        yield item
