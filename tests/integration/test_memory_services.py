"""The services the agent tools call, called directly on a real engine: ``rv.consolidation``
(``memory.consolidate``), ``rv.explorer`` (``memory.explore``) and ``rv.dream.agents`` (which agents the dream
knows). The tools' own tests (``test_tools.py``) cover the same behaviour through the handlers; these pin the
service-level answers the handlers format."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.memory.consolidate import ConsolidatedGroup
from reverie.types import Scope

ALLOWED = "a"


@pytest.fixture
def rv(tmp_path: Path) -> Iterator[reverie.Reverie]:
    with reverie.open(
        tmp_path / "home",
        clock=FakeClock(),
        embedding={"provider": "none"},
        agents={ALLOWED: {"allow_self_consolidation": True}, "quiet": {}},
        graph={"extraction_background": False},
    ) as engine:
        yield engine


def _advance(rv: reverie.Reverie) -> None:
    clock = rv.clock
    assert isinstance(clock, FakeClock)
    clock.advance(timedelta(hours=1))


def test_consolidation_is_allowed_only_where_the_agent_settings_say(rv: reverie.Reverie) -> None:
    assert rv.consolidation.allowed(ALLOWED)
    assert not rv.consolidation.allowed("quiet") and not rv.consolidation.allowed("default")


def test_duplicates_reads_only_and_consolidate_reports_each_group(rv: reverie.Reverie) -> None:
    scope = Scope(ALLOWED)
    text = "Dana prefers green tea in the morning before work"
    copy = rv.memory.save(text, category="home", dedup=False, scope=scope)
    _advance(rv)
    own = rv.memory.save(text + " 2024", category="home", dedup=False, scope=scope)
    _advance(rv)
    newest = rv.memory.save(text, category="home", dedup=False, scope=scope)
    before = list(rv.store.facts.iter_all())
    scan = rv.consolidation.duplicates(scope)
    assert list(rv.store.facts.iter_all()) == before
    assert scan.examined == 3 and not scan.truncated
    (group,) = scan.groups
    assert group.newest.id == newest.id
    assert [(m.entry.id, m.covered, m.missing) for m in group.members] == [
        (own.id, False, ("2024",)),
        (copy.id, True, ()),
    ]
    assert rv.consolidation.duplicates(Scope("default")).groups == ()  # another agent's entries are not seen
    report = rv.consolidation.consolidate(scope)
    assert report.groups == (ConsolidatedGroup(newest.id, (copy.id,), (newest.id, own.id), ()),)
    assert report.archived == [copy.id] and report.kept == [newest.id, own.id]
    assert rv.consolidation.consolidate(scope).archived == []


def test_explorer_entries_are_scoped_ordered_once_and_include_archived(rv: reverie.Reverie) -> None:
    mine = [
        rv.memory.save(f"fact number {i} about the garden shed", dedup=False, scope=Scope(ALLOWED)).entry
        for i in range(3)
    ]
    other = rv.memory.save("a fact of another agent", scope=Scope("default")).entry
    rv.memory.archive(mine[1].id, scope=Scope(ALLOWED))
    ids = [mine[2].id, other.id, "missing", mine[1].id, mine[2].id, mine[0].id]
    found = rv.explorer.entries(ids, Scope(ALLOWED))
    assert [e.id for e in found] == [mine[2].id, mine[1].id, mine[0].id]
    assert found[1].archived
    assert rv.explorer.entries([], Scope(ALLOWED)) == []


def test_explorer_walk_follows_a_sequence(rv: reverie.Reverie) -> None:
    scope = Scope(ALLOWED)
    turns = [
        rv.memory.save(
            f"turn {i} of the planning call", metadata={"thread": "t1", "position": i}, dedup=False, scope=scope
        ).entry
        for i in range(3)
    ]
    related = rv.explorer.walk(turns[1], 1, scope)
    by_relation = {r.relation: r.entry.id for r in related if r.relation.startswith("sequence")}
    assert by_relation == {"sequence_previous": turns[0].id, "sequence_next": turns[2].id}
    assert all(r.hop == 1 and r.via == turns[1].id for r in related)


def test_dream_agents_lists_configured_agents_but_ticks_only_offer_agents_with_entries(rv: reverie.Reverie) -> None:
    rv.memory.save("a fact to dream about", scope=Scope("default"))
    assert rv.dream.agents() == [ALLOWED, "default", "quiet"]
    assert rv.dream.agents(configured=False) == ["default"]
    assert [r.agent_id for r in rv.dream.tick()] == ["default"]
