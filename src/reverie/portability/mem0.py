"""mem0's exported memories as long-term entries (docs/portability.md, "From mem0", has the mapping table).

The input is what mem0's ``get_all`` returns, saved as JSON: a list of memories, or an object whose
``results`` (or ``memories``) is that list (the open-source ``Memory.get_all`` and the platform's
``MemoryClient.get_all``, paged or not). A memory is an object with ``memory`` (the text), ``id``, ``hash``,
``user_id`` / ``agent_id`` / ``run_id`` (plus ``actor_id``, ``role``, ``app_id`` where set), ``metadata``,
``categories`` (the platform's), ``created_at`` and ``updated_at``.

Invariants:
- The whole file is read and checked before anything is written: a file that is not JSON, or not a list of
  memories in one of those shapes, is refused (``ValidationError``) and the store is untouched.
- A memory that cannot be saved (no text, a bad time, a reserved agent id…) is reported by its position
  (``record N``) and skipped; the others are saved in one transaction (``save_many(on_error="skip")``),
  through save-time deduplication: ``saved`` (a new entry) or ``merged`` (an entry already said it).
- A memory whose mem0 id an entry of the target agent already carries (``metadata.mem0.id``), or whose text
  a current entry of the same scope brought in from mem0 already has, is ``unchanged``: importing the same
  export twice writes nothing the second time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reverie.core import validate
from reverie.errors import NotFound, ValidationError
from reverie.memory.longterm import LongTermMemory
from reverie.portability.report import ImportReport
from reverie.storage.base import Store
from reverie.types import DEFAULT_AGENT, RESERVED_AGENT_PREFIX, SaveRejection, Scope, Tier

FORMAT = "mem0"
SOURCE = "import:mem0"
MEM0_KEY = "mem0"  # metadata: what mem0 knew of the memory (its id, hash, times, actor)
# mem0 metadata keys that mean something else in Reverie's metadata: kept under metadata.mem0.metadata.
_RESERVED = frozenset(
    {"source", "subjectTime", "subjectTimeStart", "subjectTimeEnd", "validTo", "supersedes", "import", MEM0_KEY}
)
_KEPT = ("id", "hash", "created_at", "updated_at", "actor_id", "role", "app_id", "immutable", "expiration_date")


def import_mem0(memory: LongTermMemory, store: Store, source: Path, *, agent_id: str | None = None) -> ImportReport:
    """Import the mem0 export at ``source``. ``agent_id`` (when given) is the agent every memory goes to;
    otherwise a memory's own ``agent_id``, else ``default``. Raises ``NotFound`` (no such file) or
    ``ValidationError`` (not a mem0 export) before anything is written."""
    target = None if agent_id is None else validate.agent_id(agent_id)
    path = Path(source)
    records = read_export(path)
    report = ImportReport(str(path), FORMAT)
    known = _known(store, {_agent(r, target) for r in records if isinstance(r, Mapping)})
    items: list[dict[str, Any]] = []
    positions: list[int] = []
    for position, record in enumerate(records):
        try:
            item = _item(record, target)
        except ValidationError as exc:
            report.skipped.append((f"record {position}", str(exc)))
            continue
        scope, mem0_id = item["scope"], item["metadata"][MEM0_KEY].get("id")
        if ("id", scope.agent_id, mem0_id) in known or ("text", scope, item["content"]) in known:
            report.count("entry", "unchanged")
            continue
        if mem0_id is not None:
            known.add(("id", scope.agent_id, mem0_id))  # the same id twice in one file: saved once
        items.append(item)
        positions.append(position)
    results = memory.save_many(items, on_error="skip") if items else []
    for position, result in zip(positions, results, strict=True):
        if isinstance(result, SaveRejection):
            report.skipped.append((f"record {position}", result.error))
        else:
            report.count("entry", "saved" if result.outcome in ("created", "superseded") else "merged")
    report.skipped.sort(key=lambda skipped: int(skipped[0].removeprefix("record ")))
    return report


def read_export(path: Path) -> list[Any]:
    """The memories of the export at ``path``, unchecked one by one; raises when the file is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path} is not UTF-8 text, so not a mem0 export", field="source") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}", field="source") from None
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}), so not a mem0 export",
            field="source",
        ) from None
    if isinstance(loaded, Mapping):
        loaded = loaded.get("results", loaded.get("memories"))
    if not isinstance(loaded, list):
        raise ValidationError(
            f"{path} is not a mem0 export: expected get_all's list of memories, or an object with 'results'",
            field="source",
        )
    if loaded and not any(isinstance(r, Mapping) and "memory" in r for r in loaded):
        raise ValidationError(f"{path} is not a mem0 export: no record has a 'memory' text", field="source")
    return loaded


def _agent(record: Mapping[str, Any], target: str | None) -> str:
    own = record.get("agent_id")
    return target if target is not None else own if isinstance(own, str) and own else DEFAULT_AGENT


def _known(store: Store, agents: set[str]) -> set[tuple[Any, ...]]:
    """What earlier imports brought in: ``("id", agent, mem0 id)`` of every entry they made (archived ones too:
    an entry deleted in Reverie is not brought back by importing the same export again), and ``("text",
    scope, content)`` of the current ones (a memory folded into one of them by deduplication left no id)."""
    known: set[tuple[Any, ...]] = set()
    for agent in agents:
        if agent.startswith(RESERVED_AGENT_PREFIX):
            continue  # a reserved id: the record is rejected when built
        for entry in store.facts.iter_all(agent):
            mem0 = entry.metadata.get(MEM0_KEY)
            if isinstance(mem0, Mapping) and mem0.get("id") is not None:
                known.add(("id", agent, mem0["id"]))
                if entry.current:
                    known.add(("text", entry.scope, entry.content))
    return known


def _item(record: object, target: str | None) -> dict[str, Any]:
    """``save_many``'s arguments for one memory; raises ``ValidationError`` for what cannot be a save."""
    if not isinstance(record, Mapping):
        raise ValidationError("is not an object")
    text = record.get("memory")
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("has no 'memory' text")
    scope = Scope(
        agent_id=_agent(record, target),
        user_id=_id(record, "user_id"),
        session_id=_id(record, "run_id"),
    )
    own = record.get("metadata")
    own = dict(own) if isinstance(own, Mapping) else {}
    mem0: dict[str, Any] = {k: record[k] for k in _KEPT if record.get(k) is not None}
    if target is not None and record.get("agent_id") not in (None, target):
        mem0["agent_id"] = record["agent_id"]
    moved = {k: own.pop(k) for k in list(own) if k in _RESERVED}
    if moved:
        mem0["metadata"] = moved
    given = record.get("categories")
    given = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    categories = [c.strip() for c in given if isinstance(c, str) and c.strip()]
    procedural = own.get("memory_type") == "procedural_memory"
    return {
        "content": text.strip(),
        "category": _category(categories[0]) if categories else None,
        "tags": categories,
        "source": SOURCE,
        "tier": Tier.PROCEDURAL if procedural else None,
        "metadata": {**own, MEM0_KEY: mem0},
        "scope": scope,
        "observed_at": _time(record.get("created_at")),
    }


def _id(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, int | str) and not isinstance(value, bool):
        return validate.identifier(str(value), name=key)
    raise ValidationError(f"{key} must be a string")


def _category(name: str) -> str:
    """A mem0 category ("personal_details", "Food & Drink") as a Reverie category path segment."""
    slug = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "-" for c in name.strip().lower())
    return "-".join(p for p in slug.split("-") if p) or "general"


def _time(value: object) -> datetime | None:
    """mem0's ``created_at``: ISO 8601, with an offset (mem0 writes US/Pacific times); a time without one is
    read as UTC. None when absent (then the entry is observed now)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValidationError("created_at must be an ISO 8601 date and time", field="observed_at")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(
            f"created_at {value[:40]!r} is not an ISO 8601 date and time", field="observed_at"
        ) from None
    return moment if moment.utcoffset() is not None else moment.replace(tzinfo=UTC)
