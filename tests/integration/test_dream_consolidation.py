"""Dream consolidation (seed 001, Pass 1) end to end: one test per safeguard of
``reverie.dream.passes.consolidation``, on a real SQLite store and a real loopback OpenAI-compatible server.
The model's answers are scripted; the ids they name are read back from the prompt the pass sent."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reverie
from _template import new_store_file
from reverie.clock import FakeClock
from reverie.core.consolidation import MERGED_AT, MERGED_FROM, REJECTED_AT, REJECTED_CLUSTER
from reverie.dream.passes.base import PassReport
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.testing.openai_server import RecordedRequest
from reverie.types import Scope

from ._dream import CHAT, NO_LLM_PASSES, open_engine

TEA = "The user drinks green tea every morning."
LAPTOP = "The user's laptop runs Fedora Linux."
MEETINGS = "The user prefers meetings after 10 am."
MOVED = "Maya moved to Lisbon in 2019."
WORK = "Maya moved to Lisbon for work."
REPAIR = "TASK: merge repair"
PAUSED = Path("memory-audit") / "consolidation-paused.json"


# -- harness ------------------------------------------------------------------------------------------------
@pytest.fixture
def rv(home: Path, clock: FakeClock, server: ScriptedOpenAIServer, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, home / "reverie.db", clock.now())
    with open_engine(home, clock, server) as engine:
        yield engine


def put(rv: reverie.Reverie, text: str, **kwargs: Any) -> str:
    """A new entry, never folded into an existing one."""
    return rv.memory.save(text, dedup=False, **kwargs).id


def put_all(rv: reverie.Reverie, *texts: str) -> list[str]:
    return [put(rv, text) for text in texts]


def answer(*, delete: list[str] | None = None, save: list[dict[str, Any]] | None = None) -> str:
    return json.dumps({"toDelete": delete or [], "toSave": save or []})


def merge(content: str, *ids: str) -> dict[str, Any]:
    return {"content": content, "sourceIds": list(ids)}


def chats(server: ScriptedOpenAIServer) -> list[RecordedRequest]:
    return [r for r in server.requests if r.path == CHAT]


def prompt(request: RecordedRequest) -> str:
    return str(request.body["messages"][1]["content"])


def shown(request: RecordedRequest) -> set[str]:
    """The ids of the eligible entries a consolidation prompt showed (its ``[n] id=<id> ...`` lines), without
    the related ones shown beside them as merge-only context (``related()``)."""
    return all_shown(request) - related(request)


def all_shown(request: RecordedRequest) -> set[str]:
    return set(re.findall(r"^\[\d+\] id=(\S+)", prompt(request), re.MULTILINE))


def related(request: RecordedRequest) -> set[str]:
    return set(re.findall(r"^\[\d+\] id=(\S+) .*related=merge-only$", prompt(request), re.MULTILINE))


def repairs(server: ScriptedOpenAIServer) -> list[RecordedRequest]:
    return [r for r in chats(server) if prompt(r).startswith(REPAIR)]


def cycle(rv: reverie.Reverie, server: ScriptedOpenAIServer, *answers: str | ChatReply) -> PassReport:
    """One completed dream cycle with ``answers`` scripted; the consolidation pass's report."""
    server.script_chat(list(answers))
    report = rv.dream.run()
    assert report.phase == "completed", report.as_dict()
    return report.passes["consolidation"]


def live_ids(rv: reverie.Reverie) -> set[str]:
    return {e.id for e in rv.store.facts.iter_all("default") if not e.archived}


def merged_into(rv: reverie.Reverie, source: str) -> str:
    """The id of the merged entry that superseded ``source`` (which must be archived)."""
    entry = rv.memory.get(source)
    assert entry.archived and entry.superseded_by is not None
    return entry.superseded_by


# -- 1. eligibility ------------------------------------------------------------------------------------------
def test_only_new_or_changed_entries_are_shown_and_decay_reopens_nothing(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    tea, laptop, meetings = put(rv, TEA), put(rv, LAPTOP), put(rv, MEETINGS)
    assert cycle(rv, server, answer()).counts["reviewed"] == 3
    assert shown(chats(server)[0]) == {tea, laptop, meetings}

    clock.advance(hours=7)
    idle = rv.dream.run()  # nothing changed: no LLM call at all
    assert idle.passes["consolidation"].status == "ran" and idle.llm_calls == 0 and len(chats(server)) == 1

    again = rv.memory.save(TEA)  # a reinforcement re-opens the entry
    assert again.outcome == "reinforced" and again.id == tea
    rv.memory.edit(laptop, content="The user's laptop runs Fedora Linux 40.")  # so does an edit
    clock.advance(hours=7)
    assert cycle(rv, server, answer()).counts["reviewed"] == 2
    assert shown(chats(server)[1]) == {tea, laptop}

    clock.advance(days=60)
    decayed = rv.aging.decay()  # importance moves, the content does not: nothing to review
    assert set(decayed.decayed) == {tea, laptop, meetings}
    assert rv.memory.get(meetings).importance < 0.5
    idle = rv.dream.run()
    assert idle.passes["consolidation"].counts["reviewed"] == 0 and idle.llm_calls == 0
    assert len(chats(server)) == 2


def test_a_changed_duplicate_brings_its_unchanged_twin_back(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer
) -> None:
    twin = "Maya's flat in Lisbon has a balcony facing the Tagus river."
    with open_engine(home, clock, server, embedding={"provider": "hash", "dim": 64, "background": False}) as rv:
        first, second, other = put(rv, twin), put(rv, twin), put(rv, MEETINGS)
        rv.embed_pending()
        cycle(rv, server, answer())  # the model keeps both twins: all three are reviewed
        rv.memory.edit(first, tags=["home"])
        clock.advance(hours=7)
        assert cycle(rv, server, answer()).counts["reviewed"] == 2
        assert shown(chats(server)[1]) == {first, second}  # the whole cluster, not only the changed member
        assert related(chats(server)[1]) <= {other}  # the unrelated entry is at most merge-only context


def test_only_the_new_entry_is_shown_never_the_corpus(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    put_all(rv, TEA, LAPTOP, MEETINGS)
    cycle(rv, server, answer())
    clock.advance(hours=7)
    new = put(rv, "The user's cat is called Miso.")  # no near-duplicate anywhere
    report = cycle(rv, server, answer())
    assert shown(chats(server)[1]) == {new} and report.counts["reviewed"] == 1


# -- 2. ids outside the eligible set ------------------------------------------------------------------------
def test_ids_the_model_was_not_shown_are_ignored(home: Path, server: ScriptedOpenAIServer, clock: FakeClock) -> None:
    with open_engine(home, clock, server, dream={"consolidation_related_per_entry": 0}) as rv:
        _ids_not_shown_are_ignored(rv, server, clock)


def _ids_not_shown_are_ignored(rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock) -> None:
    tea, laptop = put(rv, TEA), put(rv, LAPTOP)
    cycle(rv, server, answer())  # both reviewed: not shown next time
    clock.advance(hours=7)
    moved, cat = put(rv, MOVED), put(rv, "The user's cat is called Miso.")
    report = cycle(
        rv,
        server,
        answer(
            delete=[tea, "0123456789ab"],
            save=[
                merge(f"{MOVED} {LAPTOP}", moved, laptop, "feedfacecafe"),  # laptop: real, reviewed, not shown
                merge("The user once lived in Paris.", "deadbeef0000"),  # every source invented
            ],
        ),
    )
    assert shown(chats(server)[1]) == {moved, cat}
    assert not rv.memory.get(tea).archived and not rv.memory.get(laptop).archived
    merged = rv.memory.get(merged_into(rv, moved))
    assert merged.metadata[MERGED_FROM] == [moved]  # the merge took only the shown source
    assert live_ids(rv) == {tea, laptop, cat, merged.id}  # and nothing about Paris was saved
    c = report.counts
    assert (c["ignored_ids"], c["unsourced"], c["ephemeral"], c["merged"]) == (5, 1, 0, 1)


# -- 3. the coverage check ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "merged_text",
    ["Moved to Lisbon in 2019, for work.", "Maya moved to Lisbon for work."],
    ids=["drops-a-name", "drops-a-number"],
)
def test_a_merge_that_drops_a_specific_is_rejected_and_stamped(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, merged_text: str
) -> None:
    with open_engine(home, clock, server, dream={"merge_repair_enabled": False}) as rv:
        moved, work = put(rv, MOVED), put(rv, WORK)
        report = cycle(rv, server, answer(delete=[moved], save=[merge(merged_text, moved, work)]))
        c = report.counts
        assert (c["rejected"], c["merged"], c["ephemeral"]) == (1, 0, 0)
        assert live_ids(rv) == {moved, work}  # nothing saved, and the source listed in toDelete is kept
        for source in (moved, work):
            metadata = rv.memory.get(source).metadata
            assert metadata[REJECTED_CLUSTER] == ",".join(sorted([moved, work]))
            assert metadata[REJECTED_AT] == clock.now().isoformat()
        assert len(chats(server)) == 1


# -- 4. one repair ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("good", [True, False], ids=["good-repair", "bad-repair"])
def test_a_rejected_merge_gets_one_repair_call(rv: reverie.Reverie, server: ScriptedOpenAIServer, good: bool) -> None:
    moved, work = put(rv, MOVED), put(rv, WORK)
    fixed = "Maya moved to Lisbon in 2019, for work." if good else "She moved to Lisbon in 2019, for work."
    report = cycle(
        rv,
        server,
        answer(save=[merge("Moved to Lisbon in 2019, for work.", moved, work)]),
        json.dumps({"content": fixed}),
    )
    (repair,) = repairs(server)
    assert prompt(repair).startswith(REPAIR) and "## Missing specifics\n- Maya\n" in prompt(repair)
    c = report.counts
    if good:
        assert (c["repaired"], c["merged"], c["rejected"]) == (1, 1, 0)
        assert rv.memory.get(merged_into(rv, moved)).content == fixed
        assert merged_into(rv, work) == merged_into(rv, moved)
    else:
        assert (c["repaired"], c["merged"], c["rejected"]) == (0, 0, 1)
        assert live_ids(rv) == {moved, work}


@pytest.mark.parametrize(
    ("dream", "expected"),
    [({"merge_repair_max_per_cycle": 1}, 1), ({"merge_repair_enabled": False}, 0)],
    ids=["capped", "disabled"],
)
def test_repair_calls_are_capped_or_off(
    home: Path, clock: FakeClock, server: ScriptedOpenAIServer, dream: dict[str, Any], expected: int
) -> None:
    with open_engine(home, clock, server, dream=dream) as rv:
        moved, work = put(rv, MOVED), put(rv, WORK)
        laptop, linux = put(rv, LAPTOP), put(rv, "The user's laptop runs Fedora Linux at home.")
        server.answer_chat_with(lambda _body: json.dumps({"content": "Still missing it."}))
        report = cycle(
            rv,
            server,
            answer(
                save=[
                    merge("Moved to Lisbon in 2019, for work.", moved, work),
                    merge("The user's laptop runs Linux at home.", laptop, linux),
                ]
            ),
        )
        assert len(repairs(server)) == expected
        assert (report.counts["rejected"], report.counts["merged"]) == (2, 0)
        assert live_ids(rv) == {moved, work, laptop, linux}


# -- 5. temporal arithmetic and provenance ------------------------------------------------------------------
def test_the_host_computes_the_merged_entrys_time_and_provenance(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    flat = "Maya rents a flat in Alfama."
    first = put(rv, MOVED, metadata={"subjectTimeStart": "2024-03-01", "subjectTimeEnd": "2024-03-04", "mood": "ok"})
    first_seen = clock.now()
    clock.advance(days=2)
    second = put(rv, flat, metadata={"subjectTimeStart": "2024-03-02", "subjectTimeEnd": "2024-03-10", "note": "x"})
    clock.advance(days=1)
    for _ in range(2):
        assert rv.memory.save(flat).id == second  # reinforced: 3 sightings
    last_seen = clock.now()
    clock.advance(days=3)
    cycle(rv, server, answer(save=[merge(f"{MOVED} {flat}", first, second)]))
    merged = rv.memory.get(merged_into(rv, first))
    assert merged.created_at == first_seen  # the earliest, not now
    assert merged.last_seen_at == last_seen != clock.now()  # the latest sighting, never reset to now
    assert merged.reinforcement_count == 1 + 3
    assert merged.metadata == {
        "subjectTimeStart": "2024-03-01",  # the range widens
        "subjectTimeEnd": "2024-03-10",
        MERGED_FROM: [first, second],  # other keys (mood, note, review stamps) are dropped
        MERGED_AT: clock.now().isoformat(),
    }
    evidence = rv.store.dream.evidence(merged.id)
    assert sorted(e.source_id for e in evidence) == sorted([first, second])
    assert {e.target_id for e in evidence} == {merged.id}


# -- 6. replacement before retirement, exhaustive removal ---------------------------------------------------
def test_every_source_of_a_persisted_merge_is_retired_listed_or_not(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    moved, work, tea = put(rv, MOVED), put(rv, WORK), put(rv, TEA)
    report = cycle(rv, server, answer(save=[merge("Maya moved to Lisbon in 2019 for work.", moved, work)]))
    merged = merged_into(rv, moved)
    for source in (moved, work):  # neither was in toDelete
        entry = rv.memory.get(source)
        assert entry.archived_at == clock.now() and entry.superseded_by == merged
    assert live_ids(rv) == {merged, tea}
    assert (report.counts["merged"], report.counts["ephemeral"]) == (1, 0)


@pytest.mark.parametrize("also_deleted", [False, True], ids=["sources-only", "sources-in-toDelete"])
def test_a_blank_merge_saves_nothing_and_keeps_its_sources(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, also_deleted: bool
) -> None:
    moved, work = put(rv, MOVED), put(rv, WORK)
    delete = [moved, work] if also_deleted else []
    report = cycle(rv, server, answer(delete=delete, save=[merge("  ", moved, work)]))
    c = report.counts
    assert (c["blank"], c["merged"], c["ephemeral"]) == (1, 0, 0)
    assert live_ids(rv) == {moved, work}


def test_a_save_restating_its_only_source_keeps_it_even_when_also_deleted(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    moved, tea = put(rv, MOVED), put(rv, TEA)
    save = {"content": MOVED, "category": "general", "tags": [], "sourceIds": [moved]}
    report = cycle(rv, server, answer(delete=[moved], save=[save]))
    assert (report.counts["merged"], report.counts["ephemeral"]) == (0, 0)
    assert live_ids(rv) == {moved, tea}


# -- 7. the high-value floor --------------------------------------------------------------------------------
def high_value(rv: reverie.Reverie) -> tuple[str, str]:
    """An entry of importance 0.9 and one reinforced 5 times."""
    important = put(rv, "The user is allergic to penicillin.", importance=0.9)
    standup = "The user's standup is at 9:30 on weekdays."
    seen = put(rv, standup)
    for _ in range(4):
        assert rv.memory.save(standup).outcome == "reinforced"
    assert rv.memory.get(seen).reinforcement_count == 5
    return important, seen


def test_high_value_entries_are_never_pruned_as_ephemeral(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    important, seen = high_value(rv)
    noise = put(rv, "ok, thanks!")
    report = cycle(rv, server, answer(delete=[important, seen, noise]))
    assert (report.counts["protected"], report.counts["ephemeral"]) == (2, 1)
    assert live_ids(rv) == {important, seen}


def test_high_value_entries_can_still_be_merged(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    important, seen = high_value(rv)
    text = "The user is allergic to penicillin. The user's standup is at 9:30 on weekdays."
    report = cycle(rv, server, answer(delete=[important, seen], save=[merge(text, important, seen)]))
    merged = merged_into(rv, important)
    assert merged_into(rv, seen) == merged and live_ids(rv) == {merged}
    assert (report.counts["merged"], report.counts["protected"], report.counts["ephemeral"]) == (1, 0, 0)
    assert rv.memory.get(merged).reinforcement_count == 6 and rv.memory.get(merged).importance == 0.9


# -- 8. removals archive, never delete ----------------------------------------------------------------------
def test_an_ephemeral_removal_is_archived_logged_and_restorable(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock, home: Path
) -> None:
    noise, tea = put(rv, "ok, thanks!"), put(rv, TEA)
    assert cycle(rv, server, answer(delete=[noise])).counts["ephemeral"] == 1
    entry = rv.memory.get(noise)  # still retrievable by id
    assert entry.archived_at == clock.now() and entry.content == "ok, thanks!"
    assert {e.id for e in rv.memory.browse().entries} == {tea}
    lines = (home / "logs" / "dream.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert any(r["action"] == "archived" and r["id"] == noise and r["text"] == "ok, thanks!" for r in records)
    assert not rv.memory.restore(noise).archived
    assert {e.id for e in rv.memory.browse().entries} == {tea, noise}


def test_a_dream_log_that_cannot_be_written_costs_the_line_never_the_pass(
    home: Path, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    (home / "logs" / "dream.jsonl").mkdir(parents=True)  # appending to a directory fails: a StorageError
    with open_engine(home, clock, server) as rv:
        noise, tea = put(rv, "ok, thanks!"), put(rv, TEA)
        report = cycle(rv, server, answer(delete=[noise]))
        assert report.status == "ran" and report.counts["ephemeral"] == 1
        assert rv.memory.get(noise).archived and not rv.memory.get(tea).archived


# -- 9. malformed answers -----------------------------------------------------------------------------------
def test_a_malformed_answer_changes_and_stamps_nothing(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    tea, noise = put(rv, TEA), put(rv, "ok, thanks!")

    def state() -> dict[str, tuple[Any, ...]]:
        entries = (rv.memory.get(i) for i in (tea, noise))
        return {e.id: (e.archived_at, e.content, e.metadata, e.updated_at) for e in entries}

    before = state()
    cut_off = '{"toDelete": ["' + noise + '"], "toSave": [{"content": "'
    report = cycle(rv, server, cut_off)
    assert report.counts["malformed"] == 1 and report.counts["reviewed"] == 0
    assert state() == before  # not archived, not stamped reviewed
    clock.advance(hours=1)  # within the interval: no completed pass was recorded
    again = cycle(rv, server, "Sorry, I can't decide.")
    assert again.status == "ran" and again.counts["malformed"] == 1
    assert shown(chats(server)[1]) == shown(chats(server)[0]) == {tea, noise}


def test_an_answer_wrapped_in_reasoning_and_prose_is_applied(rv: reverie.Reverie, server: ScriptedOpenAIServer) -> None:
    tea, noise = put(rv, TEA), put(rv, "ok, thanks!")
    wrapped = (
        f'<think>Maybe {{"toDelete": ["{tea}"]}}? No, tea is a preference.</think>\n'
        f"Here is my proposal:\n{answer(delete=[noise])}\nThat is all."
    )
    report = cycle(rv, server, wrapped)
    assert (report.counts["malformed"], report.counts["ephemeral"], report.counts["reviewed"]) == (0, 1, 2)
    assert live_ids(rv) == {tea}


# -- 10. the minimum interval -------------------------------------------------------------------------------
def test_the_minimum_interval_survives_a_restart(home: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    with open_engine(home, clock, server) as rv:
        put_all(rv, TEA, LAPTOP)
        cycle(rv, server, answer())
        clock.advance(hours=1)
        pending = {put(rv, MOVED), put(rv, MEETINGS)}
        skipped = cycle(rv, server)
        assert skipped.status == "skipped"
        assert skipped.reason.startswith("memory consolidation skipped — last completed")
    clock.advance(hours=4)
    with open_engine(home, clock, server) as rv:  # a restart does not reset the floor
        assert cycle(rv, server).reason.startswith("memory consolidation skipped — last completed")
        assert len(chats(server)) == 1
        clock.advance(hours=1)  # six hours since the last completed pass
        ran = cycle(rv, server, answer())
        assert ran.status == "ran" and shown(chats(server)[1]) == pending


# -- 11. the paused marker ----------------------------------------------------------------------------------
def test_the_paused_marker_stops_only_consolidation(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, home: Path
) -> None:
    put_all(rv, TEA, LAPTOP)
    (home / PAUSED).parent.mkdir(parents=True, exist_ok=True)
    (home / PAUSED).write_text('{"reason": "entries vanished"}', encoding="utf-8")
    report = rv.dream.run()
    assert report.phase == "completed" and report.passes["consolidation"].status == "skipped"
    assert all(report.passes[name].status == "ran" for name in NO_LLM_PASSES)
    assert chats(server) == []
    (home / PAUSED).unlink()
    assert cycle(rv, server, answer()).counts["reviewed"] == 2


# -- 13. cross-scope merges ---------------------------------------------------------------------------------
def test_one_prompt_never_mixes_users_and_a_merge_across_users_is_impossible(
    rv: reverie.Reverie, server: ScriptedOpenAIServer
) -> None:
    u1, u2 = Scope(user_id="u1"), Scope(user_id="u2")
    mine, theirs = put(rv, MOVED, scope=u1), put(rv, MOVED, scope=u2)
    cross = answer(save=[merge(MOVED, mine, theirs)])
    report = cycle(rv, server, cross, cross)
    assert sorted(map(sorted, (all_shown(r) for r in chats(server)))) == sorted([[mine], [theirs]])  # one call each
    # Each call saw one user's entry: the other id is ignored, and restating the single source changes nothing.
    assert (report.counts["merged"], report.counts["ignored_ids"]) == (0, 2)
    assert not rv.memory.get(mine, scope=u1).archived and not rv.memory.get(theirs, scope=u2).archived
    assert live_ids(rv) == {mine, theirs} and repairs(server) == []


# -- 14. the summary line -----------------------------------------------------------------------------------
def test_the_summary_line_counts_a_scripted_cycle(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    put_all(rv, TEA, LAPTOP)
    cycle(rv, server, answer())
    clock.advance(hours=7)
    moved, work = put(rv, MOVED), put(rv, WORK)  # merged as is
    cat, kitten = put(rv, "The user's cat Miso is 12."), put(rv, "The user's cat Miso likes tuna.")  # repaired
    paris, rome = put(rv, "Maya visited Paris in 2021."), put(rv, "Maya visited Rome in 2022.")  # rejected
    noise = put(rv, "ok, thanks!")  # ephemeral
    important = put(rv, "The user is allergic to penicillin.", importance=0.9)  # protected
    server.answer_chat_with(
        lambda body: json.dumps(
            {"content": "The user's cat Miso is 12 and likes tuna."}
            if "Miso" in str(body["messages"][1]["content"])
            else {"content": "Maya visited Europe."}
        )
    )
    report = cycle(
        rv,
        server,
        answer(
            delete=[noise, important],
            save=[
                merge("Maya moved to Lisbon in 2019 for work.", moved, work),
                merge("The user's cat likes tuna and is 12.", cat, kitten),
                merge("Maya visited Paris and Rome.", paris, rome),
            ],
        ),
    )
    assert report.summary == (
        "consolidation summary — live 7, reviewed 8, created since last run 8, "
        "merged 2, repaired 1, rejected 1, ephemeral 1, protected 1"
    )
    assert len(live_ids(rv)) == 7 == rv.stats().live


# -- 15. no LLM ---------------------------------------------------------------------------------------------
def test_without_an_llm_consolidation_is_skipped_and_the_rest_runs(home: Path, clock: FakeClock) -> None:
    with open_engine(home, clock, None) as rv:
        put_all(rv, TEA, LAPTOP)
        report = rv.dream.run()
        assert report.phase == "completed"
        consolidation = report.passes["consolidation"]
        assert (consolidation.status, consolidation.reason) == ("skipped", "needs llm")
        assert all(report.passes[name].status == "ran" for name in NO_LLM_PASSES)


# -- related entries: a restatement worded too differently to cluster --------------------------------------
def test_a_late_restatement_is_shown_beside_its_reviewed_sibling_which_may_be_merged_not_pruned(
    rv: reverie.Reverie, server: ScriptedOpenAIServer, clock: FakeClock
) -> None:
    original = put(rv, "Maya moved to Lisbon in 2019 for the Atlas project.")
    put_all(rv, TEA, LAPTOP)
    cycle(rv, server, answer())  # all reviewed
    clock.advance(hours=7)
    later = put(rv, "In 2019 Maya relocated to Lisbon because of Atlas.")  # far below 0.88 token Jaccard
    report = cycle(rv, server, answer(delete=[original]))
    request = chats(server)[1]
    assert shown(request) == {later} and original in related(request)
    assert report.counts["related_kept"] == 1 and not rv.memory.get(original).archived  # never pruned
    rv.memory.edit(later, tags=["move"])  # re-opens it: shown again with its sibling
    clock.advance(hours=7)
    merged_text = "Maya moved to Lisbon in 2019 for the Atlas project."
    report = cycle(rv, server, answer(save=[merge(merged_text, later, original)]))
    assert report.counts["merged"] == 1
    assert rv.memory.get(original).superseded_by == rv.memory.get(later).superseded_by is not None


def test_related_entries_can_be_turned_off(home: Path, clock: FakeClock, server: ScriptedOpenAIServer) -> None:
    with open_engine(home, clock, server, dream={"consolidation_related_per_entry": 0}) as rv:
        put(rv, "Maya moved to Lisbon in 2019 for the Atlas project.")
        cycle(rv, server, answer())
        clock.advance(hours=7)
        put(rv, "In 2019 Maya relocated to Lisbon because of Atlas.")
        cycle(rv, server, answer())
        assert related(chats(server)[-1]) == set()
