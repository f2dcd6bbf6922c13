"""Lossless export and import of a store as JSONL (``reverie export`` / ``reverie import``).

An export is a header line (``codec.header``: format, version, embedding model, dimensions, agent, when,
whether vectors are in it) and then one record a line for every row of every portable table
(``storage.portable.TABLES``, catalog order), values encoded by column kind (``codec``). Without vectors,
``fact_vectors`` is left out and a skill's vector is null: the importing store re-embeds them.

An import reads the header first and refuses, before anything is written, a file that is not an export,
another format version, or another embedding model (unless ``reembed``). Then:
- into an EMPTY store (no row outside ``store_meta``): every row in one transaction through
  ``Store.import_rows``, so exporting the result gives back the same records;
- into a NON-EMPTY store: a merge (``portability.merge``), committed in batches, resumable.

Invariants:
- An export is written to a temporary file beside ``path`` and renamed at the end: ``path`` holds a whole
  export or is left as it was; an existing ``path`` is replaced only with ``force``.
- A malformed line is reported with its line number and nothing of it is written; ``stop_on_error`` stops
  at the first one (an empty-store import then writes nothing at all).
- ``store_meta`` keys under ``merge.STATE_PREFIX`` (an import's progress) are this store's bookkeeping and
  are not exported.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from reverie.clock import Clock
from reverie.core import validate
from reverie.errors import NotFound, ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.portability import codec
from reverie.portability.merge import STATE_PREFIX, Merge, Source
from reverie.portability.report import ExportReport, ImportReport
from reverie.storage.base import NearestVectors, Store
from reverie.storage.portable import TABLES, Table

ACTIVE_MODEL_KEY = "embedding_model"  # store_meta: the model the store's vectors are made by
Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: an export calls it per table (rows), an import per line read."""
_PROGRESS_EVERY = 500


# -- export ----------------------------------------------------------------------------------------------
def export_jsonl(
    store: Store,
    path: str | Path,
    *,
    clock: Clock,
    embedding_model: str | None = None,
    dimensions: int | None = None,
    agent_id: str | None = None,
    with_vectors: bool = False,
    force: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write the store (or the records of one agent) to ``path`` as JSONL; returns the records per table.

    ``embedding_model``: the model named in the header (default: the store's active model); ``dimensions``
    likewise (default: the dimension of that model's stored vectors). ``agent_id``: only rows whose
    ``agent_id`` is the agent's, or whose parent row is (an entry's versions, a dream run's evidence);
    ``NotFound`` when the store holds no row of that agent. Raises ``ValidationError`` for an existing
    ``path`` without ``force`` and for a bad argument; nothing is written then."""
    target = _export_target(path, force)
    if agent_id is not None:
        agent_id = validate.identifier(agent_id, name="agent")
    model = embedding_model if embedding_model is not None else store.meta.get(ACTIVE_MODEL_KEY)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    report = ExportReport(path=str(target), format="jsonl")
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as out, store.read_snapshot():
            dims = dimensions if dimensions is not None else _stored_dimensions(store, model)
            now = clock.now()
            head = codec.header(
                embedding_model=model, dimensions=dims, agent=agent_id, created_at=now, with_vectors=with_vectors
            )
            out.write(json.dumps(head, ensure_ascii=False) + "\n")
            _write_tables(store, out, agent_id, with_vectors, report, progress)
            out.flush()
            os.fsync(out.fileno())
        if agent_id is not None and not any(report.counts.values()):
            known = ", ".join(store.facts.agents()) or "none"
            raise NotFound(f"no agent {agent_id!r} in this store (agents with entries: {known}); nothing was written")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return report


def _export_target(path: str | Path, force: bool) -> Path:
    if not isinstance(path, str | Path) or not str(path).strip():
        raise ValidationError("the export path must be a file path", field="path")
    target = Path(path).expanduser()
    if target.is_dir():
        raise ValidationError(f"{target} is a directory: give a file path for a JSONL export", field="path")
    if target.exists() and not force:
        raise ValidationError(f"{target} exists; choose another path, or force (--force) to overwrite it", field="path")
    if not target.parent.is_dir():
        raise ValidationError(f"the folder {target.parent} does not exist", field="path")
    return target


def _stored_dimensions(store: Store, model: str | None) -> int | None:
    rows = store.export_rows("fact_vectors")
    try:
        for row in rows:
            if row["model"] == model:
                return int(row["dim"])
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()  # an export holds a cursor until it ends
    return None


def _write_tables(
    store: Store, out: IO[str], agent: str | None, with_vectors: bool, report: ExportReport, progress: Progress | None
) -> None:
    """Every portable table's kept rows, in catalog order. For one agent, the ids of its entries and dream
    runs are gathered on the way (the catalog lists a parent before its children)."""
    parents: dict[str, set[str]] = {"facts": set(), "dream_runs": set()}
    for t in TABLES:
        if t.name == "fact_vectors" and not with_vectors:
            continue
        total = store.count_rows(t.name)
        written = 0
        for row in store.export_rows(t.name):
            if not _kept(t, row, agent, parents):
                continue
            if t.name == "skills" and not with_vectors:
                row = {**row, "vector": None, "vector_model": None}
            out.write(codec.encode_record(t, row) + "\n")
            written += 1
            if progress is not None and written % _PROGRESS_EVERY == 0:
                progress(t.name, written, total)
        report.counts[t.name] = written
        if progress is not None:
            progress(t.name, written, written)


def _kept(t: Table, row: dict[str, Any], agent: str | None, parents: dict[str, set[str]]) -> bool:
    if t.name == "store_meta":
        return agent is None and not str(row["key"]).startswith(STATE_PREFIX)
    if agent is None:
        return True
    if t.name == "fact_versions":
        return row["fact_id"] in parents["facts"]
    if t.name == "dream_evidence":
        return row["run_id"] in parents["dream_runs"]
    if row.get("agent_id") != agent:
        return False
    if t.name == "facts":
        parents["facts"].add(row["id"])
    elif t.name == "dream_runs":
        parents["dream_runs"].add(row["run_id"])
    return True


# -- import ----------------------------------------------------------------------------------------------
def read_header(path: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed header of the export at ``path`` and its raw line; ``ValidationError`` when ``path`` is
    not a readable Reverie JSONL export of a supported version."""
    source = Path(path).expanduser()
    if not source.is_file():
        raise ValidationError(f"{source} is not a file", field="path")
    try:
        with source.open(encoding="utf-8") as f:
            line = f.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{source} cannot be read as UTF-8 text: {exc}", field="path") from None
    try:
        return codec.parse_header(line), line
    except codec.BadLine as exc:
        raise ValidationError(f"{source}: {exc}; nothing was written", field="path") from None


def import_jsonl(
    store: Store,
    path: str | Path,
    *,
    memory: LongTermMemory,
    clock: Clock,
    embedding_model: str | None,
    agent_id: str | None = None,
    reembed: bool = False,
    stop_on_error: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the JSONL export at ``path`` (see the module docstring for the empty / merge rules).

    ``embedding_model``: the model this store embeds with (None: none configured). ``agent_id``: import every
    record into this agent instead of the one it names. ``reembed``: take an export of another model, leaving
    its vectors out (the caller's embedder then embeds the entries: ``Reverie.embed_pending``).
    ``stop_on_error``: stop at the first malformed line instead of reporting it and going on."""
    head, head_line = read_header(path)
    if agent_id is not None:
        agent_id = validate.agent_id(agent_id, name="agent")
    theirs = head.get("embedding_model")
    drop_vectors = reembed or not head["with_vectors"]
    if theirs is not None and embedding_model is not None and theirs != embedding_model and not reembed:
        raise ValidationError(
            f"{path} was exported with the embedding model {theirs!r} but this store embeds with "
            f"{embedding_model!r}: pass --reembed (reembed=True) to import it and re-embed every entry; "
            "nothing was written",
            field="path",
        )
    report = ImportReport(source=str(path), format="jsonl")
    source = Source(Path(path).expanduser(), agent_id, drop_vectors, progress)
    if _occupied(store):
        digest = codec.header_digest(head_line + (agent_id or ""))
        Merge(store, memory, clock, report, stop_on_error).run(source, digest)
    else:
        _import_whole(store, source, report, stop_on_error)
    if not drop_vectors and isinstance(store.vectors, NearestVectors):
        store.vectors.index_all()  # committed first: an index build waits for writers
    return report


def _occupied(store: Store) -> list[str]:
    """The portable tables holding rows, ``store_meta`` aside (an opened engine records its model there)."""
    return [t.name for t in TABLES if t.name != "store_meta" and store.count_rows(t.name)]


def _import_whole(store: Store, source: Source, report: ImportReport, stop_on_error: bool) -> None:
    """Every record into an empty store in one transaction, table by table as the lines come."""
    with store.transaction():
        meta = {row["key"] for row in store.export_rows("store_meta")}
        records = _whole_records(source.records(report, stop_on_error), meta, report)
        for t, group in itertools.groupby(records, key=lambda record: record[0]):
            inserted = store.import_rows(t.name, (row for _, row in group))
            report.count(t.name, "inserted", inserted)


def _whole_records(
    records: Iterable[tuple[int, Table, dict[str, Any] | None]], meta: set[str], report: ImportReport
) -> Iterator[tuple[Table, dict[str, Any]]]:
    for _, t, row in records:
        if row is None:
            report.count(t.name, "re-embedded")
        elif t.name == "store_meta" and row["key"] in meta:
            report.count(t.name, "exists")
        else:
            yield t, row
