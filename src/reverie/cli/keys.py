"""``reverie keys ...``: create, list, bind to users and revoke the API keys of the HTTP API and the MCP server.

``keys list`` warns about every live agent key from before user binding (it may still name any user) until
``keys bind`` gives it users (or ``--any-user``, deliberately)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import JsonOption, console, emit_json, engine, err_console, escape, fail
from reverie.errors import ValidationError
from reverie.types.keys import ADMIN, AGENT_SCOPES, ANY_USER, MEMORY_READ, MEMORY_WRITE

if TYPE_CHECKING:
    from reverie.types import ApiKey

app = typer.Typer(help="API keys for the HTTP API and the MCP server.", no_args_is_help=True)


def public_view(key: ApiKey) -> dict[str, Any]:
    from reverie.keys import service  # the key service (and the storage it needs) loads when a command runs

    return service.public_view(key)


def binding(key: ApiKey) -> str:
    from reverie.keys import service

    return service.binding(key)


def _when(value: object) -> str:
    return "-" if value is None else str(value)[:16].replace("T", " ")


def _line(key: ApiKey) -> str:
    view = public_view(key)
    agent = "(every agent)" if key.agent_id is None else key.agent_id
    state = f"revoked {_when(view['revoked_at'])}" if key.revoked_at else "live"
    return (
        f"{key.key_id}  {key.name:<20} {agent:<16} {','.join(key.scopes):<24} {binding(key):<20}"
        f" created {_when(view['created_at'])}  used {_when(view['last_used_at'])}  {state}"
    )


def _users(user: list[str] | None, any_user: bool) -> list[str]:
    """``--user`` (repeatable) or ``--any-user``, not both."""
    if any_user and user:
        fail(ValidationError("give either --user U (repeatable) or --any-user", field="users"))
    return [ANY_USER] if any_user else list(user or ())


UserOption = typer.Option(
    None, "--user", "-u", help="A user requests with the key may name as user_id (repeatable). Default: none."
)
AnyUserOption = typer.Option(False, "--any-user", help="Requests with the key may name any user ('*').")


@app.command()
def create(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A label for the key (who or what uses it)."),
    agent: str | None = typer.Option(None, "--agent", "-a", help="The one agent the key may act for."),
    admin: bool = typer.Option(False, "--admin", help="An admin key: every scope, every agent."),
    scope: list[str] | None = typer.Option(
        None, "--scope", help=f"{MEMORY_READ}, {MEMORY_WRITE} or {ADMIN} (repeatable; default both memory scopes)."
    ),
    user: list[str] | None = UserOption,
    any_user: bool = AnyUserOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a key and print its secret, once: it cannot be shown again. An agent key names no user (no
    user_id, no user memory) unless given --user U or --any-user; an admin key reaches every user."""
    if admin == (agent is not None):
        fail(ValidationError("give either --agent A or --admin", field="agent"))
    users = _users(user, any_user)
    if admin and users:
        fail(ValidationError("an admin key reaches every user: give it no --user or --any-user", field="users"))
    scopes = list(scope or ())
    if admin and ADMIN not in scopes:
        scopes.append(ADMIN)
    elif not admin and not scopes:
        scopes = list(AGENT_SCOPES)
    with engine(ctx) as rv:
        key, secret = rv.keys.create(name, agent_id=agent, scopes=scopes, users=users)
    if as_json:
        emit_json({"key": public_view(key), "secret": secret})
    else:
        console.print(_line(key), markup=False)
        console.print(secret, markup=False)
    err_console.print("[yellow]warning:[/] this is the only time the secret is shown; store it now.")


@app.command("list")
def list_keys(
    ctx: typer.Context,
    limit: int | None = typer.Option(None, "--limit", "-n", help="One page of this many, oldest first (1-1000)."),
    cursor: str | None = typer.Option(None, "--cursor", help="The page after this cursor (printed by a page)."),
    as_json: bool = JsonOption,
) -> None:
    """Every key, revoked ones included, oldest first (never the secrets); with -n or --cursor one page, and on
    stderr the cursor of the next."""
    with engine(ctx) as rv:
        if limit is None and cursor is None:
            keys = rv.keys.list()
        else:
            page = rv.keys.page(cursor=cursor, limit=limit)
            keys = list(page.items)
            if page.next_cursor is not None:
                typer.echo(f"more: reverie keys list --cursor {page.next_cursor}", err=True)
    if as_json:
        emit_json([public_view(k) for k in keys])
    else:
        if not keys:
            console.print("no API keys: create one with `reverie keys create NAME --agent A`", markup=False)
        for key in keys:
            console.print(_line(key), markup=False)
    for key in keys:
        if key.users is None and key.agent_id is not None and key.revoked_at is None:
            err_console.print(
                f"[yellow]warning:[/] key {key.key_id} ({escape(key.agent_id)}) is from before keys were bound to "
                f"users: it may name any user. Bind it: `reverie keys bind {key.key_id} --user U` (or --any-user)."
            )


@app.command()
def bind(
    ctx: typer.Context,
    key_id: str = typer.Argument(..., help="The key's id (from `keys list`)."),
    user: list[str] | None = UserOption,
    any_user: bool = AnyUserOption,
    no_user: bool = typer.Option(False, "--no-user", help="The key names no user from now on."),
    as_json: bool = JsonOption,
) -> None:
    """Replace the users an agent key may name (from its next request on)."""
    users = _users(user, any_user)
    if no_user == bool(users):
        fail(ValidationError("give --user U (repeatable), --any-user or --no-user", field="users"))
    with engine(ctx) as rv:
        key = rv.keys.bind(key_id, users)
    if as_json:
        emit_json(public_view(key))
    else:
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
