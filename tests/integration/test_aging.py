"""The aging passes on a real store with a fake clock: importance decay (seed 000) and the forget sweep
(seed 003)."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

import reverie
from reverie import Scope
from reverie.clock import FakeClock
from reverie.errors import ConfigError
from reverie.memory.aging import Aging
from reverie.types import Change


def test_decay_follows_the_seed_and_leaves_the_time_fields_alone(rv: reverie.Reverie, clock: FakeClock) -> None:
    entry = rv.memory.save("Maya prefers green tea.", importance=0.95)
    clock.advance(timedelta(days=30))
    assert rv.aging.decay().decayed == ()  # still in grace
    clock.advance(timedelta(days=45))
    assert rv.aging.decay().decayed == (entry.id,)
    after = rv.memory.get(entry.id)
    assert after.importance == pytest.approx(0.475)  # one half-life after grace
    assert after.last_seen_at == entry.entry.last_seen_at and after.updated_at is None
    assert [v.change for v in rv.memory.history(entry.id)] == [Change.CREATED]  # housekeeping: no version
    clock.advance(timedelta(days=200))
    rv.aging.decay()
    assert rv.memory.get(entry.id).importance == pytest.approx(0.10)  # the floor


def test_decay_is_calendar_time_invariant(tmp_path: Path) -> None:
    """Daily passes and one pass over the same span give the same score."""
    scores = []
    for cadence in (1, 90):
        clock = FakeClock()
        with reverie.open(tmp_path / str(cadence), clock=clock, embedding={"provider": "none"}) as rv:
            entry = rv.memory.save("A fact that is never reinforced.", importance=0.8)
            for _ in range(90 // cadence):
                clock.advance(timedelta(days=cadence))
                rv.aging.decay()
            scores.append(rv.memory.get(entry.id).importance)
    assert scores[0] == pytest.approx(scores[1], abs=1e-9)


def test_a_reinforcement_restarts_the_grace_period(rv: reverie.Reverie, clock: FakeClock) -> None:
    entry = rv.memory.save("Maya prefers green tea.", importance=0.9)
    clock.advance(timedelta(days=29))
    assert rv.memory.save("Maya prefers green tea.").outcome == "reinforced"
    clock.advance(timedelta(days=29))
    rv.aging.decay()
    assert rv.memory.get(entry.id).importance == 0.9


def test_pinned_entries_never_decay(rv: reverie.Reverie, clock: FakeClock) -> None:
    entry = rv.memory.save("The user's passport number is on file.", importance=0.9, pinned=True)
    clock.advance(timedelta(days=400))
    rv.aging.decay()
    assert rv.memory.get(entry.id).importance == 0.9


def test_the_forget_sweep_archives_cold_episodic_entries_only(rv: reverie.Reverie, clock: FakeClock) -> None:
    episodic = rv.memory.save("We chatted about the rain in Oslo.", tier="episodic")
    semantic = rv.memory.save("Oslo is the capital of Norway.", tier="semantic")
    pinned = rv.memory.save("Remember the Oslo trip.", tier="episodic", pinned=True)
    working = rv.memory.save("Scratch note for this session.", tier="working")
    clock.advance(timedelta(days=30))
    assert rv.aging.forget().archived == ()  # 0.5^(30/35) = 0.55: still warm
    clock.advance(timedelta(days=60))
    report = rv.aging.forget()
    assert report.archived == (episodic.id,)
    assert rv.memory.get(episodic.id).archived  # archived, never deleted
    assert rv.memory.restore(episodic.id).archived_at is None  # and restorable
    for kept in (semantic, pinned, working):
        assert not rv.memory.get(kept.id).archived


def test_stale_feedback_makes_an_entry_cold_at_once(rv: reverie.Reverie) -> None:
    entry = rv.memory.save("The office is on floor 3.", tier="episodic", metadata={"feedback": "stale"})
    assert rv.aging.forget().archived == (entry.id,)


def test_an_expired_entry_is_archived_even_when_pinned(rv: reverie.Reverie, clock: FakeClock) -> None:
    entry = rv.memory.save("Door code 4411 until Friday.", pinned=True)
    # No public setter for expiry yet: write it through the store, as working memory will.
    current = rv.memory.get(entry.id)
    expiring = replace(current, expires_at=clock.now() + timedelta(days=1))
    rv.store.facts.write(expiring, change=Change.EDITED, at=clock.now())
    clock.advance(timedelta(days=2))
    assert rv.aging.forget().expired == (entry.id,)
    assert rv.memory.get(entry.id).archived


def test_compaction_keeps_the_first_paragraph_and_the_keep_tokens(tmp_path: Path, clock: FakeClock) -> None:
    long = (
        "Debugged the deploy with Maya.\n\n"
        + "We went back and forth for a long while about what might be wrong with the service. " * 5
        + "The fix was in /etc/nginx/nginx.conf and the error was ERR_CONNECTION_REFUSED."
    )
    with reverie.open(
        tmp_path, clock=clock, embedding={"provider": "none"}, decay={"compact_cold_episodic": True}
    ) as rv:
        entry = rv.memory.save(long, tier="episodic")
        clock.advance(timedelta(days=120))
        report = rv.aging.forget()
        assert report.compacted == (entry.id,) and report.archived == ()
        compacted = rv.memory.get(entry.id)
        assert not compacted.archived and compacted.content.startswith("Debugged the deploy with Maya.")
        assert "/etc/nginx/nginx.conf" in compacted.content and "ERR_CONNECTION_REFUSED" in compacted.content
        assert "back and forth" not in compacted.content
        assert rv.memory.history(entry.id)[0].content == long  # the prose stays in the version chain
        assert rv.aging.forget().compacted == ()  # idempotent


def test_per_tier_half_lives_and_bad_ones(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path / "a", clock=clock, embedding={"provider": "none"}, decay={"half_life_days": {"working": 7}}
    ) as rv:
        note = rv.memory.save("Scratch note for this session.", tier="working")
        clock.advance(timedelta(days=20))
        assert rv.aging.forget().archived == (note.id,)
    with pytest.raises(ConfigError, match="semantic"):
        reverie.open(tmp_path / "b", decay={"half_life_days": {"semantic": 30}})


def test_maintain_commands(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from reverie.cli import app

    runner = CliRunner()
    home = tmp_path / "home"
    runner.invoke(app, ["--home", str(home), "memory", "save", "A fact."])
    for command in ("decay", "forget"):
        result = runner.invoke(app, ["--home", str(home), "maintain", command, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["examined"] == 1


def test_reads_keep_an_entry_warm(rv: reverie.Reverie, clock: FakeClock) -> None:
    read = rv.memory.save("We chatted about the rain in Oslo.", tier="episodic")
    unread = rv.memory.save("We chatted about the snow in Bergen.", tier="episodic")
    for _ in range(12):  # 84 days: 0.5^(84/35) = 0.19, cold without reads
        clock.advance(timedelta(days=7))
        assert rv.memory.search("rain Oslo")[0].entry.id == read.id  # a search hit is a read
    report = rv.aging.forget()  # flushes the reads first
    assert report.archived == (unread.id,)
    entry = rv.memory.get(read.id)
    assert not entry.archived and entry.read_strength > 0 and entry.read_at == clock.now()
    assert entry.last_seen_at == read.entry.last_seen_at  # a read is not a reinforcement


def test_a_full_batch_of_reads_is_written_off_the_reading_thread(rv: reverie.Reverie, clock: FakeClock) -> None:
    saved = rv.memory.save_many([{"content": f"Note number {i} about the harbour."} for i in range(Aging.FLUSH_AT)])
    ids = [s.id for s in saved]
    # The reader's own transaction rolls back: reads written on the reader's thread would roll back with it.
    with pytest.raises(RuntimeError), rv.store.transaction():
        rv.aging.note_reads(ids)  # fills the batch: a writer thread takes it, the reader goes on
        raise RuntimeError("the reader's transaction fails")
    for writer in [t for t in threading.enumerate() if t.name == "reverie-reads"]:
        writer.join()
    assert all(rv.store.facts.get(i, Scope()).read_at == clock.now() for i in ids)  # type: ignore[union-attr]
    assert rv.aging.flush_reads() == 0  # nothing left waiting


def test_reads_are_written_when_the_engine_closes(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path, clock=clock, embedding={"provider": "none"}) as rv:
        saved = rv.memory.save("A note.", tier="episodic")
        rv.memory.get(saved.id)
    with reverie.open(tmp_path, clock=clock, embedding={"provider": "none"}) as rv:
        assert rv.store.facts.get(saved.id, saved.entry.scope).read_at == clock.now()  # type: ignore[union-attr]


def test_cold_near_duplicates_fold_into_the_best_of_their_cluster(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path, clock=clock, embedding={"provider": "hash", "background": False},
        memory={"dedupe_enabled": False}, decay={"dedup_cold_clusters": True},
    ) as rv:  # fmt: skip
        first = rv.memory.save("Deploy failed: see /var/log/app.log for ERR_TIMEOUT.", tier="episodic")
        second = rv.memory.save("Deploy failed: see /var/log/app.log for ERR_TIMEOUT!", tier="episodic")
        other = rv.memory.save("Lunch with the team at the harbour.", tier="episodic")
        rv.embed_pending()
        clock.advance(timedelta(days=60))
        rv.memory.get(second.id)  # a read: the second scores higher (both still cold at day 120) and survives
        clock.advance(timedelta(days=60))
        report = rv.aging.forget()
        assert report.superseded == (first.id,)
        folded = rv.memory.get(first.id)
        assert folded.archived and folded.superseded_by == second.id
        assert set(report.archived) == {other.id, second.id}  # the survivor is cold too: archived, restorable


def test_tombstones_of_the_sweep_are_purged_after_180_days(rv: reverie.Reverie, clock: FakeClock) -> None:
    forgotten = rv.memory.save("We chatted about the rain in Oslo.", tier="episodic")
    deleted = rv.memory.save("A fact the user deleted.", tier="semantic")
    clock.advance(timedelta(days=90))
    assert rv.aging.forget().archived == (forgotten.id,)
    rv.memory.archive(deleted.id)
    clock.advance(timedelta(days=100))
    assert rv.memory.purge().purged == (deleted.id,)  # 90 days after archiving
    assert rv.memory.get(forgotten.id).archived  # a tombstone: kept for 180 days
    clock.advance(timedelta(days=81))
    assert rv.memory.purge().purged == (forgotten.id,)
