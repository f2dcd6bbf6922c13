"""The skill store (seed 001's skill and skill-usage stores) through the engine, on both backends: save (created,
updated, unchanged), validation that writes nothing, compare-and-set, archive / restore / revert with history,
the per-agent limit, prefix listing, hybrid search (the hash embedder; one paraphrase with the real local
embedder), the usage log and what the dream's skill passes read (counts, co-usage, prefix clusters, sparse and
at-risk skills), applying merges, and the purge."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.dream.passes.base import Capability
from reverie.errors import Conflict, NotFound, ValidationError
from reverie.skills import SkillDraft
from reverie.types import CoUsage

EMAIL = ("Send an email through the MCP mail tool", "Confirm the recipient address, write the subject, then send it.")
CALENDAR = ("Schedule a meeting in the calendar", "Find a free slot for every attendee, then create the event.")
WEATHER = ("Look up the weather forecast for a city", "Call the weather tool with the city name and the day.")


def _open(home: Path, clock: FakeClock, store_url: str | None, **overrides: Any) -> reverie.Reverie:
    overrides.setdefault("embedding", {"provider": "hash", "background": False})
    if store_url is not None:
        overrides["store"] = {"url": store_url}
    return reverie.open(home, clock=clock, **overrides)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str | None:
    """None for the default SQLite store, else a fresh PostgreSQL database's URL."""
    return None if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def rv(tmp_path: Path, clock: FakeClock, backend: str | None) -> Iterator[reverie.Reverie]:
    with _open(tmp_path / "home", clock, backend, skills={"max_skills_per_agent": 5}) as engine:
        yield engine


def seed(rv: reverie.Reverie, agent: str = "default") -> None:
    for name, (summary, content) in (("mcp/email", EMAIL), ("mcp/calendar", CALENDAR), ("weather", WEATHER)):
        rv.skills.save(agent, name, summary, content)


def rows(rv: reverie.Reverie) -> dict[str, list[dict[str, Any]]]:
    return {t: list(rv.store.export_rows(t)) for t in ("skills", "skill_versions", "skill_usage", "feedback")}


# -- saving ----------------------------------------------------------------------------------------------------
def test_save_creates_updates_and_leaves_an_identical_save_alone(rv: reverie.Reverie, clock: FakeClock) -> None:
    created = rv.skills.save("default", "mcp/email", *EMAIL, see_also=["mcp/calendar", "mcp/email"], metadata={"a": 1})
    assert created.outcome == "created"
    skill = created.skill
    assert (skill.name, skill.version, skill.see_also, skill.metadata) == ("mcp/email", 1, ("mcp/calendar",), {"a": 1})
    assert skill.created_at == skill.updated_at == clock.now() and skill.vector_model == "hash-256"
    clock.advance(hours=1)
    same = rv.skills.save("default", "mcp/email", *EMAIL)  # see_also None keeps the list; no metadata adds none
    assert same.outcome == "unchanged" and same.skill == skill
    updated = rv.skills.save("default", "mcp/email", EMAIL[0], "New steps: draft, confirm, send.", metadata={"b": 2})
    assert updated.outcome == "updated"
    assert (updated.skill.version, updated.skill.created_at, updated.skill.updated_at) == (
        2, skill.created_at, clock.now(),
    )  # fmt: skip
    assert updated.skill.see_also == ("mcp/calendar",) and updated.skill.metadata == {"a": 1, "b": 2}
    assert updated.skill.vector != skill.vector  # the text changed: a fresh vector
    history = rv.skills.history("default", "mcp/email")
    assert [(v.version, v.change, v.content) for v in history] == [
        (1, "created", EMAIL[1]),
        (2, "edited", "New steps: draft, confirm, send."),
    ]


@pytest.mark.parametrize(
    ("args", "kwargs", "field"),
    [
        (("Mcp/Email", *EMAIL), {}, "name"),
        (("mcp//email", *EMAIL), {}, "name"),
        (("/mcp", *EMAIL), {}, "name"),
        (("mcp email", *EMAIL), {}, "name"),
        (("x" * 201, *EMAIL), {}, "name"),
        (("mcp/email", "  ", EMAIL[1]), {}, "summary"),
        (("mcp/email", "two\nlines", EMAIL[1]), {}, "summary"),
        (("mcp/email", EMAIL[0], ""), {}, "content"),
        (("mcp/email", EMAIL[0], "x" * 50_001), {}, "content"),
        (("mcp/email", EMAIL[0], "nul \x00"), {}, "content"),
        (("mcp/email", EMAIL[0], "lone \ud800"), {}, "content"),
        (("mcp/email", *EMAIL), {"see_also": "mcp/calendar"}, "see_also"),
        (("mcp/email", *EMAIL), {"see_also": ["Not A Name"]}, "see_also"),
        (("mcp/email", *EMAIL), {"metadata": {"x": float("nan")}}, "metadata"),
        (("mcp/email", *EMAIL), {"expected_version": -1}, "expected_version"),
        (("", *EMAIL), {}, "name"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_writes_nothing(
    rv: reverie.Reverie, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    seed(rv)
    before = rows(rv)
    with pytest.raises(ValidationError) as caught:
        rv.skills.save("default", *args, **kwargs)
    assert caught.value.field == field
    assert rows(rv) == before


def test_compare_and_set(rv: reverie.Reverie) -> None:
    assert rv.skills.save("default", "weather", *WEATHER, expected_version=0).skill.version == 1
    with pytest.raises(Conflict, match="at version 1"):
        rv.skills.save("default", "weather", WEATHER[0], "other steps", expected_version=0)
    with pytest.raises(Conflict, match="at version 1"):
        rv.skills.save("default", "weather", WEATHER[0], "other steps", expected_version=3)
    with pytest.raises(Conflict):
        rv.skills.save("default", "weather", *WEATHER, expected_version=3)  # even an unchanged save checks it
    assert rv.skills.save("default", "weather", WEATHER[0], "other steps", expected_version=1).skill.version == 2


def test_archive_restore_and_revert_keep_every_version(rv: reverie.Reverie, clock: FakeClock) -> None:
    seed(rv)
    clock.advance(days=1)
    archived = rv.skills.archive("default", "weather")
    assert archived.archived and archived.version == 2
    assert rv.skills.archive("default", "weather") == archived  # archiving twice changes nothing
    assert [s.name for s in rv.skills.list("default")] == ["mcp/calendar", "mcp/email"]
    assert "weather" not in [h.skill.name for h in rv.skills.search("default", "weather forecast city").hits]
    assert rv.skills.get("default", "weather").archived  # still readable by name
    restored = rv.skills.restore("default", "weather")
    assert not restored.archived and restored.version == 3
    rv.skills.save("default", "weather", WEATHER[0], "Ask the user for the city first.")
    reverted = rv.skills.restore("default", "weather", version=1)
    assert (reverted.content, reverted.version) == (WEATHER[1], 5)
    assert [v.change for v in rv.skills.history("default", "weather")] == [
        "created", "archived", "restored", "edited", "reverted",
    ]  # fmt: skip
    with pytest.raises(NotFound, match="no version 9"):
        rv.skills.restore("default", "weather", version=9)
    with pytest.raises(NotFound):
        rv.skills.restore("default", "nothing")


def test_saving_an_archived_name_starts_a_new_skill_whose_versions_go_on(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.skills.save("default", "weather", *WEATHER).skill
    rv.skills.archive("default", "weather")
    clock.advance(days=3)
    again = rv.skills.save("default", "weather", WEATHER[0], "A new procedure.")
    assert again.outcome == "created"
    assert (again.skill.version, again.skill.created_at, again.skill.archived) == (
        3,
        first.created_at + timedelta(days=3),
        False,
    )


def test_the_limit_counts_live_skills_only(rv: reverie.Reverie) -> None:
    for n in range(5):
        rv.skills.save("default", f"s{n}", "a summary", "some content")
    with pytest.raises(ValidationError, match="max_skills_per_agent"):
        rv.skills.save("default", "s5", "a summary", "some content")
    assert rv.skills.save("default", "s0", "a summary", "changed content").outcome == "updated"
    assert rv.skills.save("other", "s5", "a summary", "some content").outcome == "created"  # per agent
    rv.skills.archive("default", "s0")
    rv.skills.save("default", "s5", "a summary", "some content")
    with pytest.raises(ValidationError, match="max_skills_per_agent"):
        rv.skills.restore("default", "s0")
    assert rv.skills.get("default", "s0").archived


def test_list_by_path_prefix(rv: reverie.Reverie) -> None:
    for name in ("mcp", "mcp/email", "mcp/calendar", "mcp-guide", "mcpx"):
        rv.skills.save("default", name, "a summary", "some content")
    assert [s.name for s in rv.skills.list("default", "mcp")] == ["mcp", "mcp/calendar", "mcp/email"]
    assert [s.name for s in rv.skills.list("default", "mcp/")] == ["mcp", "mcp/calendar", "mcp/email"]
    assert [s.name for s in rv.skills.list("default", "mcp", limit=2)] == ["mcp", "mcp/calendar"]
    assert rv.skills.list("other") == []
    with pytest.raises(ValidationError):
        rv.skills.list("default", "MCP")


# -- search ----------------------------------------------------------------------------------------------------
def test_hybrid_search_ranks_the_matching_skill_first(rv: reverie.Reverie) -> None:
    seed(rv)
    seed(rv, "other")
    found = rv.skills.search("default", "send an email to the recipient")
    assert found.mode == "hybrid" and found.notes == ()
    assert found.hits[0].skill.name == "mcp/email" and found.hits[0].matched_by == "bm25+vector"
    assert all(h.skill.agent_id == "default" for h in found.hits)
    assert [h.skill.name for h in rv.skills.search("default", "weather forecast").hits][0] == "weather"
    assert [h.skill.name for h in rv.skills.search("default", "meeting", prefix="mcp").hits] == ["mcp/calendar"]
    assert len(rv.skills.search("default", "the", limit=1).hits) <= 1
    assert rv.skills.search("nobody", "email").hits == []
    with pytest.raises(ValidationError):
        rv.skills.search("default", "   ")


def test_search_without_an_embedder_is_bm25_and_says_so_then_vectors_heal(
    tmp_path: Path, clock: FakeClock, backend: str | None
) -> None:
    home = tmp_path / "plain"
    with _open(home, clock, backend, embedding={"provider": "none"}) as rv:
        seed(rv)
        found = rv.skills.search("default", "email recipient")
        assert found.mode == "bm25" and "no embedder" in found.notes[0]
        assert found.hits[0].skill.name == "mcp/email"
        assert rv.skills.get("default", "mcp/email").vector is None
    with _open(home, clock, backend) as rv:  # now with the hash embedder: the search embeds what is missing
        assert rv.skills.search("default", "email recipient").mode == "hybrid"
        skill = rv.skills.get("default", "mcp/email")
        assert skill.vector_model == "hash-256" and skill.version == 1  # bookkeeping: no new version
    with _open(home, clock, backend, embedding={"provider": "none"}) as rv:  # a change that keeps the text
        kept = rv.skills.save("default", "mcp/email", *EMAIL, metadata={"tag": "mail"}).skill
        assert kept.version == 2 and kept.vector == skill.vector and kept.vector_model == "hash-256"
        changed = rv.skills.save("default", "mcp/email", EMAIL[0], "New steps.").skill
        assert changed.vector is None and changed.vector_model is None  # a vector of the old text would lie


def test_paraphrase_finds_its_skill_with_the_local_embedder(rv_local: reverie.Reverie) -> None:
    for name, (summary, content) in (("mcp/email", EMAIL), ("mcp/calendar", CALENDAR), ("weather", WEATHER)):
        rv_local.skills.save("default", name, summary, content)
    found = rv_local.skills.search("default", "deliver a note to my colleague's inbox")
    assert found.mode == "hybrid"
    assert found.hits[0].skill.name == "mcp/email" and found.hits[0].matched_by == "vector"  # no shared word


# -- usage and what the passes read ------------------------------------------------------------------------------
def test_record_usage_moves_last_used_and_refuses_unknown_names(rv: reverie.Reverie, clock: FakeClock) -> None:
    seed(rv)
    seed(rv, "other")
    rv.skills.archive("default", "weather")
    clock.advance(hours=2)
    recorded = rv.skills.record_usage("default", "s1", ["mcp/email", "mcp/calendar", "mcp/email"])
    assert [(r.session_id, r.name) for r in recorded] == [("s1", "mcp/email"), ("s1", "mcp/calendar")]
    email = rv.skills.get("default", "mcp/email")
    assert email.last_used_at == clock.now() and email.version == 1
    before = rows(rv)
    for names in (["weather"], ["mcp/email", "nothing"]):
        with pytest.raises(NotFound):
            rv.skills.record_usage("default", "s2", names)
    with pytest.raises(ValidationError):
        rv.skills.record_usage("default", "s2", [])
    with pytest.raises(ValidationError):
        rv.skills.record_usage("default", " ", ["mcp/email"])
    assert rows(rv) == before
    assert rv.skills.get("other", "mcp/email").last_used_at is None


def test_usage_counts_co_usage_and_prefix_clusters(rv: reverie.Reverie, clock: FakeClock) -> None:
    seed(rv)
    rv.skills.save("default", "mcp/guide", "Which MCP tool to use", "Email for mail, calendar for meetings.")
    rv.skills.record_usage("default", "old", ["weather", "mcp/guide"])
    clock.advance(days=31)  # the window is 30 days
    for session, names in (
        ("s1", ["mcp/email", "mcp/calendar"]),
        ("s2", ["mcp/calendar", "mcp/email"]),
        ("s3", ["weather", "mcp/email"]),
    ):
        rv.skills.record_usage("default", session, names)
    rv.skills.record_usage("default", "s1", ["mcp/email"])
    assert rv.skills.usage_counts("default") == {"mcp/calendar": 2, "mcp/email": 4, "mcp/guide": 0, "weather": 1}
    assert rv.skills.usage_counts("default", days=40)["weather"] == 2
    assert rv.skills.co_usage("default") == [
        CoUsage("mcp/calendar", "mcp/email", 2), CoUsage("mcp/email", "weather", 1),
    ]  # fmt: skip
    assert rv.skills.co_usage("default", limit=1) == [CoUsage("mcp/calendar", "mcp/email", 2)]
    assert rv.skills.prefix_clusters("default") == {"mcp": ["mcp/calendar", "mcp/email", "mcp/guide"]}
    assert [(u.session_id, u.name) for u in rv.skills.usage("default", session_id="s3")] == [
        ("s3", "mcp/email"),  # one instant: the later row first
        ("s3", "weather"),
    ]
    assert rv.skills.sessions_using("default", "mcp/email") == ["s1", "s3", "s2"]
    assert rv.skills.sessions_using("default", "mcp/guide") == [] and rv.skills.sessions_using("default", "x") == []
    with pytest.raises(ValidationError):
        rv.skills.usage_counts("default", days=0)


def test_sparse_skills_are_short_and_older_than_a_week(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.skills.save("default", "short-old", "a summary", "Too short.")
    rv.skills.save("default", "long-old", "a summary", "Step. " * 40)
    clock.advance(days=8)
    rv.skills.save("default", "short-new", "a summary", "Also short.")
    assert [s.name for s in rv.skills.sparse("default")] == ["short-old"]


def test_at_risk_skills_come_with_their_failure_context(rv: reverie.Reverie, clock: FakeClock) -> None:
    seed(rv)
    rv.skills.record_usage("default", "bad", ["mcp/email", "weather"])
    rv.skills.record_usage("default", "fine", ["mcp/calendar"])
    rv.skills.record_usage("default", "fair", ["mcp/calendar"])
    rv.feedback.record("default", "correction", "bad", comment="Sent it to the wrong Ana")
    rv.feedback.record("default", "session_summary", "fine", rating="good")
    rv.feedback.record("default", "session_summary", "fair", rating="fair", comment="slow")
    rv.feedback.record("default", "stale", "bad")  # not a failure signal of Pass 4
    rv.skills.archive("default", "weather")  # archived: no longer at risk
    risks = rv.skills.at_risk("default")
    assert [(r.skill.name, r.sessions) for r in risks] == [("mcp/calendar", ("fair",)), ("mcp/email", ("bad",))]
    assert [f.comment for f in risks[1].feedback] == ["Sent it to the wrong Ana"]
    clock.advance(days=31)
    assert rv.skills.at_risk("default") == []


# -- applying changes (the skill passes' write path) ------------------------------------------------------------
def test_a_merge_keeps_the_earliest_creation_and_the_latest_use(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.skills.save("default", "email", "Send mail", "Write, then send.")
    clock.advance(days=2)
    rv.skills.save("default", "mail-send", "Send a mail", "Confirm the address, then send.")
    clock.advance(days=1)
    rv.skills.record_usage("default", "s1", ["mail-send"])
    used = clock.now()
    clock.advance(days=1)
    changes = rv.skills.apply_changes(
        "default",
        [SkillDraft("mcp/email", *EMAIL, see_also=("mcp/calendar",), source_names=("email", "mail-send"))],
        ["email", "mail-send"],
    )
    merged = changes.saved[0].skill
    assert changes.saved[0].outcome == "created"
    assert merged.created_at == rv.skills.history("default", "email")[0].recorded_at
    assert merged.last_used_at == used
    assert merged.metadata["merged_from"] == ["email", "mail-send"] and merged.metadata["source"] == "dream"
    assert [s.name for s in changes.archived] == ["email", "mail-send"]
    assert rv.skills.get("default", "email").metadata["merged_into"] == "mcp/email"
    assert [s.name for s in rv.skills.list("default")] == ["mcp/email"]
    assert rv.skills.history("default", "mcp/email")[0].change == "merged"


def test_deletions_need_replacements_and_a_bad_change_applies_nothing(rv: reverie.Reverie) -> None:
    seed(rv)
    before = rows(rv)
    with pytest.raises(ValidationError, match="replacement"):
        rv.skills.apply_changes("default", [], ["weather"])
    with pytest.raises(NotFound, match="to_delete"):
        rv.skills.apply_changes("default", [SkillDraft("mcp/guide", "Which tool", "Email or calendar.")], ["nope"])
    with pytest.raises(NotFound, match="source_names"):
        rv.skills.apply_changes("default", [SkillDraft("w", "Weather", "Ask.", source_names=("ghost",))])
    with pytest.raises(ValidationError):
        rv.skills.apply_changes("default", [SkillDraft("a", "s", "c"), SkillDraft("a", "s", "c")])
    assert rows(rv) == before
    # A skill saved and deleted at once is kept (updated), the other deletion goes.
    done = rv.skills.apply_changes(
        "default", [SkillDraft("weather", WEATHER[0], "Better steps.")], ["weather", "mcp/calendar"]
    )
    assert [s.outcome for s in done.saved] == ["updated"] and [s.name for s in done.archived] == ["mcp/calendar"]
    assert not rv.skills.get("default", "weather").archived


# -- the purge and the engine ----------------------------------------------------------------------------------
def test_archived_skills_and_old_usage_are_purged_after_their_retention(rv: reverie.Reverie, clock: FakeClock) -> None:
    seed(rv)
    rv.skills.record_usage("default", "s1", ["weather"])
    rv.skills.archive("default", "weather")
    clock.advance(days=89)
    rv.dream.run()
    assert rv.skills.get("default", "weather").archived  # within the archive retention: kept
    clock.advance(days=2)
    rv.dream.run()
    with pytest.raises(NotFound):
        rv.skills.get("default", "weather")
    assert rv.store.count_rows("skill_versions") == 2  # the two live skills' first versions
    assert rv.skills.purge_usage() == 1  # 91 days old, past the 90-day log retention


def test_the_dream_has_the_skill_and_feedback_capabilities(rv: reverie.Reverie) -> None:
    assert {Capability.SKILLS, Capability.FEEDBACK} <= rv.dream.capabilities
