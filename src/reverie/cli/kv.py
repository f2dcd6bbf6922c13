"""``reverie memory kv ...``: key-value memory (seed 004's ``memory store|get|update|delete|list --prefix``).

How a value given on the command line is read (``set`` and ``update``):
- by default, as JSON when the whole text parses as JSON (``42``, ``true``, ``null``, ``"quoted"``,
  ``[1, 2]``, ``{"a": 1}``), else as the string itself (``dark``, ``Important note``);
- ``--json-value``: it must be JSON (a parse error is refused);
- ``--string``: always the string itself, so ``--string 1.0`` stores the text "1.0", not a number.
``NaN`` and ``Infinity`` are not JSON here: by default they are strings, with ``--json-value`` refused.
``-`` reads the value from standard input.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from reverie.cli.common import (
    AgentOption,
    JsonOption,
    console,
    emit,
    emit_json,
    engine,
    escape,
    fail,
    read_text_argument,
)
from reverie.errors import ValidationError

if TYPE_CHECKING:
    from reverie.types import KvItem

app = typer.Typer(
    help="Key-value memory: structured values per agent under exact keys (user:preference:theme).",
    no_args_is_help=True,
)

ValueArgument = typer.Argument(None, help="The value: JSON when it parses as JSON, else a string ('-': stdin).")
ValueOption = typer.Option(None, "--value", help="The value, as an option instead of the argument.")
JsonValueOption = typer.Option(False, "--json-value", help="The value must be JSON.")
StringOption = typer.Option(False, "--string", help="Store the value as a string, even when it parses as JSON.")
ExpectedOption = typer.Option(
    None, "--expected-version", min=0, help="Compare-and-set: write only if the live version is this (0: absent)."
)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_value(text: str, *, as_json: bool, as_string: bool) -> Any:
    """The value a command line means (see the module's rule)."""
    if as_json and as_string:
        raise ValidationError("--json-value and --string exclude each other", field="value")
    if as_string:
        return text
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        if as_json:
            raise ValidationError(f"the value is not JSON: {exc}", field="value") from None
        return text
    except RecursionError:  # JSON all the same, nested ~1,000 deep: far past the limit (never taken as text)
        from reverie.core.validate import too_deep

        raise too_deep("value") from None


def _value_text(argument: str | None, option: str | None) -> str:
    if (argument is None) == (option is None):
        fail(ValidationError("give the value once: as the argument or with --value", field="value"))
    return read_text_argument(argument if argument is not None else option or "")


def shown(value: Any) -> str:
    """A value as text: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _line(item: KvItem) -> str:
    return f"[cyan]{escape(item.key)}[/] = {escape(shown(item.value))}  [dim](v{item.version})[/]"


@app.command("set")
def set_(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The key, e.g. user:preference:theme."),
    value: str | None = ValueArgument,
    value_option: str | None = ValueOption,
    json_value: bool = JsonValueOption,
    string: bool = StringOption,
    expected_version: int | None = ExpectedOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Set a key: create it, overwrite it, or bring a deleted one back."""
    text = _value_text(value, value_option)
    with engine(ctx) as rv:
        parsed = parse_value(text, as_json=json_value, as_string=string)
        item = rv.kv.set(agent, key, parsed, expected_version=expected_version)
        emit(item, as_json, f"set {_line(item)}")


@app.command()
def update(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The key; it must exist (update never creates)."),
    value: str | None = ValueArgument,
    value_option: str | None = ValueOption,
    json_value: bool = JsonValueOption,
    string: bool = StringOption,
    expected_version: int | None = ExpectedOption,
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Overwrite an existing key's value; a key that does not exist is an error."""
    text = _value_text(value, value_option)
    with engine(ctx) as rv:
        parsed = parse_value(text, as_json=json_value, as_string=string)
        item = rv.kv.update(agent, key, parsed, expected_version=expected_version)
        emit(item, as_json, f"updated {_line(item)}")


@app.command()
def get(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The key."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Print a key's value (a string as it is, anything else as JSON); --json prints the whole item."""
    with engine(ctx) as rv:
        item = rv.kv.get(agent, key)
        if as_json:
            emit_json(item)
        else:
            typer.echo(shown(item.value))


@app.command()
def delete(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="The key."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """Delete a key (marked deleted, purged after memory.archive_retention_days; `set` brings it back)."""
    with engine(ctx) as rv:
        deleted = rv.kv.delete(agent, key)
        if as_json:
            emit_json({"key": key, "deleted": deleted})
        elif deleted:
            console.print(f"deleted [cyan]{escape(key)}[/]")
        else:
            console.print(f"no key {key!r} for agent {agent!r}: nothing to delete", markup=False)


@app.command("list")
def list_(
    ctx: typer.Context,
    prefix: str = typer.Option("", "--prefix", "-p", help="Only keys starting with this (plain text)."),
    limit: int = typer.Option(100, "--limit", "-n", help="At most this many keys (1 to 1000)."),
    after: str | None = typer.Option(None, "--after", help="Only keys after this one (the next page)."),
    agent: str = AgentOption,
    as_json: bool = JsonOption,
) -> None:
    """The agent's keys in key order, with their values."""
    with engine(ctx) as rv:
        items = rv.kv.list(agent, prefix, limit=limit, after=after)
        if as_json:
            emit_json(items)
            return
        if not items:
            where = f" starting with {prefix!r}" if prefix else ""
            console.print(f"no keys{where} for agent {agent}", markup=False)
        for item in items:
            console.print(_line(item))
        if len(items) == limit:
            console.print(f"[dim]more may follow: --after {escape(repr(items[-1].key))}[/]")
