"""``reverie feedback ...``: the feedback store of an agent (seed 001's feedback signals): record one, list them.

Kinds: ``correction``, ``session_summary`` (with ``--rating poor|fair|good|excellent``), ``stale``, ``wrong``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from reverie.cli.common import AgentOption, JsonOption, console, emit_json, engine, escape
from reverie.core.text import preview

if TYPE_CHECKING:
    from reverie.types import Feedback

app = typer.Typer(
    help="Feedback: corrections, session summaries, stale and wrong signals about an agent's sessions.",
    no_args_is_help=True,
)


def _line(signal: Feedback) -> str:
    rating = f" ({signal.rating})" if signal.rating else ""
    about = [*(f"entry {i}" for i in signal.entry_ids), *(f"skill {n}" for n in signal.skill_names)]
    tail = f" [dim]about {escape(', '.join(about))}[/]" if about else ""
    comment = f" — {escape(preview(signal.comment, 160))}" if signal.comment else ""
    return (
        f"[cyan]{signal.feedback_id}[/] {signal.created_at.strftime('%Y-%m-%d %H:%M')} "
        f"[bold]{signal.kind}[/]{rating} session {escape(signal.session_id)}{comment}{tail}"
    )


@app.command()
def record(
    ctx: typer.Context,
    kind: str = typer.Argument(..., help="correction, session_summary, stale or wrong."),
    session: str = typer.Option(..., "--session", "-s", help="The session it is about."),
    rating: str | None = typer.Option(None, "--rating", "-r", help="session_summary: poor, fair, good, excellent."),
    comment: str | None = typer.Option(None, "--comment", "-c", help="What was wrong, or what the user said."),
    entry: list[str] | None = typer.Option(None, "--entry", help="A memory entry id it is about (repeatable)."),
    skill: list[str] | None = typer.Option(None, "--skill", help="A skill name it is about (repeatable)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Record one feedback signal."""
    with engine(ctx) as rv:
        signal = rv.feedback.record(
            agent, kind, session, rating=rating, comment=comment, entry_ids=entry, skill_names=skill
        )
        if as_json:
            emit_json(signal)
        else:
            console.print(f"recorded {_line(signal)}")


@app.command("list")
def list_(
    ctx: typer.Context,
    days: float | None = typer.Option(None, "--days", help="Only the last this many days."),
    kind: list[str] | None = typer.Option(None, "--kind", "-k", help="Only this kind (repeatable)."),
    session: str | None = typer.Option(None, "--session", "-s", help="Only this session."),
    limit: int = typer.Option(100, "--limit", "-n", help="At most this many (1 to 1000)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's feedback signals, newest first."""
    with engine(ctx) as rv:
        found = rv.feedback.list(agent, days=days, kinds=kind or None, session_id=session, limit=limit)
        if as_json:
            emit_json(found)
            return
        if not found:
            console.print(f"no feedback for agent {agent}", markup=False)
        for signal in found:
            console.print(_line(signal))
