"""Markdown notes as text: rendering an entry as a note, and reading a note of any of three kinds.

Pure functions over strings (no store, no clock): ``markdown.py`` does the file and store work.

- **reverie**: what ``render_note`` writes. YAML front matter with the entry's fields in a fixed order (``id``
  and ``agent`` mark it as ours), the content as the body. ``read_note`` gives the content back exactly:
  the body minus the one newline the renderer adds.
- **basic-memory**: front matter ``title``, ``type``, ``permalink``, ``tags``; a body with ``## Observations``
  lines ``- [category] text #tag (context)`` and ``## Relations`` lines ``- relation [[Target]]``.
- **obsidian**: optional front matter, ``#tags`` inline, ``[[wikilinks]]``.

A foreign note becomes one entry: its text (titled by a heading when the body has none), its category from
its folder (else its ``category`` or ``type``), its tags from the front matter, the inline ``#tags`` and the
observations' categories. Only YAML's safe subset is read (``yaml.safe_load``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import yaml

from reverie.types import MemoryEntry
from reverie.views.plain import iso_z

# metadata: which note an entry was imported from (``markdown.py``); bookkeeping about files, not written in notes.
IMPORT_KEY = "import"
# Subject time: metadata key -> front-matter key.
SUBJECT_KEYS = (
    ("subjectTime", "subject_time"),
    ("subjectTimeStart", "subject_time_start"),
    ("subjectTimeEnd", "subject_time_end"),
)
_FRONT = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.DOTALL | re.MULTILINE)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Obsidian's tag: '#' after a space or a line start, then letters, digits, '_', '-', '/' (not only digits).
_TAG = re.compile(r"(?:^|(?<=\s))#([\w/-]*[^\W\d][\w/-]*)", re.MULTILINE)
_WIKILINK = re.compile(r"\[\[([^\[\]|#^]+)(?:[#^][^\[\]|]*)?(?:\|[^\[\]]*)?\]\]")
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\[\]()]+)\]\s+\S", re.MULTILINE)
_HEADING = re.compile(r"^#[ \t]+\S")  # a level-1 heading: the note has a title
_SLUG_CHARS = re.compile(r"[^a-z0-9_-]+")


class NoteError(ValueError):
    """A note that cannot be read; the message says why (the import reports it and skips the file)."""


@dataclass(frozen=True, slots=True)
class Note:
    """A note read from a file, as what a save or an edit needs.

    ``entry_id`` is set for our own notes only; ``fields`` holds our front matter's other values (``user``,
    ``session``, ``tier``, ``importance``, ``pinned``, ``created``, ``updated``, ``source``), as read.
    """

    path: str
    sha256: str
    kind: str  # reverie | basic-memory | obsidian
    content: str
    category: str | None
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    entry_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


# -- rendering --------------------------------------------------------------------------------------------
# YAML 1.1 reads NEL, LS and PS as line breaks: outside double quotes (which escape them) a reader folds them
# into spaces, so a value holding one would not read back as written.
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


class _NoteDumper(yaml.SafeDumper):
    """The safe dumper, with strings holding a YAML line-break character written double-quoted."""


def _represent_text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(ch in value for ch in _YAML_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_NoteDumper.add_representer(str, _represent_text)


def render_note(entry: MemoryEntry) -> str:
    """The note for ``entry``: front matter in a fixed order, then the content and one newline. Only what
    changes with the entry is written (no read counts, retention or last-seen time, nor the record of the note
    it was imported from), so a re-export of an unchanged entry is byte for byte the same file."""
    meta = {k: v for k, v in entry.metadata.items() if k != IMPORT_KEY}
    front: dict[str, Any] = {"id": entry.id, "agent": entry.scope.agent_id}
    if entry.scope.user_id is not None:
        front["user"] = entry.scope.user_id
    if entry.scope.session_id is not None:
        front["session"] = entry.scope.session_id
    front["category"] = entry.category
    front["tags"] = list(entry.tags)
    front["tier"] = entry.tier.value
    source = meta.pop("source", None)
    if source is not None:
        front["source"] = source
    front["importance"] = round(entry.importance, 2)
    front["pinned"] = entry.pinned
    front["confidence"] = round(entry.confidence, 2)
    front["created"] = iso_z(entry.created_at)
    if entry.updated_at is not None:
        front["updated"] = iso_z(entry.updated_at)
    if entry.expires_at is not None:
        front["expires"] = iso_z(entry.expires_at)
    for meta_key, front_key in SUBJECT_KEYS:
        if meta_key in meta:
            front[front_key] = meta.pop(meta_key)
    if meta:
        front["metadata"] = _sorted(meta)
    dumped = yaml.dump(
        front, Dumper=_NoteDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000
    )
    return f"---\n{dumped}---\n{entry.content}\n"


def note_name(entry: MemoryEntry) -> str:
    """The file name: a slug of the content's first words, then the first 8 characters of the id."""
    words = _slug(" ".join(entry.content.split()[:8]))[:48].strip("-")
    return f"{words or 'note'}-{entry.id[:8]}.md"


# -- reading ----------------------------------------------------------------------------------------------
def read_note(text: str, path: str) -> Note:
    """The note in ``text`` (the file at ``path``, relative to the imported folder, '/'-separated).

    Raises ``NoteError`` when the front matter is not closed, not YAML, or not a mapping, or when the note
    has no text."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    front, body = _split(text)
    if isinstance(front.get("id"), str) and isinstance(front.get("agent"), str):
        return _ours(front, body, path, sha)
    return _foreign(front, body, path, sha)


def _split(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    match = _FRONT.match(text)
    if match is None:
        if text.startswith("---\n"):
            raise NoteError("the front matter is not closed (no line '---' after the opening one)")
        return {}, text  # a note that merely starts with a horizontal rule
    try:
        loaded = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise NoteError(f"the front matter is not valid YAML: {_yaml_problem(exc)}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise NoteError(f"the front matter is a YAML {type(loaded).__name__}, not a mapping of fields")
    return {str(k): v for k, v in loaded.items()}, text[match.end() :]


def _ours(front: dict[str, Any], body: str, path: str, sha: str) -> Note:
    content = body[:-1] if body.endswith("\n") else body
    if not content.strip():
        raise NoteError("the note has no text")
    metadata = front.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise NoteError("metadata must be a mapping")
    metadata = _plain(metadata)
    for meta_key, front_key in SUBJECT_KEYS:
        if front.get(front_key) is not None:
            metadata[meta_key] = _plain(front[front_key])
    category = front.get("category")
    own = ("agent", "user", "session", "tier", "importance", "pinned", "source")
    fields = {k: _plain(front[k]) for k in own if k in front}
    for key in ("created", "updated"):
        if front.get(key) is not None:
            fields[key] = front[key] if isinstance(front[key], datetime) else _plain(front[key])
    return Note(
        path=path,
        sha256=sha,
        kind="reverie",
        content=content,
        category=category if isinstance(category, str) else None,
        tags=_tag_list(front.get("tags"), ours=True),
        metadata=metadata,
        entry_id=str(front["id"]),
        fields=fields,
    )


def _foreign(front: dict[str, Any], body: str, path: str, sha: str) -> Note:
    text = body.strip()
    if not text:
        raise NoteError("the note has no text")
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    title = front.get("title")
    title = str(title).strip() if title is not None and str(title).strip() else stem
    if not _HEADING.match(text):
        text = f"# {title}\n\n{text}"
    prose = _INLINE_CODE.sub(" ", _FENCE.sub(" ", body))
    basic = "permalink" in front or bool(_OBSERVATION.search(prose))
    tags = list(_tag_list(front.get("tags")))
    tags += [m.group(1).rstrip("/") for m in _TAG.finditer(prose)]
    if basic:
        tags += [m.group(1).strip() for m in _OBSERVATION.finditer(prose)]
    links = sorted({m.group(1).strip() for m in _WIKILINK.finditer(prose) if m.group(1).strip()})
    extra = {k: _plain(v) for k, v in front.items() if k not in ("tags", "category")}
    origin: dict[str, Any] = {"format": "basic-memory" if basic else "obsidian"}
    if extra:
        origin["frontmatter"] = _sorted(extra)
    if links:
        origin["links"] = links
    return Note(
        path=path,
        sha256=sha,
        kind=origin["format"],
        content=text,
        category=_foreign_category(front, path),
        tags=tuple(dict.fromkeys(t for t in tags if t)),
        metadata={"note": origin},
    )


def _foreign_category(front: dict[str, Any], path: str) -> str | None:
    """The note's folder as a category path (each folder name slugged); else its own ``category``, else its
    ``type`` (other than basic-memory's default ``note``); else None (the store's default)."""
    folders = [s for s in (_slug(part) for part in path.split("/")[:-1]) if s]
    if folders:
        return "/".join(folders)
    for key in ("category", "type"):
        value = front.get(key)
        if isinstance(value, str) and _slug(value) and value != "note":
            return "/".join(s for s in (_slug(p) for p in value.split("/")) if s)
    return None


# -- values -----------------------------------------------------------------------------------------------
def _tag_list(value: object, *, ours: bool = False) -> tuple[str, ...]:
    """Tags as YAML gives them: a list, or (in a foreign note) one string of tags separated by commas or
    spaces, Obsidian's leading '#' dropped. Ours are a list written by ``render_note``: kept exactly."""
    if value is None:
        return ()
    if ours:
        return tuple(str(t) for t in value if t is not None) if isinstance(value, list) else (str(value),)
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else value if isinstance(value, list) else [value]
    return tuple(dict.fromkeys(str(t).strip().lstrip("#") for t in items if str(t).strip().lstrip("#")))


def _plain(value: Any) -> Any:
    """A YAML value as JSON can hold it: dates and times as ISO 8601 text, keys as strings."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _sorted(value: Any) -> Any:
    """Mappings with their keys sorted, all the way down: the same metadata always dumps the same way
    (PostgreSQL's jsonb does not keep key order)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _slug(text: str) -> str:
    return _SLUG_CHARS.sub("-", text.lower()).strip("-")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        # The mark counts from the front matter's first line; the file has the opening '---' above it.
        return f"{problem} (line {mark.line + 2}, column {mark.column + 1})"
    return str(problem)
