"""mem0's exported memories into Reverie (reverie.portability.mem0), on a real SQLite store with the bundled
embedder, from a sample ``get_all`` export (tests/data/mem0_export.json: eleven memories of two users, one
run, one agent's procedure, one duplicate and one empty record)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import reverie
from reverie import Scope
from reverie.errors import NotFound, ValidationError
from reverie.portability.mem0 import import_mem0
from reverie.portability.report import ImportReport

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "mem0_export.json"


def load(rv: reverie.Reverie, source: Path, agent_id: str | None = None) -> ImportReport:
    return import_mem0(rv.memory, rv.store, source, agent_id=agent_id)


def current(rv: reverie.Reverie, agent: str) -> dict[str, reverie.MemoryEntry]:
    return {e.content: e for e in rv.store.facts.iter_all(agent) if e.current}


def test_the_sample_export_lands_in_the_right_scopes_through_dedup(rv_local: reverie.Reverie) -> None:
    report = load(rv_local, SAMPLE)

    assert report.counts == {"entry": {"saved": 9, "merged": 1}}
    assert [where for where, _ in report.skipped] == ["record 10"]
    assert "no 'memory' text" in report.skipped[0][1]
    default = current(rv_local, "default")
    assistant = current(rv_local, "coding-assistant")
    assert len(default) == 7 and len(assistant) == 2

    veg = default["Is vegetarian and allergic to peanuts"]
    assert veg.scope == Scope(user_id="alice") and veg.reinforcement_count == 2  # the duplicate merged into it
    assert veg.category == "food" and veg.tags == ("food", "health") and veg.source == "import:mem0"
    assert veg.created_at == datetime(2025, 3, 14, 16, 12, 45, 118204, tzinfo=UTC)  # mem0's created_at, in UTC
    assert veg.metadata["channel"] == "onboarding"
    assert veg.metadata["mem0"]["id"] == "0b6a9e5c-3f1d-4c62-9a57-1f0e8d2b7a41"
    assert veg.metadata["mem0"]["hash"] == "6f1ed002ab5595859014ebf0951522d9"

    trip = default["Planning a trip to Kyoto in April 2026 with her sister"]
    assert trip.scope == Scope(user_id="alice", session_id="trip-planning-2025-09-20")
    assert trip.metadata["trip"] == {"city": "Kyoto", "month": "2026-04"}
    assert trip.metadata["mem0"]["metadata"] == {"source": "chat"}  # mem0's own 'source' kept, not provenance
    assert trip.metadata["mem0"]["actor_id"] == "alice" and trip.metadata["mem0"]["role"] == "user"

    bruno = [e for e in default.values() if e.scope.user_id == "bruno"]
    assert len(bruno) == 3 and {e.category for e in bruno} == {"personal_details", "hobbies", "health"}

    prefs = assistant["Prefers short answers with code examples in Python"]
    assert prefs.scope == Scope(agent_id="coding-assistant", user_id="alice")
    procedure = next(e for e in assistant.values() if e.content.startswith("To deploy the docs site"))
    assert procedure.scope == Scope(agent_id="coding-assistant") and procedure.tier.value == "procedural"

    # Alice's memories are hers: another user's search does not see them.
    hits = rv_local.memory.search("peanut allergy", scope=Scope(user_id="bruno"))
    assert all(h.entry.scope.user_id != "alice" for h in hits)
    found = rv_local.memory.search("peanut allergy", scope=Scope(user_id="alice"))
    assert found and found[0].entry.id == veg.id


def test_importing_the_same_export_again_writes_nothing(rv_local: reverie.Reverie) -> None:
    load(rv_local, SAMPLE)
    before = {e.id: (e.content, e.reinforcement_count) for e in rv_local.store.facts.iter_all()}
    again = load(rv_local, SAMPLE)
    assert again.counts == {"entry": {"unchanged": 10}}
    assert {e.id: (e.content, e.reinforcement_count) for e in rv_local.store.facts.iter_all()} == before


def test_an_agent_argument_puts_every_memory_under_that_agent(rv_local: reverie.Reverie) -> None:
    report = load(rv_local, SAMPLE, agent_id="helper")
    assert report.counts == {"entry": {"saved": 9, "merged": 1}}
    helper = current(rv_local, "helper")
    assert len(helper) == 9 and not current(rv_local, "coding-assistant")
    prefs = helper["Prefers short answers with code examples in Python"]
    assert prefs.scope == Scope(agent_id="helper", user_id="alice")
    assert prefs.metadata["mem0"]["agent_id"] == "coding-assistant"  # where mem0 had it, kept


def test_a_plain_list_and_a_record_that_cannot_be_saved(rv_local: reverie.Reverie, tmp_path: Path) -> None:
    source = tmp_path / "list.json"
    records = [
        {"id": "m1", "memory": "Likes hiking in the Alps", "user_id": "carla", "created_at": "2025-02-01T10:00:00"},
        {"id": "m2", "memory": "Has a cat called Miso", "user_id": "carla", "created_at": "next tuesday"},
        {"id": "m3", "memory": "Reserved agents are refused", "agent_id": "@user/carla"},
        {"id": "m4", "memory": "Far future", "created_at": "2999-01-01T00:00:00+00:00"},
        "not an object",
    ]
    source.write_text(json.dumps(records), encoding="utf-8")
    report = load(rv_local, source)
    assert report.counts == {"entry": {"saved": 1}}
    assert [where for where, _ in report.skipped] == ["record 1", "record 2", "record 3", "record 4"]
    (hiking,) = current(rv_local, "default").values()
    assert hiking.created_at == datetime(2025, 2, 1, 10, 0, tzinfo=UTC)  # no offset: read as UTC


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON (line 1, column 2"),
        ('{"memories_count": 3}', "not a mem0 export"),
        ('[{"text": "no memory field"}]', "no record has a 'memory' text"),
        ('"a string"', "not a mem0 export"),
    ],
)
def test_a_file_that_is_not_a_mem0_export_is_refused_before_anything_is_written(
    rv_local: reverie.Reverie, tmp_path: Path, text: str, message: str
) -> None:
    source = tmp_path / "export.json"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=message.replace("(", r"\(")):
        load(rv_local, source)
    assert list(rv_local.store.facts.iter_all()) == []
    with pytest.raises(NotFound):
        load(rv_local, tmp_path / "missing.json")
