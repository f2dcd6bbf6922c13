"""The console's knowledge-graph page: an agent's entities and relations, drawn and listed.

- ``GET /agents/{agent_id}/graph``: a search for an entity (``entity``: ``type:name`` or a name), the chosen
  entity's neighbourhood drawn on a canvas with its detail panel, or, when none is chosen, the entities a
  page at a time (``cursor``); a path form (``from``, ``to``) highlights and lists a shortest path.
- ``GET /agents/{agent_id}/graph/data``: the drawing's JSON (``{nodes, edges, truncated}``): an entity's
  neighbourhood within ``depth`` hops and/or the path between ``from`` and ``to``.
- ``GET /agents/{agent_id}/graph/entity``: an entity's detail panel (an htmx fragment): its valid relations a
  page at a time and the entries that mention it, each linking to the entry's page.

Invariants:
- Every read goes through ``rv.graph`` (and ``rv.explorer`` for the mentioning entries) with the path agent's
  ``read_access``, exactly as ``routes_graph`` does: the same validation, another agent's entities unknown.
- Nothing loads the whole graph: the list is keyset-paged, a drawing is the service's bounded subgraph (depth
  and an entity cap) or its bounded path search, a panel shows one page of relations and at most
  ``MAX_MENTIONS`` entries. Reading the panel's entries is not counted as recall.
- Entity names are untrusted: templates autoescape them; the drawing's JSON is rendered by the script as
  canvas text or ``textContent`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from reverie.api.auth import read_access
from reverie.api.console.render import fragment
from reverie.api.filters import CursorQuery
from reverie.api.schemas import scope_of
from reverie.errors import NotFound, ValidationError
from reverie.graph import inputs as graph_input
from reverie.graph.values import GraphPath, Triple, ref_of
from reverie.types import Entity, MemoryEntry

router = APIRouter()
LIST_PAGE = 50  # entities per page of the list
RELATIONS_PAGE = 25  # relations per page of a panel
MAX_MENTIONS = 20  # entries shown per entity: its most recently learned sources
DRAW_LIMIT = 60  # entities a drawing holds at most unless the caller asks for fewer (or more, up to the cap)
SEARCH_LIMIT = 25  # matches listed when a search names no entity exactly

Agent = Annotated[str, Depends(read_access)]
RefQuery = Annotated[str | None, Query(max_length=graph_input.MAX_REF_CHARS, description="type:name, or a name")]
Depth = Annotated[int, Query(ge=1, le=graph_input.MAX_DEPTH, description="hops from the entity")]
Limit = Annotated[int, Query(ge=1, le=graph_input.MAX_LIMIT, description="entities drawn at most")]


class NodeOut(BaseModel):
    id: str
    label: str
    type: str
    ref: str = Field(description="type:name")
    center: bool = False
    path: bool = False


class EdgeOut(BaseModel):
    id: str
    source: str
    target: str
    label: str
    path: bool = False


class GraphDataOut(BaseModel):
    nodes: list[NodeOut]
    edges: list[EdgeOut]
    truncated: bool = Field(description="the entity cap cut the neighbourhood short")


@dataclass(frozen=True, slots=True)
class Step:
    """One relation of a path as walked: ``here`` to ``there``, ``forward`` when the relation points that way."""

    here: Entity
    there: Entity
    relation: str
    forward: bool


@dataclass(frozen=True, slots=True)
class PathView:
    """What the path form found: ``missing`` (an end is unknown or ambiguous: the message), or ``steps``."""

    start: str
    goal: str
    found: GraphPath | None = None
    missing: str | None = None
    max_depth: int = 0

    @property
    def steps(self) -> list[Step]:
        if self.found is None:
            return []
        ends = self.found.entities
        return [
            Step(ends[i], ends[i + 1], t.relation.relation, t.source.entity_id == ends[i].entity_id)
            for i, t in enumerate(self.found.triples)
        ]


def _ui(agent_id: str, tail: str, **params: str | int | None) -> str:
    """A console fragment URL under the agent, with the given (non-empty) query parameters."""
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return f"/console/ui/agents/{quote(agent_id, safe='')}/graph{tail}" + (f"?{query}" if query else "")


def _choose(request: Request, agent: str, text: str) -> tuple[Entity | None, list[Entity]]:
    """The entity ``text`` names exactly, or else (None, the entities whose names contain it)."""
    rv = request.app.state.rv
    try:
        return rv.graph.resolve(agent, text), []
    except (NotFound, ValidationError):  # unknown, ambiguous or not a reference: look for names holding it
        return None, rv.graph.search_entities(agent, text, limit=SEARCH_LIMIT)


def _path(request: Request, agent: str, start: str, goal: str) -> PathView:
    """The path form's answer; an unknown or ambiguous end is said on the page, not as an error."""
    rv = request.app.state.rv
    depth = rv.graph.config.max_depth
    try:
        found = rv.graph.path(agent, start, goal)
    except (NotFound, ValidationError) as exc:
        return PathView(start, goal, missing=str(exc), max_depth=depth)
    return PathView(start, goal, found=found, max_depth=depth)


@router.get("/agents/{agent_id}/graph", response_class=HTMLResponse)
def graph_page(
    request: Request,
    agent_id: Agent,
    entity: RefQuery = None,
    depth: Annotated[int, Query(ge=1, le=3, description="hops drawn around the entity")] = 1,
    cursor: CursorQuery = None,
    from_: Annotated[RefQuery, Query(alias="from")] = None,
    to: RefQuery = None,
) -> HTMLResponse:
    """The graph page: search, the chosen entity drawn with its panel, or the entity list; and the path form."""
    rv = request.app.state.rv
    text = (entity or "").strip()
    chosen, matches = _choose(request, agent_id, text) if text else (None, [])
    ends = ((from_ or "").strip(), (to or "").strip())
    path = _path(request, agent_id, *ends) if all(ends) else None
    listing = None if text else rv.graph.entities_page(agent_id, cursor=cursor, limit=LIST_PAGE)
    center = ref_of(chosen) if chosen is not None else None
    drawn_path = path is not None and path.found is not None
    graph_url = (
        _ui(agent_id, "/data", entity=center, depth=depth if center else None, **_path_params(path))
        if center or drawn_path
        else None
    )
    panel = _panel(request, agent_id, chosen, None) if chosen is not None else None
    return fragment(
        request,
        "graph/page.html",
        agent_id=agent_id,
        text=text,
        depth=depth,
        chosen=chosen,
        center=center,
        matches=matches,
        listing=listing,
        cursor=cursor,
        path=path,
        graph_url=graph_url,
        panel=panel,
        panel_base=_ui(agent_id, "/entity"),
        data_base=_ui(agent_id, "/data"),
        ref_of=ref_of,
    )


def _path_params(path: PathView | None) -> dict[str, str | int | None]:
    if path is None or path.found is None:
        return {}
    return {"from": ref_of(path.found.start), "to": ref_of(path.found.goal)}


@router.get("/agents/{agent_id}/graph/data")
def graph_data(
    request: Request,
    agent_id: Agent,
    entity: RefQuery = None,
    depth: Depth = 1,
    limit: Limit = DRAW_LIMIT,
    from_: Annotated[RefQuery, Query(alias="from")] = None,
    to: RefQuery = None,
) -> GraphDataOut:
    """What the canvas draws: ``entity``'s neighbourhood within ``depth`` hops (at most ``limit`` entities),
    and the shortest path between ``from`` and ``to`` when both are given (its nodes and edges marked
    ``path``). Unknown references answer 404, as the API's; neither given: 422."""
    rv = request.app.state.rv
    if entity is None and (from_ is None or to is None):
        raise ValidationError("name an entity, or both ends of a path (from and to)", field="entity")
    nodes: dict[str, NodeOut] = {}
    edges: dict[str, EdgeOut] = {}
    truncated = False
    if entity is not None:
        walked = rv.graph.subgraph(agent_id, entity, depth=depth, limit=limit)
        for e in walked.entities:
            nodes[e.entity_id] = _node(e, center=e.entity_id == walked.center.entity_id)
        edges.update((t.relation.relation_id, _edge(t)) for t in walked.triples)
        truncated = walked.truncated
    if from_ is not None and to is not None:
        found = rv.graph.path(agent_id, from_, to)
        for e in found.entities if found is not None else ():
            nodes[e.entity_id] = _node(e, center=nodes.get(e.entity_id, _node(e)).center, path=True)
        for t in found.triples if found is not None else ():
            edges[t.relation.relation_id] = _edge(t, path=True)
    return GraphDataOut(nodes=list(nodes.values()), edges=list(edges.values()), truncated=truncated)


def _node(entity: Entity, *, center: bool = False, path: bool = False) -> NodeOut:
    return NodeOut(
        id=entity.entity_id, label=entity.name, type=entity.type, ref=ref_of(entity), center=center, path=path
    )


def _edge(triple: Triple, *, path: bool = False) -> EdgeOut:
    rel = triple.relation
    return EdgeOut(id=rel.relation_id, source=rel.source_id, target=rel.target_id, label=rel.relation, path=path)


@dataclass(frozen=True, slots=True)
class Panel:
    """An entity's detail: one page of its valid relations and its most recent mentioning entries."""

    entity: Entity
    ref: str
    relations: list[Triple]
    next_cursor: str | None
    cursor: str | None
    mentions: list[MemoryEntry]
    sources: int  # how many entries it was learned from (some may be archived or gone)

    def other(self, triple: Triple) -> Entity:
        return triple.target if triple.source.entity_id == self.entity.entity_id else triple.source

    def outgoing(self, triple: Triple) -> bool:
        return triple.source.entity_id == self.entity.entity_id


def _panel(request: Request, agent: str, entity: Entity, cursor: str | None) -> Panel:
    rv = request.app.state.rv
    ref = ref_of(entity)
    page = rv.graph.relations_page(agent, entity_ref=ref, cursor=cursor, limit=RELATIONS_PAGE)
    newest = list(reversed(entity.sources))[:MAX_MENTIONS]  # sources grow in the order they were learned
    mentions = rv.explorer.entries(newest, scope_of(agent, None, None))
    return Panel(entity, ref, list(page.items), page.next_cursor, cursor, mentions, len(entity.sources))


@router.get("/agents/{agent_id}/graph/entity", response_class=HTMLResponse)
def entity_panel(
    request: Request,
    agent_id: Agent,
    name: Annotated[str, Query(min_length=1, max_length=graph_input.MAX_REF_CHARS, description="type:name")],
    cursor: CursorQuery = None,
) -> HTMLResponse:
    """An entity's detail panel (404 for an unknown one, as the API's ``resolve``)."""
    entity = request.app.state.rv.graph.resolve(agent_id, name)
    return fragment(
        request,
        "graph/panel.html",
        agent_id=agent_id,
        panel=_panel(request, agent_id, entity, cursor),
        panel_base=_ui(agent_id, "/entity"),
        ref_of=ref_of,
    )
