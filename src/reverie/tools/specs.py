"""Every agent tool's name, description, argument schema and capability scope: defined once here, served by
every interface (the HTTP API, the MCP server) through ``ToolRegistry``.

Invariants (tested):
- Every schema is a valid JSON Schema (Draft 2020-12) of an object with ``additionalProperties: false``.
- The recall family's descriptions come from ``tools.family`` (headline first, siblings named).
- ``memory_semantic_consolidate`` is listed here but served only to agents whose own settings allow it.
"""

from __future__ import annotations

from typing import Any, Final

from reverie.core.filters import ORDERS
from reverie.graph.inputs import MAX_DEPTH, MAX_LIMIT, MAX_NAME_CHARS, MAX_REF_CHARS, MAX_SOURCES
from reverie.keys.service import MEMORY_READ, MEMORY_WRITE
from reverie.kv.service import MAX_KEY_CHARS, MAX_LIST_LIMIT
from reverie.recall.hybrid import MODES
from reverie.skills import inputs as skill_inputs
from reverie.storage.skills import FEEDBACK_KINDS, RATINGS
from reverie.tools import family
from reverie.tools.base import ToolSpec

SAVE_MEMORY: Final = "save_memory"
SEARCH_MEMORY: Final = family.SEARCH_MEMORY
LIST_MEMORIES: Final = "list_memories"
DELETE_MEMORY: Final = "delete_memory"
UPDATE_MEMORY_IMPORTANCE: Final = "update_memory_importance"
SAVE_TO_WORKING_MEMORY: Final = "save_to_working_memory"
GET_FROM_WORKING_MEMORY: Final = "get_from_working_memory"
SEARCH_WORKING_MEMORY: Final = family.SEARCH_WORKING_MEMORY
MEMORY_EXPLORE: Final = "memory_explore"
MEMORY_LINT: Final = "memory_lint"
MEMORY_QUERY: Final = "memory_query"
MEMORY_SEMANTIC_DUPLICATES: Final = "memory_semantic_duplicates"
MEMORY_SEMANTIC_CONSOLIDATE: Final = "memory_semantic_consolidate"
KV_GET: Final = "kv_get"
KV_SET: Final = "kv_set"
KV_DELETE: Final = "kv_delete"
KV_LIST: Final = "kv_list"
KNOWLEDGE_ADD_ENTITY: Final = "knowledge_add_entity"
KNOWLEDGE_ADD_RELATION: Final = "knowledge_add_relation"
KNOWLEDGE_QUERY: Final = "knowledge_query"
SEARCH_SKILLS: Final = "search_skills"
GET_SKILL: Final = "get_skill"
SAVE_SKILL: Final = "save_skill"
RECORD_FEEDBACK: Final = "record_feedback"
MAX_EXPLORE_DEPTH: Final = 3
MAX_RELATED_HOPS: Final = 3

_STRING: dict[str, Any] = {"type": "string"}
_TAGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "description": "labels for filtering"}
_SEARCH_LIMIT: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": 100,
    "description": "at most this many memories (default: the deployment's search limit, 10)",
}
_ID: dict[str, Any] = {"type": "string", "minLength": 1, "description": "a memory id, as results show it"}
_KV_KEY: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_KEY_CHARS,
    "description": "the exact key (case and spaces matter), e.g. user:preference:theme or project:version",
}

_REF: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_REF_CHARS,
    "description": "an entity as type:name (person:Ana Lima, company:Acme); a bare name means whatever has that name",
}
_PROPERTIES: dict[str, Any] = {"type": "object", "description": 'facts about it as a JSON object, e.g. {"role": "cto"}'}
_SOURCES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1},
    "maxItems": MAX_SOURCES,
    "description": "ids of the long-term memories this was learned from (provenance)",
}

_SKILL_NAME: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": skill_inputs.MAX_NAME_CHARS,
    "description": "a skill name: lower-case path segments joined by '/', e.g. mcp/email or summarize-emails",
}
_SKILL_NAMES: dict[str, Any] = {"type": "array", "items": _SKILL_NAME, "maxItems": skill_inputs.MAX_REFERENCES}


_DAY: dict[str, Any] = {"type": "string", "description": "a day: YYYY, YYYY-MM or YYYY-MM-DD"}
_TIME: dict[str, Any] = {"type": "string", "description": "an ISO 8601 date or time (UTC when no offset)"}
_UNIT: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
_TAG_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "maxItems": 50}
# The EntryFilter (reverie.types): every field set must hold.
_FILTER: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "keep only memories matching every field given",
    "properties": {
        "tags_any": {**_TAG_LIST, "description": "has at least one of these tags"},
        "tags_all": {**_TAG_LIST, "description": "has every one of these tags"},
        "source": {"type": "string", "description": "provenance equals this: user, tool:<name>, inferred"},
        "tier": {"type": "string", "enum": ["episodic", "semantic", "procedural"]},
        "importance_min": _UNIT,
        "importance_max": _UNIT,
        "subject_from": {**_DAY, "description": "what the memory is about happened on or after this day"},
        "subject_to": {**_DAY, "description": "what the memory is about happened on or before this day"},
        "created_from": {**_TIME, "description": "saved at or after"},
        "created_to": {**_TIME, "description": "saved before"},
        "updated_from": {**_TIME, "description": "last rewritten (else saved) at or after"},
        "updated_to": {**_TIME, "description": "last rewritten (else saved) before"},
        "pinned": {"type": "boolean"},
        "archived": {"type": "boolean", "description": "true: only archived (deleted) memories; false: only live"},
        "superseded": {
            "type": "boolean",
            "description": "true: only memories a later one replaced or absorbed; false: only current ones",
        },
        "metadata": {
            "type": "object",
            "additionalProperties": {"type": ["string", "number", "boolean", "null"]},
            "description": "each metadata key equals this value (null: absent)",
        },
    },
}


def _object(properties: dict[str, dict[str, Any]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _described(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


SPECS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        SAVE_MEMORY,
        "Save a durable fact to long-term memory, to know it in later sessions. One specific, self-contained "
        "fact per call. A restatement of a stored fact reinforces it, new specifics extend it, a correction "
        "(the opposite of a stored fact) becomes the current belief and the old one is kept as superseded; the "
        "result says which (created, reinforced, extended or superseded) and gives the ids.",
        _object(
            {
                "content": _described({"type": "string", "minLength": 1}, "the fact, in a full sentence"),
                "category": _described(_STRING, "a path such as user-preferences/timezone (default: general)"),
                "tags": _TAGS,
                "source": _described(
                    _STRING,
                    "provenance: user (the user said or confirmed it), tool:<name> (read from that tool's "
                    "result) or inferred (your own conclusion)",
                ),
            },
            ("content",),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        SEARCH_MEMORY,
        family.describe(
            SEARCH_MEMORY,
            "Hybrid search (keywords + meaning) over long-term memory, optionally under a category prefix. "
            "Omit query to browse: the most recently reinforced entries and the full category taxonomy, i.e. "
            "how knowledge is organised here.",
        ),
        _object(
            {
                "query": _described(_STRING, "what to recall; omit to browse"),
                "category": _described(_STRING, "only entries under this category prefix"),
                "mode": _described({"type": "string", "enum": list(MODES)}, "auto (default), bm25, vector, hybrid"),
                "filter": _FILTER,
                "limit": _SEARCH_LIMIT,
            }
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        LIST_MEMORIES,
        "List long-term memories a page at a time, newest first (or another order), through a filter (tags, "
        "source, tier, importance, dates, pinned, metadata): to go through all that matches rather than the "
        "best few. The result gives a cursor; call again with it for the next page.",
        _object(
            {
                "filter": _FILTER,
                "category": _described(_STRING, "only entries under this category prefix"),
                "order": _described(
                    {"type": "string", "enum": list(ORDERS)},
                    "newest (default), oldest, recent (last seen), updated, importance, reinforced (most "
                    "reinforced first), cold (least recently seen first)",
                ),
                "cursor": _described(_STRING, "the cursor the previous page gave; omit for the first page"),
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "memories per page (20)"},
            }
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        DELETE_MEMORY,
        "Delete a long-term memory by id. It is archived, not destroyed: it leaves search and can be restored "
        "until the archive purge.",
        _object({"id": _ID}, ("id",)),
        MEMORY_WRITE,
    ),
    ToolSpec(
        UPDATE_MEMORY_IMPORTANCE,
        "Re-score how important a long-term memory is, from 0 (trivial) to 1 (essential). Its text is unchanged.",
        _object(
            {"id": _ID, "importance": {"type": "number", "minimum": 0, "maximum": 1}},
            ("id", "importance"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        SAVE_TO_WORKING_MEMORY,
        "Store scratch data in your own working-memory namespace for a while (default 5 minutes): a large "
        "tool result, partial results, a hand-off. It expires; for a durable fact use save_memory.",
        _object(
            {
                "key": _described(
                    {"type": "string", "minLength": 1}, "a plain key (it lives under your own namespace)"
                ),
                "data": _described(_STRING, "the text to store"),
                "ttl_minutes": _described({"type": "number", "exclusiveMinimum": 0}, "how long to keep it"),
                "category": _STRING,
                "tags": _TAGS,
            },
            ("key", "data"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        GET_FROM_WORKING_MEMORY,
        "Read one working-memory entry by key: a plain key (your own namespace) or a full path key from any "
        "namespace (subagent/t1/results, patrol/heartbeat/alerts, stash/abc123/call_1).",
        _object({"key": {"type": "string", "minLength": 1}}, ("key",)),
        MEMORY_READ,
    ),
    ToolSpec(
        SEARCH_WORKING_MEMORY,
        family.describe(
            SEARCH_WORKING_MEMORY,
            "Search working memory by text, with a preview of each match, or omit query to list the keys (most "
            "recently stored first; with limit or cursor, a page in key order whose next_cursor walks them all). "
            "namespace reads across namespaces: any prefix (patrol, subagent/t1); the "
            "bare word stash is this run's tool-result stash (results elided from the conversation).",
        ),
        _object(
            {
                "query": _described(_STRING, "what to find; omit to list"),
                "category": _STRING,
                "tags": _TAGS,
                "namespace": _described(_STRING, "a namespace prefix, or stash (default: your own namespace)"),
                "limit": _described(
                    {"type": "integer", "minimum": 1, "maximum": 1000}, "no query: list one page of this many"
                ),
                "cursor": _described(_STRING, "no query: the previous page's next_cursor ('' for the first page)"),
            }
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        MEMORY_EXPLORE,
        "Walk from a long-term memory to related ones, up to depth hops: what it was merged from or into, what "
        "it superseded or was superseded by (a later contradicting memory), its "
        "neighbours in a sequence (the turns of a thread, the chunks of a document), the entries that name a "
        "person, place or thing it names (the knowledge graph), and the entries recall finds for its text. Each "
        "related entry says how it is related.",
        _object(
            {"id": _ID, "depth": {"type": "integer", "minimum": 1, "maximum": MAX_EXPLORE_DEPTH, "default": 1}},
            ("id",),
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        MEMORY_LINT,
        "Find pairs of long-term memories that contradict each other: the same topic with a detail replaced "
        "(a date, a name, a number). Says which one is newer. Changes nothing.",
        _object({}),
        MEMORY_READ,
    ),
    ToolSpec(
        MEMORY_QUERY,
        "Search long-term memory with options: pin_first (pinned entries first), include_superseded (replaced "
        "older versions too, labelled), include_related (0-3 hops of related entries per result), and answer "
        "(a short answer written by the LLM from the results, with the ids it came from: open them to check).",
        _object(
            {
                "query": {"type": "string"},
                "answer": {"type": "boolean", "default": False},
                "pin_first": {"type": "boolean", "default": False},
                "include_superseded": {"type": "boolean", "default": False},
                "include_related": {"type": "integer", "minimum": 0, "maximum": MAX_RELATED_HOPS, "default": 0},
                "limit": _SEARCH_LIMIT,
            },
            ("query",),
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        MEMORY_SEMANTIC_DUPLICATES,
        "Report the groups of near-duplicate long-term memories, and for each member whether the group's "
        f"newest entry carries all its specifics (what {MEMORY_SEMANTIC_CONSOLIDATE} would archive). "
        "Changes nothing.",
        _object({}),
        MEMORY_READ,
    ),
    ToolSpec(
        MEMORY_SEMANTIC_CONSOLIDATE,
        "Consolidate near-duplicate long-term memories across your whole store: in each group, archive every "
        "member whose specifics the newest entry already carries (superseded by it, restorable until the "
        "archive purge); members with a specific of their own are kept. Enabled per agent.",
        _object({}),
        MEMORY_WRITE,
    ),
    ToolSpec(
        KV_GET,
        "Read one value from your key-value memory by its exact key (structured settings and state such as "
        "user:preference:theme or project:version). Not a search: for facts use search_memory.",
        _object({"key": _KV_KEY}, ("key",)),
        MEMORY_READ,
    ),
    ToolSpec(
        KV_SET,
        "Store a JSON value (string, number, boolean, array or object) under an exact key in your key-value "
        "memory, replacing what the key held. Use it for structured state you will read back by key; for "
        "facts to recall by meaning use save_memory. expected_version makes it a compare-and-set.",
        _object(
            {
                "key": _KV_KEY,
                "value": _described(
                    {"type": ["string", "number", "boolean", "array", "object"]},
                    "the value, any JSON but null (to clear a key, use kv_delete)",
                ),
                "expected_version": _described(
                    {"type": "integer", "minimum": 0},
                    "write only if the key's current version is this (0: only if the key does not exist)",
                ),
            },
            ("key", "value"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        KV_DELETE,
        "Delete a key from your key-value memory. Setting it again later brings it back.",
        _object({"key": _KV_KEY}, ("key",)),
        MEMORY_WRITE,
    ),
    ToolSpec(
        KV_LIST,
        "List the keys of your key-value memory with their values, in key order, optionally only those "
        "starting with a prefix (plain text, e.g. user:preference:).",
        _object(
            {
                "prefix": _described({"type": "string", "maxLength": MAX_KEY_CHARS}, "only keys starting with this"),
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT, "default": 100},
                "after": _described(
                    {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS},
                    "only keys after this one (the next page)",
                ),
            }
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        KNOWLEDGE_ADD_ENTITY,
        "Add an entity to your knowledge graph (a person, company, place, project, …) or update the one you "
        "have: names match ignoring case and spacing, so Ana and 'ana ' are one entity. properties are merged "
        "into what is known. The result gives its id and its reference (type:name) for knowledge_add_relation.",
        _object(
            {
                "type": _described(
                    {"type": "string", "minLength": 1, "maxLength": 64}, "person, company, place, … (thing if unknown)"
                ),
                "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                "properties": _PROPERTIES,
                "sources": _SOURCES,
            },
            ("type", "name"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        KNOWLEDGE_ADD_RELATION,
        "Record a relation in your knowledge graph: from -relation-> to, e.g. person:Ana works_at company:Acme. "
        "Missing entities are created. A relation already known is reinforced, not duplicated; for relations "
        "with one target at a time (works_at, lives_in, married_to, reports_to, …) a new target marks the old "
        "one no longer true, and it is kept as history.",
        _object(
            {
                "from": _REF,
                "relation": _described(
                    {"type": "string", "minLength": 1, "maxLength": 100}, "in snake case: works_at, knows, part_of"
                ),
                "to": _REF,
                "properties": _PROPERTIES,
                "sources": _SOURCES,
                "valid_from": _described(_STRING, "since when it holds: YYYY-MM-DD or ISO 8601 (default: now)"),
            },
            ("from", "relation", "to"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        KNOWLEDGE_QUERY,
        "Query your knowledge graph. mode relations (default): the relations matching from, relation, to and/or "
        "entity (either end). "
        "mode path: the shortest chain of relations linking from and to, either direction. mode subgraph: the "
        "entities within depth steps of entity and the relations among them. mode entities: find entities by "
        "part of their name (text) or type; without text, a page in id order whose next_cursor walks them all. "
        "Relations no longer true are left out unless include_invalid.",
        _object(
            {
                "mode": _described(
                    {"type": "string", "enum": ["relations", "path", "subgraph", "entities"]}, "default relations"
                ),
                "from": _REF,
                "relation": _described({"type": "string", "minLength": 1, "maxLength": 100}, "e.g. works_at"),
                "to": _REF,
                "entity": _REF,
                "text": _described({"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS}, "part of a name"),
                "type": _described({"type": "string", "minLength": 1, "maxLength": 64}, "entities of this type"),
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "default": 2},
                "max_depth": _described(
                    {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH}, "mode path: most steps (default 6)"
                ),
                "include_invalid": {"type": "boolean", "default": False},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                "cursor": _described(
                    _STRING, "mode entities without text, or relations: the previous page's next_cursor ('' first)"
                ),
            }
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        SEARCH_SKILLS,
        "Search your skills, the procedures you keep for recurring tasks (how to do something, step by step), by "
        "keywords and meaning over their names, summaries and content. Returns names and summaries, best first; "
        "read one in full with get_skill. Facts you learned are in search_memory, this session's tool results "
        "in search_working_memory.",
        _object(
            {
                "query": _described({"type": "string", "minLength": 1}, "the task you need a procedure for"),
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            },
            ("query",),
        ),
        MEMORY_READ,
    ),
    ToolSpec(
        GET_SKILL,
        "Read one of your skills in full by its name (as search_skills shows it): its summary, its steps and "
        "the related skills to see also. In a session, this records that the session used the skill.",
        _object({"name": _SKILL_NAME}, ("name",)),
        MEMORY_READ,
    ),
    ToolSpec(
        SAVE_SKILL,
        "Save a skill: a reusable procedure for a kind of task you will meet again (concrete steps, examples, "
        "edge cases). Saving an existing name replaces its summary and content (the old version is kept in its "
        "history); see_also names related skills. For a single fact use save_memory.",
        _object(
            {
                "name": _SKILL_NAME,
                "summary": _described(
                    {"type": "string", "minLength": 1, "maxLength": skill_inputs.MAX_SUMMARY_CHARS},
                    "one line: what it is for",
                ),
                "content": _described({"type": "string", "minLength": 1}, "the procedure itself"),
                "see_also": _described(
                    {**_SKILL_NAMES, "maxItems": skill_inputs.MAX_SEE_ALSO}, "names of related skills"
                ),
            },
            ("name", "summary", "content"),
        ),
        MEMORY_WRITE,
    ),
    ToolSpec(
        RECORD_FEEDBACK,
        "Record how a session went, for your memory's nightly review: correction (the user corrected you: say "
        "what was wrong in comment), session_summary (with a rating: poor, fair, good or excellent), stale "
        "(something you recalled was out of date) or wrong (something you recalled or did was wrong). Name the "
        "memories (entry_ids) and skills (skill_names) it is about when you know them.",
        _object(
            {
                "kind": {"type": "string", "enum": list(FEEDBACK_KINDS)},
                "session_id": _described(
                    {"type": "string", "minLength": 1}, "the session it is about (default: your current session)"
                ),
                "rating": _described({"type": "string", "enum": list(RATINGS)}, "session_summary only"),
                "comment": _described(
                    {"type": "string", "maxLength": skill_inputs.MAX_COMMENT_CHARS},
                    "what was wrong, or what the user said",
                ),
                "entry_ids": _described(
                    {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "maxItems": skill_inputs.MAX_REFERENCES,
                    },
                    "ids of the long-term memories it is about",
                ),
                "skill_names": _described(_SKILL_NAMES, "names of the skills it is about"),
            },
            ("kind",),
        ),
        MEMORY_WRITE,
    ),
)
