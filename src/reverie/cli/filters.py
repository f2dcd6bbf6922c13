"""The ``EntryFilter`` as command-line options, shared by ``memory list`` and ``memory search``, and the walk of
``memory list`` over pages.

The flags spell the filter's fields the shell's way (``--tag`` for ``tags_any``, ``--min-importance`` for
``importance_min``, ``--meta KEY=VALUE`` for ``metadata``); the service checks the values, so a wrong one is the
same ``ValidationError`` (exit code 2, naming the field) a library call raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import fail

if TYPE_CHECKING:
    from reverie.engine import Reverie
    from reverie.types import EntryFilter, MemoryEntry, Page

MAX_PAGE = 1000  # the service's page-size cap; -n beyond it walks several pages
# The filter's fields as the flags spell them, so an error names what the user typed.
_FLAGS = {
    "tags_any": "--tag",
    "tags_all": "--tag-all",
    "importance_min": "--min-importance",
    "importance_max": "--max-importance",
    "subject_from": "--subject-from",
    "subject_to": "--subject-to",
    "created_from": "--created-from",
    "created_to": "--created-to",
    "updated_from": "--updated-from",
    "updated_to": "--updated-to",
    "source": "--source",
    "tier": "--tier",
    "meta": "--meta",
    "metadata": "--meta",
}
_FIELD_NAMES = re.compile(r"\b(?:" + "|".join(sorted(_FLAGS, key=len, reverse=True)) + r")\b")

TagOption: Any = typer.Option(None, "--tag", "-t", help="Has at least one of these tags (repeatable).")
TagAllOption: Any = typer.Option(None, "--tag-all", help="Has every one of these tags (repeatable).")
SourceOption: Any = typer.Option(None, "--source", help="Provenance equals this: user, tool:<name>, inferred.")
TierOption: Any = typer.Option(None, "--tier", help="episodic, semantic or procedural.")
MinImportanceOption: Any = typer.Option(None, "--min-importance", help="Importance at least this (0-1).")
MaxImportanceOption: Any = typer.Option(None, "--max-importance", help="Importance at most this (0-1).")
SubjectFromOption: Any = typer.Option(None, "--subject-from", help="Subject time on or after YYYY[-MM[-DD]].")
SubjectToOption: Any = typer.Option(None, "--subject-to", help="Subject time on or before YYYY[-MM[-DD]].")
CreatedFromOption: Any = typer.Option(None, "--created-from", help="Created at or after (ISO 8601; UTC if no offset).")
CreatedToOption: Any = typer.Option(None, "--created-to", help="Created before (ISO 8601).")
UpdatedFromOption: Any = typer.Option(None, "--updated-from", help="Last rewritten (else created) at or after.")
UpdatedToOption: Any = typer.Option(None, "--updated-to", help="Last rewritten (else created) before.")
PinnedOption: Any = typer.Option(None, "--pinned/--unpinned", help="Only pinned, or only unpinned, entries.")
# Not --archived: that flag already means "include archived entries" (include_archived).
OnlyArchivedOption: Any = typer.Option(
    None, "--only-archived/--not-archived", help="Only archived (reads the archive), or only unarchived, entries."
)
OnlySupersededOption: Any = typer.Option(
    None,
    "--only-superseded/--not-superseded",
    help="Only entries a later one replaced (contradicted or folded; reads the archive), or only the others.",
)
MetaOption: Any = typer.Option(
    None, "--meta", help="KEY=VALUE: metadata KEY equals VALUE, read as JSON when it parses (repeatable)."
)


def entry_filter(
    *,
    tag: list[str] | None,
    tag_all: list[str] | None,
    source: str | None,
    tier: str | None,
    min_importance: float | None,
    max_importance: float | None,
    subject_from: str | None,
    subject_to: str | None,
    created_from: str | None,
    created_to: str | None,
    updated_from: str | None,
    updated_to: str | None,
    pinned: bool | None,
    meta: list[str] | None,
    only_archived: bool | None = None,
    only_superseded: bool | None = None,
) -> EntryFilter | None:
    """The options as a checked filter (None when none is set); a wrong value ends the command as every
    ``ValidationError`` does (exit code 2, the field named; JSON under ``--json``)."""
    from reverie.core import filters
    from reverie.errors import ValidationError

    try:
        return filters.from_text(
            tags_any=tag or (),
            tags_all=tag_all or (),
            source=source,
            tier=tier,
            importance_min=min_importance,
            importance_max=max_importance,
            subject_from=subject_from,
            subject_to=subject_to,
            created_from=created_from,
            created_to=created_to,
            updated_from=updated_from,
            updated_to=updated_to,
            pinned=pinned,
            archived=only_archived,
            superseded=only_superseded,
            metadata=meta or (),
            metadata_field="meta",
        )
    except ValidationError as exc:
        named = _FIELD_NAMES.sub(lambda m: _FLAGS[m.group(0)], str(exc))
        fail(ValidationError(named, field=_FLAGS.get(exc.field or "", exc.field)))


def pages(rv: Reverie, total: int | None, cursor: str | None, **listing: Any) -> Iterator[Page[MemoryEntry]]:
    """The pages of a listing from ``cursor``: until ``total`` entries are out (None: every page), each at
    most ``MAX_PAGE`` long and the last cut to what is left, so its ``next_cursor`` follows the last entry
    printed."""
    left = total
    while True:
        size = MAX_PAGE if left is None else min(left, MAX_PAGE)
        page = rv.memory.list(cursor=cursor, limit=size, **listing)
        yield page
        if left is not None:
            left -= len(page.items)
        cursor = page.next_cursor
        if cursor is None or (left is not None and left <= 0):
            return
