"""The ``reverie`` command line (Typer + Rich): a thin adapter that parses, calls a service, formats."""

from reverie.cli.app import app, main

__all__ = ["app", "main"]
