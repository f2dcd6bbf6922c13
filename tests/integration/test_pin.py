"""Pinning an existing entry (``memory.set_pinned``) through the library, the API (``PUT …/pinned``) and the
CLI (``reverie memory pin``): each change is a ``pinned`` version, the text stays, bad input changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import reverie
from reverie.cli import app
from reverie.errors import NotFound, ValidationError

from ._api import client, make_keys, memory, serving

A = reverie.Scope(agent_id="a")


@pytest.fixture
def rv(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with reverie.open(tmp_path / "home", embedding={"provider": "none"}) as engine:
        yield engine


def test_the_library_pins_and_unpins_with_a_version_each(rv: reverie.Reverie) -> None:
    saved = rv.memory.save("The on-call phone is in the blue drawer.", scope=A)
    pinned = rv.memory.set_pinned(saved.id, True, scope=A)
    assert pinned.pinned and pinned.content == saved.entry.content and pinned.updated_at == saved.entry.updated_at
    assert rv.memory.set_pinned(saved.id, True, scope=A).pinned  # already pinned: nothing written
    assert not rv.memory.set_pinned(saved.id, False, scope=A).pinned
    assert [v.change for v in rv.memory.history(saved.id, scope=A)] == ["created", "pinned", "pinned"]
    with pytest.raises(ValidationError):
        rv.memory.set_pinned(saved.id, "yes", scope=A)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        rv.memory.set_pinned(saved.id, True, scope=reverie.Scope(agent_id="b"))  # another agent's: unknown
    assert not rv.memory.get(saved.id, scope=A).pinned


def test_the_api_pins_with_the_write_scope_only(rv: reverie.Reverie) -> None:
    keys = make_keys(rv)
    saved = rv.memory.save("Never deploy Lantern on Fridays.", scope=A)
    with serving(rv) as origin:
        with client(origin, keys.a) as api:
            answer = api.put(memory("a", f"/entries/{saved.id}/pinned"), json={"pinned": True})
            assert answer.status_code == 200 and answer.json()["pinned"] is True
            assert api.put(memory("a", f"/entries/{saved.id}/pinned"), json={"pinned": "maybe"}).status_code == 422
            assert api.put(memory("a", f"/entries/{saved.id}/pinned"), json={}).status_code == 422
            assert api.put(memory("a", "/entries/0123456789ab/pinned"), json={"pinned": True}).status_code == 404
        with client(origin, keys.a_read) as api:
            assert api.put(memory("a", f"/entries/{saved.id}/pinned"), json={"pinned": False}).status_code == 403
        with client(origin, keys.b) as api:
            assert api.put(memory("a", f"/entries/{saved.id}/pinned"), json={"pinned": False}).status_code == 403
    assert rv.memory.get(saved.id, scope=A).pinned


def test_the_cli_pins_and_unpins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with reverie.open(home, embedding={"provider": "none"}) as engine:
        entry_id = engine.memory.save("Keep the release checklist in the wiki.").id
    runner = CliRunner()
    pinned = runner.invoke(app, ["--home", str(home), "memory", "pin", entry_id, "--json"])
    assert pinned.exit_code == 0, pinned.output
    assert json.loads(pinned.output)["pinned"] is True
    unpinned = runner.invoke(app, ["--home", str(home), "memory", "pin", entry_id, "--off"])
    assert unpinned.exit_code == 0 and "not pinned" in unpinned.output
    unknown = runner.invoke(app, ["--home", str(home), "memory", "pin", "0123456789ab"])
    assert unknown.exit_code != 0
