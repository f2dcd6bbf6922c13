"""``reverie serve``: the HTTP API (docs/api.md) on uvicorn, over the engine with its background workers.

Secure by default: every route but ``/health`` needs an API key, and a store without a live key gets an
admin key on first start, whose secret is printed once (the store keeps only its hash). ``--no-auth`` is
refused unless the host is a loopback address. The dream scheduler is not started here: that is ``reverie
dream serve`` (any number of API processes may share a store with one scheduler).

Start-up: the store is opened (and checked) before the server listens, the embedding model and the recall
indexes only after (``engine.warmup``, on a background thread): ``/health`` and the first requests answer
while they load, and a search that comes first waits for them.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import typer

from reverie.cli.common import console, engine, err_console, fail
from reverie.errors import ValidationError

if TYPE_CHECKING:
    from reverie.engine.root import Reverie

DEFAULT_PORT = 4545


def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on."),
    port: int = typer.Option(DEFAULT_PORT, "--port", min=0, max=65535, help="The port to listen on."),
    no_auth: bool = typer.Option(
        False, "--no-auth", help="Serve without API keys (only on 127.0.0.1, ::1 or localhost)."
    ),
    workers: int = typer.Option(
        1, "--workers", min=1, max=64, help="Server processes on the one port, each with its own engine."
    ),
) -> None:
    """Serve the HTTP API (http://HOST:PORT, OpenAPI at /openapi.json). Every route but /health needs an API
    key (`Authorization: Bearer <secret>`); on first start, with no key in the store, an admin key is made
    and its secret printed once."""
    # Imported here: the web stack is only needed by this command.
    from reverie.api import create_app
    from reverie.api.server import serve as run_server
    from reverie.api.serving import is_loopback
    from reverie.engine.warmup import SERVER_DELAY, WarmUp

    if no_auth and not is_loopback(host):
        fail(
            ValidationError(
                f"--no-auth is allowed only on a loopback address (127.0.0.1, ::1, localhost), not {host}", field="host"
            )
        )
    _log_to_stderr()
    if workers > 1:
        _serve_workers(ctx, host, port, workers, no_auth)
        return
    with engine(ctx, background=True, verify=True) as rv:  # a damaged store is refused before any key is made
        if no_auth:
            _warn_open(host, port)
        else:
            _first_key(rv)
        app = create_app(rv, auth=not no_auth)
        shown = f"[{host}]" if ":" in host else host
        err_console.print(f"reverie serve: http://{shown}:{port} (OpenAPI at /openapi.json)", markup=False)
        warm = WarmUp(rv, delay=SERVER_DELAY)
        try:
            served = run_server(app, host=host, port=port, on_started=warm.start)
        finally:
            warm.join()  # the engine closes next: the warm-up must not search a closed store
        if not served:
            fail(f"could not serve on {shown}:{port}")


def _serve_workers(ctx: typer.Context, host: str, port: int, workers: int, no_auth: bool) -> None:
    """``--workers N``: the store is checked and the first key made here, then N processes serve it, each with
    its own engine (``reverie.api.workers``)."""
    from reverie.api.workers import serve_workers

    with engine(ctx, verify=True, finish=False) as rv:  # the workers do the pending work, in the background
        if no_auth:
            _warn_open(host, port)
        else:
            _first_key(rv)
        home = rv.settings.home
    shown = f"[{host}]" if ":" in host else host
    err_console.print(
        f"reverie serve: http://{shown}:{port} (OpenAPI at /openapi.json), {workers} processes", markup=False
    )
    if not serve_workers(home, host=host, port=port, workers=workers, auth=not no_auth):
        fail(f"could not serve on {shown}:{port}")


def _first_key(rv: Reverie) -> None:
    """With no live key in the store, make an admin key and print its secret, once."""
    from reverie.keys.service import ADMIN

    if rv.keys.has_keys():
        return
    key, secret = rv.keys.create("admin", agent_id=None, scopes=[ADMIN])
    console.print(
        "No API key existed, so an admin key was created. Its secret is shown only now; the store keeps its "
        "hash. Send it as `Authorization: Bearer <secret>`:",
        markup=False,
        soft_wrap=True,
    )
    console.print(f"\n    {secret}\n", markup=False, soft_wrap=True)
    console.print(
        f"(key id {key.key_id}; `reverie keys` lists, creates and revokes keys)", markup=False, soft_wrap=True
    )
    sys.stdout.flush()


def _warn_open(host: str, port: int) -> None:
    shown = f"[{host}]" if ":" in host else host
    err_console.print(
        f"[bold red]WARNING: --no-auth: any program on this machine can read and change the memory of every "
        f"agent through http://{shown}:{port} without a key.[/]",
        soft_wrap=True,
    )


def _log_to_stderr() -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
