"""Moving a store between backends: the catalog of portable tables, ``copy``, and portable backups.

The catalog below is the one description of what a store holds, column by column, in a backend-neutral
form. Every backend exports and imports the rows of these tables (``Store.export_rows`` / ``import_rows``)
as plain Python values of each column's ``Kind``; ``copy`` moves them from one store into an empty other
one, so a store goes from SQLite to PostgreSQL and back with the same ids, versions, timestamps and vectors.

Invariants:
- ``TABLES`` is in dependency order (a session before its turns, an entry before its vector, so the
  destination's triggers write fresh change-log rows); a restore deletes in the reverse order.
- Not copied: what a backend derives from the rows (SQLite's full-text table, PostgreSQL's ``search_text``,
  the change logs ``fact_log`` / ``vector_log`` that the destination's triggers write afresh) and its own
  bookkeeping (``schema_migrations``, the ``seq`` columns that only order rows; ``working_entries.seq``
  is data and is copied).
- A copy or a restore is one destination transaction: all rows or none.
- A portable backup is a Reverie SQLite store file, so a backup of either backend restores into either.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from reverie.errors import StorageError
from reverie.storage.base import NearestVectors, Store

Progress = Callable[[str, int, int], None]
_PROGRESS_EVERY = 500  # rows between two progress callbacks


class Kind(StrEnum):
    """How a column's value travels: the Python type of an exported value (None when the column is NULL).

    text: str; int: int; float: float; bool: bool; time: an aware UTC datetime; json: a JSON value
    (dict, list, str, int, float, bool); vector: float32 bytes.
    """

    TEXT = "text"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    TIME = "time"
    JSON = "json"
    VECTOR = "vector"


@dataclass(frozen=True, slots=True)
class Table:
    """One portable table.

    ``order`` is the export order: ``("seq",)`` for a table whose hidden ``seq`` column (not copied) keeps
    insertion order, else its primary key (compared byte-wise for text, as SQLite does). ``on_damage``:
    what an export does with a stored timestamp it cannot read back: "fail" (``StorageError``), "skip" the
    row (the dream ledger: an unreadable stamp means the pass runs once) or read it as None (the dream
    lock: an unreadable lease counts as expired).
    """

    name: str
    columns: tuple[tuple[str, Kind], ...]
    order: tuple[str, ...]
    on_damage: Literal["fail", "skip", "null"] = "fail"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def hidden_seq(self) -> bool:
        """Ordered by a ``seq`` column that is not one of the copied columns."""
        return self.order == ("seq",) and "seq" not in self.names


def _cols(spec: str) -> tuple[tuple[str, Kind], ...]:
    """``"id:text agent_id:text ..."`` as ``(name, Kind)`` pairs."""
    out = []
    for item in spec.split():
        name, kind = item.split(":")
        out.append((name, Kind(kind)))
    return tuple(out)


TABLES: tuple[Table, ...] = (
    Table(
        "facts",
        _cols(
            "id:text agent_id:text user_id:text session_id:text content:text category:text tags:json tier:text"
            " created_at:time updated_at:time last_seen_at:time reinforcement_count:int importance:float"
            " retention:float confidence:float pinned:bool expires_at:time archived_at:time superseded_by:text"
            " metadata:json decayed_through:time read_strength:float read_at:time fold_pending:bool"
            " expand_pending:bool"
        ),
        ("seq",),
    ),
    Table(
        "fact_versions",
        _cols(
            "fact_id:text version:int change:text recorded_at:time content:text category:text tags:json"
            " importance:float metadata:json archived:bool"
        ),
        ("fact_id", "version"),
    ),
    Table(
        "fact_vectors",
        _cols("fact_id:text agent_id:text model:text dim:int vector:vector embedded_at:time"),
        ("seq",),
    ),
    Table("store_meta", _cols("key:text value:text"), ("key",)),
    Table(
        "dream_ledger",
        _cols("agent_id:text pass_name:text stamped_at:time fingerprint:text"),
        ("agent_id", "pass_name"),
        on_damage="skip",
    ),
    Table(
        "dream_locks",
        _cols(
            "agent_id:text holder:text acquired_at:time expires_at:time last_dream_at:time abort_requested:bool"
            " holder_pid:int holder_host:text heartbeat_seconds:float heartbeat_at:time"
        ),
        ("agent_id",),
        on_damage="null",
    ),
    Table("dream_activity", _cols("agent_id:text session_key:text last_at:time"), ("agent_id", "session_key")),
    Table(
        "dream_runs",
        _cols(
            "run_id:text agent_id:text run_trigger:text started_at:time phase:text finished_at:time"
            " current_pass:text progress:text tokens:int cost:float report:json error:text"
        ),
        ("seq",),
    ),
    Table("dream_evidence", _cols("run_id:text target_id:text source_id:text at:time"), ("seq",)),
    Table("purge_log", _cols("fact_id:text agent_id:text purged_at:time"), ("seq",)),
    Table("graph_extraction", _cols("fact_id:text agent_id:text queued_at:time"), ("seq",)),
    Table(
        "sessions",
        _cols(
            "agent_id:text session_id:text name:text metadata:json created_at:time last_active_at:time"
            " started_at:time summary:text compacted_through:int deleted_at:time"
        ),
        ("agent_id", "session_id"),
    ),
    Table(
        "turns",
        _cols(
            "agent_id:text session_id:text turn_index:int role:text content:text at:time name:text"
            " tool_call_id:text tool_calls:json archived:bool"
        ),
        ("agent_id", "session_id", "turn_index"),
    ),
    Table(
        "working_entries",
        _cols("agent_id:text key:text value:text category:text tags:json stored_at:time expires_at:time seq:int"),
        ("agent_id", "key"),
    ),
    Table(
        "api_keys",
        _cols(
            "key_id:text name:text agent_id:text scopes:json key_hash:text created_at:time revoked_at:time"
            " last_used_at:time users:json"
        ),
        ("key_id",),
    ),
    Table(
        "llm_usage",
        _cols(
            "at:time agent_id:text provider:text model:text purpose:text prompt_tokens:int completion_tokens:int"
            " cost:float ok:bool"
        ),
        ("seq",),
    ),
    Table(
        "kv_items",
        _cols("agent_id:text key:text value:json created_at:time updated_at:time version:int deleted_at:time"),
        ("agent_id", "key"),
    ),
    Table(
        "kg_entities",
        _cols(
            "agent_id:text entity_id:text type:text name:text key:text properties:json created_at:time"
            " updated_at:time last_seen_at:time sources:json merged_into:text archived_at:time"
        ),
        ("seq",),
    ),
    Table(
        "kg_relations",
        _cols(
            "agent_id:text relation_id:text source_id:text relation:text target_id:text properties:json"
            " valid_from:time invalid_at:time created_at:time sources:json"
        ),
        ("seq",),
    ),
    Table(
        "skills",
        _cols(
            "agent_id:text name:text summary:text content:text see_also:json metadata:json created_at:time"
            " updated_at:time last_used_at:time archived_at:time version:int vector:vector vector_model:text"
        ),
        ("seq",),
    ),
    Table(
        "skill_versions",
        _cols(
            "agent_id:text name:text version:int change:text recorded_at:time summary:text content:text"
            " see_also:json metadata:json archived:bool"
        ),
        ("agent_id", "name", "version"),
    ),
    Table("skill_usage", _cols("agent_id:text session_id:text name:text used_at:time"), ("seq",)),
    Table(
        "feedback",
        _cols(
            "feedback_id:text agent_id:text session_id:text kind:text rating:text comment:text entry_ids:json"
            " skill_names:json created_at:time"
        ),
        ("seq",),
    ),
    # The telemetry logs (storage.logs) and the context builder's delta filter (after its sessions).
    Table("conversation_log", _cols("agent_id:text session_id:text at:time record:json"), ("seq",)),
    Table("execution_log", _cols("agent_id:text session_id:text at:time record:json"), ("seq",)),
    Table("tool_call_log", _cols("agent_id:text session_id:text at:time record:json"), ("seq",)),
    Table(
        "context_injected",
        _cols("agent_id:text session_id:text entry_id:text injected_at:time"),
        ("agent_id", "session_id", "entry_id"),
    ),
)
_BY_NAME = {t.name: t for t in TABLES}


def table(name: str) -> Table:
    """The catalog entry of ``name``; ``StorageError`` for a table that is not portable."""
    found = _BY_NAME.get(name)
    if found is None:
        raise StorageError(f"{name!r} is not a portable table (known: {', '.join(_BY_NAME)})")
    return found


def _counted(
    rows: Iterable[dict[str, Any]], name: str, total: int, progress: Progress | None
) -> Iterator[dict[str, Any]]:
    for done, row in enumerate(rows, start=1):
        yield row
        if progress is not None and done % _PROGRESS_EVERY == 0:
            progress(name, done, max(total, done))


def _occupied(store: Store) -> list[str]:
    return [t.name for t in TABLES if store.count_rows(t.name)]


def _move(src: Store, dst: Store, progress: Progress | None) -> dict[str, int]:
    """Every portable table of ``src`` into ``dst``, in catalog order (the caller holds the transaction)."""
    counts: dict[str, int] = {}
    totals = {t.name: src.count_rows(t.name) for t in TABLES}
    for t in TABLES:
        if progress is not None:
            progress(t.name, 0, totals[t.name])
        rows = src.export_rows(t.name)
        try:
            moved = dst.import_rows(t.name, _counted(rows, t.name, totals[t.name], progress))
        finally:
            # An export may hold a cursor and a transaction while suspended: end it now, even on failure,
            # before the snapshot around it ends.
            if isinstance(rows, Generator):
                rows.close()
        counts[t.name] = moved
        if progress is not None:
            progress(t.name, moved, moved)  # the last call of a table: done == total (skipped rows left out)
    return counts


def copy(src: Store, dst: Store, *, progress: Progress | None = None) -> dict[str, int]:
    """Copy every portable table of ``src`` into ``dst``; returns the rows copied per table (catalog order).

    ``dst`` must hold no row of any portable table (``StorageError`` otherwise, and nothing is written).
    The copy is one ``dst`` transaction (all or nothing) reading one consistent state of ``src``.
    ``progress(table, done, total)`` is called as rows go; a table's last call has ``done == total``.
    """
    if src.url == dst.url:
        raise StorageError(f"cannot copy {src.url} onto itself")
    with dst.transaction():
        occupied = _occupied(dst)
        if occupied:
            raise StorageError(
                f"{dst.url} is not empty (rows in {', '.join(occupied)}): copy only into a new, empty store"
            )
        with src.read_snapshot():
            counts = _move(src, dst, progress)
    _index(dst)
    return counts


def _index(store: Store) -> None:
    """Vector search structures for the rows that just arrived (committed: an index build waits for writers)."""
    if isinstance(store.vectors, NearestVectors):
        store.vectors.index_all()


def replace_contents(store: Store, source: Store, *, progress: Progress | None = None) -> dict[str, int]:
    """In one ``store`` transaction: delete every row of every portable table (reverse catalog order,
    firing the change-log triggers), then copy in every row of ``source``. Returns the rows per table."""
    with store.transaction():
        for t in reversed(TABLES):
            store.delete_rows(t.name)
        with source.read_snapshot():
            counts = _move(source, store, progress)
    _index(store)
    return counts
