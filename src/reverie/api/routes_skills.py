"""Skills and feedback over HTTP: ``/api/memory/agents/{agent_id}/skills…`` and ``…/feedback`` (seed 001's
skill, skill-usage and feedback stores).

A skill's name is a path (``mcp/email``), so it is the rest of the URL: ``GET``, ``PUT`` (save: create or
update) and ``DELETE`` (archive) work on ``…/skills/{name}``. Actions on one skill end the name with a colon
and a verb, which no name can hold (``…/skills/mcp/email:history``, ``…:restore``); actions on the collection
do the same after ``skills`` (``…/skills:search``, ``…/skills:usage``). Every call works in the path agent's
skills and feedback only, which the key's agent must be (an admin key reaches every agent): another agent's
skill or signal is simply not there (404).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import AliasChoices, BaseModel, Field

from reverie.api.attribution import AgentRoute
from reverie.api.auth import Engine, ReadAgent, WriteAgent
from reverie.api.errors import COMMON_ERRORS, NOT_FOUND, ErrorBody
from reverie.api.filters import CursorQuery
from reverie.api.schemas import RequestModel, ValueOut, Whole
from reverie.skills import SkillSaved
from reverie.skills.inputs import (
    MAX_COMMENT_CHARS,
    MAX_LIST_LIMIT,
    MAX_NAME_CHARS,
    MAX_REFERENCES,
    MAX_SEE_ALSO,
    MAX_SUMMARY_CHARS,
)
from reverie.storage.skills import FEEDBACK_KINDS, RATINGS

router = APIRouter(
    prefix="/api/memory/agents/{agent_id}",
    tags=["skills and feedback"],
    responses=COMMON_ERRORS,
    route_class=AgentRoute,
)
Name = Annotated[
    str,
    Path(min_length=1, max_length=MAX_NAME_CHARS, description="the skill's name, a path such as mcp/email"),
]
VERSION_CONFLICT: dict[int | str, dict[str, Any]] = {
    409: {"model": ErrorBody, "description": "expected_version is not the live skill's version"}
}
Days = Annotated[float | None, Query(gt=0, le=36_525, description="look back this many days (default: 30)")]


class SkillOut(ValueOut):
    """A skill (see docs/concepts.md). ``archived``: hidden from listings and search, restorable."""

    agent_id: str
    name: str
    summary: str
    content: str
    see_also: list[str]
    version: int = Field(description="1 at creation, one more at every change: the compare-and-set handle")
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None
    archived: bool
    archived_at: datetime | None
    metadata: dict[str, Any]
    embedding_model: str | None = Field(
        validation_alias=AliasChoices("embedding_model", "vector_model"),
        description="the model its vector was made by; null: no vector yet",
    )


class SkillIn(RequestModel):
    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS, description="one line: what it is for")
    content: str = Field(min_length=1, description="the procedure: steps, examples, edge cases")
    see_also: list[str] | None = Field(
        None, max_length=MAX_SEE_ALSO, description="related skill names; omitted: the stored list is kept"
    )
    metadata: dict[str, Any] | None = Field(None, description="merged into the stored metadata (source, tags, …)")
    expected_version: Whole | None = Field(
        None, ge=0, description="compare-and-set: write only if the live version is this (0: the name is not live)"
    )


class SkillSavedOut(ValueOut):
    outcome: str = Field(description="created, updated or unchanged")
    skill: SkillOut


class SkillListOut(ValueOut):
    skills: list[SkillOut] = Field(description="in name order")
    next_cursor: str | None = Field(None, description="pass as cursor for the next page; null on the last page")


class SkillHitOut(ValueOut):
    skill: SkillOut
    score: float = Field(description="fused relevance in [0, 1]")
    matched_by: str = Field(description="bm25, vector or bm25+vector")


class SkillSearchOut(ValueOut):
    mode: str = Field(description="hybrid, or bm25 when no vector signal was available")
    notes: list[str]
    hits: list[SkillHitOut] = Field(description="best first")


class SkillVersionOut(ValueOut):
    version: int
    change: str
    recorded_at: datetime
    summary: str
    content: str
    see_also: list[str]
    metadata: dict[str, Any]
    archived: bool


class RestoreIn(RequestModel):
    version: Whole | None = Field(
        None, ge=1, description="make this version's text current again; omitted: bring the archived skill back"
    )


class UsageIn(RequestModel):
    session_id: str = Field(min_length=1, max_length=200, description="the session that used the skills")
    names: list[str] = Field(min_length=1, max_length=MAX_REFERENCES, description="live skill names")


class UsageRowOut(ValueOut):
    session_id: str
    name: str
    used_at: datetime


class CoUsageOut(ValueOut):
    first: str
    second: str
    sessions: int = Field(description="sessions that used both")


class UsageOut(BaseModel):
    counts: dict[str, int] = Field(description="uses in the window of every live skill, 0 included")
    co_usage: list[CoUsageOut] = Field(description="the most co-used pairs, most shared sessions first")
    prefix_clusters: dict[str, list[str]] = Field(description="live skills grouped by their first name segment")
    recent: list[UsageRowOut] = Field(description="usage rows of the window, newest first")


class UsageRecordedOut(BaseModel):
    recorded: list[UsageRowOut]


# -- the collection -----------------------------------------------------------------------------------------
@router.get("/skills", response_model=SkillListOut, summary="List skills")
def list_skills(
    rv: Engine,
    agent: ReadAgent,
    prefix: Annotated[str, Query(max_length=MAX_NAME_CHARS + 1, description="only this name and those under it")] = "",
    include_archived: Annotated[bool, Query(description="archived skills too")] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="at most this many (a page)")] = 1000,
    cursor: CursorQuery = None,
) -> SkillListOut:
    """The agent's skills named ``prefix`` or under ``prefix/`` (all for an empty prefix), in name order, a
    page of at most ``limit``; ``next_cursor``, passed back as ``cursor``, gives the next page (null on the
    last). A walk sees every skill that existed for the whole walk exactly once."""
    page = rv.skills.page(agent, prefix, include_archived=include_archived, limit=limit, cursor=cursor)
    return SkillListOut(skills=list(page.items), next_cursor=page.next_cursor)


@router.get("/skills:search", response_model=SkillSearchOut, summary="Search skills")
def search_skills(
    rv: Engine,
    agent: ReadAgent,
    query: Annotated[str, Query(min_length=1, max_length=30_000, description="the task to find a skill for")],
    limit: Annotated[int | None, Query(ge=1, le=MAX_LIST_LIMIT, description="default: skills.search_limit")] = None,
    prefix: Annotated[str, Query(max_length=MAX_NAME_CHARS + 1, description="only under this name")] = "",
) -> SkillSearchOut:
    """Hybrid search (BM25 over name, summary and content, fused with vector similarity) over live skills."""
    return SkillSearchOut.model_validate(rv.skills.search(agent, query, limit=limit, prefix=prefix))


@router.post(
    "/skills:usage", status_code=201, response_model=UsageRecordedOut, responses=NOT_FOUND, summary="Record skill usage"
)
def record_usage(rv: Engine, agent: WriteAgent, body: UsageIn) -> UsageRecordedOut:
    """Log that a session used these live skills (and move their ``last_used_at``); 404 when one is not a
    live skill of the agent, and then nothing is recorded."""
    rows = rv.skills.record_usage(agent, body.session_id, body.names)
    return UsageRecordedOut(recorded=list(rows))


@router.get("/skills:usage", response_model=UsageOut, summary="Skill usage, co-usage and prefix clusters")
def usage(
    rv: Engine,
    agent: ReadAgent,
    days: Days = None,
    session_id: Annotated[str | None, Query(min_length=1, max_length=200, description="recent rows of it")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="recent rows at most")] = 100,
) -> UsageOut:
    """What the dream's skill consolidation reads: uses per live skill and the most co-used pairs in the
    window (``skills.usage_window_days``, or ``days``), the prefix clusters, and the recent usage rows."""
    return UsageOut(
        counts=rv.skills.usage_counts(agent, days=days),
        co_usage=list(rv.skills.co_usage(agent, days=days)),
        prefix_clusters=rv.skills.prefix_clusters(agent),
        recent=list(rv.skills.usage(agent, session_id=session_id, days=days, limit=limit)),
    )


# -- one skill ----------------------------------------------------------------------------------------------
@router.get(
    "/skills/{name:path}:history", response_model=list[SkillVersionOut], responses=NOT_FOUND, summary="Skill history"
)
def skill_history(
    rv: Engine,
    agent: ReadAgent,
    name: Name,
    response: Response,
    limit: Annotated[int | None, Query(ge=1, le=1000, description="page: at most this many versions")] = None,
    cursor: CursorQuery = None,
) -> list[SkillVersionOut]:
    """Every version of the skill, oldest first. With ``limit`` or ``cursor``: one page, the next page's
    cursor in the ``X-Next-Cursor`` header (absent on the last page)."""
    if limit is None and cursor is None:
        return [SkillVersionOut.model_validate(v) for v in rv.skills.history(agent, name)]
    page = rv.skills.history_page(agent, name, cursor=cursor, limit=limit)
    if page.next_cursor is not None:
        response.headers["X-Next-Cursor"] = page.next_cursor
    return [SkillVersionOut.model_validate(v) for v in page.items]


@router.post(
    "/skills/{name:path}:restore",
    response_model=SkillOut,
    responses={**NOT_FOUND, **VERSION_CONFLICT},
    summary="Restore a skill or one of its versions",
)
def restore_skill(rv: Engine, agent: WriteAgent, name: Name, body: RestoreIn | None = None) -> SkillOut:
    """Without a version: bring an archived skill back. With one: make that version's text current again."""
    return SkillOut.model_validate(rv.skills.restore(agent, name, None if body is None else body.version))


@router.get("/skills/{name:path}", response_model=SkillOut, responses=NOT_FOUND, summary="Read a skill")
def get_skill(rv: Engine, agent: ReadAgent, name: Name) -> SkillOut:
    """The skill, archived or not (404 when the agent has no skill of that name)."""
    return SkillOut.model_validate(rv.skills.get(agent, name))


@router.put("/skills/{name:path}", response_model=SkillSavedOut, responses=VERSION_CONFLICT, summary="Save a skill")
def save_skill(rv: Engine, agent: WriteAgent, name: Name, body: SkillIn) -> SkillSavedOut:
    """Create or update the skill (an archived name comes back as a new skill). Saving what is stored changes
    nothing (``unchanged``). A name that is not a path of lower-case segments is a 422."""
    saved: SkillSaved = rv.skills.save(
        agent,
        name,
        body.summary,
        body.content,
        see_also=body.see_also,
        metadata=body.metadata,
        expected_version=body.expected_version,
    )
    return SkillSavedOut.model_validate(saved)


@router.delete("/skills/{name:path}", response_model=SkillOut, responses=NOT_FOUND, summary="Archive a skill")
def archive_skill(rv: Engine, agent: WriteAgent, name: Name) -> SkillOut:
    """Archive the skill: hidden from listings and search, restorable until the archive purge."""
    return SkillOut.model_validate(rv.skills.archive(agent, name))


# -- feedback -----------------------------------------------------------------------------------------------
class FeedbackIn(RequestModel):
    kind: str = Field(
        description=f"one of {', '.join(FEEDBACK_KINDS)}", json_schema_extra={"enum": list(FEEDBACK_KINDS)}
    )
    session_id: str = Field(min_length=1, max_length=200, description="the session it is about")
    rating: str | None = Field(
        None, description=f"session_summary only: {', '.join(RATINGS)}", json_schema_extra={"enum": [*RATINGS, None]}
    )
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS, description="what was wrong, what the user said")
    entry_ids: list[str] = Field(default_factory=list, max_length=MAX_REFERENCES, description="long-term entries")
    skill_names: list[str] = Field(default_factory=list, max_length=MAX_REFERENCES, description="skills")


class FeedbackOut(ValueOut):
    id: str = Field(validation_alias=AliasChoices("id", "feedback_id"))
    agent_id: str
    session_id: str
    kind: str
    rating: str | None
    comment: str | None
    entry_ids: list[str]
    skill_names: list[str]
    created_at: datetime


@router.post("/feedback", status_code=201, response_model=FeedbackOut, responses=NOT_FOUND, summary="Record feedback")
def record_feedback(rv: Engine, agent: WriteAgent, body: FeedbackIn) -> FeedbackOut:
    """Record a signal about a session. A session_summary needs a rating; the other kinds take none (422).
    Entries and skills it names must be the agent's (404 otherwise, and nothing is recorded)."""
    signal = rv.feedback.record(
        agent,
        body.kind,
        body.session_id,
        rating=body.rating,
        comment=body.comment,
        entry_ids=body.entry_ids,
        skill_names=body.skill_names,
    )
    return FeedbackOut.model_validate(signal)


@router.get("/feedback", response_model=list[FeedbackOut], summary="List feedback")
def list_feedback(
    rv: Engine,
    agent: ReadAgent,
    days: Annotated[float | None, Query(gt=0, le=36_525, description="only the last this many days")] = None,
    kind: Annotated[list[str] | None, Query(description="only these kinds (repeat the parameter)")] = None,
    session_id: Annotated[str | None, Query(min_length=1, max_length=200, description="only this session")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_LIMIT, description="at most this many")] = 100,
) -> list[FeedbackOut]:
    """The agent's signals, newest first."""
    found = rv.feedback.list(agent, days=days, kinds=kind, session_id=session_id, limit=limit)
    return [FeedbackOut.model_validate(f) for f in found]


@router.get("/feedback/{feedback_id}", response_model=FeedbackOut, responses=NOT_FOUND, summary="Read feedback")
def get_feedback(
    rv: Engine,
    agent: ReadAgent,
    feedback_id: Annotated[str, Path(min_length=1, max_length=200, description="the signal's id")],
) -> FeedbackOut:
    return FeedbackOut.model_validate(rv.feedback.get(agent, feedback_id))
