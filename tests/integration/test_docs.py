"""The docs cannot drift from the code: every command, setting and public name is documented."""

from __future__ import annotations

from pathlib import Path

import typer.core
import typer.main
from pydantic import BaseModel

import reverie
from reverie.cli import app
from reverie.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _commands(group: typer.core.TyperGroup, prefix: str) -> list[str]:
    out: list[str] = []
    for name, command in group.commands.items():
        path = f"{prefix} {name}"
        if isinstance(command, typer.core.TyperGroup):
            out.extend(_commands(command, path))
        else:
            out.append(path)
    return out


def test_every_command_is_in_the_cli_reference() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    commands = _commands(root, "reverie")
    assert "reverie memory save" in commands
    missing = [c for c in commands if f"`{c}" not in text]
    assert not missing, f"undocumented commands: {missing}"


def test_every_setting_is_in_the_configuration_reference() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = []
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        if f"`[{section}]`" not in text:
            missing.append(f"[{section}]")
        missing.extend(f"{section}.{key}" for key in model.model_fields if f"`{key}`" not in text)
    assert not missing, f"undocumented settings: {missing}"


def test_every_public_name_is_in_the_library_reference() -> None:
    text = (DOCS / "library.md").read_text(encoding="utf-8") + (DOCS / "concepts.md").read_text(encoding="utf-8")
    missing = [name for name in reverie.__all__ if not name.startswith("_") and name not in text]
    assert not missing, f"undocumented public names: {missing}"
