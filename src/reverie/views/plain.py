"""Plain-JSON views of Reverie's values, for ``--json`` output and the HTTP API, and the one time format.

Datetimes become ISO 8601 strings (UTC, ``Z``), enums their values, tuples lists, dataclasses objects.

``iso_z`` is the one way Reverie writes a time as text for a reader or a program (the CLI's ``--json``, the
tools' results, API keys' public view, the usage CSV): ISO 8601, with UTC written ``Z`` as the API's pydantic
models write it, so a time reads the same on every face.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any


def iso_z(value: datetime, *, timespec: str = "auto") -> str:
    """``2026-01-01T09:00:00Z``: ISO 8601 (``timespec`` as ``datetime.isoformat`` takes it), UTC as ``Z``."""
    return value.isoformat(timespec=timespec).replace("+00:00", "Z")


def iso_z_or_none(value: datetime | None) -> str | None:
    """``iso_z`` of a time that may be missing (None stays None)."""
    return None if value is None else iso_z(value)


def to_jsonable(value: Any, views: Mapping[type, Callable[[Any], Any]] | None = None) -> Any:
    """``value`` as plain JSON. ``views`` maps a value's type to its view (``views.entry.FACE_VIEWS``): a value of
    that type anywhere inside ``value`` is shown through it instead of field by field."""
    view = views.get(type(value)) if views else None
    if view is not None:
        return to_jsonable(view(value), views)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name), views) for f in dataclasses.fields(value)}
        if "archived_at" in out:
            out["archived"] = out["archived_at"] is not None
        return out
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, views) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v, views) for v in value]
    return value
