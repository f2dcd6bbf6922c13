"""``reverie serve`` as a real process: the admin key printed once on first start, keys required, ``--no-auth``
only on loopback (with a warning), and a clean stop on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app

SECRET = re.compile(r"rv_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "reverie.toml").write_text('[embedding]\nprovider = "hash"\n', encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _serving(home: Path, *options: str) -> Iterator[tuple[str, Path]]:
    """A ``reverie serve`` process on a free port: yields its origin and the file its output goes to; it
    must stop with exit code 0 on SIGTERM."""
    port = _free_port()
    log = home.parent / f"serve-{port}.log"
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "serve", "--port", str(port), *options],
            env={**os.environ, "REVERIE_HOME": str(home)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"reverie serve exited {proc.returncode}:\n{log.read_text(encoding='utf-8')}"
            assert time.monotonic() < deadline, f"reverie serve did not answer:\n{log.read_text(encoding='utf-8')}"
            try:
                if httpx.get(f"{origin}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield origin, log
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung shutdown is a failure in itself
            proc.kill()
            raise AssertionError(f"reverie serve did not stop:\n{log.read_text(encoding='utf-8')}") from None
    assert proc.returncode == 0, log.read_text(encoding="utf-8")


def test_first_start_prints_an_admin_key_once_and_keys_are_required(home: Path) -> None:
    with _serving(home) as (origin, log):
        secrets = SECRET.findall(log.read_text(encoding="utf-8"))
        assert len(secrets) == 1, log.read_text(encoding="utf-8")
        assert httpx.get(f"{origin}/api/memory/agents/a/entries").status_code == 401
        headers = {"Authorization": f"Bearer {secrets[0]}"}
        saved = httpx.post(f"{origin}/api/memory/agents/a/entries", headers=headers, json={"content": "served fact"})
        assert saved.status_code == 201, saved.text
        assert httpx.get(f"{origin}/api/usage", headers=headers).status_code == 200
    with reverie.open(home) as rv:
        (key,) = rv.keys.list()
        assert key.agent_id is None and key.scopes == ("admin",)
        stored = b"".join(p.read_bytes() for p in home.glob("reverie.db*"))
        assert secrets[0].encode() not in stored  # only its hash is stored
        assert [e.content for e in rv.memory.browse(scope=reverie.Scope("a")).entries] == ["served fact"]
    with _serving(home) as (_, log):  # a key exists now: nothing is created or printed
        assert not SECRET.search(log.read_text(encoding="utf-8"))


def test_no_auth_serves_without_keys_on_loopback_with_a_warning(home: Path) -> None:
    with _serving(home, "--no-auth", "--host", "127.0.0.1") as (origin, log):
        assert httpx.get(f"{origin}/api/memory/agents/a/entries").status_code == 200
        text = log.read_text(encoding="utf-8")
        assert "WARNING: --no-auth" in text and not SECRET.search(text)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_no_auth_is_refused_off_loopback(home: Path, host: str) -> None:
    result = CliRunner().invoke(app, ["--home", str(home), "serve", "--no-auth", "--host", host])
    assert result.exit_code == 2
    assert "loopback" in result.stderr
    assert not (home / "reverie.db").exists()  # refused before the store was opened
