"""Proactive memory (issue 9, part 4; seed 004) on both backends: rule-based extraction of every category into
its scope; the scripted LLM's extraction (a valid answer, an unknown category, malformed JSON, a failing LLM);
each memory reachable three ways (the entry, ``memory:{id}`` in the key-value memory, the graph) when it is
agent-wide and only as an entry when it is a user's; user-level memory shared by a user's agents and nothing
else shared; the session TTL; the decay formula's exact values, the hourly sweep and user memory that never
decays; the cap's eviction order (archived, not deleted); auto-consolidation on the tenth saving call keeping
the newest; the min_similarity floor; memorize_on_turn; the per-turn context; reserved agent ids; the CLI."""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reverie
from _template import new_store_file
from reverie import Scope
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.core.proactive import CATEGORIES
from reverie.errors import ConfigError, LLMError, NotFound, ValidationError
from reverie.proactive.service import PURPOSE
from reverie.prompts import AUTO_MEMORIZE, default_prompt
from reverie.testing import ChatReply, ScriptedOpenAIServer
from reverie.types import Change, MemoryEntry, user_agent

from ._dream import CHAT, llm_settings

BACKENDS = ["sqlite", "postgresql"]
EVERY_CATEGORY = (
    "Please be brief. I prefer dark mode. I'm a data engineer. I usually work at night. "
    "We're building a billing service. My name is Ana. Ugh, this still doesn't work."
)
Make = Callable[..., reverie.Reverie]
UNRELATED = (  # no two of them near-duplicates
    "alpha bravo charlie", "delta echo foxtrot", "golf hotel india", "juliet kilo lima", "mike november oscar",
    "papa quebec romeo", "sierra tango uniform", "victor whiskey xray", "yankee zulu amber", "basil cedar dune",
    "ember fjord grove", "heron iris jade", "kelp lotus maple", "nectar onyx pearl", "quartz raven saffron",
    "thyme umber violet",
)  # fmt: skip


def _open(url: str | None, request: pytest.FixtureRequest, home: Path, clock: FakeClock, **overrides: Any) -> Any:
    embedding = overrides.pop("embedding", {"provider": "hash", "background": False})
    options: dict[str, Any] = {
        "clock": clock,
        "embedding": embedding,
        "graph": {"extraction_background": False, **overrides.pop("graph", {})},
        "proactive": {"memorize_background": False, **overrides.pop("proactive", {})},
        **overrides,
    }
    if url is None:
        return reverie.open(home, **options)
    request.getfixturevalue("monkeypatch").setenv("REVERIE_HOME", str(home))  # a URL keeps the default home
    return reverie.open(url, **options)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock, sqlite_template: Path
) -> Iterator[Make]:
    """Opens an engine with the given settings (closed at the end of the test). On PostgreSQL every engine of
    a test shares the test's database: a second engine uses other ids."""
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else None  # dropped after the engines
    opened: list[reverie.Reverie] = []

    def _make(**overrides: Any) -> reverie.Reverie:
        home = tmp_path / f"home{len(opened)}"
        if url is None and "store" not in overrides:
            new_store_file(sqlite_template, home / "reverie.db", clock.now())
        engine = _open(url, request, home, clock, **overrides)
        opened.append(engine)
        return engine  # type: ignore[no-any-return]

    yield _make
    for engine in opened:
        engine.close()


@pytest.fixture
def rv(make: Make) -> reverie.Reverie:
    return make()


def _llm_rv(make: Make, server: ScriptedOpenAIServer, **proactive: Any) -> reverie.Reverie:
    return make(llm=llm_settings(server), memory={"expansion_enabled": False}, proactive=proactive)


def _one(rv: reverie.Reverie, content: str, category: str, kind: str, scope: Scope, confidence: float = 0.7) -> str:
    result = rv.proactive.remember(
        [{"content": content, "category": category, "scope": kind, "confidence": confidence}], scope=scope
    )
    assert len(result.saved) == 1, result
    return result.saved[0].id


def _stored(rv: reverie.Reverie, entry_id: str) -> MemoryEntry:
    owner = rv.store.facts.owner(entry_id)
    assert owner is not None
    entry = rv.store.facts.get(entry_id, owner)
    assert entry is not None
    return entry


def _contents(found: Any) -> list[str]:
    return [getattr(h, "entry", h).content for h in found]


# -- rules ---------------------------------------------------------------------------------------------------
def test_rules_save_every_category_in_its_scope(rv: reverie.Reverie, clock: FakeClock) -> None:
    scope = Scope("a", "u1", "s1")
    result = rv.proactive.auto_memorize(EVERY_CATEGORY, "Sorry about that!", scope=scope)
    assert result.method == "rules" and result.error is None and result.dropped == 0
    by_category = {r.category: r for r in result.saved}
    assert set(by_category) == set(CATEGORIES)
    for category, saved in by_category.items():
        entry = _stored(rv, saved.id)
        expected = {"project_context": Scope("a", "u1"), "frustration": scope}.get(
            category, Scope(user_agent("u1"), "u1")
        )
        assert entry.scope == expected, category
        assert saved.kind == {"project_context": "agent", "frustration": "session"}.get(category, "user")
        assert (entry.category, entry.source, "proactive" in entry.tags) == (category, "inferred", True)
        state = entry.metadata["proactive"]
        assert (state["scope"], state["access_count"]) == (saved.kind, 0)
        assert entry.confidence == state["base_confidence"] == saved.confidence
        assert entry.expires_at == (clock.now() + timedelta(hours=24) if category == "frustration" else None)
        assert [v.change for v in rv.store.versions.history(entry.id, entry.scope)] == [Change.CREATED]
    assert by_category["personal_detail"].content == "User's name is Ana"


def test_without_a_user_or_a_session_every_memory_is_the_agents(rv: reverie.Reverie) -> None:
    result = rv.proactive.auto_memorize(EVERY_CATEGORY, scope=Scope("a"))
    assert len(result.saved) == len(CATEGORIES)
    assert {(r.kind, r.entry.scope) for r in result.saved} == {("agent", Scope("a"))}
    assert all(r.entry.expires_at is None for r in result.saved)


def test_a_restated_memory_reinforces_the_entry(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.proactive.auto_memorize("I prefer dark mode.", scope=Scope("a", "u1")).saved[0]
    clock.advance(hours=1)
    again = rv.proactive.auto_memorize("Honestly, I prefer dark mode", scope=Scope("b", "u1")).saved[0]
    assert (again.id, again.outcome) == (first.id, "reinforced")  # the same user memory, from another agent
    assert _stored(rv, first.id).reinforcement_count == 2


# -- the scripted LLM ------------------------------------------------------------------------------------------
def test_the_llm_extracts_in_one_call(make: Make, server: ScriptedOpenAIServer) -> None:
    rv = _llm_rv(make, server)
    answer = {
        "memories": [
            {
                "content": "User prefers concise answers",
                "category": "communication_style",
                "scope": "user",
                "confidence": 0.9,
            },
            {
                "content": "The team deploys on Fridays",
                "category": "project_context",
                "scope": "agent",
                "confidence": 0.6,
            },
            {
                "content": "User is annoyed by the flaky build",
                "category": "frustration",
                "scope": "session",
                "confidence": 0.5,
            },
        ]
    }
    server.script_chat([json.dumps(answer)])
    result = rv.proactive.auto_memorize("Keep it short, we deploy Fridays.", "OK.", scope=Scope("a", "u1", "s1"))
    assert result.method == "llm" and result.error is None
    assert [(r.content, r.kind, r.confidence) for r in result.saved] == [
        ("User prefers concise answers", "user", 0.9),
        ("The team deploys on Fridays", "agent", 0.6),
        ("User is annoyed by the flaky build", "session", 0.5),
    ]
    assert [r.entry.scope for r in result.saved] == [
        Scope(user_agent("u1"), "u1"),
        Scope("a", "u1"),
        Scope("a", "u1", "s1"),
    ]
    requests = [r.body for r in server.requests if r.path == CHAT]
    assert len(requests) == 1
    system, user = requests[0]["messages"]
    assert system["content"] == default_prompt(AUTO_MEMORIZE)
    assert "Categories: " + ", ".join(CATEGORIES) in user["content"]
    assert "Keep it short, we deploy Fridays." in user["content"] and "OK." in user["content"]
    assert [(c.agent_id, c.purpose) for c in rv.usage_calls()] == [("a", PURPOSE)]


def test_an_unknown_category_is_dropped(make: Make, server: ScriptedOpenAIServer) -> None:
    rv = _llm_rv(make, server)
    answer = {
        "memories": [
            {"content": "User seems tired", "category": "mood", "scope": "session", "confidence": 0.4},
            {"content": "User prefers tea", "category": "preference", "scope": "user", "confidence": 0.8},
        ]
    }
    server.script_chat([json.dumps(answer)])
    result = rv.proactive.auto_memorize("I'd like some tea, I'm tired", scope=Scope("a", "u1"))
    assert ([r.content for r in result.saved], result.dropped) == (["User prefers tea"], 1)
    assert _contents(rv.proactive.list(scope=Scope("a", "u1"))) == ["User prefers tea"]


@pytest.mark.parametrize("answer", ["I think the user likes tea.", '{"memories": [{"content": "cut', '{"other": []}'])
def test_a_malformed_answer_saves_nothing_and_says_why(make: Make, server: ScriptedOpenAIServer, answer: str) -> None:
    rv = _llm_rv(make, server)
    server.script_chat([answer])
    result = rv.proactive.auto_memorize("I prefer tea.", scope=Scope("a", "u1"))
    assert result.saved == () and result.error is not None and "malformed" in result.error
    assert rv.proactive.list(scope=Scope("a", "u1")) == []


def test_a_failing_llm_raises_and_saves_nothing(make: Make, server: ScriptedOpenAIServer) -> None:
    rv = _llm_rv(make, server)
    server.script_chat([ChatReply(status=500)])
    with pytest.raises(LLMError):
        rv.proactive.auto_memorize("I prefer tea.", scope=Scope("a", "u1"))
    assert rv.proactive.list(scope=Scope("a", "u1")) == []


# -- three ways ------------------------------------------------------------------------------------------------
def test_an_agent_wide_memory_is_reachable_three_ways(rv: reverie.Reverie) -> None:
    result = rv.proactive.remember(
        [{"content": "The team is building Atlas for Acme Corp", "category": "project_context", "scope": "agent"}],
        scope=Scope("a"),
    )
    saved = result.saved[0]
    assert (saved.kv, saved.graph) == (True, True)
    # 1. by meaning
    assert [h.entry.id for h in rv.proactive.auto_retrieve("Atlas", scope=Scope("a"))] == [saved.id]
    # 2. by id, in the agent's key-value memory
    item = rv.kv.get("a", f"memory:{saved.id}")
    assert item.value == {"content": saved.content, "category": "project_context", "source": "proactive"}
    # 3. through the graph, once extracted
    assert rv.extract_pending() == 1
    named = {e.name: e.sources for e in rv.graph.list_entities("a")}
    assert saved.id in named["Atlas"] and saved.id in named["Acme Corp"]


def test_a_users_memory_is_neither_copied_to_the_kv_memory_nor_to_the_graph(rv: reverie.Reverie) -> None:
    found = rv.proactive.remember(
        [
            {"content": "The team is building Atlas for Acme Corp", "category": "project_context", "scope": "agent"},
            {"content": "User Ana Costa lives in Lisbon", "category": "personal_detail", "scope": "user"},
            {"content": "User is angry at Jenkins today", "category": "frustration", "scope": "session"},
        ],
        scope=Scope("a", "u1", "s1"),
    ).saved
    assert [(r.kind, r.kv, r.graph) for r in found] == [
        ("agent", False, False),
        ("user", False, False),
        ("session", False, False),
    ]
    assert rv.kv.list("a", "memory:") == []
    assert rv.store.facts.graph_extraction_pending(100) == []
    assert rv.extract_pending() == 0 and rv.graph.list_entities("a") == []


def test_archiving_a_memory_marks_its_key_value_copy_deleted(rv: reverie.Reverie) -> None:
    forgotten = _one(rv, "The team ships on Fridays", "project_context", "agent", Scope("a"))
    archived = _one(rv, "The team uses Postgres 16", "project_context", "agent", Scope("a"))
    rv.proactive.forget(forgotten, scope=Scope("a"))
    with pytest.raises(NotFound):
        rv.kv.get("a", f"memory:{forgotten}")
    assert _stored(rv, forgotten).archived
    rv.memory.archive(archived, scope=Scope("a"))  # outside proactive memory: the sweep catches up
    assert rv.kv.get("a", f"memory:{archived}").value["content"] == "The team uses Postgres 16"
    assert rv.proactive.sweep("a").copies_removed == 1
    with pytest.raises(NotFound):
        rv.kv.get("a", f"memory:{archived}")
    rv.kv.set("a", "memory:mine", {"content": "an app's own key"})  # not a copy: left alone
    assert rv.proactive.sweep("a").copies_removed == 0 and rv.kv.get("a", "memory:mine")


# -- scopes and sharing --------------------------------------------------------------------------------------------
def test_user_memory_is_shared_by_the_users_agents_and_nothing_else_is(rv: reverie.Reverie) -> None:
    rv.proactive.auto_memorize("I prefer green tea. We're building Atlas.", scope=Scope("a", "u1"))
    wide = _one(rv, "The team ships Atlas on Fridays", "project_context", "agent", Scope("a"))
    tea = rv.proactive.user_memories("u1")[0]
    assert tea.content == "User prefers green tea" and tea.scope == Scope(user_agent("u1"), "u1")

    assert _contents(rv.proactive.auto_retrieve("green tea", scope=Scope("b", "u1"))) == ["User prefers green tea"]
    assert _contents(rv.proactive.auto_retrieve("Atlas", scope=Scope("b", "u1"))) == []  # a's memories are a's
    assert _contents(rv.proactive.auto_retrieve("green tea", scope=Scope("b", "u2"))) == []  # u1's are u1's
    assert _contents(rv.proactive.auto_retrieve("green tea", scope=Scope("a"))) == []  # no user, no user memory
    assert _contents(rv.proactive.auto_retrieve("Atlas", scope=Scope("a", "u2"))) == ["The team ships Atlas on Fridays"]
    assert set(_contents(rv.proactive.auto_retrieve("Atlas", scope=Scope("a", "u1")))) == {
        "The team is building Atlas",
        "The team ships Atlas on Fridays",
    }
    assert _contents(rv.proactive.list(scope=Scope("b", "u1"))) == ["User prefers green tea"]
    assert rv.proactive.user_memories("u2") == []
    with pytest.raises(NotFound):
        rv.proactive.forget(wide, scope=Scope("b", "u1"))  # another agent's id
    assert rv.proactive.forget(tea.id, scope=Scope("b", "u1")).archived  # the user's memory, shared
    with pytest.raises(ValidationError):
        rv.proactive.auto_retrieve("tea", scope=Scope(user_agent("u1"), "u1"))


def test_session_memory_expires_after_the_ttl(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.proactive.auto_memorize("Ugh, the build still doesn't work.", scope=Scope("a", "u1", "s1"))
    query = "build doesn't work"
    assert len(rv.proactive.auto_retrieve(query, scope=Scope("a", "u1", "s1"))) == 1
    assert rv.proactive.auto_retrieve(query, scope=Scope("a", "u1", "s2")) == []  # another session
    clock.advance(hours=23)
    assert len(rv.proactive.list(scope=Scope("a", "u1", "s1"))) == 1
    clock.advance(hours=1, seconds=1)
    assert rv.proactive.auto_retrieve(query, scope=Scope("a", "u1", "s1")) == []
    assert rv.proactive.list(scope=Scope("a", "u1", "s1")) == []


# -- decay ---------------------------------------------------------------------------------------------------------
def test_decay_follows_the_formula_and_an_access_boosts(rv: reverie.Reverie, clock: FakeClock) -> None:
    fridays = _one(rv, "The team ships on Fridays", "project_context", "agent", Scope("a"), 0.6)
    tea = _one(rv, "User prefers green tea", "preference", "user", Scope("a", "u1"), 0.8)
    assert _stored(rv, fridays).confidence == 0.6
    clock.advance(days=30)
    assert rv.proactive.sweep("a").decayed == (fridays,)
    assert _stored(rv, fridays).confidence == pytest.approx(0.6 * math.exp(-0.3), abs=1e-12)

    [hit] = rv.proactive.auto_retrieve("Fridays", scope=Scope("a"))  # read: 1 access, now
    assert hit.entry.confidence == pytest.approx(0.6) and hit.entry.metadata["proactive"]["access_count"] == 1
    rv.proactive.auto_retrieve("Fridays", scope=Scope("a"))
    assert rv.proactive.flush_accesses() == 1  # accesses are written in batches
    assert _stored(rv, fridays).confidence == 1.0  # 0.6 x (1 + log2 2), capped
    clock.advance(days=10)
    assert rv.proactive.sweep("a").decayed == ()  # 0.6 x e^-0.1 x 2 > 1: still capped
    clock.advance(days=80)
    rv.proactive.sweep("a")
    assert _stored(rv, fridays).confidence == pytest.approx(0.6 * math.exp(-0.9) * 2, abs=1e-12)
    # user memory never decays
    assert _stored(rv, tea).confidence == 0.8
    assert [h.entry.confidence for h in rv.proactive.auto_retrieve("green tea", scope=Scope("b", "u1"))] == [0.8]
    clock.advance(days=400)
    rv.proactive.sweep("b")
    assert _stored(rv, tea).confidence == 0.8


def test_the_decay_sweep_runs_in_the_dream_at_most_hourly(make: Make, clock: FakeClock) -> None:
    rv = make(embedding={"provider": "none"})
    entry = _one(rv, "The team ships on Fridays", "project_context", "agent", Scope("a"), 0.6)
    clock.advance(days=2)
    assert rv.proactive.auto_retrieve("zebra", scope=Scope("a")) == []  # a context build never sweeps
    assert _stored(rv, entry).confidence == 0.6
    assert rv.dream.run("a").passes["proactive_sweep"].status == "ran"  # the dream's maintenance: due (never ran)
    assert _stored(rv, entry).confidence == pytest.approx(0.6 * math.exp(-0.02), abs=1e-12)
    clock.advance(minutes=30)
    assert rv.dream.run("a").passes["proactive_sweep"].status == "skipped"  # not due: the old value stays
    assert _stored(rv, entry).confidence == pytest.approx(0.6 * math.exp(-0.02), abs=1e-12)
    assert rv.proactive.sweep("a", force=False).ran is False
    clock.advance(minutes=31)
    rv.dream.run("a")
    days = 2 + 61 / 1440
    assert _stored(rv, entry).confidence == pytest.approx(0.6 * math.exp(-0.01 * days), abs=1e-12)


# -- the cap -------------------------------------------------------------------------------------------------------
def test_the_cap_archives_the_weakest_then_the_oldest(make: Make, clock: FakeClock) -> None:
    rv = make(proactive={"max_entries_per_agent": 3})
    facts = [
        ("The team ships on Fridays", 0.9),
        ("The billing service runs on Postgres", 0.3),
        ("Atlas launches in March", 0.5),
        ("Reviews happen every Tuesday morning", 0.3),
    ]
    ids = []
    for content, confidence in facts:
        clock.advance(minutes=1)
        ids.append(_one(rv, content, "project_context", "agent", Scope("a", "u1"), confidence))
    live = {e.id for e in rv.proactive.list(scope=Scope("a", "u1"), include_user=False)}
    assert live == {ids[0], ids[2], ids[3]}  # the lowest confidence, and of those the oldest, went
    gone = _stored(rv, ids[1])
    assert gone.archived and gone.content == "The billing service runs on Postgres"  # archived, not deleted
    clock.advance(minutes=1)
    result = rv.proactive.remember(
        [{"content": "Standups are at nine", "category": "work_style", "scope": "agent", "confidence": 0.4}],
        scope=Scope("a"),  # agent-wide counts toward the same agent's cap
    )
    assert result.evicted == (ids[3],)
    # user memory is capped per user the same way
    user_ids = [
        _one(rv, text, "preference", "user", Scope("b", "u9"), conf)
        for text, conf in (("User likes tea", 0.2), ("User likes jazz", 0.6), ("User likes hiking", 0.7))
    ]
    last = rv.proactive.remember(
        [{"content": "User likes chess", "category": "preference", "scope": "user", "confidence": 0.5}],
        scope=Scope("c", "u9"),
    )
    assert last.evicted == (user_ids[0],) and len(rv.proactive.user_memories("u9")) == 3


# -- consolidation -------------------------------------------------------------------------------------------------
def test_auto_consolidation_fires_on_the_tenth_saving_call_and_keeps_the_newest(
    rv: reverie.Reverie, clock: FakeClock
) -> None:
    scope = Scope("a", "u1")
    dark, fridays = [], []
    for category in ("preference", "communication_style"):  # another category: not folded at save time
        dark.append(_one(rv, "User prefers dark mode.", category, "user", scope))
        clock.advance(minutes=1)
    for category in ("project_context", "work_style"):
        fridays.append(_one(rv, "The team ships on Fridays", category, "agent", scope))
        clock.advance(minutes=1)
    for call in range(12):  # a call that saves nothing is not counted
        clock.advance(minutes=1)
        assert rv.proactive.auto_memorize(f"Nothing to note {call}", scope=scope).consolidation is None
    unrelated = iter(UNRELATED)
    for _ in range(5, 10):
        clock.advance(minutes=1)
        _one(rv, next(unrelated), "project_context", "agent", scope)
    assert all(not _stored(rv, i).archived for i in dark + fridays)
    result = rv.proactive.remember(  # the tenth saving call
        [{"content": next(unrelated), "category": "project_context", "scope": "agent"}], scope=scope
    )
    assert result.consolidation is not None
    merged = {(m.keep, m.archived, m.rungs) for m in result.consolidation.merges}
    assert merged == {(dark[1], (dark[0],), ("substring",)), (fridays[1], (fridays[0],), ("substring",))}
    old, kept = _stored(rv, dark[0]), _stored(rv, dark[1])
    assert old.archived and old.superseded_by == kept.id and not kept.archived
    assert kept.metadata["mergedFrom"] == [old.id]
    assert rv.store.versions.history(old.id, old.scope)[-1].change == Change.SUPERSEDED
    for _ in range(11, 20):
        item = {"content": next(unrelated), "category": "project_context", "scope": "agent"}
        assert rv.proactive.remember([item], scope=scope).consolidation is None
    item = {"content": next(unrelated), "category": "project_context", "scope": "agent"}
    assert rv.proactive.remember([item], scope=scope).consolidation is not None  # the twentieth


def test_manual_consolidation_scans_the_whole_history(make: Make, clock: FakeClock) -> None:
    rv = make(proactive={"consolidate_window": 2, "consolidate_every": 1000})
    first = _one(rv, "The team ships on Fridays", "project_context", "agent", Scope("a"))
    clock.advance(minutes=1)
    second = _one(rv, "The team ships on Fridays", "work_style", "agent", Scope("a"))
    for text in ("Atlas launches in March", "Reviews are on Tuesdays", "Standups are at nine"):
        clock.advance(minutes=1)
        _one(rv, text, "project_context", "agent", Scope("a"))
    assert rv.proactive.consolidate("a", full=False).merges == ()  # the window holds the two newest only
    report = rv.proactive.consolidate("a")
    assert [(m.keep, m.archived) for m in report.merges] == [(second, (first,))] and report.examined == 5
    with pytest.raises(NotFound):
        rv.kv.get("a", f"memory:{first}")  # the archived one's copy went with it


def test_near_duplicates_by_cosine_are_merged_when_both_have_vectors(make: Make, clock: FakeClock) -> None:
    rv = make(proactive={"duplicate_cosine": 0.75, "consolidate_every": 1000})
    first = _one(rv, "User enjoys long hikes in the Alps every summer", "preference", "agent", Scope("a"))
    clock.advance(minutes=1)
    second = _one(rv, "User enjoys long hikes in the Alps every summer holiday", "work_style", "agent", Scope("a"))
    rv.embed_pending()
    report = rv.proactive.consolidate("a")
    assert [(m.keep, m.archived) for m in report.merges] == [(second, (first,))]


# -- min_similarity -----------------------------------------------------------------------------------------------
def test_the_min_similarity_floor(make: Make) -> None:
    rv = make(proactive={"min_similarity": 0.95})
    _one(rv, "The team ships on Fridays", "project_context", "agent", Scope("a"))
    rv.embed_pending()
    assert _contents(rv.proactive.auto_retrieve("The team ships on Fridays", scope=Scope("a"))) == [
        "The team ships on Fridays"
    ]
    assert rv.proactive.auto_retrieve("ships", scope=Scope("a")) == []  # BM25 finds it; the floor refuses it
    found = rv.proactive.auto_retrieve("ships", scope=Scope("a"), min_similarity=0.0)
    assert _contents(found) == ["The team ships on Fridays"]
    inert = make(embedding={"provider": "none"}, proactive={"min_similarity": 0.95})  # nothing is scored
    _one(inert, "The team ships on Fridays", "project_context", "agent", Scope("other"))
    assert _contents(inert.proactive.auto_retrieve("ships", scope=Scope("other"))) == ["The team ships on Fridays"]


def test_a_per_agent_floor_wins_over_the_deployments(make: Make) -> None:
    rv = make(proactive={"min_similarity": 0.95, "agent_min_similarity": {"lenient": 0.0}})
    for agent in ("strict", "lenient"):
        _one(rv, "The team ships on Fridays", "project_context", "agent", Scope(agent))
    rv.embed_pending()
    assert rv.proactive.auto_retrieve("ships", scope=Scope("strict")) == []
    assert len(rv.proactive.auto_retrieve("ships", scope=Scope("lenient"))) == 1


# -- memorize on turn, and the per-turn context --------------------------------------------------------------------
def test_memorize_on_turn_by_rules(make: Make) -> None:
    rv = make(proactive={"memorize_on_turn": True})
    rv.conversation.add_turn("s1", "user", "I live in Porto.", create=True, agent_id="a", user_id="u1")
    assert rv.proactive.user_memories("u1") == []  # only once the assistant answered
    rv.conversation.add_turn("s1", "assistant", "Noted, Porto it is.", agent_id="a", user_id="u1")
    assert _contents(rv.proactive.user_memories("u1")) == ["User lives in Porto"]
    rv.conversation.add_turn("s1", "assistant", "Anything else?", agent_id="a", user_id="u1")  # nothing new
    assert len(rv.proactive.user_memories("u1")) == 1
    off = make()
    off.conversation.add_turn("s2", "user", "I live in Porto.", create=True, agent_id="a", user_id="u2")
    off.conversation.add_turn("s2", "assistant", "Noted.", agent_id="a", user_id="u2")
    assert off.proactive.user_memories("u2") == []


def test_memorize_on_turn_with_the_llm_is_queued(make: Make, server: ScriptedOpenAIServer) -> None:
    rv = _llm_rv(make, server, memorize_on_turn=True)
    answer = {"memories": [{"content": "User lives in Porto", "category": "personal_detail", "scope": "user"}]}
    server.script_chat([json.dumps(answer)])
    rv.conversation.add_turn("s1", "user", "I live in Porto.", create=True, agent_id="a", user_id="u1")
    rv.conversation.add_turn("s1", "assistant", "Noted.", agent_id="a", user_id="u1")
    assert rv.proactive.user_memories("u1") == [] and rv.proactive.turns is not None
    assert rv.proactive.turns.pending == 1
    assert rv.proactive.memorize_pending() == 1
    assert _contents(rv.proactive.user_memories("u1")) == ["User lives in Porto"]


def test_memorize_on_turn_with_the_llm_runs_in_the_background(make: Make, server: ScriptedOpenAIServer) -> None:
    rv = make(
        llm=llm_settings(server),
        memory={"expansion_enabled": False},
        proactive={"memorize_on_turn": True, "memorize_background": True},
    )
    answer = {"memories": [{"content": "User lives in Porto", "category": "personal_detail", "scope": "user"}]}
    server.script_chat([json.dumps(answer)])
    rv.conversation.add_turn("s1", "user", "I live in Porto.", create=True, agent_id="a", user_id="u1")
    rv.conversation.add_turn("s1", "assistant", "Noted.", agent_id="a", user_id="u1")  # returns at once
    deadline = time.monotonic() + 20
    while not rv.proactive.user_memories("u1"):
        assert time.monotonic() < deadline, "the background thread did not memorize the turn"
        time.sleep(0.02)
    assert _contents(rv.proactive.user_memories("u1")) == ["User lives in Porto"]


def test_the_context_of_a_turn_includes_the_users_memory_once(make: Make) -> None:
    rv = make()
    tea = _one(rv, "User prefers green tea", "preference", "user", Scope("a", "u1"))
    own = _one(rv, "The team drinks green tea on Fridays", "project_context", "agent", Scope("b"))
    rv.conversation.create("s1", agent_id="b")
    built = rv.context.build("s1", "which green tea should we order?", agent_id="b", user_id="u1")
    sections = {s.name: s.messages[0]["content"] for s in built.sections}
    assert "User prefers green tea" in sections["proactive"]
    assert own in sections["recall"] and own not in sections["proactive"]  # recall injected it already
    assert set(built.injected) == {tea, own}
    again = rv.context.build("s1", "which green tea should we order?", agent_id="b", user_id="u1")
    assert "proactive" not in {s.name for s in again.sections}  # the session was given it already
    other = rv.context.build("s1", "which green tea should we order?", agent_id="b", user_id="u2")
    assert "proactive" not in {s.name for s in other.sections}
    disabled = make(proactive={"enabled": False})
    _one(disabled, "User prefers oolong tea", "preference", "user", Scope("a", "u3"))
    disabled.conversation.create("s2", agent_id="c")
    quiet = disabled.context.build("s2", "which oolong tea?", agent_id="c", user_id="u3")
    assert "proactive" not in {s.name for s in quiet.sections}


def test_a_context_build_fetches_the_messages_candidates_once(make: Make) -> None:
    """The recall step and the proactive block search the same message in the same scope: the candidate
    lists are fetched once (the user's reserved scope is a second, different search) and both still show."""
    rv = make()
    rv.embed_pending()
    own = _one(rv, "The team drinks green tea on Fridays", "project_context", "agent", Scope("b"))
    tea = _one(rv, "User prefers green tea", "preference", "user", Scope("b", "u1"))
    rv.memory.save("Green tea orders go through the office manager", scope=Scope("b"))
    rv.embed_pending()
    rv.conversation.create("s1", agent_id="b")
    before = Counter(rv.recall.fetches)
    built = rv.context.build("s1", "which green tea should we order?", agent_id="b", user_id="u1")
    fetched = rv.recall.fetches - before
    assert fetched == Counter({"lexical": 2, "vector": 2})  # agent scope once for both steps, user scope once
    assert {own, tea} <= set(built.injected)
    before = Counter(rv.recall.fetches)
    rv.memory.search("which green tea should we order?", scope=Scope("b", "u1", "s1"))
    rv.memory.search("which green tea should we order?", scope=Scope("b", "u1", "s1"))
    assert rv.recall.fetches - before == Counter({"lexical": 2, "vector": 2})  # outside a build: no sharing


# -- validation and reserved ids -----------------------------------------------------------------------------------
def test_reserved_agent_ids_are_refused_everywhere_public(rv: reverie.Reverie, tmp_path: Path) -> None:
    for call in (
        lambda: rv.memory.save("x", scope=Scope(user_agent("u1"), "u1")),
        lambda: rv.memory.search("x", scope=Scope(user_agent("u1"), "u1")),
        lambda: rv.memory.get("000000000000", scope=Scope("@other")),
        lambda: rv.keys.create("k", agent_id=user_agent("u1"), scopes=["memory_read"]),
        lambda: rv.proactive.auto_memorize("I prefer tea.", scope=Scope(user_agent("u1"), "u1")),
        lambda: rv.proactive.sweep(user_agent("u1")),
    ):
        with pytest.raises(ValidationError, match="reserved"):
            call()
    with pytest.raises(ConfigError, match="reserved"):
        reverie.open(tmp_path / "bad", agents={"@user": {"allow_self_consolidation": True}})


def test_input_is_validated_before_anything_is_written(rv: reverie.Reverie) -> None:
    bad: list[Callable[[], object]] = [
        lambda: rv.proactive.auto_memorize(42, scope=Scope("a")),  # type: ignore[arg-type]
        lambda: rv.proactive.auto_memorize("x" * 100_001, scope=Scope("a")),
        lambda: rv.proactive.remember([{"content": "User likes tea", "category": "mood"}], scope=Scope("a")),
        lambda: rv.proactive.remember([{"content": "ok", "category": "preference"}, "x"], scope=Scope("a")),  # type: ignore[list-item]
        lambda: rv.proactive.remember("User likes tea", scope=Scope("a")),  # type: ignore[arg-type]
        lambda: rv.proactive.auto_retrieve("tea", scope=Scope("a"), limit=0),
        lambda: rv.proactive.auto_retrieve("tea", scope=Scope("a"), min_similarity=2.0),
        lambda: rv.proactive.list(scope=Scope("a"), category="Not A Category"),
        lambda: rv.proactive.forget("", scope=Scope("a")),
        lambda: rv.proactive.consolidate("a", full="yes"),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(ValidationError):
            call()
    assert rv.proactive.list(scope=Scope("a")) == [] and rv.store.stats().live == 0


# -- the CLI ---------------------------------------------------------------------------------------------------------
def test_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "cli"
    (home).mkdir()
    (home / "reverie.toml").write_text('[embedding]\nprovider = "hash"\n', encoding="utf-8")
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(app, ["--home", str(home), "proactive", *args])
        assert result.exit_code == 0, result.output
        return result.output

    saved = json.loads(run("memorize", "I prefer green tea. We're building Atlas.", "-a", "a", "-u", "u1", "--json"))
    assert [(s["category"], s["kind"]) for s in saved["saved"]] == [
        ("preference", "user"),
        ("project_context", "agent"),
    ]
    assert "User prefers green tea" in run("list", "-a", "b", "-u", "u1")
    hits = json.loads(run("retrieve", "green tea", "-a", "b", "-u", "u1", "--json"))["hits"]
    assert [h["entry"]["content"] for h in hits] == ["User prefers green tea"]
    assert json.loads(run("consolidate", "-a", "a", "-u", "u1", "--json"))["merges"] == []
    assert json.loads(run("sweep", "-a", "a", "--json"))["ran"] is True
    assert "not due yet" in run("sweep", "-a", "a", "--if-due")
    bad = runner.invoke(app, ["--home", str(home), "proactive", "list", "-a", "@user"])
    assert bad.exit_code == 2 and "reserved" in bad.output
