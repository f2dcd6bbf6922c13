"""The key-value memory tools (seed 004): kv_get, kv_set, kv_delete and kv_list, over ``rv.kv`` in the
caller's agent.

Invariants:
- Every handler works in ``ctx.agent_id``'s key-value memory only; another agent's keys are simply absent.
  Key-value memory is per agent: the caller's user and session do not narrow it.
- Arguments reach the service, which validates them all before it writes, so a refused call writes nothing.
- A lost compare-and-set (``expected_version``) is an error result of kind ``conflict``.
- ``text`` shows values as JSON (a string in quotes), so a model can tell ``"42"`` from ``42``; ``data``
  carries every value whole.
"""

from __future__ import annotations

import json
from typing import Any

from reverie.core.text import preview
from reverie.errors import Conflict
from reverie.tools.base import ToolContext, ToolError, ToolResult
from reverie.tools.services import ToolServices
from reverie.types import KvItem
from reverie.views.plain import iso_z_or_none

LIST_VALUE_CHARS = 200  # of a value in a listing line; kv_get and ``data`` show it whole


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def item_data(item: KvItem) -> dict[str, Any]:
    return {
        "key": item.key,
        "value": item.value,
        "version": item.version,
        "created_at": iso_z_or_none(item.created_at),
        "updated_at": iso_z_or_none(item.updated_at),
    }


def kv_get(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    item = rv.kv.get(ctx.agent_id, args["key"])
    text = f"{item.key} = {_json(item.value)}\n(version {item.version}, updated {iso_z_or_none(item.updated_at)})"
    return ToolResult(text, item_data(item))


def kv_set(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        item = rv.kv.set(ctx.agent_id, args["key"], args["value"], expected_version=args.get("expected_version"))
    except Conflict as exc:  # a lost compare-and-set: the model should read the key again, not give up
        raise ToolError(f"{exc}; read the key with kv_get for its current version", kind="conflict") from None
    said = "Created" if item.version == 1 else "Set"
    return ToolResult(f"{said} {item.key} (version {item.version}).", item_data(item))


def kv_delete(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    key = args["key"]
    deleted = rv.kv.delete(ctx.agent_id, key)
    text = f"Deleted {key}." if deleted else f"No key {key} to delete: nothing changed."
    return ToolResult(text, {"key": key, "deleted": deleted})


def kv_list(rv: ToolServices, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    prefix = args.get("prefix", "")
    limit = args.get("limit", 100)
    items = rv.kv.list(ctx.agent_id, prefix, limit=limit, after=args.get("after"))
    next_after = items[-1].key if len(items) == limit else None
    data = {"prefix": prefix, "items": [item_data(i) for i in items], "next_after": next_after}
    where = f" starting with {prefix!r}" if prefix else ""
    if not items:
        return ToolResult(f"No keys{where}.", data)
    lines = [f"{len(items)} {'key' if len(items) == 1 else 'keys'}{where}, in key order:"]
    lines.extend(f"- {i.key} = {preview(_json(i.value), LIST_VALUE_CHARS)}" for i in items)
    if next_after is not None:
        lines.append(f"More may follow: call kv_list again with after={next_after!r}.")
    return ToolResult("\n".join(lines), data)
