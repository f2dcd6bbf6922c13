"""The knowledge graph over HTTP: ``/api/memory/agents/{agent_id}/kg/…`` (seed 004: the graph lives per agent,
under the agent's own memory, not as a global REST surface).

Entities are named by references ``type:name`` (``person:John Doe``) in bodies and queries; a bare name is
the one entity of that name whatever its type. Every call works in the path agent's graph only, which the
key's agent must be (an admin key reaches every agent): another agent's entity or relation ids are simply not
there (404), exactly like unknown ones.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import AliasChoices, BaseModel, Field, model_validator

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND
from reverie.api.filters import CursorQuery
from reverie.api.schemas import RequestModel, ValueOut, fields_of
from reverie.graph import inputs as graph_input
from reverie.graph.values import Triple, ref_of
from reverie.types import Entity

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}/kg", tags=["knowledge graph"], responses=COMMON_ERRORS, route_class=AgentRoute
)
Ref = Annotated[str, Field(min_length=1, max_length=graph_input.MAX_REF_CHARS, description="type:name, or a name")]
RefQuery = Annotated[
    str | None, Query(max_length=graph_input.MAX_REF_CHARS, description="an entity: type:name, or a bare name")
]
Limit = Annotated[int | None, Query(ge=1, le=graph_input.MAX_LIMIT, description="at most this many")]
Id = Annotated[str, Path(min_length=1, max_length=200, description="an id, as results show it")]
Sources = Annotated[
    list[str], Field(max_length=graph_input.MAX_SOURCES, description="ids of the memory entries it came from")
]
Properties = Annotated[dict[str, Any] | None, Field(description="a JSON object (merged into what is known)")]


class EntityIn(RequestModel):
    type: str = Field(min_length=1, max_length=graph_input.MAX_TYPE_CHARS, description="person, company, …")
    name: str = Field(min_length=1, max_length=graph_input.MAX_NAME_CHARS)
    properties: Properties = None
    sources: Sources = Field(default_factory=list)


class RelationIn(RequestModel):
    from_: Ref = Field(alias="from")
    relation: str = Field(min_length=1, max_length=graph_input.MAX_RELATION_CHARS, description="e.g. works_at")
    to: Ref
    properties: Properties = None
    sources: Sources = Field(default_factory=list)
    valid_from: str | None = Field(None, max_length=64, description="YYYY-MM-DD or ISO 8601 (default: now)")


class MergeIn(RequestModel):
    keep_id: str = Field(min_length=1, max_length=200, description="the entity kept")
    duplicate_id: str = Field(min_length=1, max_length=200, description="the entity merged into it")


def _with_ref(value: Any) -> Any:
    """An entity as an answer reads it: its fields and ``ref`` (``type:name``), which it holds in none."""
    return fields_of(value, ref=ref_of(value)) if isinstance(value, Entity) else value


class EntityOut(BaseModel):
    entity_id: str
    type: str
    name: str
    ref: str = Field(description="type:name, the reference that names it")
    key: str = Field(description="the normalised name: its identity with the type")
    properties: dict[str, Any]
    sources: list[str]
    created_at: datetime | None
    updated_at: datetime | None
    last_seen_at: datetime | None
    archived_at: datetime | None
    merged_into: str | None

    @model_validator(mode="before")
    @classmethod
    def _entity(cls, value: Any) -> Any:
        return _with_ref(value)


class EntityRefOut(BaseModel):
    entity_id: str
    ref: str

    @model_validator(mode="before")
    @classmethod
    def _entity(cls, value: Any) -> Any:
        return _with_ref(value)


class RelationOut(BaseModel):
    # Read from a Triple: the relation's fields, with its two entities and its text.
    relation_id: str
    relation: str
    source: EntityRefOut
    target: EntityRefOut
    text: str = Field(description="source -relation-> target")
    properties: dict[str, Any]
    sources: list[str]
    valid_from: datetime | None
    invalid_at: datetime | None = Field(description="set: contradicted or withdrawn at that time (kept as history)")
    created_at: datetime | None

    @model_validator(mode="before")
    @classmethod
    def _triple(cls, value: Any) -> Any:
        if isinstance(value, Triple):
            return fields_of(value.relation, source=value.source, target=value.target, text=value.text)
        return value


class EntityWriteOut(ValueOut):
    entity: EntityOut
    outcome: str = Field(description="created or updated")
    absorbed: list[str] = Field(description="ids of untyped things of the same name merged into a new typed entity")


class RelationWriteOut(BaseModel):
    relation: RelationOut
    outcome: str = Field(description="created or reinforced")
    invalidated: list[str] = Field(description="ids of relations the new one contradicted (now invalid)")


class MergeOut(ValueOut):
    entity: EntityOut
    merged: EntityOut
    moved: list[str]
    duplicates: list[str]
    invalidated: list[str]


class PathOut(BaseModel):
    found: bool
    entities: list[EntityOut] = Field(description="from the start to the goal")
    relations: list[RelationOut] = Field(description="walked in order, each with its real direction")


class SubgraphOut(ValueOut):
    center: EntityOut
    depth: int
    entities: list[EntityOut]
    distances: dict[str, int] = Field(description="hops from the centre, by entity id")
    relations: list[RelationOut] = Field(validation_alias=AliasChoices("relations", "triples"))
    truncated: bool


@router.get("/entities", response_model=list[EntityOut], summary="List entities")
def list_entities(
    rv: Engine,
    agent: ReadAgent,
    response: Response,
    type: Annotated[str | None, Query(max_length=graph_input.MAX_TYPE_CHARS, description="only this type")] = None,
    limit: Limit = None,
    paged: Annotated[bool, Query(description="a page in id order, the next page's cursor in X-Next-Cursor")] = False,
    cursor: CursorQuery = None,
) -> list[EntityOut]:
    """Live entities (not merged, not archived), most recently seen first. With ``paged=true`` or a
    ``cursor``: one page in id order (stable), the next page's cursor in the ``X-Next-Cursor`` header (absent
    on the last page); a walk sees every entity live for the whole walk exactly once."""
    if not paged and cursor is None:
        return [EntityOut.model_validate(e) for e in rv.graph.list_entities(agent, type=type, limit=limit)]
    page = rv.graph.entities_page(agent, type=type, cursor=cursor, limit=limit)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [EntityOut.model_validate(e) for e in page.items]


@router.get("/entities/search", response_model=list[EntityOut], summary="Search entities by name")
def search_entities(
    rv: Engine,
    agent: ReadAgent,
    q: Annotated[str, Query(min_length=1, max_length=graph_input.MAX_NAME_CHARS, description="part of a name")],
    limit: Limit = None,
) -> list[EntityOut]:
    """Live entities whose name contains ``q`` (case-insensitive), exact names first, then most recently seen."""
    return [EntityOut.model_validate(e) for e in rv.graph.search_entities(agent, q, limit=limit)]


@router.get("/entities/{entity_id}", response_model=EntityOut, responses=NOT_FOUND, summary="Read an entity")
def get_entity(rv: Engine, agent: ReadAgent, entity_id: Id) -> EntityOut:
    """The entity with that id; for a merged one, the entity it was merged into."""
    return EntityOut.model_validate(rv.graph.get_entity(agent, entity_id))


@router.post("/entities", status_code=201, response_model=EntityWriteOut, summary="Add or update an entity")
def add_entity(rv: Engine, agent: WriteAgent, body: EntityIn) -> EntityWriteOut:
    """Add an entity, or update the one with that type and name ("Ana", "ana" and "Ana " are one):
    properties are merged (the given values win), sources added."""
    return EntityWriteOut.model_validate(
        rv.graph.add_entity(agent, body.type, body.name, body.properties, body.sources)
    )


@router.get("/resolve", response_model=EntityOut, responses=NOT_FOUND, summary="Find the entity a reference names")
def resolve(
    rv: Engine,
    agent: ReadAgent,
    ref: Annotated[str, Query(min_length=1, max_length=graph_input.MAX_REF_CHARS, description="type:name, or a name")],
) -> EntityOut:
    """The entity ``ref`` names, following merges (404 when there is none)."""
    return EntityOut.model_validate(rv.graph.resolve(agent, ref))


@router.post("/merge", response_model=MergeOut, responses=NOT_FOUND, summary="Merge a duplicate entity")
def merge(rv: Engine, agent: WriteAgent, body: MergeIn) -> MergeOut:
    """Merge ``duplicate_id`` into ``keep_id``: its relations move over (a relation that becomes a copy of one
    the kept entity has is invalidated, never deleted), and it is marked merged. 422 when they are one."""
    return MergeOut.model_validate(rv.graph.merge_entities(agent, body.keep_id, body.duplicate_id))


@router.get("/relations", response_model=list[RelationOut], responses=NOT_FOUND, summary="Query relations")
def query_relations(
    rv: Engine,
    agent: ReadAgent,
    response: Response,
    from_: Annotated[RefQuery, Query(alias="from")] = None,
    relation: Annotated[str | None, Query(max_length=graph_input.MAX_RELATION_CHARS)] = None,
    to: RefQuery = None,
    entity: Annotated[RefQuery, Query(description="either end is this entity")] = None,
    include_invalid: Annotated[bool, Query(description="also invalidated relations (history)")] = False,
    limit: Limit = None,
    paged: Annotated[bool, Query(description="a page in id order, the next page's cursor in X-Next-Cursor")] = False,
    cursor: CursorQuery = None,
) -> list[RelationOut]:
    """Relations matching every filter given, oldest first (404 for a reference to no entity). With
    ``paged=true`` or a ``cursor``: one page in relation-id order (stable), the next page's cursor in the
    ``X-Next-Cursor`` header (absent on the last page); a walk sees every relation that matched for the whole
    walk exactly once."""
    wanted: dict[str, Any] = {
        "from_ref": from_,
        "relation": relation,
        "to_ref": to,
        "entity_ref": entity,
        "include_invalid": include_invalid,
        "limit": limit,
    }
    if not paged and cursor is None:
        return [RelationOut.model_validate(t) for t in rv.graph.relations(agent, **wanted)]
    page = rv.graph.relations_page(agent, cursor=cursor, **wanted)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [RelationOut.model_validate(t) for t in page.items]


@router.post("/relations", status_code=201, response_model=RelationWriteOut, summary="Add or reinforce a relation")
def add_relation(rv: Engine, agent: WriteAgent, body: RelationIn) -> RelationWriteOut:
    """Relate two entities (created when missing). A relation already known is reinforced; for an exclusive
    relation (``works_at``, …) a new target invalidates the previous one, which is kept as history."""
    since = graph_input.parse_time(body.valid_from, "valid_from")
    written = rv.graph.add_relation(agent, body.from_, body.relation, body.to, body.properties, body.sources, since)
    invalidated = [r.relation_id for r in written.invalidated]
    return RelationWriteOut(relation=written.triple, outcome=written.outcome, invalidated=invalidated)


@router.post(
    "/relations/{relation_id}/invalidate", response_model=RelationOut, responses=NOT_FOUND, summary="Invalidate"
)
def invalidate_relation(rv: Engine, agent: WriteAgent, relation_id: Id) -> RelationOut:
    """Mark a relation no longer true (kept as history; ``include_invalid`` shows it)."""
    return RelationOut.model_validate(rv.graph.invalidate_relation(agent, relation_id))


@router.get("/path", response_model=PathOut, responses=NOT_FOUND, summary="Shortest path between two entities")
def path(
    rv: Engine,
    agent: ReadAgent,
    from_: Annotated[str, Query(alias="from", min_length=1, max_length=graph_input.MAX_REF_CHARS)],
    to: Annotated[str, Query(min_length=1, max_length=graph_input.MAX_REF_CHARS)],
    max_depth: Annotated[
        int | None, Query(ge=1, le=graph_input.MAX_DEPTH, description="most relations walked (default: [graph])")
    ] = None,
) -> PathOut:
    """One shortest chain of valid relations between two entities, either direction; ``found`` is false
    when there is none within ``max_depth``."""
    found = rv.graph.path(agent, from_, to, max_depth)
    if found is None:
        return PathOut(found=False, entities=[], relations=[])
    return PathOut(found=True, entities=list(found.entities), relations=list(found.triples))


@router.get("/subgraph", response_model=SubgraphOut, responses=NOT_FOUND, summary="The neighbourhood of an entity")
def subgraph(
    rv: Engine,
    agent: ReadAgent,
    entity: Annotated[str, Query(min_length=1, max_length=graph_input.MAX_REF_CHARS, description="the centre")],
    depth: Annotated[int, Query(ge=1, le=graph_input.MAX_DEPTH, description="hops from the centre")] = 2,
    limit: Limit = None,
) -> SubgraphOut:
    """The entities within ``depth`` hops of ``entity`` and every valid relation among them."""
    return SubgraphOut.model_validate(rv.graph.subgraph(agent, entity, depth=depth, limit=limit))
