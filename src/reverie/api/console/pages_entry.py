"""The console's entry page: one long-term entry with everything the engine records about it.

``GET /agents/{agent_id}/entries/{entry_id}`` shows the text, category, tags, provenance, tier, importance with
its projected decay, confidence, retention, subject time, the reinforcement timeline, the versions (a diff
between any two: ``?a=1&b=3``), the supersession chain both ways and the merge links. The POST routes change
it (archive, restore, pin, unpin, edit, restore a version) through ``pages_entry_actions`` and answer the
re-rendered fragment.

Invariants:
- Reads and writes go through the services the API's routes call (``routes_memory``), with the same access
  dependencies and the same scope (the path's agent, narrowed by ``user_id`` / ``session_id``); reading the
  page counts as a read of the entry, as ``GET /entries/{id}`` does. Linked entries are read without counting.
- The decay curve is ``core.aging.decay_importance`` itself, with the engine's ``[decay]`` settings: the same
  function the decay pass runs, evaluated at future days.
- Every piece of stored text reaches the HTML escaped: the templates autoescape and the diff is built of
  ``markupsafe.escape``d pieces.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from reverie import Reverie
from reverie.api.auth import ReadAgent, WriteAgent
from reverie.api.console import pages_entry_actions as actions
from reverie.api.console.render import fragment
from reverie.api.schemas import SessionQuery, UserQuery, scope_of
from reverie.core.aging import decay_importance
from reverie.core.consolidation import MERGED_AT, MERGED_FROM
from reverie.types import SUPERSEDES, EntryVersion, MemoryEntry, Scope

router = APIRouter()
EntryId = Annotated[str, Path(description="the entry's id", max_length=200)]
Days = Annotated[int, Query(ge=7, le=730, description="how many days of projected decay to draw")]
VersionNo = Annotated[int | None, Query(ge=1, le=2**31, description="a version number to compare")]
MAX_VERSIONS = 1000  # one page of ``history_page``: what the versions table and the diff choose from
TIMELINE_VERSIONS = 12  # the most recent versions shown in the timeline (the table lists them all)
PLOT_W, PLOT_H, PAD_L, PAD_R, PAD_T, PAD_B = 600, 180, 36, 24, 10, 24
_WORDS = re.compile(r"\s+|[^\s]+")


@dataclass(frozen=True, slots=True)
class Link:
    """An entry linked from this one: its id, the entry when the scope sees it (None: gone or out of scope)."""

    id: str
    entry: MemoryEntry | None


@dataclass(frozen=True, slots=True)
class Plot:
    """The projected-importance chart, in SVG user units (``points``: the polyline's ``x,y`` list)."""

    days: int
    points: str
    floor_y: float
    ticks: list[tuple[float, str]]  # x, label
    levels: list[tuple[float, str]]  # y, label
    end: float  # the importance at the last day
    note: str


def _ids(value: object) -> list[str]:
    return [i for i in value if isinstance(i, str)] if isinstance(value, list) else []


def _links(rv: Reverie, ids: list[str], scope: Scope) -> list[Link]:
    found = {e.id: e for e in rv.explorer.entries(ids, scope)}  # read-only, archived and superseded ones too
    return [Link(i, found.get(i)) for i in dict.fromkeys(ids)]


def chain(rv: Reverie, entry: MemoryEntry, scope: Scope) -> dict[str, Any]:
    """The supersession chain and merge links: what replaced this entry (``superseded_by``: merged into it when
    this one is archived, a contradicting newer belief when not), what it replaced (``metadata.supersedes``),
    what it was merged from (``metadata.mergedFrom``, the dream's consolidation)."""
    replaced_by = _links(rv, [entry.superseded_by], scope) if entry.superseded_by else []
    contradiction = entry.metadata.get("contradiction")
    return {
        "replaced_by": replaced_by,
        "replaced_how": "merged into" if entry.archived else "superseded by",
        "contradiction": None
        if not isinstance(contradiction, dict)
        else {
            "kind": str(contradiction.get("kind", "")),
            "earlier": _words(contradiction.get("earlier")),
            "later": _words(contradiction.get("later")),
        },
        "valid_to": _moment(entry.valid_to),
        "replaced": _links(rv, _ids(entry.metadata.get(SUPERSEDES)), scope),
        "merged_from": _links(rv, _ids(entry.metadata.get(MERGED_FROM)), scope),
        "merged_at": _moment(entry.metadata.get(MERGED_AT)),
    }


def decay_plot(rv: Reverie, entry: MemoryEntry, days: int) -> Plot:
    """Importance over the next ``days`` days if nothing reinforces the entry, as the decay pass would leave it
    (pinned and archived entries are not decayed: a flat line)."""
    params = rv.aging.config.importance
    now = rv.clock.now()
    values: list[float] = []
    for day in range(days + 1):
        if entry.pinned or entry.archived:
            values.append(entry.importance)
            continue
        step = decay_importance(
            entry.importance,
            last_seen_at=entry.last_seen_at,
            decayed_through=entry.decayed_through,
            now=now + timedelta(days=day),
            params=params,
        )
        values.append(step.importance)
    inner_w, inner_h = PLOT_W - PAD_L - PAD_R, PLOT_H - PAD_T - PAD_B

    def x(day: float) -> float:
        return round(PAD_L + inner_w * day / days, 1)

    def y(value: float) -> float:
        return round(PAD_T + inner_h * (1.0 - value), 1)

    grace_end = entry.last_seen_at + timedelta(days=params.grace_days)
    if entry.pinned:
        note = "Pinned: importance does not decay."
    elif entry.archived:
        note = "Archived: the decay pass leaves it alone."
    elif not params.enabled:
        note = "Decay is off ([decay] importance_half_life_days <= 0)."
    else:
        note = (
            f"Unchanged for {params.grace_days:g} days after the last reinforcement (until {grace_end:%Y-%m-%d}), "
            f"then halved every {params.half_life_days:g} days down to {params.floor:g}."
        )
    step_days = max(1, days // 6)
    return Plot(
        days=days,
        points=" ".join(f"{x(d)},{y(v)}" for d, v in enumerate(values)),
        floor_y=y(params.floor),
        ticks=[(x(d), f"+{d}d") for d in range(0, days + 1, step_days)],
        levels=[(y(v), f"{v:.1f}") for v in (0.0, 0.5, 1.0)],
        end=values[-1],
        note=note,
    )


def _words(value: object) -> str:
    return " ".join(str(word) for word in value) if isinstance(value, list) else ""


def timeline(entry: MemoryEntry, versions: list[EntryVersion]) -> list[tuple[datetime, str]]:
    """What the entry records about its life, oldest first: saved, each version's write (the most recent
    ``TIMELINE_VERSIONS``), last reinforced, last read, decay applied, archived, stopped holding."""
    events: list[tuple[datetime, str]] = [(entry.created_at, "saved")]
    for v in versions[1:][-TIMELINE_VERSIONS:]:
        events.append((v.recorded_at, f"version {v.version}: {v.change.value}"))
    times = (
        (entry.last_seen_at, f"last reinforced (seen {_times(entry.reinforcement_count)})"),
        (entry.read_at, f"last read (read strength {entry.read_strength:.2f})"),
        (entry.decayed_through, "importance decay applied through"),
        (entry.archived_at, "archived"),
        (_moment(entry.valid_to), "stopped being the current belief"),
    )
    events.extend((when, what) for when, what in times if when is not None)
    return sorted(events, key=lambda event: event[0])


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _moment(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:  # metadata written by hand or by an import: shown as missing rather than failing the page
        return None


def word_diff(old: str, new: str) -> Markup:
    """``old`` → ``new`` word by word: removed words in ``<del>``, added ones in ``<ins>``, every piece escaped."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    out: list[Markup] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(Markup("<del>{}</del>").format("".join(a[i1:i2])))
        if j2 > j1:
            out.append(Markup("<ins>{}</ins>").format("".join(b[j1:j2])))
    return Markup("").join(out)


def _diff(versions: list[EntryVersion], a: int | None, b: int | None) -> dict[str, Any] | None:
    if a is None or b is None:
        return None
    by_number = {v.version: v for v in versions}
    older, newer = by_number.get(min(a, b)), by_number.get(max(a, b))
    if older is None or newer is None:
        return {"missing": [n for n in (a, b) if n not in by_number], "a": a, "b": b}
    return {
        "a": older,
        "b": newer,
        "content": word_diff(older.content, newer.content),
        "category": (older.category, newer.category),
        "tags": (list(older.tags), list(newer.tags)),
        "missing": [],
    }


def show(
    request: Request,
    agent_id: str,
    entry_id: str,
    scope: Scope,
    *,
    days: int = 180,
    notice: str = "",
    a: int | None = None,
    b: int | None = None,
) -> HTMLResponse:
    """The entry's fragment: with ``a`` and ``b``, the diff of those two versions; ``notice``: what just changed."""
    rv: Reverie = request.app.state.rv
    entry = rv.memory.get(entry_id, scope=scope)
    page = rv.memory.history_page(entry.id, limit=MAX_VERSIONS, scope=scope)
    versions = list(page.items)
    narrow = {k: v for k, v in (("user_id", scope.user_id), ("session_id", scope.session_id)) if v is not None}
    return fragment(
        request,
        "entry/page.html",
        agent_id=agent_id,
        entry=entry,
        versions=versions,
        more_versions=page.next_cursor is not None,
        chain=chain(rv, entry, scope),
        plot=decay_plot(rv, entry, days),
        timeline=timeline(entry, versions),
        diff=_diff(versions, a, b),
        sel_a=a or (versions[0].version if versions else 0),
        sel_b=b or (versions[-1].version if versions else 0),
        box={"w": PLOT_W, "h": PLOT_H, "left": PAD_L, "right": PLOT_W - PAD_R, "top": PAD_T, "bottom": PLOT_H - PAD_B},
        subject={k: v for k, v in entry.metadata.items() if k.startswith("subjectTime")},
        qs=("?" + urlencode(narrow)) if narrow else "",
        narrow=narrow,
        notice=notice,
    )


@router.get("/agents/{agent_id}/entries/{entry_id}", response_class=HTMLResponse)
def entry_page(
    request: Request,
    agent_id: ReadAgent,
    entry_id: EntryId,
    a: VersionNo = None,
    b: VersionNo = None,
    days: Days = 180,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """The entry page; with ``a`` and ``b`` also the diff between those two versions."""
    return show(request, agent_id, entry_id, scope_of(agent_id, user_id, session_id), days=days, a=a, b=b)


def _change(
    request: Request, agent_id: str, entry_id: str, scope: Scope, apply: Callable[[Reverie], object], notice: str
) -> HTMLResponse:
    """An action of the page: the API's ``require_change`` on the entry, the service call, the page again."""
    rv: Reverie = request.app.state.rv
    actions.check_change(request, rv, entry_id, scope)
    apply(rv)
    return show(request, agent_id, entry_id, scope, notice=notice)


@router.post("/agents/{agent_id}/entries/{entry_id}/archive", response_class=HTMLResponse)
def archive(
    request: Request,
    agent_id: WriteAgent,
    entry_id: EntryId,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """Archive (the API's ``DELETE /entries/{id}``)."""
    scope = scope_of(agent_id, user_id, session_id)
    notice = "Archived: it left search and browse until restored."
    return _change(request, agent_id, entry_id, scope, lambda rv: rv.memory.archive(entry_id, scope=scope), notice)


@router.post("/agents/{agent_id}/entries/{entry_id}/restore", response_class=HTMLResponse)
def restore(
    request: Request,
    agent_id: WriteAgent,
    entry_id: EntryId,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """Restore an archived or superseded entry (the API's ``POST /entries/{id}/restore``)."""
    scope = scope_of(agent_id, user_id, session_id)
    notice = "Restored: it is a current entry again."
    return _change(request, agent_id, entry_id, scope, lambda rv: rv.memory.restore(entry_id, scope=scope), notice)


@router.post("/agents/{agent_id}/entries/{entry_id}/pin", response_class=HTMLResponse)
@router.post("/agents/{agent_id}/entries/{entry_id}/unpin", response_class=HTMLResponse)
def pin(
    request: Request,
    agent_id: WriteAgent,
    entry_id: EntryId,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """Pin (``…/pin``) or unpin (``…/unpin``): the API's ``PUT /entries/{id}/pinned``."""
    scope = scope_of(agent_id, user_id, session_id)
    pinned = not request.url.path.endswith("/unpin")

    def apply(rv: Reverie) -> object:
        return rv.memory.set_pinned(entry_id, pinned, scope=scope)

    return _change(request, agent_id, entry_id, scope, apply, "Pinned." if pinned else "Unpinned.")


@router.post("/agents/{agent_id}/entries/{entry_id}/edit", response_class=HTMLResponse)
async def edit(
    request: Request,
    agent_id: WriteAgent,
    entry_id: EntryId,
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """The edit form (content, category, tags, importance), validated by the services as the API's are."""
    scope = scope_of(agent_id, user_id, session_id)
    form = actions.form_text(dict(await request.form()))

    def save() -> HTMLResponse:  # the engine's calls block: off the event loop, as a sync route's are
        actions.check_change(request, request.app.state.rv, entry_id, scope)
        actions.apply_edit(request.app.state.rv, entry_id, form, scope)
        return show(request, agent_id, entry_id, scope, notice="Saved.")

    return await run_in_threadpool(save)


@router.post("/agents/{agent_id}/entries/{entry_id}/versions/{version}/restore", response_class=HTMLResponse)
def restore_version(
    request: Request,
    agent_id: WriteAgent,
    entry_id: EntryId,
    version: Annotated[int, Path(ge=1, le=2**31)],
    user_id: UserQuery = None,
    session_id: SessionQuery = None,
) -> HTMLResponse:
    """Make a version's text, category and tags current again, as a new version (the API's version restore)."""
    scope = scope_of(agent_id, user_id, session_id)

    def apply(rv: Reverie) -> object:
        return rv.memory.restore_version(entry_id, version, scope=scope)

    return _change(request, agent_id, entry_id, scope, apply, f"Version {version} restored as a new version.")
