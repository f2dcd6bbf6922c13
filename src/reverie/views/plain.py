"""Plain-JSON views of Reverie's values, for ``--json`` output and the HTTP API.

Datetimes become ISO 8601 strings (UTC, ``Z``), enums their values, tuples lists, dataclasses objects.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from typing import Any


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if "archived_at" in out:
            out["archived"] = out["archived_at"] is not None
        return out
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return value
