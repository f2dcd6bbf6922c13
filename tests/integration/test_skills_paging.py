"""Skills a page at a time (``SkillService.page``) in the library, the API (GET /skills's cursor) and the CLI
(`skills list --cursor`): a walk under a prefix with skills saved between its pages sees every skill that existed
for the whole walk exactly once, the prefix's own skill first."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import reverie
from reverie.cli import app

from ._api import client, make_keys, memory, serving


def fill(rv: reverie.Reverie) -> set[str]:
    names = {"mcp", *(f"mcp/tool-{n:02d}" for n in range(23))}
    for name in [*sorted(names), "mcpx", "other/thing"]:
        rv.skills.save("default", name, f"how to {name}", f"steps for {name}")
    return names


def test_a_skill_walk_under_a_prefix_with_saves_between_pages(rv: reverie.Reverie) -> None:
    names = fill(rv)
    seen: list[str] = []
    cursor = None
    extra = 0
    while True:
        page = rv.skills.page("default", "mcp", cursor=cursor, limit=5)
        seen.extend(s.name for s in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
        extra += 1
        rv.skills.save("default", f"mcp/tool-{extra:02d}a", "late", "late")  # among the walked names
    assert seen[0] == "mcp" and len(seen) == len(set(seen))
    assert names <= set(seen) and "mcpx" not in seen


def test_skills_page_over_http_and_the_cli(rv: reverie.Reverie, tmp_path: Path) -> None:
    names = fill(rv)
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.admin) as admin:
        seen: list[str] = []
        params: dict[str, object] = {"prefix": "mcp", "limit": 4}
        while True:
            body = admin.get(memory("default", "/skills"), params=params).json()  # type: ignore[arg-type]
            seen.extend(s["name"] for s in body["skills"])
            if body["next_cursor"] is None:
                break
            params = {**params, "cursor": body["next_cursor"]}
        assert sorted(seen) == sorted(names)
        bad = admin.get(memory("default", "/skills"), params={"cursor": "garbage"})
        assert bad.status_code == 422 and bad.json()["field"] == "cursor"


def test_skills_list_cursor_in_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        names = fill(rv)
    runner = CliRunner()
    first = runner.invoke(app, ["--home", str(home), "skills", "list", "-p", "mcp", "-n", "20", "--json"])
    assert first.exit_code == 0, first.output
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = runner.invoke(
        app, ["--home", str(home), "skills", "list", "-p", "mcp", "-n", "20", "--cursor", cursor, "--json"]
    )
    assert rest.exit_code == 0 and "more:" not in rest.stderr
    seen = [s["name"] for s in json.loads(first.stdout) + json.loads(rest.stdout)]
    assert sorted(seen) == sorted(names)
