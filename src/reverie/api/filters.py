"""The ``EntryFilter`` as query parameters, shared by the routes that search or list long-term entries.

The parameters are the filter's field names (``tags_any`` and ``tags_all`` repeated once per tag, ``metadata``
repeated as ``KEY=VALUE``, a VALUE read as a JSON scalar when it is one); the service checks the values, so
a wrong one is a 422 naming its field, as a library call would raise. ``archived=true`` or ``superseded=true``
reads entries the route would otherwise leave out (no ``include_archived`` needed); ``false`` only narrows.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from reverie.core.filters import ORDERS, from_text
from reverie.types import EntryFilter

_TIME = "ISO 8601 date or time (no offset: UTC)"


def entry_filter_query(
    tags_any: Annotated[list[str] | None, Query(description="has at least one of these tags (repeat)")] = None,
    tags_all: Annotated[list[str] | None, Query(description="has every one of these tags (repeat)")] = None,
    source: Annotated[str | None, Query(description="metadata.source equals this, e.g. user")] = None,
    tier: Annotated[str | None, Query(description="episodic, semantic or procedural")] = None,
    importance_min: Annotated[float | None, Query(description="importance at least this (0-1)")] = None,
    importance_max: Annotated[float | None, Query(description="importance at most this (0-1)")] = None,
    subject_from: Annotated[str | None, Query(description="subject time on or after: YYYY[-MM[-DD]]")] = None,
    subject_to: Annotated[str | None, Query(description="subject time on or before: YYYY[-MM[-DD]]")] = None,
    created_from: Annotated[str | None, Query(description=f"created at or after: {_TIME}")] = None,
    created_to: Annotated[str | None, Query(description=f"created before: {_TIME}")] = None,
    updated_from: Annotated[
        str | None, Query(description=f"last rewritten (else created) at or after: {_TIME}")
    ] = None,
    updated_to: Annotated[str | None, Query(description=f"last rewritten (else created) before: {_TIME}")] = None,
    pinned: Annotated[bool | None, Query(description="pinned (true) or not (false)")] = None,
    archived: Annotated[
        bool | None, Query(description="only archived (true) or only unarchived (false); true reads the archive")
    ] = None,
    superseded: Annotated[
        bool | None,
        Query(description="only replaced entries (true: contradicted or folded) or only unreplaced (false)"),
    ] = None,
    metadata: Annotated[
        list[str] | None,
        Query(description="KEY=VALUE: metadata KEY equals VALUE, typed as JSON when it parses (repeat)"),
    ] = None,
) -> EntryFilter | None:
    """The request's filter, checked (None when it sets nothing)."""
    return from_text(
        tags_any=tags_any or (),
        tags_all=tags_all or (),
        source=source,
        tier=tier,
        importance_min=importance_min,
        importance_max=importance_max,
        subject_from=subject_from,
        subject_to=subject_to,
        created_from=created_from,
        created_to=created_to,
        updated_from=updated_from,
        updated_to=updated_to,
        pinned=pinned,
        archived=archived,
        superseded=superseded,
        metadata=metadata or (),
    )


FilterQuery = Annotated[EntryFilter | None, Depends(entry_filter_query)]
OrderQuery = Annotated[str, Query(description=f"one of {', '.join(ORDERS)}")]
CursorQuery = Annotated[
    str | None, Query(max_length=2000, description="the next_cursor of the page before (none: the first page)")
]
