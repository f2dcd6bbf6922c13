"""Pure rules of the conversation-log learning passes: preference thresholds, categories and the sensitive-topic
check (``core.preferences``), and the log window, budget and rendering (``core.transcripts``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from reverie.core import preferences as p
from reverie.core import transcripts as t

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("label", "count", "ok"),
    [
        ("very_irritated", 0, False),
        ("very_irritated", 1, True),
        ("Very irritated", 1, True),
        ("very-irritated", 2, True),
        ("mildly_frustrated", 1, False),
        ("mildly_frustrated", 2, True),
        ("MILDLY FRUSTRATED", 3, True),
        ("minor", 2, False),
        ("minor", 3, True),
        (None, 2, False),
        (None, 3, True),
        ("furious", 2, False),  # unknown: the strictest threshold
        ("furious", 3, True),
        ("very_irritated", "1", True),
        ("very_irritated", 1.0, True),
        ("very_irritated", 1.5, False),
        ("very_irritated", True, False),
        ("very_irritated", -1, False),
        ("minor", "three", False),
    ],
)
def test_thresholds_at_every_boundary(label: object, count: object, ok: bool) -> None:
    assert p.meets_threshold(label, count) is ok


def test_required_occurrences_and_sentiment_labels() -> None:
    assert [p.required_occurrences(s) for s in (p.VERY_IRRITATED, p.MILDLY_FRUSTRATED, p.MINOR, 7)] == [1, 2, 3, 3]
    assert p.sentiment(" Mildly-Frustrated ") == p.MILDLY_FRUSTRATED and p.sentiment(None) == p.MINOR


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, "user-preferences/inferred"),
        ("user-preferences/inferred", "user-preferences/inferred"),
        ("user-preferences/inferred/format", "user-preferences/inferred/format"),
        ("User-Preferences/Inferred/Format", "user-preferences/inferred/format"),
        ("user-preferences/format", "user-preferences/inferred"),  # stated, not inferred: refused
        ("user-preferences/inferred-ish", "user-preferences/inferred"),
        ("user-preferences/inferred/../x", "user-preferences/inferred"),
        ("formatting", "user-preferences/inferred"),
        (42, "user-preferences/inferred"),
    ],
)
def test_inferred_categories(raw: object, expected: str) -> None:
    assert p.inferred_category(raw) == expected


@pytest.mark.parametrize(
    ("text", "sensitive"),
    [
        ("Never store my passwords in notes", True),
        ("Rotate the API key monthly", True),
        ("Ask before any bank transfer", True),
        ("Use two-step 2FA codes from the authenticator", True),
        ("Prefers low-risk investments", True),
        ("Confirm credit card purchases first", True),
        ("Encrypt backups", True),
        ("Answer in plain paragraphs", False),
        ("Use Europe/Lisbon times", False),
        ("The author of the book is Ana", False),
        ("Pin the release notes", False),
    ],
)
def test_the_sensitive_topic_check(text: str, sensitive: bool) -> None:
    assert p.touches_sensitive(text) is sensitive


def _records() -> list[tuple[str, dict[str, object]]]:
    return [
        ("s1", {"at": (T0 + timedelta(minutes=1)).isoformat(), "role": "user", "content": "first", "agent": "a"}),
        ("s1", {"at": "not a time", "role": "assistant", "content": "timeless", "agent": "a"}),
        ("s1", {"at": (T0 + timedelta(minutes=3)).isoformat(), "role": "assistant", "content": "  ", "agent": "a"}),
        (
            "s2",
            {"at": (T0 + timedelta(minutes=2)).isoformat(), "role": "user", "content": "second\nline", "agent": "a"},
        ),
        ("s2", {"at": T0.isoformat(), "content": 5}),
    ]


def test_turns_window_and_newest() -> None:
    turns = t.turns(_records())
    assert [x.content for x in turns] == ["first", "timeless", "second\nline"]  # blank and non-text skipped
    assert [x.content for x in t.newer_than(turns, None)] == ["first", "second\nline", "timeless"]
    assert [x.content for x in t.newer_than(turns, T0 + timedelta(minutes=1))] == ["second\nline"]  # strictly after
    assert t.newest(turns) == T0 + timedelta(minutes=2) and t.newest([]) is None
    assert turns[0].key == t.record_key(dict(_records()[0][1]))


def test_fit_keeps_whole_turns_from_either_end_and_render_groups_sessions() -> None:
    turns = t.newer_than(t.turns(_records()), None)
    assert [x.content for x in t.fit(turns, 40, max_turn_chars=100)] == ["first", "second\nline"]
    assert [x.content for x in t.fit(turns, 40, max_turn_chars=100, newest=True)] == ["second\nline", "timeless"]
    assert [x.content for x in t.fit(turns, 1, max_turn_chars=100)] == ["first"]  # at least one
    text = t.render(turns, max_turn_chars=4)
    assert text.startswith("## Session s1 (2 turns)\n[2026-03-01T09:01+00:00] user: firs …")
    assert "## Session s2 (1 turns)\n[2026-03-01T09:02+00:00] user: seco …" in text and "[?] assistant: time …" in text
