"""The memory audit (seed 001 "Is any of this working?") on a real SQLite store: counts, entries destroyed
outside the retention purge (a raw ``DELETE`` behind the store's back), the opt-in consolidation pause, the
trend's retention and the scheduler hook."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime
from pathlib import Path

from reverie import Scope
from reverie.clock import FakeClock
from reverie.testing.openai_server import ScriptedOpenAIServer

from ._dream import EMPTY, chats, open_engine


def delete_behind_the_store(home: Path, *ids: str) -> None:
    with closing(sqlite3.connect(home / "reverie.db")) as conn, conn:
        for entry_id in ids:
            assert conn.execute("DELETE FROM facts WHERE id = ?", (entry_id,)).rowcount == 1


def test_the_audit_records_live_archived_and_merged_counts(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_engine(home, clock, server) as rv:
        a = rv.memory.save("Alice lives in Porto", source="user", dedup=False).id
        b = rv.memory.save("Alice lives in Porto, Portugal", source="user", dedup=False).id
        rv.memory.save("The Lantern service runs on PostgreSQL", source="tool:search")
        rv.memory.save("Bob prefers tea over coffee", scope=Scope(agent_id="other"))  # another agent's record
        gone = rv.memory.save("An old note").id
        rv.memory.archive(gone)
        merge = {"toDelete": [], "toSave": [{"content": "Alice lives in Porto, Portugal", "sourceIds": [a, b]}]}
        server.script_chat([json.dumps(merge)])
        assert rv.dream.run().passes["consolidation"].counts["merged"] == 1

        records = {r.agent_id: r for r in rv.audit.run()}
        assert set(records) == {"default", "other"}
        assert records["other"].live == 1 and records["other"].archived == 0
        record = records["default"]
        assert record.at == clock.now().isoformat()
        assert record.live == 2  # the merged entry and the Lantern one
        assert record.archived == 3  # the two merge sources and the archived note
        assert record.merged == 2 and record.merge_targets == 1
        assert record.destroyed_outside_purge == 0 and record.purged_since_last == 0
        assert record.sources == {"tool": 1, "user": 1}  # the merge keeps its sources' provenance
        assert rv.audit.trend("default") == [record]
        assert rv.audit.last_run() == clock.now()


def test_an_entry_deleted_outside_the_purge_is_reported_and_a_purged_one_is_not(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        kept = rv.memory.save("The user keeps bees").id
        doomed = rv.memory.save("The user plays the violin").id
        old = rv.memory.save("The user once rented a canoe").id
        rv.memory.archive(old)
        (first,) = rv.audit.run()
        assert first.live == 2 and first.archived == 1 and first.destroyed_outside_purge == 0

        clock.advance(days=91)
        purge = rv.dream.run().passes["archive_purge"]
        assert purge.counts["purged"] == 1
        delete_behind_the_store(home, doomed)

        (second,) = rv.audit.run()
        assert second.destroyed_outside_purge == 1
        assert second.destroyed_ids == [doomed]
        assert second.purged_since_last == 1
        assert second.live == 1 and second.archived == 0
        assert not rv.audit.paused_marker.exists()  # pausing is opt-in
        assert rv.memory.get(kept).content == "The user keeps bees"

        clock.advance(days=1)
        (third,) = rv.audit.run()  # compared with the second snapshot: nothing new is missing
        assert third.destroyed_outside_purge == 0 and third.purged_since_last == 0
        assert [r.destroyed_outside_purge for r in rv.audit.trend()] == [0, 1, 0]


def test_an_agent_whose_every_entry_vanished_is_still_reported(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        rv.memory.save("belongs to default")
        lost = [rv.memory.save(f"note {n} of agent b", scope=Scope(agent_id="b")).id for n in range(2)]
        assert {r.agent_id for r in rv.audit.run()} == {"default", "b"}
        delete_behind_the_store(home, *lost)
        records = {r.agent_id: r for r in rv.audit.run()}
        assert records["b"].destroyed_outside_purge == 2 and sorted(records["b"].destroyed_ids) == sorted(lost)
        assert records["default"].destroyed_outside_purge == 0


def test_an_unreadable_snapshot_is_never_reported_as_a_loss(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock) as rv:
        rv.memory.save("a fact")
        rv.audit.run()
        (rv.audit.directory / "ids.json").write_text("{not json", encoding="utf-8")
        (record,) = rv.audit.run()
        assert record.destroyed_outside_purge == 0 and record.live == 1


def test_pause_on_loss_stops_consolidation_until_resumed(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    server.answer_chat_with(lambda body: EMPTY)
    with open_engine(home, clock, server, audit={"pause_on_loss": True}) as rv:
        rv.memory.save("Alice lives in Porto")
        rv.memory.save("The Lantern service runs on PostgreSQL")
        doomed = rv.memory.save("The user plays the violin").id
        rv.audit.run()
        assert not rv.audit.paused_marker.exists()
        delete_behind_the_store(home, doomed)
        rv.audit.run()

        marker = home / "memory-audit" / "consolidation-paused.json"
        assert rv.audit.paused_marker == marker and marker.exists()
        body = json.loads(marker.read_text(encoding="utf-8"))
        assert body["agents"] == {"default": [doomed]} and body["at"] == clock.now().isoformat()

        paused = rv.dream.run()
        assert paused.phase == "completed"
        assert paused.passes["consolidation"].status == "skipped"
        assert "consolidation-paused.json" in paused.passes["consolidation"].reason
        for name in ("log_retention", "archive_purge", "importance_decay", "forget"):
            assert paused.passes[name].status == "ran"  # only consolidation stops
        assert chats(server) == 0

        assert rv.audit.resume() is True
        assert not marker.exists()
        assert rv.audit.resume() is False
        resumed = rv.dream.run()
        assert resumed.passes["consolidation"].status == "ran" and resumed.passes["consolidation"].llm_calls == 1
        assert chats(server) == 1


def test_trend_records_older_than_trend_days_are_dropped(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, audit={"trend_days": 10}) as rv:
        rv.memory.save("a fact")
        times: list[datetime] = []
        for step in (0, 5, 6):  # days 0, 5 and 11
            clock.advance(days=step)
            rv.audit.run()
            times.append(clock.now())
        assert [r.at for r in rv.audit.trend()] == [t.isoformat() for t in times[1:]]
        assert [r.at for r in rv.audit.trend("default")] == [t.isoformat() for t in times[1:]]
        assert rv.audit.trend("someone-else") == []
    lines = (home / "memory-audit" / "trend.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2


def test_job_runs_only_when_interval_hours_passed(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, audit={"interval_hours": 24}) as rv:
        rv.memory.save("a fact")
        rv.audit.job(clock.now())  # never ran: due
        assert len(rv.audit.trend()) == 1
        clock.advance(hours=1)
        rv.audit.job(clock.now())
        assert len(rv.audit.trend()) == 1
        clock.advance(hours=22, minutes=59)
        rv.audit.job(clock.now())
        assert len(rv.audit.trend()) == 1
        clock.advance(minutes=1)  # 24 hours after the first
        rv.audit.job(clock.now())
        assert len(rv.audit.trend()) == 2
        assert rv.audit.last_run() == clock.now()
