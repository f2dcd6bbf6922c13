"""Knowledge-graph relations a page at a time on every face: GET /kg/relations with ``paged``/``cursor`` (the
next cursor in ``X-Next-Cursor``), `reverie kg query` and `kg list-relations` with ``--cursor`` (the next cursor
on stderr) and the knowledge_query tool with ``cursor`` (``next_cursor`` in its data). Each walk sees every
matching relation once, in id order; the unpaged listings answer as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.tools import ToolContext, ToolRegistry

from ._api import client, make_keys, memory, serving

runner = CliRunner()


def relate(rv: reverie.Reverie, agent: str, count: int) -> list[str]:
    made = [
        rv.graph.add_relation(agent, "person:Ana", "knows", f"person:P{n}").triple.relation.relation_id
        for n in range(count)
    ]
    rv.graph.add_relation(agent, "person:Bo", "knows", "person:P1")  # matches no filter on Ana
    return sorted(made)


def test_relations_page_with_a_cursor_header(rv: reverie.Reverie) -> None:
    made = relate(rv, "a", 7)
    keys = make_keys(rv)
    with serving(rv) as origin, client(origin, keys.a) as c:
        unpaged = c.get(memory("a", "/kg/relations"), params={"from": "person:Ana"})
        assert unpaged.status_code == 200 and len(unpaged.json()) == 7 and "x-next-cursor" not in unpaged.headers
        seen: list[str] = []
        params: dict[str, object] = {"from": "person:Ana", "paged": True, "limit": 3}
        while True:
            response = c.get(memory("a", "/kg/relations"), params=params)  # type: ignore[arg-type]
            assert response.status_code == 200, response.text
            seen.extend(r["relation_id"] for r in response.json())
            if "x-next-cursor" not in response.headers:
                break
            params = {"from": "person:Ana", "limit": 3, "cursor": response.headers["x-next-cursor"]}
        assert seen == made
        cursor = str(params["cursor"])
        wrong = c.get(memory("a", "/kg/relations"), params={"from": "person:Bo", "cursor": cursor})
        assert wrong.status_code == 422 and "cursor" in wrong.text


@pytest.mark.parametrize("command", [["query", "--from", "person:Ana"], ["list-relations", "-e", "person:Ana"]])
def test_relations_page_in_the_cli(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "graph"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        made = relate(rv, "default", 7)
    first = runner.invoke(app, ["--home", str(home), "kg", *command, "--cursor", "", "-n", "5", "--json"])
    assert first.exit_code == 0, (first.output, first.stderr)
    cursor = first.stderr.split("--cursor ")[1].split()[0]
    rest = runner.invoke(app, ["--home", str(home), "kg", *command, "--cursor", cursor, "-n", "5", "--json"])
    assert rest.exit_code == 0 and "more:" not in rest.stderr
    seen = [r["relation"]["relation_id"] for r in json.loads(first.stdout) + json.loads(rest.stdout)]
    assert seen == made
    unpaged = runner.invoke(app, ["--home", str(home), "kg", *command, "--json"])
    assert len(json.loads(unpaged.stdout)) == 7 and "more:" not in unpaged.stderr
    bad = runner.invoke(app, ["--home", str(home), "kg", *command, "--cursor", "garbage"])
    assert bad.exit_code == 2 and "cursor" in bad.stderr


def test_the_query_tool_walks_relations_by_cursor(rv: reverie.Reverie) -> None:
    made = relate(rv, "a", 7)
    tools, ctx = ToolRegistry(rv), ToolContext(agent_id="a")
    seen: list[str] = []
    cursor = ""
    while True:
        result = tools.call("knowledge_query", {"from": "person:Ana", "limit": 3, "cursor": cursor}, ctx)
        assert not result.is_error, result.text
        seen.extend(r["id"] for r in result.data["relations"])
        if result.data["next_cursor"] is None:
            break
        cursor = result.data["next_cursor"]
        assert cursor in result.text
    assert seen == made
    unpaged = tools.call("knowledge_query", {"from": "person:Ana"}, ctx)
    assert len(unpaged.data["relations"]) == 7 and unpaged.data["next_cursor"] is None
