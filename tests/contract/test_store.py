"""Store: transactions, migrations, stats, check, backup and restore, vacuum."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import pytest

from reverie.errors import Conflict, StorageError
from reverie.storage.base import PurgeRule, Store
from reverie.types import Change, Tier

from .support import AGENT, T0, at, eid, entry, hit_ids, ids, match, view

T = TypeVar("T")


class Boom(Exception):
    pass


def in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on another thread (another connection/session) and return its result."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # pragma: no cover - surfaced below
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


def test_url_names_the_backend(store: Store) -> None:
    assert isinstance(store.url, str)
    assert "://" in store.url


# -- transactions ----------------------------------------------------------------------------------------
def test_writes_in_a_transaction_commit_together(store: Store) -> None:
    with store.transaction():
        store.facts.add(entry(1, "first"), at=T0)
        store.facts.add(entry(2, "second"), at=T0)
        assert store.facts.get(eid(1), AGENT) is not None  # the transaction reads its own writes
        # Nobody else sees a half-done unit.
        assert in_thread(lambda: store.facts.get(eid(1), AGENT)) is None
    assert in_thread(lambda: ids(store.facts.recent(view(), 10))) == [eid(2), eid(1)]


def test_an_exception_rolls_back_every_write_of_the_transaction(store: Store) -> None:
    store.facts.add(entry(9, "already here"), at=T0)
    with pytest.raises(Boom), store.transaction():
        store.facts.add(entry(1, "first"), at=T0)
        store.facts.add(entry(2, "second"), at=T0)
        store.facts.write(entry(9, "rewritten"), change=Change.EDITED, at=at(hours=1))
        raise Boom
    assert store.facts.get(eid(1), AGENT) is None
    assert store.facts.get(eid(2), AGENT) is None
    assert store.facts.get(eid(9), AGENT) == entry(9, "already here")
    assert store.versions.history(eid(1), AGENT) == []
    assert [v.content for v in store.versions.history(eid(9), AGENT)] == ["already here"]
    assert store.facts.search(match("first second"), view(), 10) == []
    assert store.stats().live == 1


def test_a_rolled_back_purge_deletes_nothing(store: Store) -> None:
    doomed = entry(1, "doomed", archived_at=at(days=-200))
    store.facts.add(doomed, at=T0)
    with pytest.raises(Boom), store.transaction():
        purged, _ = store.facts.purge(PurgeRule(at(days=-90), 0.8, 5))
        assert purged == [doomed.id]
        raise Boom
    assert store.facts.get(doomed.id, AGENT) == doomed
    assert len(store.versions.history(doomed.id, AGENT)) == 1


def test_a_conflict_inside_a_transaction_rolls_back_its_earlier_writes(store: Store) -> None:
    store.facts.add(entry(1, "taken"), at=T0)
    with pytest.raises(Conflict), store.transaction():
        store.facts.add(entry(2, "new"), at=T0)
        store.facts.add(entry(1, "duplicate"), at=T0)
    assert store.facts.get(eid(2), AGENT) is None
    assert store.facts.get(eid(1), AGENT) == entry(1, "taken")


def test_nested_transactions_join_the_outer_one(store: Store) -> None:
    with pytest.raises(Boom), store.transaction():
        store.facts.add(entry(1, "outer"), at=T0)
        with store.transaction():
            store.facts.add(entry(2, "inner"), at=T0)
        # The inner block finished, but its write belongs to the outer unit: not visible outside yet.
        assert in_thread(lambda: store.facts.get(eid(2), AGENT)) is None
        raise Boom
    assert store.facts.get(eid(1), AGENT) is None
    assert store.facts.get(eid(2), AGENT) is None


def test_an_exception_in_a_nested_transaction_rolls_back_the_outer_one(store: Store) -> None:
    with pytest.raises(Boom), store.transaction():
        store.facts.add(entry(1, "outer"), at=T0)
        with store.transaction():
            store.facts.add(entry(2, "inner"), at=T0)
            raise Boom
    assert store.facts.get(eid(1), AGENT) is None
    assert store.facts.get(eid(2), AGENT) is None


def test_a_nested_failure_caught_by_the_outer_block_undoes_only_the_inner_writes(store: Store) -> None:
    with store.transaction():
        store.facts.add(entry(1, "outer"), at=T0)
        with pytest.raises(Boom), store.transaction():
            store.facts.add(entry(2, "inner"), at=T0)
            raise Boom
        store.facts.add(entry(3, "after the inner failure"), at=T0)
    assert sorted(ids(store.facts.iter_all())) == [eid(1), eid(3)]


def test_nested_transactions_commit_with_the_outer_one(store: Store) -> None:
    with store.transaction():
        store.facts.add(entry(1, "outer"), at=T0)
        with store.transaction(), store.transaction():
            store.facts.add(entry(2, "inner"), at=T0)
    assert sorted(ids(store.facts.iter_all())) == [eid(1), eid(2)]


def test_the_store_is_usable_after_a_rollback(store: Store) -> None:
    with pytest.raises(Boom), store.transaction():
        store.facts.add(entry(1, "first try"), at=T0)
        raise Boom
    store.facts.add(entry(1, "second try"), at=T0)
    assert store.facts.get(eid(1), AGENT) == entry(1, "second try")
    with store.transaction():
        store.facts.add(entry(2, "in a new transaction"), at=T0)
    assert store.facts.get(eid(2), AGENT) is not None


# -- migrations, stats, check ----------------------------------------------------------------------------
def test_migrations_lists_the_initial_schema(store: Store) -> None:
    applied = store.migrations()
    names = [name for name, _ in applied]
    assert names[0] == "0001_initial"
    assert len(names) == len(set(names))
    assert all(isinstance(when, datetime) and when.tzinfo is not None for _, when in applied)


def test_stats_counts_live_archived_tiers_and_categories(store: Store) -> None:
    empty = store.stats()
    assert (empty.live, empty.archived, empty.by_tier, empty.by_category) == (0, 0, {}, {})
    store.facts.add(entry(1, category="user/name", tier=Tier.SEMANTIC), at=T0)
    store.facts.add(entry(2, category="user/name", tier=Tier.EPISODIC), at=T0)
    store.facts.add(entry(3, category="work", tier=Tier.EPISODIC, scope=replace(AGENT, user_id="u1")), at=T0)
    store.facts.add(entry(4, category="work", tier=Tier.PROCEDURAL, archived_at=T0), at=T0)
    store.facts.add(entry(5, category="old", archived_at=T0), at=T0)
    stats = store.stats()
    assert (stats.live, stats.archived) == (3, 2)
    assert stats.by_tier == {"semantic": 1, "episodic": 2}
    assert stats.by_category == {"user/name": 2, "work": 1}
    assert isinstance(stats.location, str) and stats.location
    assert stats.size_bytes >= 0


def test_check_is_ok_on_a_healthy_store(store: Store) -> None:
    store.facts.add(entry(1, "healthy"), at=T0)
    store.facts.write(entry(1, "still healthy"), change=Change.EDITED, at=at(hours=1))
    report = store.check()
    assert report.ok, report.checks
    assert report.checks
    assert report.repaired == ()
    repaired = store.check(repair=True)
    assert repaired.ok and repaired.repaired == ()


# -- backup and restore ----------------------------------------------------------------------------------
def test_backup_then_restore_brings_back_the_saved_state(store: Store, tmp_path: Path) -> None:
    a = entry(1, "Alpha fact before the backup")
    store.facts.add(a, at=T0)
    target = tmp_path / "backups" / "snapshot.bak"
    store.backup(target)
    assert target.is_file() and target.stat().st_size > 0
    store.facts.add(entry(2, "Bravo fact after the backup"), at=T0)
    store.facts.write(replace(a, content="Alpha rewritten after the backup"), change=Change.EDITED, at=at(hours=1))

    store.restore_backup(target)

    assert store.facts.get(a.id, AGENT) == a
    assert store.facts.get(eid(2), AGENT) is None
    assert [v.content for v in store.versions.history(a.id, AGENT)] == [a.content]
    assert hit_ids(store.facts.search(match("alpha bravo"), view(), 10)) == [a.id]
    assert store.stats().live == 1
    assert store.check().ok
    assert [name for name, _ in store.migrations()][0] == "0001_initial"
    store.facts.add(entry(3, "Charlie after the restore"), at=T0)  # still writable
    assert hit_ids(store.facts.search(match("charlie"), view(), 10)) == [eid(3)]


def test_backup_does_not_disturb_the_store(store: Store, tmp_path: Path) -> None:
    store.facts.add(entry(1, "still here"), at=T0)
    store.backup(tmp_path / "copy.bak")
    store.facts.add(entry(2, "written after"), at=T0)
    assert sorted(ids(store.facts.iter_all())) == [eid(1), eid(2)]


def _garbage(path: Path) -> Path:
    path.write_text("this is not a database backup\n" * 100)
    return path


def _empty(path: Path) -> Path:
    path.touch()
    return path


@pytest.mark.parametrize(
    "make_source",
    [_garbage, _empty, lambda p: p, lambda p: p.parent],
    ids=["text-file", "empty-file", "missing-file", "a-directory"],
)
def test_restoring_from_something_that_is_not_a_backup_raises_and_changes_nothing(
    store: Store, tmp_path: Path, make_source: Callable[[Path], Path]
) -> None:
    kept = entry(1, "kept through a failed restore")
    store.facts.add(kept, at=T0)
    before = store.stats()
    (tmp_path / "incoming").mkdir()
    source = make_source(tmp_path / "incoming" / "not-a-backup.bak")
    with pytest.raises(StorageError):
        store.restore_backup(source)
    assert store.facts.get(kept.id, AGENT) == kept
    after = store.stats()
    assert (after.live, after.archived, after.by_category) == (before.live, before.archived, before.by_category)
    assert hit_ids(store.facts.search(match("kept"), view(), 10)) == [kept.id]
    store.facts.add(entry(2, "writable afterwards"), at=T0)
    assert store.facts.get(eid(2), AGENT) is not None


@pytest.mark.parametrize("name", ["backup#1.bak", "what?.bak", "100%25.bak"])
def test_a_backup_restores_whatever_its_file_is_called(store: Store, tmp_path: Path, name: str) -> None:
    store.facts.add(entry(1, "before"), at=T0)
    target = tmp_path / name
    store.backup(target)
    store.facts.add(entry(2, "after"), at=T0)
    store.restore_backup(target)
    assert ids(store.facts.iter_all()) == [eid(1)]


# -- vacuum ----------------------------------------------------------------------------------------------
def test_vacuum_keeps_every_entry_searchable(store: Store) -> None:
    words = ["amber", "birch", "cobalt", "dune", "ember", "fjord", "granite", "harbor", "indigo", "juniper"]
    for n, word in enumerate(words, start=1):
        store.facts.add(entry(n, f"The {word} entry", seen=at(minutes=n)), at=T0)
    # Leave holes behind, so vacuum has rows to move.
    for n in (2, 5, 7):
        store.facts.write(
            entry(n, f"The {words[n - 1]} entry", archived_at=at(days=-200)), change=Change.ARCHIVED, at=T0
        )
    store.facts.purge(PurgeRule(at(days=-90), 0.8, 5))
    store.facts.add(entry(11, "The kestrel entry", seen=at(minutes=11)), at=T0)

    store.vacuum()

    survivors = {n: w for n, w in enumerate(words, start=1) if n not in (2, 5, 7)} | {11: "kestrel"}
    for n, word in survivors.items():
        assert hit_ids(store.facts.search(match(word), view(), 10)) == [eid(n)], word
        assert ids(store.facts.search_substring(word[:-1], view(), 10, frozenset())) == [eid(n)], word
    for n in (2, 5, 7):
        assert store.facts.search(match(words[n - 1]), view(include_archived=True), 10) == []
    assert sorted(ids(store.facts.iter_all())) == sorted(eid(n) for n in survivors)
    assert store.check().ok
