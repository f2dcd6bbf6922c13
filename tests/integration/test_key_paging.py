"""API keys a page at a time over HTTP (GET /api/keys with ``limit``/``cursor``, admin only, the next cursor in
``X-Next-Cursor``) and in the CLI (`reverie keys list -n/--cursor`, the next cursor on stderr). Each walk sees
every key once, oldest first; the unpaged listing answers as before."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

import reverie
from reverie.cli import app

from ._api import client, make_keys, serving

runner = CliRunner()


def test_keys_page_with_a_cursor_header(rv: reverie.Reverie) -> None:
    keys = make_keys(rv)
    for n in range(5):
        rv.keys.create(f"extra {n}", agent_id="a", scopes=["memory_read"])
    every = [k.key_id for k in rv.keys.list()]
    assert len(every) == 9
    with serving(rv) as origin, client(origin, keys.admin) as admin, client(origin, keys.a) as agent:
        unpaged = admin.get("/api/keys")
        assert unpaged.status_code == 200 and len(unpaged.json()) == 9 and "x-next-cursor" not in unpaged.headers
        seen: list[str] = []
        params: dict[str, object] = {"limit": 4}
        while True:
            response = admin.get("/api/keys", params=params)  # type: ignore[arg-type]
            assert response.status_code == 200, response.text
            seen.extend(k["key_id"] for k in response.json())
            if "x-next-cursor" not in response.headers:
                break
            params = {"limit": 4, "cursor": response.headers["x-next-cursor"]}
        assert seen == every
        bad = admin.get("/api/keys", params={"cursor": "garbage"})
        assert bad.status_code == 422 and "cursor" in bad.text
        assert admin.get("/api/keys", params={"limit": 0}).status_code == 422
        assert agent.get("/api/keys", params={"limit": 2}).status_code == 403


def test_keys_page_in_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "keys"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        for n in range(5):
            rv.keys.create(f"key {n}", agent_id="a", scopes=["memory_read"], users=["*"])
        every = [k.key_id for k in rv.keys.list()]

    def run(*args: str) -> Result:
        return runner.invoke(app, ["--home", str(home), "keys", "list", *args, "--json"])

    first = run("-n", "3")
    assert first.exit_code == 0, (first.output, first.stderr)
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = run("-n", "3", "--cursor", cursor)
    assert rest.exit_code == 0 and "more:" not in rest.stderr
    assert [k["key_id"] for k in json.loads(first.stdout) + json.loads(rest.stdout)] == every
    unpaged = run()
    assert [k["key_id"] for k in json.loads(unpaged.stdout)] == every and "more:" not in unpaged.stderr
    assert run("--cursor", "garbage").exit_code == 2
