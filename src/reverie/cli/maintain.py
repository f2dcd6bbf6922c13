"""``reverie maintain ...``: the aging passes (importance decay, the forget sweep) on demand."""

from __future__ import annotations

import typer

from reverie.cli.common import JsonOption, emit, engine

app = typer.Typer(help="Aging passes: importance decay and the forget sweep.", no_args_is_help=True)
AllAgentsOption = typer.Option(None, "--agent", help="Only this agent's entries (default: every agent).")


def _agent(agent: str | None) -> str | None:
    from reverie.core import validate

    return None if agent is None else validate.identifier(agent, name="agent_id")


@app.command()
def decay(ctx: typer.Context, agent: str | None = AllAgentsOption, as_json: bool = JsonOption) -> None:
    """Fade the importance of entries not reinforced for a while (seed 000: grace 30 days, half-life 45,
    floor 0.10; calendar-time, so running it daily or weekly gives the same curve)."""
    with engine(ctx) as rv:
        report = rv.aging.decay(agent_id=_agent(agent))
        emit(
            report,
            as_json,
            f"examined {report.examined}, decayed {len(report.decayed)}, at the floor {report.at_floor}",
        )


@app.command()
def forget(ctx: typer.Context, agent: str | None = AllAgentsOption, as_json: bool = JsonOption) -> None:
    """The forget sweep: expired entries archived (pinned too); cold episodic entries compacted or
    archived. Nothing is deleted: archived entries stay restorable until the purge pass."""
    with engine(ctx) as rv:
        report = rv.aging.forget(agent_id=_agent(agent))
        emit(
            report,
            as_json,
            f"examined {report.examined}, cold {report.cold}: archived {len(report.archived)}, "
            f"compacted {len(report.compacted)}; expired {len(report.expired)}",
        )
