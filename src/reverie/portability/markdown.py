"""Long-term memory as a folder of Markdown notes, and a folder of notes as long-term memory.

Export: one note per current entry of an agent (``notes.render_note``) at ``<category path>/<slug>-<id8>.md``,
each file written whole (a temporary file renamed into place). A destination that exists and holds anything
is refused unless ``force``; with ``force`` the notes of this agent's earlier export that match no current
entry are removed (so a re-export into a git working tree diffs as the store changed) and no other file is
touched.

Import: every ``*.md`` file under the folder (hidden folders such as ``.obsidian`` and ``.git`` left out), in
path order. Invariants:
- One note is one entry. A note is matched to its entry by the ``id`` of our front matter, else by its path
  relative to the folder, recorded on the entry as ``metadata.import = {"path", "sha256", "at"}`` when the
  import wrote it (a note folded into an existing entry by deduplication is recorded under ``also``).
- A matched note whose file is byte for byte the one last imported, or whose text, category and tags equal
  the entry's, changes nothing (``unchanged``); its importance counts only once the note was imported from
  this path (an exported note's importance is a snapshot the dream's decay moves on from). Otherwise the
  entry is edited: a new version (``updated``), never a second entry. An unmatched note is saved through
  save-time deduplication with source ``import:markdown`` (``saved``, or ``merged`` into an entry that
  already said it).
- One of our notes whose entry changed in the store after the note was written (and the note changed too) is
  not applied: it is reported, so an import never silently undoes an edit made in Reverie.
- A note that cannot be read or saved is reported (its path and why) and skipped; each note's writes are one
  transaction, so nothing of it is half-written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reverie.clock import Clock
from reverie.core import validate
from reverie.errors import Conflict, NotFound, ReverieError
from reverie.memory.longterm import LongTermMemory
from reverie.portability.notes import IMPORT_KEY, Note, NoteError, note_name, read_note, render_note
from reverie.portability.report import ExportReport, ImportReport
from reverie.storage.base import Store
from reverie.types import Change, MemoryEntry, Scope

FORMAT = "markdown"
SOURCE = "import:markdown"


# -- export -----------------------------------------------------------------------------------------------
def export_markdown(
    store: Store, agent_id: str, dest: Path, *, force: bool = False, user_id: str | None = None
) -> ExportReport:
    """Write every current entry of ``agent_id`` (with ``user_id``: the agent-wide entries and that user's)
    as a note under ``dest``. Raises ``NotFound`` for an agent with no entries and ``Conflict`` for a
    destination that is not empty (without ``force``) or is a file; nothing is written then."""
    agent = validate.agent_id(agent_id)
    user = None if user_id is None else validate.identifier(user_id, name="user_id")
    root = Path(dest)
    if root.exists() and not root.is_dir():
        raise Conflict(f"{root} exists and is not a folder")
    if root.is_dir() and any(root.iterdir()) and not force:
        raise Conflict(f"{root} is not empty; choose an empty folder, or force (--force) to write over an export")
    if agent not in store.facts.agents():
        raise NotFound(f"agent {agent!r} has no memories to export")
    planned: dict[str, str] = {}
    for entry in store.facts.iter_all(agent):
        if entry.current and (user is None or entry.scope.user_id in (None, user)):
            planned[_note_path(entry, planned)] = render_note(entry)
    root.mkdir(parents=True, exist_ok=True)
    removed = _remove_stale(root, agent, set(planned)) if force else 0
    written = 0
    for rel, text in planned.items():
        target = root / rel
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            _write_atomic(target, text)
            written += 1
    return ExportReport(str(root), FORMAT, {"notes": len(planned), "written": written, "removed": removed})


def _note_path(entry: MemoryEntry, taken: dict[str, str]) -> str:
    rel = f"{entry.category}/{note_name(entry)}"
    if rel in taken:  # two ids sharing their first 8 characters and their first words: use the whole id
        rel = f"{entry.category}/{note_name(entry).removesuffix('.md')}{entry.id[8:]}.md"
    return rel


def _remove_stale(root: Path, agent: str, keep: set[str]) -> int:
    """Remove our notes of ``agent`` that this export does not write (entries archived since). Files we
    cannot read as our notes are left alone."""
    removed = 0
    for path, rel in _markdown_files(root):
        if rel in keep:
            continue
        try:
            note = read_note(path.read_text(encoding="utf-8"), rel)
        except (NoteError, UnicodeDecodeError, OSError):
            continue
        if note.entry_id is not None and note.fields.get("agent", agent) == agent:
            path.unlink()
            removed += 1
    return removed


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# -- import -----------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Known:
    """The agent's entries an import can match a note to: current entries by id, and by imported path."""

    by_id: dict[str, MemoryEntry]
    by_path: dict[str, tuple[str, str, bool]]  # path -> (entry id, sha256 last applied, primary note)


def import_markdown(
    memory: LongTermMemory,
    store: Store,
    clock: Clock,
    source: Path,
    *,
    agent_id: str,
    user_id: str | None = None,
) -> ImportReport:
    """Import the notes under the folder ``source`` into ``agent_id``'s memory (``user_id``: into that
    user's scope; otherwise our notes keep their ``user``, and other notes are agent-wide). Counts
    ``entry`` outcomes ``saved``, ``merged``, ``updated``, ``unchanged``; unreadable notes are in
    ``skipped``. Raises ``NotFound`` when ``source`` is not a folder."""
    agent = validate.agent_id(agent_id)
    user = None if user_id is None else validate.identifier(user_id, name="user_id")
    root = Path(source)
    if not root.is_dir():
        raise NotFound(f"{root} is not a folder of Markdown notes")
    report = ImportReport(str(root), FORMAT)
    known = _known(store, agent)
    for path, rel in _markdown_files(root):
        try:
            note = read_note(path.read_text(encoding="utf-8"), rel)
            outcome = _apply(memory, store, clock, note, known, agent, user)
        except UnicodeDecodeError:
            report.skipped.append((rel, "the file is not UTF-8 text"))
        except OSError as exc:
            report.skipped.append((rel, f"cannot read the file: {exc.strerror or exc}"))
        except (NoteError, ReverieError) as exc:
            report.skipped.append((rel, str(exc)))
        else:
            report.count("entry", outcome)
    return report


def _markdown_files(root: Path) -> Iterator[tuple[Path, str]]:
    """``(path, relative path)`` of every ``.md`` file under ``root`` outside hidden folders, sorted."""
    found: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".md") and not name.startswith("."):
                path = Path(folder) / name
                found.append((path.relative_to(root).as_posix(), path))
    for rel, path in sorted(found):
        yield path, rel


def _known(store: Store, agent: str) -> _Known:
    known = _Known({}, {})
    for entry in store.facts.iter_all(agent):
        if not entry.current:
            continue
        known.by_id[entry.id] = entry
        record = entry.metadata.get(IMPORT_KEY)
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("path"), str):
            known.by_path[record["path"]] = (entry.id, str(record.get("sha256")), True)
        also = record.get("also")
        for path, sha in also.items() if isinstance(also, dict) else ():
            known.by_path.setdefault(str(path), (entry.id, str(sha), False))
    return known


def _apply(
    memory: LongTermMemory, store: Store, clock: Clock, note: Note, known: _Known, agent: str, user: str | None
) -> str:
    """Save, edit or leave one note's entry; returns the outcome. Raises what a save would."""
    tracked = known.by_path.get(note.path)
    entry = known.by_id.get(note.entry_id) if note.entry_id is not None else None
    if entry is None and tracked is not None:
        entry = known.by_id.get(tracked[0])
    if tracked is not None and entry is not None and tracked[0] == entry.id and tracked[1] == note.sha256:
        return "unchanged"
    if entry is None or (tracked is not None and not tracked[2] and note.entry_id is None):
        # New, or folded earlier into an entry another note owns: saved again through deduplication.
        return _create(memory, store, clock, note, known, _scope(note, agent, user))
    return _update(memory, store, clock, note, entry, known)


def _scope(note: Note, agent: str, user: str | None) -> Scope:
    fields = note.fields
    note_user = fields.get("user") if isinstance(fields.get("user"), str) else None
    session = fields.get("session") if isinstance(fields.get("session"), str) else None
    return Scope(agent_id=agent, user_id=user if user is not None else note_user, session_id=session)


def _create(memory: LongTermMemory, store: Store, clock: Clock, note: Note, known: _Known, scope: Scope) -> str:
    fields = note.fields
    metadata = dict(note.metadata)
    origin = {"path": note.path, "sha256": note.sha256}
    if isinstance(fields.get("source"), str) and fields["source"] != SOURCE:
        origin["source"] = fields["source"]  # the provenance the note had where it came from
    metadata[IMPORT_KEY] = origin
    with store.transaction():
        result = memory.save(
            note.content,
            category=note.category,
            tags=list(note.tags),
            source=SOURCE,
            importance=fields.get("importance"),
            tier=fields.get("tier"),
            metadata=metadata,
            pinned=fields.get("pinned", False),
            scope=scope,
            observed_at=fields.get("created"),
        )
        created = result.outcome in ("created", "superseded")
        entry = _track(store, clock, result.entry, note, primary=created)
    known.by_id[entry.id] = entry
    owns = entry.metadata[IMPORT_KEY].get("path") == note.path
    known.by_path[note.path] = (entry.id, note.sha256, owns)
    return "saved" if created else "merged"


def _update(memory: LongTermMemory, store: Store, clock: Clock, note: Note, entry: MemoryEntry, known: _Known) -> str:
    importance = note.fields.get("importance")
    wanted_importance = (
        entry.importance if importance is None else validate.unit_interval(importance, name="importance")
    )
    category = entry.category if note.category is None else note.category
    same = (note.content, category, note.tags) == (entry.content, entry.category, entry.tags)
    new_importance = round(wanted_importance, 2) != round(entry.importance, 2)
    record = entry.metadata.get(IMPORT_KEY)
    # Importance decays in the store (the dream's aging) while an exported note keeps the value it had, so a
    # different importance alone means an edit only in a note this path was imported from before (its file
    # changed since, or the hash check above would have stopped here).
    edited_here = isinstance(record, dict) and record.get("path") == note.path
    if same and not (new_importance and edited_here):
        return "unchanged"
    if _changed_in_store(entry, note):
        raise Conflict(
            f"entry {entry.id} changed in the store after this note was written; "
            "export it again and redo the edit on the new note"
        )
    with store.transaction():
        edited = memory.edit(entry.id, content=note.content, category=category, tags=list(note.tags), scope=entry.scope)
        if new_importance:
            edited = memory.set_importance(entry.id, wanted_importance, scope=entry.scope)
        edited = _track(store, clock, edited, note, primary=True)
    known.by_id[edited.id] = edited
    known.by_path[note.path] = (edited.id, note.sha256, True)
    return "updated"


def _changed_in_store(entry: MemoryEntry, note: Note) -> bool:
    """Whether the entry's text changed after the note was last applied to it (our record's ``at``) or, for
    one of our notes never imported, after it was exported (its ``updated`` or ``created``)."""
    record = entry.metadata.get(IMPORT_KEY)
    text_time = entry.updated_at or entry.created_at
    if isinstance(record, dict) and record.get("path") == note.path and isinstance(record.get("at"), str):
        return text_time > datetime.fromisoformat(record["at"])
    written = _as_time(note.fields.get("updated", note.fields.get("created")))
    return written is not None and text_time > written


def _track(store: Store, clock: Clock, entry: MemoryEntry, note: Note, *, primary: bool) -> MemoryEntry:
    """Record on ``entry`` that ``note`` (this version of its file) was applied to it: bookkeeping, no
    version. ``primary``: the note owns the entry; otherwise it was folded into it (``also``)."""
    record: dict[str, Any] = dict(entry.metadata.get(IMPORT_KEY) or {})
    if primary or not isinstance(record.get("path"), str):
        record.update(path=note.path, sha256=note.sha256, at=(entry.updated_at or entry.created_at).isoformat())
    else:
        record["also"] = {**(record.get("also") or {}), note.path: note.sha256}
    if record == entry.metadata.get(IMPORT_KEY):
        return entry
    tracked = replace(entry, metadata={**entry.metadata, IMPORT_KEY: record})
    store.facts.write(tracked, change=Change.HOUSEKEEPING, at=clock.now())
    return tracked


def _as_time(value: object) -> datetime | None:
    """A front-matter time (YAML may have read it as a datetime already); naive means UTC."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise NoteError(f"{str(value)[:40]!r} is not an ISO 8601 date and time") from None
    if not isinstance(value, datetime):
        return None
    return value if value.utcoffset() is not None else value.replace(tzinfo=UTC)
