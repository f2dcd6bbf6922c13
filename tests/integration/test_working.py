"""Working memory and the tool-result stash through the engine, on a real SQLite store and a FakeClock."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from _template import new_store_file
from reverie.clock import FakeClock
from reverie.embed.base import Vectors
from reverie.errors import EmbeddingError, NotFound, ValidationError
from reverie.working.service import NO_STASH, WorkingMemory, WorkingMemoryView


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def engine(home: Path, clock: FakeClock, sqlite_template: Path) -> Iterator[reverie.Reverie]:
    new_store_file(sqlite_template, home / "reverie.db", clock.now())
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        yield rv


@pytest.fixture
def session(engine: reverie.Reverie) -> WorkingMemoryView:
    return engine.working.for_namespace("session/abc123")


def _minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def _stored(engine: reverie.Reverie) -> int:
    return engine.store.working.count("default", "", now=engine.clock.now())


# -- TTLs -------------------------------------------------------------------------------------------
def test_an_entry_expires_after_the_default_five_minutes(
    engine: reverie.Reverie, session: WorkingMemoryView, clock: FakeClock
) -> None:
    saved = session.save("emails_inbox", "3 unread from Ana", category="email", tags=["inbox", "unread"])
    assert saved.entry.key == "session/abc123/emails_inbox"
    assert saved.entry.expires_at - saved.entry.stored_at == _minutes(5) and saved.notes == ()
    clock.advance(minutes=4, seconds=59)
    assert session.get("emails_inbox").value == "3 unread from Ana"
    clock.advance(seconds=1)
    with pytest.raises(NotFound, match="emails_inbox"):
        session.get("emails_inbox")
    assert session.search().entries == ()


def test_an_explicit_ttl_is_kept(session: WorkingMemoryView, clock: FakeClock) -> None:
    session.save("draft", "Dear Ana", ttl_minutes=90)
    clock.advance(minutes=89)
    assert session.get("draft").value == "Dear Ana"
    clock.advance(minutes=1)
    with pytest.raises(NotFound):
        session.get("draft")


def test_background_writes_live_at_least_four_hours(engine: reverie.Reverie, clock: FakeClock) -> None:
    worker = engine.working.for_namespace("subagent/t1b2c3", background=True)
    saved = worker.save("research_results", "three sources agree", ttl_minutes=1)
    assert saved.entry.expires_at - saved.entry.stored_at == _minutes(240)
    assert any("raised from 1 to 240" in note for note in saved.notes)
    longer = worker.save("long", "kept a day", ttl_minutes=1440)  # above the floor: untouched
    assert longer.entry.expires_at - longer.entry.stored_at == _minutes(1440) and longer.notes == ()
    omitted = worker.save("omitted", "no ttl given")
    assert omitted.entry.expires_at - omitted.entry.stored_at == _minutes(240)
    clock.advance(hours=3, minutes=59)
    assert worker.get("research_results").value == "three sources agree"
    clock.advance(minutes=1)
    with pytest.raises(NotFound):
        worker.get("research_results")


# -- the per-namespace cap ----------------------------------------------------------------------------
def test_a_full_namespace_evicts_the_oldest_stored_entry(
    engine: reverie.Reverie, session: WorkingMemoryView, clock: FakeClock
) -> None:
    other = engine.working.for_namespace("session/other")
    other.save("untouched", "another namespace")
    for n in range(50):
        session.save(f"k{n:02d}", f"value {n}", ttl_minutes=60)
        clock.advance(seconds=1)
    assert len(session.search().entries) == 50
    saved = session.save("k50", "one too many", ttl_minutes=60)
    assert [e.key for e in saved.evicted] == ["session/abc123/k00"]
    assert any("evicted session/abc123/k00" in note for note in saved.notes)
    with pytest.raises(NotFound):
        session.get("k00")
    listing = session.search().entries
    assert len(listing) == 50 and listing[0].key == "session/abc123/k50"
    assert other.get("untouched").value == "another namespace"


def test_rewriting_a_key_in_a_full_namespace_evicts_nothing(session: WorkingMemoryView, clock: FakeClock) -> None:
    for n in range(50):
        session.save(f"k{n:02d}", f"value {n}", ttl_minutes=60)
    clock.advance(seconds=1)
    saved = session.save("k00", "rewritten", ttl_minutes=60)
    assert saved.evicted == () and saved.notes == ()
    assert len(session.search().entries) == 50
    assert session.search().entries[0].value == "rewritten"


def test_expired_entries_do_not_count_against_the_cap(session: WorkingMemoryView, clock: FakeClock) -> None:
    for n in range(50):
        session.save(f"old{n}", "short-lived")  # 5 minutes
    clock.advance(minutes=6)
    saved = session.save("fresh", "room again")
    assert saved.evicted == ()


# -- namespaces -------------------------------------------------------------------------------------
def test_reads_cross_namespaces_by_full_key_and_by_namespace(engine: reverie.Reverie) -> None:
    heartbeat = engine.working.for_namespace("patrol/heartbeat", background=True)
    heartbeat.save("latest-briefing", "All quiet overnight", category="patrol-finding")
    heartbeat.save("alerts", "Disk at 91% on db-2", tags=["urgent"])
    engine.working.for_namespace("patrol/inbox", background=True).save("summary", "Two invoices due")
    subagent = engine.working.for_namespace("subagent/t1b2c3", background=True)
    subagent.save("research_results", "Lisbon has 3 candidate venues")
    user = engine.working.for_namespace("session/abc123")

    assert user.get("subagent/t1b2c3/research_results").value == "Lisbon has 3 candidate venues"
    assert user.get("patrol/heartbeat/alerts").tags == ("urgent",)
    assert {e.key for e in user.search(namespace="subagent/t1b2c3").entries} == {"subagent/t1b2c3/research_results"}
    patrol = user.search(namespace="patrol")
    assert patrol.resolved_prefix == "patrol"
    assert {e.key for e in patrol.entries} == {
        "patrol/heartbeat/latest-briefing",
        "patrol/heartbeat/alerts",
        "patrol/inbox/summary",
    }
    found = user.search("disk alert", namespace="patrol/heartbeat")
    assert [h.entry.key for h in found.hits] == ["patrol/heartbeat/alerts"]
    assert user.search().entries == ()  # the own namespace is empty
    assert user.search("disk").hits == ()


def test_a_plain_key_reads_the_own_namespace_only(engine: reverie.Reverie) -> None:
    engine.working.for_namespace("session/one").save("notes", "mine")
    with pytest.raises(NotFound):
        engine.working.for_namespace("session/two").get("notes")


def test_agents_are_isolated(engine: reverie.Reverie) -> None:
    engine.working.for_namespace("session/s", agent_id="agent-a").save("k", "a's")
    b = engine.working.for_namespace("session/s", agent_id="agent-b")
    with pytest.raises(NotFound):
        b.get("k")
    assert b.search(namespace="session").entries == ()


def test_writes_outside_the_own_namespace_are_refused(engine: reverie.Reverie, session: WorkingMemoryView) -> None:
    for key in ("session/other/x", "patrol/heartbeat/alerts", "subagent/t1/results"):
        with pytest.raises(ValidationError, match="outside your own namespace") as caught:
            session.save(key, "sneaky")
        assert caught.value.field == "key"
    with pytest.raises(ValidationError, match="outside your own namespace"):
        session.delete("patrol/heartbeat/alerts")
    assert _stored(engine) == 0
    assert session.save("session/abc123/full", "a full key inside").entry.key == "session/abc123/full"


def test_callers_may_not_write_under_stash(engine: reverie.Reverie, session: WorkingMemoryView) -> None:
    with pytest.raises(ValidationError, match="only the tool-result stash writes") as caught:
        session.save("stash/abc123/call_1", "forged tool output")
    assert caught.value.field == "key"
    engine.stash.park("default", "abc123", "call_1", "web_fetch", "the real page")
    with pytest.raises(ValidationError, match="only the tool-result stash"):
        session.delete("stash/abc123/call_1")
    assert session.get("stash/abc123/call_1").value == "the real page"


@pytest.mark.parametrize("namespace", ["session", "stash/abc", "session/abc/extra", "other/x", "session/a b", 7])
def test_a_bad_own_namespace_is_refused(engine: reverie.Reverie, namespace: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        engine.working.for_namespace(namespace)
    assert caught.value.field == "namespace"


# -- the tool-result stash ------------------------------------------------------------------------------
def test_park_stores_under_the_run_session_with_tags_and_ttl(engine: reverie.Reverie, clock: FakeClock) -> None:
    assert engine.stash.prefix("abc123") == "stash/abc123"
    assert engine.stash.key("abc123", "call_xyz") == "stash/abc123/call_xyz"
    parked = engine.stash.park("default", "abc123", "call_xyz", "web_fetch", "<html>" + "x" * 5000)
    assert parked.key == "stash/abc123/call_xyz"
    assert parked.tags == ("stash", "tool-result", "tool:web_fetch")
    assert parked.expires_at - parked.stored_at == _minutes(60)
    clock.advance(minutes=60)
    with pytest.raises(NotFound):
        engine.working.for_namespace("session/abc123").get("stash/abc123/call_xyz")


def test_stash_resolves_to_the_current_run_and_says_so_outside_one(engine: reverie.Reverie) -> None:
    engine.stash.park("default", "abc123", "call_1", "web_fetch", "page one about invoices")
    engine.stash.park("default", "abc123", "call_2", "mcp_query", "rows about shipments")
    engine.stash.park("default", "zzz999", "call_9", "web_fetch", "another conversation's invoices")
    session = engine.working.for_namespace("session/abc123")

    outside = session.search(namespace="stash")
    assert outside.resolved_prefix is None and outside.entries == () and outside.hits == ()
    assert outside.notes == (NO_STASH,)
    assert engine.stash.current_prefix() is None

    with engine.stash.run("abc123") as prefix:
        assert prefix == "stash/abc123" == engine.stash.current_prefix()
        listing = session.search(namespace="Stash")
        assert listing.resolved_prefix == "stash/abc123"
        assert [e.key for e in listing.entries] == ["stash/abc123/call_2", "stash/abc123/call_1"]
        found = session.search("invoices", namespace="STASH")
        assert [h.entry.key for h in found.hits] == ["stash/abc123/call_1"]
        assert found.hits[0].preview == "page one about invoices"
    assert engine.stash.current_prefix() is None
    # The literal path still reads any stash prefix.
    assert [e.key for e in session.search(namespace="stash/zzz999").entries] == ["stash/zzz999/call_9"]


def test_the_stash_prefix_follows_the_run_not_the_namespace(engine: reverie.Reverie) -> None:
    subagent = engine.working.for_namespace("subagent/t1", background=True)
    with engine.stash.run("subagent-t1"):
        engine.stash.park("default", "subagent-t1", "call_1", "search", "the subagent's raw results")
        listing = subagent.search(namespace="stash")
    assert listing.resolved_prefix == "stash/subagent-t1"
    assert [e.key for e in listing.entries] == ["stash/subagent-t1/call_1"]


def test_nested_runs_restore_the_outer_prefix(engine: reverie.Reverie) -> None:
    with engine.stash.run("outer"):
        with engine.stash.run("inner"):
            assert engine.stash.current_prefix() == "stash/inner"
        assert engine.stash.current_prefix() == "stash/outer"


def test_concurrent_runs_in_threads_each_see_their_own_stash(engine: reverie.Reverie) -> None:
    engine.stash.park("default", "run-a", "call_1", "web_fetch", "result of run a")
    engine.stash.park("default", "run-b", "call_1", "web_fetch", "result of run b")
    barrier = threading.Barrier(2, timeout=10)
    seen: dict[str, tuple[str | None, list[str]]] = {}

    def run(session_id: str) -> None:
        view = engine.working.for_namespace(f"session/{session_id}")
        with engine.stash.run(session_id):
            barrier.wait()  # both runs are bound at once
            listing = view.search(namespace="stash")
            barrier.wait()
            seen[session_id] = (engine.stash.current_prefix(), [e.value for e in listing.entries])

    threads = [threading.Thread(target=run, args=(s,)) for s in ("run-a", "run-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert seen == {
        "run-a": ("stash/run-a", ["result of run a"]),
        "run-b": ("stash/run-b", ["result of run b"]),
    }
    assert engine.stash.current_prefix() is None


def test_concurrent_runs_in_async_tasks_each_see_their_own_stash(engine: reverie.Reverie) -> None:
    async def run(session_id: str, started: asyncio.Event, other: asyncio.Event) -> str | None:
        with engine.stash.run(session_id):
            started.set()
            await other.wait()  # the other task has bound its prefix meanwhile
            return engine.stash.current_prefix()

    async def main() -> list[str | None]:
        a, b = asyncio.Event(), asyncio.Event()
        return list(await asyncio.gather(run("run-a", a, b), run("run-b", b, a)))

    assert asyncio.run(main()) == ["stash/run-a", "stash/run-b"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("default", "a/b", "call_1", "web", "x"), "session_id"),
        (("default", "abc", "../x", "web", "x"), "call_id"),
        (("default", "abc", "call_1", "", "x"), "tool_name"),
        (("", "abc", "call_1", "web", "x"), "agent_id"),
        (("default", "abc", "call_1", "web", 42), "value"),
    ],
)
def test_park_validates_before_storing(engine: reverie.Reverie, args: tuple[Any, ...], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        engine.stash.park(*args)
    assert caught.value.field == field
    assert _stored(engine) == 0


# -- persistence and the sweep ----------------------------------------------------------------------------
def test_entries_persist_across_reopening_and_expired_ones_are_discarded(home: Path, clock: FakeClock) -> None:
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        view = rv.working.for_namespace("patrol/heartbeat")
        view.save("short", "gone soon", ttl_minutes=10)
        view.save("long", "kept", ttl_minutes=120, category="patrol-finding", tags=["urgent"])
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        view = rv.working.for_namespace("patrol/heartbeat")
        assert view.get("short").value == "gone soon"
        assert view.get("long").tags == ("urgent",)
    clock.advance(minutes=30)
    with reverie.open(home, clock=clock, embedding={"provider": "none"}) as rv:
        view = rv.working.for_namespace("patrol/heartbeat")
        with pytest.raises(NotFound):
            view.get("short")
        assert [e.key for e in view.inventory()] == ["patrol/heartbeat/long"]
        assert rv.working.sweep() == 1
        assert rv.store.working.get("default", "patrol/heartbeat/short", now=clock.now() - _minutes(60)) is None
        assert rv.working.sweep() == 0


def test_writes_sweep_expired_entries_at_most_hourly(engine: reverie.Reverie, clock: FakeClock) -> None:
    view = engine.working.for_namespace("session/s")
    view.save("first", "x", ttl_minutes=1)  # the first write sweeps (nothing yet)
    clock.advance(minutes=2)
    view.save("second", "y", ttl_minutes=600)  # within the hour: no sweep, the expired row stays
    assert engine.store.working.get("default", "session/s/first", now=clock.now() - _minutes(2)) is not None
    clock.advance(minutes=60)
    view.save("third", "z", ttl_minutes=600)  # an hour on: swept
    assert engine.store.working.get("default", "session/s/first", now=clock.now() - _minutes(70)) is None


# -- search and listing --------------------------------------------------------------------------------
def test_a_search_is_capped_at_twenty_hits_with_previews(session: WorkingMemoryView) -> None:
    for n in range(30):
        session.save(f"page{n:02d}", f"chunk {n} of the quarterly report " + "lorem ipsum " * 40, ttl_minutes=60)
    session.save("unrelated", "nothing to see", ttl_minutes=60)
    found = session.search("quarterly report")
    assert len(found.hits) == 20 and not found.capped
    assert found.resolved_prefix == "session/abc123" and found.query == "quarterly report"
    for hit in found.hits:
        assert len(hit.preview) == 120 and hit.preview.endswith("…")
        assert hit.entry.value.startswith(hit.preview[:-1])
        assert 0.0 <= hit.score <= 1.0 and hit.matched_by == "bm25"
    assert "session/abc123/unrelated" not in {h.entry.key for h in found.hits}


def test_search_filters_by_category_and_tags(session: WorkingMemoryView) -> None:
    session.save("a", "invoice from Ana", category="email/inbox", tags=["unread", "finance"])
    session.save("b", "invoice from Bo", category="email", tags=["finance"])
    session.save("c", "invoice scan", category="emails", tags=["unread"])
    assert {h.entry.key for h in session.search("invoice", category="email").hits} == {
        "session/abc123/a",
        "session/abc123/b",
    }
    assert [e.key for e in session.search(tags=["unread", "finance"]).entries] == ["session/abc123/a"]
    assert [e.key for e in session.search(category="emails").entries] == ["session/abc123/c"]


def test_a_blank_query_is_the_listing(session: WorkingMemoryView) -> None:
    session.save("a", "x")
    listing = session.search("   ")
    assert listing.query is None and [e.key for e in listing.entries] == ["session/abc123/a"] and listing.hits == ()


def test_the_listing_stops_at_five_hundred_and_says_so(engine: reverie.Reverie) -> None:
    for task in range(11):
        view = engine.working.for_namespace(f"patrol/task{task:02d}")
        for n in range(50):
            view.save(f"k{n:02d}", "finding", ttl_minutes=60)
    reader = engine.working.for_namespace("session/s")
    listing = reader.search(namespace="patrol")
    assert len(listing.entries) == 500 and listing.capped
    assert any("stops at 500" in note for note in listing.notes)
    assert listing.entries[0].key == "patrol/task10/k49"  # most recently stored first
    assert all(hit.preview for hit in reader.search("finding", namespace="patrol").hits)
    small = reader.search(namespace="patrol/task00")
    assert len(small.entries) == 50 and not small.capped and small.notes == ()


def test_the_listing_tool_walks_past_the_cap_by_cursor(engine: reverie.Reverie) -> None:
    from reverie.tools import ToolContext, ToolRegistry

    for task in range(11):
        view = engine.working.for_namespace(f"patrol/task{task:02d}")
        for n in range(50):
            view.save(f"k{n:02d}", "finding", ttl_minutes=60)
    tools, ctx = ToolRegistry(engine), ToolContext(session_id="s")
    capped = tools.call("search_working_memory", {"namespace": "patrol"}, ctx)
    assert len(capped.data["entries"]) == 500 and "cursor=''" in capped.text and capped.data["next_cursor"] is None
    seen: list[str] = []
    args: dict[str, Any] = {"namespace": "patrol", "cursor": ""}
    while True:
        page = tools.call("search_working_memory", {**args, "limit": 200}, ctx)
        assert not page.is_error, page.text
        seen.extend(e["key"] for e in page.data["entries"])
        if page.data["next_cursor"] is None:
            break
        assert f"cursor={page.data['next_cursor']!r}" in page.text and "key order" in page.text
        args["cursor"] = page.data["next_cursor"]
    assert seen == sorted(f"patrol/task{t:02d}/k{n:02d}" for t in range(11) for n in range(50))
    refused = tools.call("search_working_memory", {"query": "finding", "cursor": ""}, ctx)
    assert refused.is_error and refused.data["error"]["field"] == "query"


# -- bad input changes nothing -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"key": "a/../b"}, "key"),
        ({"key": "../escape"}, "key"),
        ({"key": "a//b"}, "key"),
        ({"key": "a/"}, "key"),
        ({"key": "/session/abc123/x"}, "key"),
        ({"key": "k" * 513}, "key"),
        ({"key": "with space"}, "key"),
        ({"key": ""}, "key"),
        ({"value": "x" * 1_000_001}, "value"),
        ({"value": None}, "value"),
        ({"value": "nul\x00byte"}, "value"),
        ({"ttl_minutes": -5}, "ttl_minutes"),
        ({"ttl_minutes": 0}, "ttl_minutes"),
        ({"ttl_minutes": 43_201}, "ttl_minutes"),
        ({"ttl_minutes": 10**12}, "ttl_minutes"),
        ({"ttl_minutes": float("nan")}, "ttl_minutes"),
        ({"ttl_minutes": float("inf")}, "ttl_minutes"),
        ({"ttl_minutes": True}, "ttl_minutes"),
        ({"ttl_minutes": "5"}, "ttl_minutes"),
        ({"category": "Bad Category"}, "category"),
        ({"tags": "not-a-list"}, "tags"),
    ],
)
def test_bad_input_raises_and_stores_nothing(
    engine: reverie.Reverie, session: WorkingMemoryView, kwargs: dict[str, Any], field: str
) -> None:
    args: dict[str, Any] = {"key": "notes", "value": "fine"} | kwargs
    key, value = args.pop("key"), args.pop("value")
    with pytest.raises(ValidationError) as caught:
        session.save(key, value, **args)
    assert caught.value.field == field
    assert _stored(engine) == 0


def test_the_largest_value_and_ttl_are_accepted(session: WorkingMemoryView) -> None:
    saved = session.save("big", "x" * 1_000_000, ttl_minutes=43_200)
    assert len(session.get("big").value) == 1_000_000
    assert saved.entry.expires_at - saved.entry.stored_at == _minutes(43_200)


def test_bad_search_arguments_are_refused(session: WorkingMemoryView) -> None:
    for kwargs, field in (
        ({"namespace": "other"}, "namespace"),
        ({"namespace": "patrol/../session"}, "namespace"),
        ({"category": "Bad!"}, "category"),
        ({"tags": 5}, "tags"),
    ):
        with pytest.raises(ValidationError) as caught:
            session.search(**kwargs)
        assert caught.value.field == field
    with pytest.raises(ValidationError) as bad_query:
        session.search(42)  # type: ignore[arg-type]
    assert bad_query.value.field == "query"


# -- fused ranking ------------------------------------------------------------------------------------
def test_with_an_embedder_bm25_and_cosine_are_fused(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(tmp_path / "hash", clock=clock, embedding={"provider": "hash", "dim": 64}) as rv:
        view = rv.working.for_namespace("session/s")
        view.save("weather", "rain expected in lisbon tomorrow", ttl_minutes=60)
        view.save("lisbon", "flights booked", ttl_minutes=60)  # the query word is in the key only
        view.save("other", "quarterly numbers attached", ttl_minutes=60)
        calls = rv.embedder.calls  # type: ignore[union-attr]
        found = view.search("rain in lisbon")
        assert rv.embedder.calls == calls + 1  # type: ignore[union-attr]  # query and values: one batch
        by_key = {h.entry.key: h for h in found.hits}
        assert found.hits[0].entry.key == "session/s/weather"
        assert found.hits[0].matched_by == "bm25+vector" and found.hits[0].score == pytest.approx(1.0)
        assert by_key["session/s/lisbon"].matched_by in ("bm25", "bm25+vector")
        assert by_key["session/s/lisbon"].score < found.hits[0].score


class _FailingEmbedder:
    model_id = "failing"
    dim = 8

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise EmbeddingError("the embedding endpoint is down")


def test_an_embedder_failure_degrades_to_bm25_and_says_so(engine: reverie.Reverie) -> None:
    working = WorkingMemory(engine.store, engine.clock, engine.working.config, embedder=_FailingEmbedder())
    view = working.for_namespace("session/s")
    view.save("a", "the invoice is overdue")
    found = view.search("invoice")
    assert [h.entry.key for h in found.hits] == ["session/s/a"] and found.hits[0].matched_by == "bm25"
    assert any("BM25 only" in note for note in found.notes)


def test_settings_configure_working_memory(tmp_path: Path, clock: FakeClock) -> None:
    with reverie.open(
        tmp_path / "cfg", clock=clock, embedding={"provider": "none"}, working={"max_entries_per_namespace": 2}
    ) as rv:
        view = rv.working.for_namespace("session/s")
        view.save("a", "1")
        view.save("b", "2")
        assert [e.key for e in view.save("c", "3").evicted] == ["session/s/a"]
    with pytest.raises(reverie.ConfigError, match="max_ttl_minutes"):
        reverie.open(tmp_path / "bad", clock=clock, working={"max_ttl_minutes": 10})
