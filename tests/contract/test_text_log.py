"""The searchable-state log of the storage contract: what an in-memory lexical index loads and replays."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reverie.storage.base import PurgeRule, Store, TextRow
from reverie.types import Change, Scope

from .support import AGENT, T0, at, eid, entry


def row(content: str, **fields: object) -> TextRow:
    values: dict[str, object] = {
        "content": content,
        "tags": (),
        "category": "general",
        "user_id": None,
        "session_id": None,
        "archived": False,
    }
    values.update(fields)
    return TextRow(**values)  # type: ignore[arg-type]


def test_snapshot_holds_every_entry_of_the_agent_in_insertion_order(store: Store) -> None:
    store.facts.add(entry(2, "second", tags=("a tag", "b"), category="work/project"), at=T0)
    store.facts.add(entry(1, "first", scope=Scope(AGENT.agent_id, user_id="u1", session_id="s1")), at=T0)
    store.facts.add(entry(3, "archived", archived_at=T0), at=T0)
    store.facts.add(entry(4, "another agent's", scope=Scope("other")), at=T0)
    snap = store.facts.text_snapshot(AGENT.agent_id)
    assert snap.rows == [
        (eid(2), row("second", tags=("a tag", "b"), category="work/project")),
        (eid(1), row("first", user_id="u1", session_id="s1")),
        (eid(3), row("archived", archived=True)),
    ]
    assert snap.watermark > 0
    assert store.facts.text_changes(AGENT.agent_id, snap.watermark).rows == []


def test_an_empty_store_has_an_empty_snapshot(store: Store) -> None:
    snap = store.facts.text_snapshot(AGENT.agent_id)
    assert snap.rows == []
    assert store.facts.text_changes(AGENT.agent_id, snap.watermark).rows == []


def test_changes_replay_saves_edits_archives_restores_and_purges(store: Store) -> None:
    store.facts.add(entry(1, "one"), at=T0)
    mark = store.facts.text_snapshot(AGENT.agent_id).watermark

    store.facts.add(entry(2, "two"), at=T0)
    edited = replace(entry(1, "one, rewritten", tags=("t",)), updated_at=at(hours=1))
    store.facts.write(edited, change=Change.EDITED, at=at(hours=1))
    step = store.facts.text_changes(AGENT.agent_id, mark)
    assert step.watermark > mark
    assert sorted(step.rows) == [(eid(1), row("one, rewritten", tags=("t",))), (eid(2), row("two"))]

    archived = replace(edited, archived_at=at(days=1))
    store.facts.write(archived, change=Change.ARCHIVED, at=at(days=1))
    step2 = store.facts.text_changes(AGENT.agent_id, step.watermark)
    assert step2.rows == [(eid(1), row("one, rewritten", tags=("t",), archived=True))]

    store.facts.write(replace(archived, archived_at=None), change=Change.RESTORED, at=at(days=2))
    step3 = store.facts.text_changes(AGENT.agent_id, step2.watermark)
    assert step3.rows == [(eid(1), row("one, rewritten", tags=("t",)))]

    store.facts.write(replace(entry(2, "two"), archived_at=at(days=3)), change=Change.ARCHIVED, at=at(days=3))
    mark4 = store.facts.text_changes(AGENT.agent_id, step3.watermark).watermark
    store.facts.purge(PurgeRule(archived_before=at(days=4), protect_importance=0.8, protect_reinforcement=5))
    assert store.facts.text_changes(AGENT.agent_id, mark4).rows == [(eid(2), None)]


def test_a_change_to_expiry_is_logged(store: Store) -> None:
    store.facts.add(entry(1, "soon gone"), at=T0)
    mark = store.facts.text_snapshot(AGENT.agent_id).watermark
    store.facts.write(replace(entry(1, "soon gone"), expires_at=at(days=1)), change=Change.EDITED, at=T0)
    assert store.facts.text_changes(AGENT.agent_id, mark).rows == [(eid(1), row("soon gone"))]


def test_a_write_that_leaves_the_searchable_state_alone_is_not_logged(store: Store) -> None:
    store.facts.add(entry(1, "stable"), at=T0)
    mark = store.facts.text_snapshot(AGENT.agent_id).watermark
    reinforced = replace(entry(1, "stable", seen=at(days=1)), reinforcement_count=2, importance=0.9)
    store.facts.write(reinforced, change=Change.REINFORCED, at=at(days=1))
    after = store.facts.text_changes(AGENT.agent_id, mark)
    assert after.rows == []


def test_changes_are_per_agent(store: Store) -> None:
    mark = store.facts.text_snapshot(AGENT.agent_id).watermark
    store.facts.add(entry(1, "theirs", scope=Scope("other")), at=T0)
    assert store.facts.text_changes(AGENT.agent_id, mark).rows == []
    assert store.facts.text_changes("other", mark).rows == [(eid(1), row("theirs"))]


def test_a_restored_backup_reaches_an_index_through_a_reload_or_a_replay(store: Store, tmp_path: Path) -> None:
    """After a restore, an index at an earlier watermark ends up with the restored state: either the log was
    replaced and the watermark went below its own (SQLite: the backup holds its log; the caller reloads), or
    the restore was logged like any other change (PostgreSQL: the portable restore's deletes and inserts fire
    the log triggers) and replaying the changes gives that state."""
    store.facts.add(entry(1, "kept"), at=T0)
    target = tmp_path / "text-log.bak"
    store.backup(target)
    store.facts.add(entry(2, "lost"), at=T0)
    store.facts.add(entry(3, "lost too"), at=T0)
    store.facts.write(entry(1, "kept, then edited"), change=Change.EDITED, at=at(hours=1))
    before = store.facts.text_snapshot(AGENT.agent_id)
    store.restore_backup(target)
    changes = store.facts.text_changes(AGENT.agent_id, before.watermark)
    restored = store.facts.text_snapshot(AGENT.agent_id)
    assert restored.rows == [(eid(1), row("kept"))]
    if changes.watermark < before.watermark:
        return  # the caller reloads from the snapshot just checked
    index = dict(before.rows)
    for fact_id, text in changes.rows:
        if text is None:
            index.pop(fact_id, None)
        else:
            index[fact_id] = text
    assert index == dict(restored.rows)
    assert changes.watermark > before.watermark
    assert store.facts.text_changes(AGENT.agent_id, changes.watermark).rows == []
