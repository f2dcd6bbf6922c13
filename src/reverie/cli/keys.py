"""``reverie keys ...``: create, list and revoke the API keys of the HTTP API and the MCP server."""

from __future__ import annotations

import typer

from reverie.cli.common import JsonOption, console, emit_json, engine, err_console, fail
from reverie.errors import ValidationError
from reverie.keys.service import ADMIN, AGENT_SCOPES, MEMORY_READ, MEMORY_WRITE, public_view
from reverie.types import ApiKey

app = typer.Typer(help="API keys for the HTTP API and the MCP server.", no_args_is_help=True)


def _when(value: object) -> str:
    return "-" if value is None else str(value)[:16].replace("T", " ")


def _line(key: ApiKey) -> str:
    view = public_view(key)
    agent = "(every agent)" if key.agent_id is None else key.agent_id
    state = f"revoked {_when(view['revoked_at'])}" if key.revoked_at else "live"
    return (
        f"{key.key_id}  {key.name:<20} {agent:<16} {','.join(key.scopes):<24} created {_when(view['created_at'])}"
        f"  used {_when(view['last_used_at'])}  {state}"
    )


@app.command()
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A label for the key (who or what uses it)."),
    agent: str | None = typer.Option(None, "--agent", "-a", help="The one agent the key may act for."),
    admin: bool = typer.Option(False, "--admin", help="An admin key: every scope, every agent."),
    scope: list[str] | None = typer.Option(
        None, "--scope", help=f"{MEMORY_READ}, {MEMORY_WRITE} or {ADMIN} (repeatable; default both memory scopes)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a key and print its secret, once: it cannot be shown again."""
    if admin == (agent is not None):
        fail(ValidationError("give either --agent A or --admin", field="agent"))
    scopes = list(scope or ())
    if admin and ADMIN not in scopes:
        scopes.append(ADMIN)
    elif not admin and not scopes:
        scopes = list(AGENT_SCOPES)
    with engine(ctx) as rv:
        key, secret = rv.keys.create(name, agent_id=agent, scopes=scopes)
    if as_json:
        emit_json({"key": public_view(key), "secret": secret})
    else:
        console.print(_line(key), markup=False)
        console.print(secret, markup=False)
    err_console.print("[yellow]warning:[/] this is the only time the secret is shown; store it now.")


@app.command("list")
def list_keys(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Every key, revoked ones included, oldest first (never the secrets)."""
    with engine(ctx) as rv:
        keys = rv.keys.list()
    if as_json:
        emit_json([public_view(k) for k in keys])
        return
    if not keys:
        console.print("no API keys: create one with `reverie keys create NAME --agent A`", markup=False)
    for key in keys:
        console.print(_line(key), markup=False)


@app.command()
def revoke(
    ctx: typer.Context,
    key_id: str = typer.Argument(..., help="The key's id (from `keys list`)."),
    as_json: bool = JsonOption,
) -> None:
    """Revoke a key: it is refused from now on (it stays listed)."""
    with engine(ctx) as rv:
        key = rv.keys.revoke(key_id)
    if as_json:
        emit_json(public_view(key))
    else:
        console.print(f"revoked {key.key_id} ({key.name})", markup=False)
