"""``reverie skills ...``: the skill store of an agent (seed 001's skills): list, show, search, save, archive,
restore, history, and the usage log (counts, co-usage and prefix clusters, or recording a session's use).

``--json`` prints the values the library returns (a skill without its vector).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import AgentOption, JsonOption, console, emit_json, engine, escape, fail, read_text_argument
from reverie.core.text import preview
from reverie.errors import ValidationError
from reverie.views.plain import to_jsonable

if TYPE_CHECKING:
    from reverie.types import Skill

app = typer.Typer(
    help="Skills: named procedures an agent keeps and reuses (mcp/email), their history and usage.",
    no_args_is_help=True,
)
NameArgument = typer.Argument(..., help="The skill's name, a path such as mcp/email.")
LimitOption = typer.Option(None, "--limit", "-n", help="At most this many.")


def skill_json(skill: Skill) -> dict[str, Any]:
    """A skill as JSON, without its vector (the model that made it stays: ``vector_model``)."""
    out: dict[str, Any] = to_jsonable(replace(skill, vector=None))
    out.pop("vector", None)
    return out


def _when(value: datetime | None) -> str:
    return "never" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def _line(skill: Skill) -> str:
    archived = " [yellow](archived)[/]" if skill.archived else ""
    return (
        f"[cyan]{escape(skill.name)}[/]{archived} — {escape(preview(skill.summary, 120))}"
        f"  [dim](v{skill.version}, last used {_when(skill.last_used_at)})[/]"
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    prefix: str = typer.Option("", "--prefix", "-p", help="Only this name and the skills under it (mcp)."),
    archived: bool = typer.Option(False, "--archived", help="Include archived skills."),
    limit: int = typer.Option(1000, "--limit", "-n", help="At most this many (1 to 1000)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's skills in name order; when more exist than -n, stderr gives the cursor of the next page."""
    with engine(ctx) as rv:
        page = rv.skills.page(agent, prefix, include_archived=archived, limit=limit, cursor=cursor)
        skills = list(page.items)
        if page.next_cursor is not None:
            typer.echo(f"more: reverie skills list --cursor {page.next_cursor}", err=True)
        if as_json:
            emit_json([skill_json(s) for s in skills])
            return
        if not skills:
            console.print(f"no skills for agent {agent}", markup=False)
        for skill in skills:
            console.print(_line(skill))


@app.command()
def show(
    ctx: typer.Context,
    name: str = NameArgument,
    version: int | None = typer.Option(None, "--version", min=1, help="Show this version from the history."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Print a skill in full (or one of its versions)."""
    with engine(ctx) as rv:
        skill = rv.skills.get(agent, name)
        if version is not None:
            found = [v for v in rv.skills.history(agent, name) if v.version == version]
            if not found:
                fail(ValidationError(f"skill {name!r} has no version {version}", field="version"))
            if as_json:
                emit_json(found[0])
                return
            old = found[0]
            console.print(f"[bold]{escape(name)}[/] [dim](version {old.version}, {old.change})[/]")
            console.print(f"{old.summary}\n\n{old.content}", markup=False)
            return
        if as_json:
            emit_json(skill_json(skill))
            return
        console.print(_line(skill))
        console.print(f"\n{skill.content}", markup=False)
        if skill.see_also:
            console.print(f"\nsee also: {', '.join(skill.see_also)}", markup=False)


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="The task to find a skill for."),
    limit: int | None = LimitOption,
    prefix: str = typer.Option("", "--prefix", "-p", help="Only this name and the skills under it."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Hybrid search over the agent's live skills (names, summaries and content)."""
    with engine(ctx) as rv:
        found = rv.skills.search(agent, query, limit=limit, prefix=prefix)
        if as_json:
            hits = [{"score": h.score, "matched_by": h.matched_by, "skill": skill_json(h.skill)} for h in found.hits]
            emit_json({"mode": found.mode, "notes": list(found.notes), "hits": hits})
            return
        for note in found.notes:
            console.print(f"[dim]note: {escape(note)}[/]")
        if not found.hits:
            console.print(f"no skill matched {query!r}", markup=False)
        for hit in found.hits:
            console.print(f"{hit.score:.2f} {_line(hit.skill)}")


@app.command()
def save(
    ctx: typer.Context,
    name: str = NameArgument,
    content: str = typer.Argument(..., help="The procedure ('-': read it from stdin)."),
    summary: str = typer.Option(..., "--summary", "-s", help="One line: what the skill is for."),
    see_also: list[str] | None = typer.Option(None, "--see-also", help="A related skill's name (repeatable)."),
    expected_version: int | None = typer.Option(
        None, "--expected-version", min=0, help="Compare-and-set: write only if the live version is this (0: new)."
    ),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Create or update a skill (the previous text stays in its history)."""
    text = read_text_argument(content)
    with engine(ctx) as rv:
        saved = rv.skills.save(agent, name, summary, text, see_also=see_also or None, expected_version=expected_version)
        if as_json:
            emit_json({"outcome": saved.outcome, "skill": skill_json(saved.skill)})
            return
        console.print(f"{saved.outcome} {_line(saved.skill)}")


@app.command()
def archive(ctx: typer.Context, name: str = NameArgument, agent: str = AgentOption, as_json: bool = JsonOption) -> None:
    """Archive a skill: hidden from listings and search, restorable until the archive purge."""
    with engine(ctx) as rv:
        skill = rv.skills.archive(agent, name)
        if as_json:
            emit_json(skill_json(skill))
        else:
            console.print(f"archived {_line(skill)}")


@app.command()
def restore(
    ctx: typer.Context,
    name: str = NameArgument,
    version: int | None = typer.Option(None, "--version", min=1, help="Make this version's text current again."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Bring an archived skill back, or (--version) restore an earlier version's text."""
    with engine(ctx) as rv:
        skill = rv.skills.restore(agent, name, version)
        if as_json:
            emit_json(skill_json(skill))
        else:
            console.print(f"restored {_line(skill)}")


@app.command()
def history(
    ctx: typer.Context,
    name: str = NameArgument,
    limit: int | None = typer.Option(None, "--limit", "-n", help="One page of this many, oldest first (1-1000)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Every version of a skill, oldest first; with -n or --cursor one page, and on stderr the cursor of the
    next."""
    with engine(ctx) as rv:
        if limit is None and cursor is None:
            versions = rv.skills.history(agent, name)
        else:
            page = rv.skills.history_page(agent, name, cursor=cursor, limit=limit)
            versions = list(page.items)
            if page.next_cursor is not None:
                typer.echo(f"more: reverie skills history {name} --cursor {page.next_cursor}", err=True)
        if as_json:
            emit_json(versions)
            return
        for v in versions:
            state = " [yellow]archived[/]" if v.archived else ""
            summary = escape(preview(v.summary, 100))
            console.print(f"v{v.version} [dim]{_when(v.recorded_at)}[/] {escape(v.change)}{state} — {summary}")


@app.command()
def usage(
    ctx: typer.Context,
    days: float | None = typer.Option(None, "--days", help="Look back this many days (default [skills] 30)."),
    session: str | None = typer.Option(None, "--session", "-s", help="With --use: the session that used them."),
    use: list[str] | None = typer.Option(None, "--use", help="Record that --session used this skill (repeatable)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Usage counts, the most co-used pairs and the prefix clusters; with --use and --session, record a use."""
    with engine(ctx) as rv:
        if use:
            if session is None:
                fail(ValidationError("--use needs --session: the session that used the skills", field="session"))
            rows = rv.skills.record_usage(agent, session, use)
            if as_json:
                emit_json(rows)
            else:
                console.print(f"recorded {len(rows)} use(s) in session {session}", markup=False)
            return
        report = {
            "counts": rv.skills.usage_counts(agent, days=days),
            "co_usage": rv.skills.co_usage(agent, days=days),
            "prefix_clusters": rv.skills.prefix_clusters(agent),
        }
        if as_json:
            emit_json(report)
            return
        _print_usage(report)


def _print_usage(report: dict[str, Any]) -> None:
    console.print("[bold]uses[/]")
    for name, count in sorted(report["counts"].items(), key=lambda item: (-item[1], item[0])):
        console.print(f"  {count:>5}  {escape(name)}")
    if report["co_usage"]:
        console.print("[bold]used together[/]")
        for pair in report["co_usage"]:
            console.print(f"  {pair.sessions:>5}  {escape(pair.first)} + {escape(pair.second)}")
    if report["prefix_clusters"]:
        console.print("[bold]prefix clusters[/]")
        for head, members in report["prefix_clusters"].items():
            console.print(f"  {escape(head)}/*: {escape(', '.join(members))}")
