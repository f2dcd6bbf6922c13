"""The agent tools, defined once and served by every interface (the HTTP API, the MCP server).

    registry = ToolRegistry(rv)
    for spec in registry.specs("default"):          # name, description, JSON Schema, capability scope
        ...
    result = registry.call("search_memory", {"query": "timezone"}, ToolContext(agent_id="default"))
    result.text, result.data, result.is_error

``call`` never raises for what a model or client sends: every refusal is an error result, and a refused call
writes nothing. The recall-search family's names, headlines and scope phrases live in ``tools.family``.
"""

from reverie.keys.service import ADMIN, MEMORY_READ, MEMORY_WRITE, SCOPES
from reverie.tools.base import ToolContext, ToolResult, ToolSpec
from reverie.tools.family import HEADLINES, NOT_EVIDENCE, RECALL_FAMILY, SCOPE_PHRASES
from reverie.tools.registry import ToolRegistry
from reverie.tools.specs import (
    DELETE_MEMORY,
    GET_FROM_WORKING_MEMORY,
    KNOWLEDGE_ADD_ENTITY,
    KNOWLEDGE_ADD_RELATION,
    KNOWLEDGE_QUERY,
    MEMORY_EXPLORE,
    MEMORY_LINT,
    MEMORY_QUERY,
    MEMORY_SEMANTIC_CONSOLIDATE,
    MEMORY_SEMANTIC_DUPLICATES,
    SAVE_MEMORY,
    SAVE_TO_WORKING_MEMORY,
    SEARCH_MEMORY,
    SEARCH_WORKING_MEMORY,
    UPDATE_MEMORY_IMPORTANCE,
)

__all__ = [
    "ADMIN",
    "DELETE_MEMORY",
    "GET_FROM_WORKING_MEMORY",
    "HEADLINES",
    "KNOWLEDGE_ADD_ENTITY",
    "KNOWLEDGE_ADD_RELATION",
    "KNOWLEDGE_QUERY",
    "MEMORY_EXPLORE",
    "MEMORY_LINT",
    "MEMORY_QUERY",
    "MEMORY_READ",
    "MEMORY_SEMANTIC_CONSOLIDATE",
    "MEMORY_SEMANTIC_DUPLICATES",
    "MEMORY_WRITE",
    "NOT_EVIDENCE",
    "RECALL_FAMILY",
    "SAVE_MEMORY",
    "SAVE_TO_WORKING_MEMORY",
    "SCOPES",
    "SCOPE_PHRASES",
    "SEARCH_MEMORY",
    "SEARCH_WORKING_MEMORY",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "UPDATE_MEMORY_IMPORTANCE",
]
