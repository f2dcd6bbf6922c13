"""Key-value memory over HTTP: ``/api/memory/agents/{agent_id}/kv…`` (seed 004's KV memory operations).

``GET …/kv`` lists keys (``prefix``, ``limit``, ``after`` for the next page); ``GET``, ``PUT`` (set: create,
overwrite or revive), ``PATCH`` (update: the key must be live) and ``DELETE`` (marks it deleted) work on
``…/kv/{key}``, where the key may hold ``/`` and any other character but control characters (percent-encode
what a URL path cannot carry). Every call works in the path agent's memory only, which the key's agent must
be (an admin key reaches every agent): a key of another agent is simply not there (404).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND, ErrorBody
from reverie.api.schemas import Deleted, RequestModel, ValueOut, Whole
from reverie.kv.service import MAX_KEY_CHARS, MAX_LIST_LIMIT

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}/kv",
    tags=["key-value memory"],
    responses=COMMON_ERRORS,
    route_class=AgentRoute,
)
Key = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="the key, exactly (case and spaces matter), e.g. user:preference:theme; may contain '/'",
    ),
]
VERSION_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "expected_version is not the live item's version"}
}


class KvWriteIn(RequestModel):
    value: Any = Field(description="any JSON value: object, array, string, number, boolean or null")
    expected_version: Whole | None = Field(
        None, ge=0, description="compare-and-set: write only if the live version is this (0: the key is absent)"
    )


class KvItemOut(ValueOut):
    agent_id: str
    key: str
    value: Any = Field(description="the stored JSON value")
    version: int = Field(description="1 at creation, one more at every write: the compare-and-set handle")
    created_at: datetime
    updated_at: datetime


class KvListOut(BaseModel):
    items: list[KvItemOut] = Field(description="in code-point order of the key")
    next_after: str | None = Field(description="pass as after= for the next page; null when this page was the last")


@router.get("", response_model=KvListOut, summary="List keys")
def list_kv(
    rv: Engine,
    agent: ReadAgent,
    prefix: Annotated[str, Query(max_length=MAX_KEY_CHARS, description="only keys starting with this")] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="at most this many items")] = 100,
    after: Annotated[
        str | None, Query(min_length=1, max_length=MAX_KEY_CHARS, description="only keys after this one")
    ] = None,
) -> KvListOut:
    """The agent's live keys starting with ``prefix`` (plain text: no wildcards), in key order, with their
    values; ``next_after`` continues the listing."""
    items = rv.kv.list(agent, prefix, limit=limit, after=after)
    next_after = items[-1].key if len(items) == limit else None
    return KvListOut(items=list(items), next_after=next_after)


@router.get("/{key:path}", response_model=KvItemOut, responses=NOT_FOUND, summary="Read a key")
def get_kv(rv: Engine, agent: ReadAgent, key: Key) -> KvItemOut:
    """The live item (404 when the key was never set, or was deleted)."""
    return KvItemOut.model_validate(rv.kv.get(agent, key))


@router.put("/{key:path}", response_model=KvItemOut, responses=VERSION_CONFLICT, summary="Set a key")
def set_kv(rv: Engine, agent: WriteAgent, key: Key, body: KvWriteIn) -> KvItemOut:
    """Create, overwrite or revive the key with ``value``. A value over ``kv.max_value_bytes``, holding NaN or
    a NUL character, or a new key past ``kv.max_keys_per_agent`` is a 422."""
    return KvItemOut.model_validate(rv.kv.set(agent, key, body.value, expected_version=body.expected_version))


@router.patch(
    "/{key:path}", response_model=KvItemOut, responses={**NOT_FOUND, **VERSION_CONFLICT}, summary="Update a key"
)
def update_kv(rv: Engine, agent: WriteAgent, key: Key, body: KvWriteIn) -> KvItemOut:
    """Overwrite the value of a live key; 404 when it is not live (an update never creates)."""
    return KvItemOut.model_validate(rv.kv.update(agent, key, body.value, expected_version=body.expected_version))


@router.delete("/{key:path}", response_model=Deleted, summary="Delete a key")
def delete_kv(rv: Engine, agent: WriteAgent, key: Key) -> Deleted:
    """Mark the key deleted (a later PUT revives it; the purge removes it after the archive retention);
    ``deleted`` is false when it was not live."""
    return Deleted(deleted=rv.kv.delete(agent, key))
