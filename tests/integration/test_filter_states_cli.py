"""`reverie memory list` and `memory search` with `--only-archived` / `--not-archived` and `--only-superseded` /
`--not-superseded`, through Typer's runner against a real store: only archived or only superseded entries
without `--archived`, and the negative flags narrowing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app

runner = CliRunner()


class States(NamedTuple):
    home: Path
    current: str
    corrected: str  # contradicted by ``correction``: superseded_by set, not archived
    correction: str
    archived: str


def run(home: Path, *args: str, code: int = 0) -> Any:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> States:
    home = tmp_path_factory.mktemp("states") / "home"
    with reverie.open(home, embedding={"provider": "none"}) as rv:
        current = rv.memory.save("The kettle descaler is citric acid.", category="home").id
        corrected = rv.memory.save("Priya's editor is Neovim.", category="people/priya").id
        correction = rv.memory.save("Priya's editor is not Neovim.", category="people/priya")
        assert correction.outcome == "superseded"
        archived = rv.memory.save("The old wiki is on the editor host.", category="reference").id
        rv.memory.archive(archived)
    return States(home, current, corrected, correction.id, archived)


def listed(states: States, *flags: str) -> set[str]:
    lines = run(states.home, "memory", "list", "--all", "--json", *flags).stdout.splitlines()
    return {json.loads(line)["id"] for line in lines}


def found(states: States, query: str, *flags: str) -> set[str]:
    body = json.loads(run(states.home, "memory", "search", query, "-m", "bm25", "--json", *flags).stdout)
    return {hit["entry"]["id"] for hit in body["hits"]}


def test_list_only_archived_and_only_superseded(states: States) -> None:
    assert listed(states) == {states.current, states.correction}
    assert listed(states, "--only-archived") == {states.archived}
    assert listed(states, "--only-superseded") == {states.corrected}
    assert listed(states, "--archived", "--not-archived") == {states.current, states.corrected, states.correction}
    assert listed(states, "--archived", "--not-superseded") == {states.current, states.correction, states.archived}


def test_search_only_superseded_and_only_archived(states: States) -> None:
    assert found(states, "editor") == {states.correction}
    assert found(states, "editor", "--only-superseded") == {states.corrected}
    assert found(states, "editor", "--only-archived") == {states.archived}
    assert found(states, "editor", "--only-archived", "--only-superseded") == set()


def test_the_help_names_the_flags_and_the_new_orders(states: States) -> None:
    text = run(states.home, "memory", "list", "--help").stdout
    assert "--only-superseded" in text and "--not-archived" in text
    assert "reinforced" in text and "cold" in text
