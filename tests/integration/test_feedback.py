"""The feedback store (seed 001's feedback signals) through the engine, on both backends: the four kinds and
their rating rule, references that must be the agent's own, validation that writes nothing, listing by
window, kind and session, and the purge after the log retention."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reverie
from reverie.clock import FakeClock
from reverie.errors import NotFound, ValidationError
from reverie.types import Scope


@pytest.fixture(params=["sqlite", "postgresql"])
def rv(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[reverie.Reverie]:
    options: dict[str, Any] = {"embedding": {"provider": "none"}, "skills": {"log_retention_days": 30}}
    if request.param == "postgresql":
        options["store"] = {"url": request.getfixturevalue("pg_url")}
    with reverie.open(tmp_path / "home", clock=clock, **options) as engine:
        yield engine


def test_each_kind_is_recorded_with_its_references(rv: reverie.Reverie, clock: FakeClock) -> None:
    entry = rv.memory.save("The user's manager is Ana", scope=Scope(user_id="u1")).id
    rv.skills.save("default", "mcp/email", "Send mail", "Confirm the address, then send.")
    correction = rv.feedback.record(
        "default", "correction", "s1", comment="Ana is the manager, not Rita", entry_ids=[entry, entry]
    )
    assert (correction.kind, correction.rating, correction.entry_ids) == ("correction", None, (entry,))
    assert correction.created_at == clock.now() and len(correction.feedback_id) == 12
    summary = rv.feedback.record("default", "session_summary", "s1", rating="excellent", skill_names=["mcp/email"])
    assert summary.rating == "excellent" and summary.skill_names == ("mcp/email",)
    rv.skills.archive("default", "mcp/email")
    rv.memory.archive(entry, scope=Scope(user_id="u1"))
    stale = rv.feedback.record("default", "stale", "s2", entry_ids=[entry], skill_names=["mcp/email"])
    wrong = rv.feedback.record("default", "wrong", "s2", comment="   ")
    assert stale.entry_ids == (entry,) and wrong.comment is None  # archived references count; a blank comment is none
    assert rv.feedback.get("default", correction.feedback_id) == correction


@pytest.mark.parametrize(
    ("kind", "kwargs", "field"),
    [
        ("praise", {}, "kind"),
        ("session_summary", {}, "rating"),
        ("session_summary", {"rating": "great"}, "rating"),
        ("correction", {"rating": "poor"}, "rating"),
        ("wrong", {"comment": "x" * 10_001}, "comment"),
        ("wrong", {"comment": "nul \x00"}, "comment"),
        ("wrong", {"entry_ids": "abc"}, "entry_ids"),
        ("wrong", {"entry_ids": [" padded "]}, "entry_ids"),
        ("wrong", {"skill_names": ["Not A Name"]}, "skill_names"),
        ("wrong", {"skill_names": ["a"] * 101}, "skill_names"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_writes_nothing(
    rv: reverie.Reverie, kind: str, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        rv.feedback.record("default", kind, "s1", **kwargs)
    assert caught.value.field == field
    with pytest.raises(ValidationError):
        rv.feedback.record("default", "wrong", "")
    assert rv.store.count_rows("feedback") == 0


def test_references_must_be_the_agents_own(rv: reverie.Reverie) -> None:
    theirs = rv.memory.save("Agent b's note", scope=Scope("b")).id
    rv.skills.save("b", "mcp/email", "Send mail", "Confirm, then send.")
    with pytest.raises(NotFound, match="entry_ids"):
        rv.feedback.record("default", "wrong", "s1", entry_ids=[theirs])
    with pytest.raises(NotFound, match="entry_ids"):
        rv.feedback.record("default", "wrong", "s1", entry_ids=["000000000000"])
    with pytest.raises(NotFound, match="skill_names"):
        rv.feedback.record("default", "wrong", "s1", skill_names=["mcp/email"])
    assert rv.store.count_rows("feedback") == 0
    assert rv.feedback.record("b", "wrong", "s1", entry_ids=[theirs], skill_names=["mcp/email"]).agent_id == "b"
    with pytest.raises(NotFound):
        rv.feedback.get("default", rv.feedback.list("b")[0].feedback_id)


def test_list_filters_by_window_kind_and_session_newest_first(rv: reverie.Reverie, clock: FakeClock) -> None:
    first = rv.feedback.record("default", "correction", "s1", comment="first")
    clock.advance(days=8)
    second = rv.feedback.record("default", "session_summary", "s2", rating="poor")
    third = rv.feedback.record("default", "wrong", "s1")
    rv.feedback.record("other", "wrong", "s1")
    assert rv.feedback.list("default") == [third, second, first]
    assert rv.feedback.list("default", days=7) == [third, second]
    assert rv.feedback.list("default", since=first.created_at) == [third, second, first]
    assert rv.feedback.list("default", kinds=["correction", "session_summary"]) == [second, first]
    assert rv.feedback.list("default", session_id="s1") == [third, first]
    assert rv.feedback.list("default", limit=1) == [third]
    for bad in ({"kinds": ["praise"]}, {"days": 0}, {"limit": 0}, {"since": first.created_at.replace(tzinfo=None)}):
        with pytest.raises(ValidationError):
            rv.feedback.list("default", **bad)


def test_signals_are_purged_after_the_log_retention(rv: reverie.Reverie, clock: FakeClock) -> None:
    rv.feedback.record("default", "correction", "s1")
    rv.feedback.record("other", "wrong", "s1")
    clock.advance(days=29)
    rv.feedback.purge_job(clock.now())
    assert rv.store.count_rows("feedback") == 2
    clock.advance(days=2)
    kept = rv.feedback.record("default", "stale", "s2")
    rv.feedback.purge_job(clock.now())
    assert rv.feedback.list("default") == [kept] and rv.feedback.list("other") == []
