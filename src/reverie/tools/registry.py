"""``ToolRegistry``: the one dispatcher every interface (HTTP API, MCP) serves the agent tools through.

Invariants:
- ``call`` never raises for anything a model or client can send: an unknown or withheld tool, arguments
  that are not an object or fail the tool's schema, wrong types, bad values, unknown ids and ids of another
  agent or user (reported exactly like unknown ids) each come back as a ``ToolResult`` with
  ``is_error=True``. An unexpected failure is logged and reported as ``kind: internal``.
- A refused call writes nothing: arguments are checked against the schema before a handler runs, services
  validate everything before they write, and a handler that writes more than once does so in one
  transaction.
- An optional argument sent as ``null`` counts as omitted (models often send them).
- ``memory_semantic_consolidate`` is served (listed by ``specs`` and accepted by ``call``) only for agents
  whose own settings allow it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError
from jsonschema.exceptions import best_match

from reverie.core.text import preview
from reverie.dream.activity import observed
from reverie.errors import LLMError, NotFound, ReverieError, ValidationError
from reverie.skills.activity_logs import MAX_DURATION_MS, MAX_ERROR_CHARS, placeholder_arguments
from reverie.tools import explore, graph, kv, longterm, query, semantic, skills, specs, working
from reverie.tools.base import ToolContext, ToolError, ToolResult, ToolSpec, error_result
from reverie.tools.services import ToolServices

log = logging.getLogger("reverie.tools")
Handler = Callable[[ToolServices, dict[str, Any], ToolContext], ToolResult]
MESSAGE_CHARS = 300  # of a value quoted in an error message

HANDLERS: dict[str, Handler] = {
    specs.SAVE_MEMORY: longterm.save_memory,
    specs.SEARCH_MEMORY: longterm.search_memory,
    specs.LIST_MEMORIES: longterm.list_memories,
    specs.DELETE_MEMORY: longterm.delete_memory,
    specs.UPDATE_MEMORY_IMPORTANCE: longterm.update_memory_importance,
    specs.SAVE_TO_WORKING_MEMORY: working.save_to_working_memory,
    specs.GET_FROM_WORKING_MEMORY: working.get_from_working_memory,
    specs.SEARCH_WORKING_MEMORY: working.search_working_memory,
    specs.MEMORY_EXPLORE: explore.memory_explore,
    specs.MEMORY_LINT: longterm.memory_lint,
    specs.MEMORY_QUERY: query.memory_query,
    specs.MEMORY_SEMANTIC_DUPLICATES: semantic.memory_semantic_duplicates,
    specs.MEMORY_SEMANTIC_CONSOLIDATE: semantic.memory_semantic_consolidate,
    specs.KV_GET: kv.kv_get,
    specs.KV_SET: kv.kv_set,
    specs.KV_DELETE: kv.kv_delete,
    specs.KV_LIST: kv.kv_list,
    specs.KNOWLEDGE_ADD_ENTITY: graph.knowledge_add_entity,
    specs.KNOWLEDGE_ADD_RELATION: graph.knowledge_add_relation,
    specs.KNOWLEDGE_QUERY: graph.knowledge_query,
    specs.SEARCH_SKILLS: skills.search_skills,
    specs.GET_SKILL: skills.get_skill,
    specs.SAVE_SKILL: skills.save_skill,
    specs.RECORD_FEEDBACK: skills.record_feedback,
}


class ToolRegistry:
    """The agent tools of one engine. Thread-safe as the engine is; make one per engine."""

    def __init__(self, rv: ToolServices) -> None:
        self._rv = rv
        self._specs = {spec.name: spec for spec in specs.SPECS}
        self._validators = {spec.name: Draft202012Validator(spec.input_schema) for spec in specs.SPECS}

    def specs(self, agent_id: str = "default") -> list[ToolSpec]:
        """The tools ``agent_id`` may call, in a stable order (consolidation only when its settings allow)."""
        return [spec for spec in specs.SPECS if self._served(spec.name, agent_id)]

    def spec(self, name: str) -> ToolSpec | None:
        """Any tool's spec by name (withheld ones too: an interface needs its scope), or None."""
        return self._specs.get(name)

    def _served(self, name: str, agent_id: str) -> bool:
        if name != specs.MEMORY_SEMANTIC_CONSOLIDATE:
            return True
        return self._rv.consolidation.allowed(agent_id)

    def call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolResult:
        """Run tool ``name`` with ``arguments`` for ``ctx``. Never raises for what a caller sends (see the
        module invariants); the result says what happened. Every call of a known tool is recorded in the
        engine's tool-call log (``rv.tool_calls``), except the auto-dream's own (made ``unobserved()``)."""
        started = time.monotonic()
        try:
            result = self._call(name, arguments, ctx)
        except Exception:
            # Trigger: a bug, not the caller's input. Why: a tool call must never take the interface down.
            # Outcome: logged with its traceback; the caller sees an internal error, never a traceback.
            log.exception("tool %r failed", name)
            result = error_result(
                f"{preview(str(name), 80)} failed with an internal error; it has been logged", kind="internal"
            )
        self._log_call(name, arguments, ctx, result, (time.monotonic() - started) * 1000)
        return result

    def _log_call(self, name: object, arguments: object, ctx: object, result: ToolResult, ms: float) -> None:
        """One record in the tool-call log, for a known tool and a valid context only: its arguments' keys and
        JSON types (values emptied), ok or its error, the time it took. A record that cannot be written (a
        reserved agent id, a full disk) costs the record, never the call. The auto-dream's own calls (made inside
        ``dream.activity.unobserved()``) are not recorded: they would feed the tool-success pass its own calls."""
        if not observed():
            return
        if not isinstance(ctx, ToolContext) or not isinstance(name, str) or name not in self._specs:
            return
        # Shapes only: the log must not become a second, unpurged copy of what the calls carried.
        args = placeholder_arguments(arguments) if isinstance(arguments, Mapping) else None
        error = result.text[:MAX_ERROR_CHARS] if result.is_error else None
        try:
            self._rv.tool_calls.record(
                ctx.agent_id, name, not result.is_error, session_id=ctx.session_id, error=error, arguments=args,
                duration_ms=min(max(ms, 0.0), MAX_DURATION_MS),
            )  # fmt: skip
        except ReverieError as exc:
            log.debug("tool call %s not logged: %s", name, exc)

    def _call(self, name: str, arguments: Mapping[str, Any] | None, ctx: ToolContext) -> ToolResult:
        refused = self._refusal(name, ctx)
        if refused is not None:
            return refused
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
            return error_result("arguments must be a JSON object with string keys", kind="validation")
        args = {k: v for k, v in arguments.items() if v is not None}
        problem = best_match(self._validators[name].iter_errors(args))
        if problem is not None:
            return error_result(_explain(problem, self._specs[name]), kind="validation", field=_field(problem))
        return self._run(name, args, ctx)

    def _refusal(self, name: object, ctx: object) -> ToolResult | None:
        if not isinstance(ctx, ToolContext):
            return error_result("the tool context is missing or not a ToolContext", kind="validation")
        if not isinstance(name, str) or name not in self._specs:
            shown = preview(name, 80) if isinstance(name, str) else type(name).__name__
            available = ", ".join(spec.name for spec in self.specs(ctx.agent_id))
            return error_result(f"unknown tool {shown!r}; the tools are: {available}", kind="unknown_tool")
        if not self._served(name, ctx.agent_id):
            return error_result(
                f"{name} is not enabled for agent {preview(str(ctx.agent_id), 80)!r}: it reaches the whole store, "
                "so it is withheld unless the agent's own settings set allow_self_consolidation = true. "
                f"{specs.MEMORY_SEMANTIC_DUPLICATES} reports the same groups without changing anything.",
                kind="withheld",
            )
        return None

    def _run(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return HANDLERS[name](self._rv, args, ctx)
        except ToolError as exc:
            return error_result(str(exc), kind=exc.kind, field=exc.field)
        except NotFound as exc:
            return error_result(str(exc), kind="not_found")
        except ValidationError as exc:
            return error_result(str(exc), kind="validation", field=exc.field)
        except LLMError as exc:
            return error_result(f"the LLM gave no usable answer: {exc}", kind="llm")
        except ReverieError as exc:
            return error_result(str(exc), kind="unavailable")


def _field(error: SchemaError) -> str | None:
    path = [str(part) for part in error.absolute_path]
    if path:
        return path[0]
    if error.validator == "required" and isinstance(error.instance, dict):
        required = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [k for k in required if k not in error.instance]
        return str(missing[0]) if missing else None
    return None


def _explain(error: SchemaError, spec: ToolSpec) -> str:
    """A short message for a schema failure (jsonschema's own quotes the whole value, however long)."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    subject = f"argument {where}" if where else "the arguments"
    kind, expected = error.validator, error.validator_value
    taken = ", ".join(spec.input_schema.get("properties", {})) or "no arguments"
    if kind == "type":
        return f"{subject} must be of type {expected}, not {_json_type(error.instance)}"
    if kind == "required":
        return f"{preview(error.message, MESSAGE_CHARS)}; {spec.name} takes: {taken}"
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = spec.input_schema.get("properties", {})
        extra = ", ".join(repr(preview(k, 60)) for k in list(error.instance)[:10] if k not in known)
        return f"unknown argument(s) {extra}; {spec.name} takes: {taken}"
    if kind == "enum":
        return f"{subject} must be one of {', '.join(map(str, expected if isinstance(expected, list) else []))}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength"):
        bound = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}.get(kind)
        return f"{subject} must be {bound} {expected}" if bound else f"{subject} must not be empty"
    return f"{subject}: {preview(error.message, MESSAGE_CHARS)}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
