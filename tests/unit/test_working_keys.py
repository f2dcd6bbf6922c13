"""Working-memory key rules (core.working_keys), the inventory lines, and BM25 over working entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reverie.core import working_keys as keys
from reverie.errors import ValidationError
from reverie.types import WorkingEntry
from reverie.working.rank import lexical_scores, rank
from reverie.working.service import WorkingConfig, render_inventory

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "key",
    ["inbox", "emails_inbox", "drafts/reply-2", "session/abc123/emails_inbox", "a.b:c@d+e=f", "call_xyz", "v1.2"],
)
def test_good_keys_pass_unchanged(key: str) -> None:
    assert keys.path(key) == key


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", "non-empty"),
        ("/session/abc/x", "start with '/'"),
        ("a/../b", "'..'"),
        ("a..b", "'..'"),
        ("a//b", "empty segment"),
        ("a/b/", "empty segment"),
        ("a/./b", "dots only"),
        ("has space", "may use only"),
        ("tab\there", "may use only"),
        ("naïve", "may use only"),
        ("semi;colon", "may use only"),
        ("x" * 513, "maximum is 512"),
    ],
)
def test_bad_keys_are_refused_naming_the_field(key: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason) as caught:
        keys.path(key)
    assert caught.value.field == "key"


def test_a_key_of_exactly_512_characters_passes() -> None:
    assert keys.path("k" * 512) == "k" * 512


@pytest.mark.parametrize("value", [None, 3, b"bytes", ["a"]])
def test_a_key_must_be_a_string(value: object) -> None:
    with pytest.raises(ValidationError, match="non-empty string"):
        keys.path(value)


@pytest.mark.parametrize("namespace", ["session/abc123", "patrol/heartbeat", "subagent/t1b2c3"])
def test_caller_namespaces_are_two_segments_under_a_caller_root(namespace: str) -> None:
    assert keys.namespace(namespace) == namespace


@pytest.mark.parametrize("namespace", ["session", "session/abc/more", "stash/abc", "agent/x", "session/", "/patrol/x"])
def test_other_namespaces_are_refused(namespace: str) -> None:
    with pytest.raises(ValidationError) as caught:
        keys.namespace(namespace)
    assert caught.value.field == "namespace"


def test_plain_keys_resolve_under_the_own_namespace_and_full_keys_stay() -> None:
    assert keys.resolve("session/abc", "inbox") == "session/abc/inbox"
    assert keys.resolve("session/abc", "drafts/reply") == "session/abc/drafts/reply"
    assert keys.resolve("session/abc", "patrol/heartbeat/alerts") == "patrol/heartbeat/alerts"
    assert keys.resolve("session/abc", "stash/abc/call_1") == "stash/abc/call_1"
    assert keys.is_full("subagent/t1/x") and not keys.is_full("notes/subagent")
    assert keys.namespace_of("patrol/heartbeat/a/b") == "patrol/heartbeat"


@pytest.mark.parametrize("key", ["patrol", "session/abc", "stash/abc"])
def test_a_full_key_needs_a_namespace_and_a_name(key: str) -> None:
    with pytest.raises(ValidationError, match="full key"):
        keys.resolve("session/abc", key)


def test_a_plain_key_may_not_grow_past_the_limit_once_resolved() -> None:
    with pytest.raises(ValidationError, match="maximum is 512"):
        keys.resolve("session/abc", "k" * 510)


def test_namespace_prefixes_accept_any_depth_under_a_root() -> None:
    assert keys.prefix("patrol") == "patrol/"
    assert keys.prefix("subagent/t1") == "subagent/t1/"
    assert keys.prefix("session/abc/drafts/") == "session/abc/drafts/"
    for bad in ("other", "patrol/../session", "", "patrol//x"):
        with pytest.raises(ValidationError) as caught:
            keys.prefix(bad)
        assert caught.value.field == "namespace"


def test_segments_refuse_slashes() -> None:
    assert keys.segment("call_xyz", field="call_id") == "call_xyz"
    with pytest.raises(ValidationError, match="'/'") as caught:
        keys.segment("a/b", field="session_id")
    assert caught.value.field == "session_id"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (-5, "0s"), (45.9, "45s"), (272, "4m32s"), (121, "2m01s"), (4 * 3600 + 8 * 60 + 59, "4h08m")],
)
def test_remaining_time_reads_like_the_seed(seconds: float, text: str) -> None:
    assert keys.remaining(seconds) == text


def test_remaining_time_past_a_day_shows_days_and_hours() -> None:
    assert keys.remaining(3 * 86_400 + 4 * 3600 + 59 * 60) == "3d04h"


def test_the_inventory_renders_seed_000s_lines_and_never_content() -> None:
    entries = [
        WorkingEntry(
            "default",
            "session/abc123/emails_inbox",
            "SECRET CONTENT",
            T0,
            T0 + timedelta(minutes=4, seconds=32),
            "email",
            ("inbox", "unread"),
        ),
        WorkingEntry("default", "session/abc123/draft_reply", "more content", T0, T0 + timedelta(seconds=121)),
    ]
    assert render_inventory(entries, T0) == (
        "- session/abc123/emails_inbox: expires in 4m32s, category: email, tags: inbox, unread\n"
        "- session/abc123/draft_reply: expires in 2m01s"
    )
    assert render_inventory([], T0) == ""


def _entry(key: str, value: str, **kw: object) -> WorkingEntry:
    return WorkingEntry("default", key, value, T0, T0 + timedelta(minutes=5), **kw)  # type: ignore[arg-type]


def test_bm25_scores_key_value_tags_and_category() -> None:
    entries = [
        _entry("session/a/inbox", "three unread messages"),
        _entry("session/a/calendar", "a meeting at noon", tags=("work",)),
        _entry("session/a/notes", "nothing relevant", category="email"),
    ]
    assert set(lexical_scores(entries, "unread")) == {"session/a/inbox"}
    assert set(lexical_scores(entries, "calendar")) == {"session/a/calendar"}  # by key
    assert set(lexical_scores(entries, "work")) == {"session/a/calendar"}  # by tag
    assert set(lexical_scores(entries, "email")) == {"session/a/notes"}  # by category
    assert lexical_scores(entries, "") == {}
    assert lexical_scores([], "unread") == {}


def test_rank_without_an_embedder_is_bm25_normalised_and_capped() -> None:
    entries = [_entry(f"session/a/k{n}", "alert " * (n + 1) + "filler " * 10) for n in range(5)]
    ranked, notes = rank(entries, "alert", embedder=None, semantic_weight=0.35, floor=None, limit=3)
    assert len(ranked) == 3 and notes == []
    assert ranked[0].score == 1.0 and all(r.matched_by == "bm25" for r in ranked)
    assert [r.score for r in ranked] == sorted((r.score for r in ranked), reverse=True)


def test_working_config_refuses_ttls_above_the_maximum() -> None:
    with pytest.raises(ValueError, match="stash_ttl_minutes"):
        WorkingConfig(max_ttl_minutes=300, stash_ttl_minutes=600)
