"""The change gate (seed 001 DreamPassLedger) and the cold rewrite pass (seed 003 "The dream pass") through
real dream cycles: SQLite in a temp directory, the hash embedder (identical texts have cosine 1), the
loopback scripted OpenAI server. Episodic entries go cold when the clock moves ~120 days; the forget sweep
is off so it does not archive them first, and consolidation is off so every LLM call is the rewrite's."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.dream.service import DreamRunReport
from reverie.testing.openai_server import ChatReply, ScriptedOpenAIServer
from reverie.types import Change

from ._dream import chats, open_engine

ALICE = "Met Alice in Porto to review the Lantern roadmap"
ALICE_REWRITE = "Met Alice in Porto (twice) to review the Lantern roadmap"
ALICE_DROPPED = "Met someone in Porto to review the Lantern roadmap"  # loses a name: coverage rejects it
ZEBRA = "Bought a quilted zebra tapestry at the Marrakesh souk"
ZEBRA_REWRITE = "Bought a quilted zebra tapestry at the Marrakesh souk, haggling twice"
PASS = "cold_rewrite"


def open_cold(home: Path, clock: FakeClock, server: ScriptedOpenAIServer, **dream: Any) -> reverie.Reverie:
    return open_engine(
        home,
        clock,
        server,
        embedding={"provider": "hash", "dim": 64, "background": False},
        memory={"dedupe_enabled": False},
        dream={
            "cold_rewrite_enabled": True,
            "forget_enabled": False,
            "consolidation_enabled": False,
            **dream,
        },
    )


def answer(content: str) -> str:
    return json.dumps({"content": content})


def episodic(rv: reverie.Reverie, text: str, n: int = 2) -> list[str]:
    return [rv.memory.save(text, tier="episodic").id for _ in range(n)]


def cold_cluster(rv: reverie.Reverie, clock: FakeClock, text: str = ALICE, n: int = 2) -> list[str]:
    """n identical episodic entries, embedded, then made cold."""
    ids = episodic(rv, text, n)
    assert rv.embed_pending() == n
    clock.advance(days=120)
    return ids


def rewrite(report: DreamRunReport) -> Any:
    return report.passes[PASS]


# -- the change gate --------------------------------------------------------------------------------------
def test_a_rejected_rewrite_keeps_the_cluster_and_the_gate_skips_until_the_max_skip(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_cold(home, clock, server) as rv:
        ids = cold_cluster(rv, clock)
        server.script_chat([answer(ALICE_DROPPED)])
        first = rv.dream.run()
        assert first.phase == "completed"
        assert rewrite(first).status == "ran" and rewrite(first).llm_calls == 1
        assert rewrite(first).counts["clusters"] == 1 and rewrite(first).counts["rejected"] == 1
        assert rewrite(first).counts["rewritten"] == 0
        for entry_id in ids:  # a rejected rewrite changes nothing
            entry = rv.memory.get(entry_id)
            assert entry.content == ALICE and not entry.archived
        importance = rv.memory.get(ids[0]).importance
        stamped = rv.dream.ledger.last("default", PASS)
        assert stamped is not None and stamped.stamped_at == clock.now() and stamped.fingerprint

        clock.advance(hours=1)
        second = rv.dream.run()
        assert rewrite(second).status == "skipped"
        assert rewrite(second).reason.startswith("change gate: unchanged since")
        assert rewrite(second).tokens == 0 and second.tokens == 0 and second.llm_calls == 0
        assert chats(server) == 1
        # The decay pass rewrote the entries' importance meanwhile: a statistic, not the corpus.
        assert rv.memory.get(ids[0]).importance < importance

        clock.advance(days=6, hours=22)  # 6 days 23 hours after the stamp
        assert rewrite(rv.dream.run()).status == "skipped"
        assert chats(server) == 1

        clock.advance(hours=1)  # 7 days: the run is forced however long the hash matched
        server.script_chat([answer(ALICE_DROPPED)])
        forced = rv.dream.run()
        assert rewrite(forced).status == "ran" and rewrite(forced).llm_calls == 1
        assert chats(server) == 2
        restamped = rv.dream.ledger.last("default", PASS)
        assert restamped is not None and restamped.stamped_at == clock.now()


def test_a_new_member_reopens_the_gate(home: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    server.answer_chat_with(lambda body: answer(ALICE_DROPPED))
    with open_cold(home, clock, server, max_skip_days=1000) as rv:  # no forced run: only the change counts
        cold_cluster(rv, clock)
        rv.dream.run()
        clock.advance(hours=1)
        assert rewrite(rv.dream.run()).status == "skipped"
        episodic(rv, ALICE, 1)
        rv.embed_pending()
        clock.advance(days=120)  # the new one goes cold too; the old ones stay cold
        again = rv.dream.run()
        assert rewrite(again).status == "ran" and rewrite(again).counts["cold"] == 3
        assert chats(server) == 2


def test_a_malformed_answer_is_not_stamped_and_is_asked_again(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_cold(home, clock, server) as rv:
        cold_cluster(rv, clock)
        server.script_chat(["I would rather write a poem about Porto."])
        first = rv.dream.run()
        assert first.phase == "completed"
        assert rewrite(first).llm_calls == 1 and rewrite(first).tokens > 0  # the bad answer cost its tokens
        assert rewrite(first).counts["rewritten"] == 0 and rewrite(first).counts["rejected"] == 0
        assert rv.dream.ledger.last("default", PASS) is None

        clock.advance(hours=1)
        server.script_chat([answer(ALICE_DROPPED)])
        second = rv.dream.run()
        assert rewrite(second).status == "ran" and rewrite(second).llm_calls == 1
        assert chats(server) == 2
        clock.advance(hours=1)
        assert rewrite(rv.dream.run()).status == "skipped"  # usable JSON: now it is stamped
        assert chats(server) == 2


def test_a_failed_call_fails_the_run_and_is_retried_next_cycle(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_cold(home, clock, server) as rv:
        cold_cluster(rv, clock)
        server.script_chat([ChatReply(status=500)])
        failed = rv.dream.run()
        assert failed.phase == "failed"
        assert rewrite(failed).status == "failed" and "LLMError" in rewrite(failed).reason
        assert failed.passes["importance_decay"].status == "ran"  # the other passes still ran
        assert rv.dream.ledger.last("default", PASS) is None
        assert rv.dream.status().last_dream_at is None
        server.script_chat([answer(ALICE_DROPPED)])
        assert rewrite(rv.dream.run()).status == "ran"
        assert chats(server) == 2


def test_a_corrupt_ledger_row_means_run_once(home: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    """SQLite-specific: the stamp's time is garbage (its fingerprint still matches the corpus)."""
    server.answer_chat_with(lambda body: answer(ALICE_DROPPED))
    with open_cold(home, clock, server) as rv:
        cold_cluster(rv, clock)
        rv.dream.run()
        clock.advance(hours=1)
        assert rewrite(rv.dream.run()).status == "skipped"
        with closing(sqlite3.connect(home / "reverie.db")) as conn, conn:
            changed = conn.execute(
                "UPDATE dream_ledger SET stamped_at = 'not a time' WHERE agent_id = 'default' AND pass_name = ?",
                (PASS,),
            ).rowcount
        assert changed == 1
        assert rv.dream.ledger.last("default", PASS) is None
        clock.advance(hours=1)
        once = rv.dream.run()
        assert rewrite(once).status == "ran" and rewrite(once).llm_calls == 1
        assert chats(server) == 2
        clock.advance(hours=1)
        assert rewrite(rv.dream.run()).status == "skipped"  # the run re-stamped it: not "run forever" either
        assert chats(server) == 2


def test_with_the_change_gate_off_every_cycle_asks(home: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    server.answer_chat_with(lambda body: answer(ALICE_DROPPED))
    with open_cold(home, clock, server, change_gate_enabled=False) as rv:
        cold_cluster(rv, clock)
        for cycle in range(3):
            report = rv.dream.run()
            assert rewrite(report).status == "ran" and rewrite(report).llm_calls == 1
            assert chats(server) == cycle + 1
            clock.advance(hours=1)


# -- an accepted rewrite ----------------------------------------------------------------------------------
def test_an_accepted_rewrite_supersedes_the_members_into_the_survivor(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    with open_cold(home, clock, server) as rv:
        ids = episodic(rv, ALICE, 3)
        rv.memory.save("The user likes quiet trains", tier="episodic")  # cold, but alone: no cluster
        rv.memory.save(ALICE, tier="episodic", pinned=True)  # pinned: never part of a rewrite
        rv.embed_pending()
        clock.advance(days=120)
        server.script_chat([answer(ALICE_REWRITE)])
        report = rv.dream.run()
        assert report.phase == "completed"
        counts = rewrite(report).counts
        assert counts["clusters"] == 1 and counts["rewritten"] == 1 and counts["superseded"] == 2
        assert counts["cold"] == 4
        prompt = server.requests[-1].body["messages"][-1]["content"]
        assert all(entry_id in prompt for entry_id in ids)

        entries = {i: rv.memory.get(i) for i in ids}
        (survivor,) = [e for e in entries.values() if not e.archived]
        assert survivor.content == ALICE_REWRITE
        assert survivor.reinforcement_count == 3
        assert sorted(survivor.metadata["mergedFrom"]) == sorted(i for i in ids if i != survivor.id)
        for entry in entries.values():
            if entry.id != survivor.id:
                assert entry.archived and entry.superseded_by == survivor.id and entry.content == ALICE
        history = rv.memory.history(survivor.id)
        assert [v.content for v in history] == [ALICE, ALICE_REWRITE]
        assert history[-1].change is Change.EDITED

        evidence = rv.store.dream.evidence(survivor.id)
        assert sorted(e.source_id for e in evidence) == sorted(ids)
        assert {e.run_id for e in evidence} == {report.run_id}

        clock.advance(hours=1)
        after = rv.dream.run()  # nothing left to cluster
        assert rewrite(after).reason == "no cold clusters" and rewrite(after).llm_calls == 0
        assert chats(server) == 1
        found = {h.entry.id for h in rv.memory.search("Alice Porto Lantern", mode="bm25")}
        assert survivor.id in found and found.isdisjoint(set(ids) - {survivor.id})


@pytest.mark.parametrize(("crowded", "novel_text"), [(ALICE, ZEBRA), (ZEBRA, ALICE)])
def test_the_most_novel_cluster_is_rewritten_first(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, crowded: str, novel_text: str
) -> None:
    """Two cold clusters, max_clusters_per_run = 1. A live (semantic, never cold) entry close to one of them
    makes that one the less novel: the other is rewritten first, whichever was saved first."""
    rewrites = {ALICE: ALICE_REWRITE, ZEBRA: ZEBRA_REWRITE}

    def rewrite_the_cluster_shown(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        return answer(ALICE_REWRITE if "Alice" in prompt else ZEBRA_REWRITE)

    server.answer_chat_with(rewrite_the_cluster_shown)
    with open_cold(home, clock, server, max_clusters_per_run=1) as rv:
        alice = episodic(rv, ALICE)
        zebra = episodic(rv, ZEBRA)
        rv.memory.save(crowded + " in detail", tier="semantic")  # the neighbour
        rv.embed_pending()
        clock.advance(days=120)
        first = rv.dream.run()
        assert rewrite(first).counts["clusters"] == 2 and rewrite(first).counts["rewritten"] == 1
        assert chats(server) == 1
        novel = alice if novel_text == ALICE else zebra
        other = zebra if novel_text == ALICE else alice
        assert {rv.memory.get(i).content for i in novel} == {novel_text, rewrites[novel_text]}
        assert {rv.memory.get(i).content for i in other} == {crowded}  # untouched this run
        assert not any(rv.memory.get(i).archived for i in other)

        clock.advance(hours=1)  # the corpus changed: the remaining cluster is next
        second = rv.dream.run()
        assert rewrite(second).counts["clusters"] == 1 and rewrite(second).counts["rewritten"] == 1
        assert {rv.memory.get(i).content for i in other} == {crowded, rewrites[crowded]}
        assert chats(server) == 2
