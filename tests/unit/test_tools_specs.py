"""The agent tools' definitions: valid JSON Schemas, scopes, and the recall-search family's rules (seed 000)."""

from __future__ import annotations

import re

import pytest
from jsonschema import Draft202012Validator

from reverie.tools import MEMORY_READ, MEMORY_WRITE, SCOPES, ToolSpec, family
from reverie.tools.registry import HANDLERS
from reverie.tools.specs import SPECS

BY_NAME = {spec.name: spec for spec in SPECS}
READS = {
    "search_memory",
    "list_memories",
    "get_from_working_memory",
    "search_working_memory",
    "memory_explore",
    "memory_lint",
    "memory_query",
    "memory_semantic_duplicates",
    "kv_get",
    "kv_list",
    "knowledge_query",
    "search_skills",
    "get_skill",
}
WRITES = {
    "save_memory",
    "delete_memory",
    "update_memory_importance",
    "save_to_working_memory",
    "memory_semantic_consolidate",
    "kv_set",
    "kv_delete",
    "knowledge_add_entity",
    "knowledge_add_relation",
    "save_skill",
    "record_feedback",
}


def test_names_are_unique_and_every_tool_has_a_handler() -> None:
    assert len(BY_NAME) == len(SPECS)
    assert set(BY_NAME) == set(HANDLERS) == READS | WRITES


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_schema_is_valid_draft_2020_12_and_closed(spec: ToolSpec) -> None:
    schema = spec.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema.get("required", [])) <= set(schema["properties"])
    Draft202012Validator(schema)  # compiles


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_name_and_description_are_usable_by_any_client(spec: ToolSpec) -> None:
    assert re.fullmatch(r"[a-z][a-z_]{2,63}", spec.name)
    description = spec.description
    assert 40 <= len(description) <= 1024 and description == description.strip()


def test_scopes() -> None:
    assert all(spec.scope in SCOPES for spec in SPECS)
    assert {s.name for s in SPECS if s.scope == MEMORY_READ} == READS
    assert {s.name for s in SPECS if s.scope == MEMORY_WRITE} == WRITES


@pytest.mark.parametrize("name", family.RECALL_FAMILY)
def test_every_family_description_leads_with_its_headline_and_names_its_siblings(name: str) -> None:
    description = BY_NAME[name].description
    assert description.startswith(family.HEADLINES[name])
    assert family.SCOPE_PHRASES[name] in description
    siblings = family.siblings(name)
    assert siblings and name not in siblings
    for sibling in siblings:
        assert sibling in description
        assert family.HEADLINES[sibling] in description


@pytest.mark.parametrize("name", family.RECALL_FAMILY)
def test_every_empty_result_names_the_siblings_and_never_itself(name: str) -> None:
    text = family.empty_result(name, "'the thing'")
    assert family.NOT_EVIDENCE in text
    assert all(sibling in text for sibling in family.siblings(name))
    assert not re.search(rf"\b{name}\b", text), "an empty result must not re-suggest the tool that came back empty"


def test_the_family_is_the_two_searches_with_their_seed_headlines() -> None:
    assert family.RECALL_FAMILY == ("search_memory", "search_working_memory")
    assert family.HEADLINES == {
        "search_memory": "RECALL WHAT YOU CONCLUDED",
        "search_working_memory": "RECALL WHAT A TOOL RETURNED",
    }
