"""A skill's history a page at a time over HTTP (GET …/skills/{name}:history with ``limit``/``cursor``, the next
cursor in ``X-Next-Cursor``) and in the CLI (`reverie skills history -n/--cursor`, the next cursor on stderr).
Each walk sees every version once, oldest first; the unpaged history answers as before."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

import reverie
from reverie.cli import app

from ._api import client, make_keys, memory, serving

runner = CliRunner()


def versions(rv: reverie.Reverie, agent: str, count: int) -> None:
    for n in range(count):
        rv.skills.save(agent, "mcp/email", "how to email", f"step {n}")


def test_skill_history_pages_with_a_cursor_header(rv: reverie.Reverie) -> None:
    versions(rv, "a", 7)
    keys = make_keys(rv)
    url = memory("a", "/skills/mcp/email:history")
    with serving(rv) as origin, client(origin, keys.a) as c:
        unpaged = c.get(url)
        assert unpaged.status_code == 200 and len(unpaged.json()) == 7 and "x-next-cursor" not in unpaged.headers
        seen: list[int] = []
        params: dict[str, object] = {"limit": 3}
        while True:
            response = c.get(url, params=params)  # type: ignore[arg-type]
            assert response.status_code == 200, response.text
            seen.extend(v["version"] for v in response.json())
            if "x-next-cursor" not in response.headers:
                break
            params = {"limit": 3, "cursor": response.headers["x-next-cursor"]}
        assert seen == list(range(1, 8))
        bad = c.get(url, params={"cursor": "garbage"})
        assert bad.status_code == 422 and "cursor" in bad.text
        assert c.get(memory("a", "/skills/mcp/none:history"), params={"limit": 2}).status_code == 404


def test_skill_history_pages_in_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "skills"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        versions(rv, "default", 5)

    def run(*args: str) -> Result:
        return runner.invoke(app, ["--home", str(home), "skills", "history", "mcp/email", *args, "--json"])

    first = run("-n", "3")
    assert first.exit_code == 0, (first.output, first.stderr)
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = run("-n", "3", "--cursor", cursor)
    assert rest.exit_code == 0 and "more:" not in rest.stderr
    pages = json.loads(first.stdout) + json.loads(rest.stdout)
    assert [v["version"] for v in pages] == [1, 2, 3, 4, 5]
    unpaged = run()
    assert len(json.loads(unpaged.stdout)) == 5 and "more:" not in unpaged.stderr
    assert run("--cursor", "garbage").exit_code == 2
