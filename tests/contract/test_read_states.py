"""The storage contract's read accumulator (``read_states`` / ``write_reads``: how the forget sweep's recent reads
are written) and the change-log position (``log_position``: what save-time deduplication re-checks under the
write lock). Both backends."""

from __future__ import annotations

from dataclasses import replace

from reverie.storage.base import Store
from reverie.types import Change, Scope, Tier

from .support import AGENT, T0, at, eid, entry


def test_read_states_give_tier_strength_and_time_of_known_ids_in_any_scope(store: Store) -> None:
    store.facts.add(entry(1, "first", tier=Tier.EPISODIC, read_strength=1.5, read_at=at(hours=2)), at=T0)
    store.facts.add(entry(2, "second", scope=Scope("other", user_id="u1")), at=T0)
    store.facts.add(entry(3, "archived", archived_at=T0), at=T0)
    states = store.facts.read_states([eid(1), eid(2), eid(3), eid(99)])
    assert states == {
        eid(1): (Tier.EPISODIC, 1.5, at(hours=2)),
        eid(2): (Tier.SEMANTIC, 0.0, None),
        eid(3): (Tier.SEMANTIC, 0.0, None),
    }
    assert store.facts.read_states([]) == {}


def test_write_reads_sets_only_the_two_columns_and_records_nothing_else(store: Store) -> None:
    first = entry(1, "a fact with a version", tags=("t",), importance=0.7)
    store.facts.add(first, at=T0)
    store.facts.add(entry(2, "another"), at=T0)
    mark = store.facts.log_position(AGENT.agent_id)
    with store.transaction():
        store.facts.write_reads([(eid(1), 2.25, at(days=1)), (eid(2), 1.0, at(days=2)), (eid(99), 1.0, T0)])
    stored = store.facts.get(eid(1), AGENT)
    assert stored == replace(first, read_strength=2.25, read_at=at(days=1))  # every other field as it was
    assert store.facts.read_states([eid(2)]) == {eid(2): (Tier.SEMANTIC, 1.0, at(days=2))}
    assert [v.change for v in store.versions.history(eid(1), AGENT)] == [Change.CREATED]  # no version
    assert store.facts.text_changes(AGENT.agent_id, mark).rows == []  # not a searchable change
    assert store.facts.log_position(AGENT.agent_id) == mark
    store.facts.write_reads([])  # nothing to write: no statement, no error


def test_read_states_inside_a_transaction_see_its_own_writes(store: Store) -> None:
    store.facts.add(entry(1, "fact"), at=T0)
    with store.transaction():
        store.facts.write_reads([(eid(1), 3.0, at(hours=1))])
        assert store.facts.read_states([eid(1)]) == {eid(1): (Tier.SEMANTIC, 3.0, at(hours=1))}


def test_log_position_moves_with_searchable_changes_of_the_agent_only(store: Store) -> None:
    assert store.facts.log_position(AGENT.agent_id) == 0
    store.facts.add(entry(1, "fact"), at=T0)
    mark = store.facts.log_position(AGENT.agent_id)
    assert mark > 0
    store.facts.write(replace(entry(1, "fact"), importance=0.9), change=Change.IMPORTANCE, at=T0)
    assert store.facts.log_position(AGENT.agent_id) == mark  # not a searchable change
    store.facts.write(entry(1, "fact, edited"), change=Change.EDITED, at=T0)
    moved = store.facts.log_position(AGENT.agent_id)
    assert moved > mark
    assert [fact_id for fact_id, _ in store.facts.text_changes(AGENT.agent_id, mark).rows] == [eid(1)]
