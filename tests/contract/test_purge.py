"""FactRepository.purge: the only hard delete, after retention, never above the high-value floor."""

from __future__ import annotations

from datetime import datetime

import pytest

from reverie.storage.base import PurgeRule, Store
from reverie.types import Scope

from .support import AGENT, T0, at, eid, entry, hit_ids, ids, match, view

CUTOFF = at(days=-90)


def rule(agent_id: str | None = None, before: datetime = CUTOFF) -> PurgeRule:
    return PurgeRule(archived_before=before, protect_importance=0.8, protect_reinforcement=5, agent_id=agent_id)


CANDIDATES = {
    # number: (archived_at, fields, expected outcome)
    1: (at(days=-200), {}, "purged"),
    2: (CUTOFF, {}, "purged"),  # archived exactly at the cutoff
    3: (at(days=-90, seconds=1), {}, "kept"),  # one second after the cutoff
    4: (None, {}, "kept"),  # live, however old
    5: (at(days=-200), {"importance": 0.8}, "protected"),
    6: (at(days=-200), {"importance": 0.79}, "purged"),
    7: (at(days=-200), {"reinforcement_count": 5}, "protected"),
    8: (at(days=-200), {"reinforcement_count": 4}, "purged"),
    9: (at(days=-200), {"pinned": True}, "protected"),
    10: (at(days=-200), {"importance": 1.0, "reinforcement_count": 9, "pinned": True}, "protected"),
    11: (at(days=-100), {"scope": Scope(user_id="u1", session_id="s1")}, "purged"),
}


def expected(outcome: str) -> set[str]:
    return {eid(n) for n, (_, _, result) in CANDIDATES.items() if result == outcome}


@pytest.fixture
def populated(store: Store) -> Store:
    for n, (archived_at, fields, _) in CANDIDATES.items():
        e = entry(
            n, f"zebra candidate {n}", created_at=at(days=-400), seen=at(days=-300), archived_at=archived_at, **fields
        )
        store.facts.add(e, at=at(days=-400))
    return store


def test_purge_reports_purged_and_protected_ids(populated: Store) -> None:
    purged, protected = populated.facts.purge(rule())
    assert set(purged) == expected("purged")
    assert set(protected) == expected("protected")
    assert len(purged) == len(set(purged))


def test_purged_entries_and_their_history_are_gone(populated: Store) -> None:
    populated.facts.purge(rule())
    for n, (_, fields, _) in CANDIDATES.items():
        scope = fields.get("scope", AGENT)
        gone = eid(n) in expected("purged")
        assert (populated.facts.get(eid(n), scope) is None) is gone, n
        assert (populated.versions.history(eid(n), scope) == []) is gone, n
        assert (populated.versions.get(eid(n), 1, scope) is None) is gone, n
    assert set(ids(populated.facts.iter_all())) == {eid(n) for n in CANDIDATES} - expected("purged")


def test_purged_entries_leave_the_search_index(populated: Store) -> None:
    populated.facts.purge(rule())
    flt = view(Scope(user_id="u1", session_id="s1"), include_archived=True)
    found = set(hit_ids(populated.facts.search(match("zebra"), flt, 100)))
    assert found == {eid(n) for n in CANDIDATES} - expected("purged")
    found = set(ids(populated.facts.search_substring("zebra", flt, 100, frozenset())))
    assert found == {eid(n) for n in CANDIDATES} - expected("purged")


def test_purge_never_touches_live_entries(store: Store) -> None:
    old_live = entry(1, "ancient but live", created_at=at(days=-9000), seen=at(days=-9000), importance=0.0)
    store.facts.add(old_live, at=at(days=-9000))
    assert store.facts.purge(rule(before=at(days=1000))) == ([], [])
    assert store.facts.get(old_live.id, AGENT) == old_live


def test_purge_is_idempotent(populated: Store) -> None:
    populated.facts.purge(rule())
    purged, protected = populated.facts.purge(rule())
    assert purged == []
    assert set(protected) == expected("protected")


def test_purge_of_an_empty_store_reports_nothing(store: Store) -> None:
    assert store.facts.purge(rule()) == ([], [])


def test_agent_id_restricts_the_sweep(store: Store) -> None:
    for n, agent in ((1, "agent-a"), (2, "agent-b"), (3, "agent-a")):
        store.facts.add(entry(n, "old", scope=Scope(agent, user_id="u"), archived_at=at(days=-200)), at=T0)
    store.facts.add(entry(4, "old, precious", scope=Scope("agent-b"), archived_at=at(days=-200), pinned=True), at=T0)
    store.facts.add(entry(5, "old, precious", scope=Scope("agent-a"), archived_at=at(days=-200), pinned=True), at=T0)
    purged, protected = store.facts.purge(rule(agent_id="agent-a"))
    assert sorted(purged) == [eid(1), eid(3)]
    assert protected == [eid(5)]
    assert store.facts.get(eid(2), Scope("agent-b", user_id="u")) is not None
    purged, protected = store.facts.purge(rule(agent_id="nobody"))
    assert (purged, protected) == ([], [])
    purged, protected = store.facts.purge(rule(agent_id=None))
    assert purged == [eid(2)]
    assert sorted(protected) == [eid(4), eid(5)]


def test_a_purge_leaves_other_entries_histories_intact(store: Store) -> None:
    store.facts.add(entry(1, "doomed", archived_at=at(days=-200)), at=T0)
    store.facts.add(entry(2, "kept"), at=T0)
    store.facts.purge(rule())
    assert [v.content for v in store.versions.history(eid(2), AGENT)] == ["kept"]


def test_a_purged_id_can_be_used_again(store: Store) -> None:
    store.facts.add(entry(1, "doomed", archived_at=at(days=-200)), at=T0)
    store.facts.purge(rule())
    reborn = entry(1, "a new life")
    store.facts.add(reborn, at=T0)
    assert store.facts.get(reborn.id, AGENT) == reborn
    assert [v.version for v in store.versions.history(reborn.id, AGENT)] == [1]
